package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"hearth/storage"
)

// ListInputItems returns one page of the input items of the owner's response id, for
// GET /v1/responses/{id}/input_items. Only that response's own input is listed, not
// the chain's. Items come in order (Desc, the default when order is "", lists the last
// input item first); after, when not "", is the id of the item the page starts after,
// in that order. limit <= 0 means DefaultListLimit and is capped at MaxListLimit; the
// server rejects out-of-range values before they get here. hasMore reports whether
// items follow the page; first_id and last_id are the ids of its ends.
//
// An unknown, deleted or foreign response is ErrNotFound; an after that is not an input
// item of the response is ErrInvalidCursor.
func (db *DB) ListInputItems(ctx context.Context, owner, id, after string, limit int, order storage.Order) (items []storage.Item, hasMore bool, err error) {
	items, hasMore, err = db.listInputItems(ctx, owner, id, after, limit, order)
	if err != nil {
		return nil, false, db.seen(fmt.Errorf("storage: list input items of %s: %w", id, err))
	}
	return items, hasMore, nil
}

func (db *DB) listInputItems(ctx context.Context, owner, id, after string, limit int, order storage.Order) ([]storage.Item, bool, error) {
	if limit <= 0 {
		limit = storage.DefaultListLimit
	}
	limit = min(limit, storage.MaxListLimit)
	page := db.st.inputDesc
	var from int64 = math.MaxInt64
	switch order {
	case storage.Asc:
		page, from = db.st.inputAsc, -1
	case storage.Desc, "":
	default:
		return nil, false, fmt.Errorf("order %q: want asc or desc", order)
	}

	// One read transaction, so the existence check, the cursor and the page all see the
	// same snapshot even if the response is deleted meanwhile.
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback()

	var one int
	if err := tx.StmtContext(ctx, db.st.exists).QueryRowContext(ctx, id, owner).Scan(&one); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = storage.ErrNotFound
		}
		return nil, false, err
	}
	if after != "" {
		err := tx.StmtContext(ctx, db.st.inputCursor).QueryRowContext(ctx, id, after).Scan(&from)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("%w: %q", storage.ErrInvalidCursor, after)
		} else if err != nil {
			return nil, false, err
		}
	}

	// One more than asked for tells whether there is a next page without a COUNT.
	rows, err := tx.StmtContext(ctx, page).QueryContext(ctx, id, from, limit+1)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	items := make([]storage.Item, 0, min(limit+1, 32))
	for rows.Next() {
		var it storage.Item
		if err := rows.Scan(&it.ID, &it.Type, (*[]byte)(&it.JSON)); err != nil {
			return nil, false, err
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	hasMore := len(items) > limit
	if hasMore {
		items = items[:limit]
	}
	return items, hasMore, nil
}
