package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"hearth/storage"
)

// sqlLookupItem finds the most recently stored item with id ?1 among the responses of
// owner ?2. An id can be stored more than once: a client that sends an output item back
// as input (with its id) stores it again under the new response; the copies are the
// same item, and the latest one is what the client last saw.
const sqlLookupItem = `SELECT i.item_id, i.type, i.body FROM items AS i
	JOIN responses AS r ON r.id = i.response_id
	WHERE i.item_id = ?1 AND r.owner = ?2
	ORDER BY i.rowid DESC LIMIT 1`

// LookupItems returns the stored items of owner with the given ids, any input or output
// item of any of the owner's responses, by id. Ids with no such item (unknown, another
// owner's, or of a deleted response) are absent from the map; the caller decides what
// that means. One read transaction, one indexed lookup per distinct id.
func (db *DB) LookupItems(ctx context.Context, owner string, ids []string) (map[string]storage.Item, error) {
	found := make(map[string]storage.Item, len(ids))
	if len(ids) == 0 {
		return found, nil
	}
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("storage: look up items: %w", err)
	}
	defer tx.Rollback()
	st := tx.StmtContext(ctx, db.st.lookupItem)
	for _, id := range ids {
		if _, done := found[id]; done {
			continue
		}
		var it storage.Item
		err := st.QueryRowContext(ctx, id, owner).Scan(&it.ID, &it.Type, (*[]byte)(&it.JSON))
		if errors.Is(err, sql.ErrNoRows) {
			continue
		} else if err != nil {
			return nil, fmt.Errorf("storage: look up item %s: %w", id, err)
		}
		found[id] = it
	}
	return found, nil
}
