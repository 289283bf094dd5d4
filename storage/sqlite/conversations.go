package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"hearth/storage"
)

// CreateConversation stores a new conversation with its first items, in one
// transaction. An id already stored gives ErrExists; duplicate item ids
// ErrDuplicateItem.
func (db *DB) CreateConversation(ctx context.Context, c storage.NewConversation) error {
	if c.ID == "" || c.Owner == "" {
		return errors.New("storage: create conversation: id and owner are required")
	}
	meta, err := storage.MetadataJSON(c.Metadata)
	if err != nil {
		return fmt.Errorf("storage: create conversation %s: %w", c.ID, err)
	}
	if err := storage.CheckItems(c.Items); err != nil {
		return fmt.Errorf("storage: create conversation %s: item %w", c.ID, err)
	}
	created := c.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	err = db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM conversations WHERE id = ?`, c.ID).Scan(&one)
		if err == nil {
			return storage.ErrExists
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO conversations (id, owner, metadata, created_at) VALUES (?, ?, ?, ?)`,
			c.ID, c.Owner, meta, created.UnixMilli()); err != nil {
			return err
		}
		return appendConversationItems(ctx, tx, c.ID, "", c.Items)
	})
	if err != nil {
		return fmt.Errorf("storage: create conversation %s: %w", c.ID, err)
	}
	return nil
}

// GetConversation returns the owner's conversation id, or ErrConversationNotFound.
func (db *DB) GetConversation(ctx context.Context, owner, id string) (*storage.Conversation, error) {
	c, err := getConversation(ctx, db.r, owner, id)
	if err != nil {
		return nil, fmt.Errorf("storage: get conversation %s: %w", id, err)
	}
	return c, nil
}

// UpdateConversation replaces the metadata of the owner's conversation id and returns
// the conversation as it now is.
func (db *DB) UpdateConversation(ctx context.Context, owner, id string, metadata json.RawMessage) (*storage.Conversation, error) {
	meta, err := storage.MetadataJSON(metadata)
	if err != nil {
		return nil, fmt.Errorf("storage: update conversation %s: %w", id, err)
	}
	var c *storage.Conversation
	err = db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE conversations SET metadata = ? WHERE id = ? AND owner = ?`, meta, id, owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return storage.ErrConversationNotFound
		}
		c, err = getConversation(ctx, tx, owner, id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("storage: update conversation %s: %w", id, err)
	}
	return c, nil
}

// DeleteConversation deletes the owner's conversation id and its items. Responses that
// were appended to it stay, as do their own input and output items.
func (db *DB) DeleteConversation(ctx context.Context, owner, id string) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM conversations WHERE id = ? AND owner = ?`, id, owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return storage.ErrConversationNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storage: delete conversation %s: %w", id, err)
	}
	return nil
}

// AppendConversationItems appends items to the end of the owner's conversation id in
// one transaction: all of them or, on any error, none. responseID, when not "", is the
// response whose input and output they are.
func (db *DB) AppendConversationItems(ctx context.Context, owner, id, responseID string, items []storage.Item) error {
	if err := storage.CheckItems(items); err != nil {
		return fmt.Errorf("storage: append to conversation %s: item %w", id, err)
	}
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := getConversation(ctx, tx, owner, id); err != nil {
			return err
		}
		return appendConversationItems(ctx, tx, id, responseID, items)
	})
	if err != nil {
		return fmt.Errorf("storage: append to conversation %s: %w", id, err)
	}
	return nil
}

// ConversationItems returns every item of the owner's conversation id, in order: the
// history a response on the conversation continues from.
func (db *DB) ConversationItems(ctx context.Context, owner, id string) ([]storage.Item, error) {
	items, _, err := db.ListConversationItems(ctx, owner, id, "", math.MaxInt, storage.Asc)
	return items, err
}

// ListConversationItems returns one page of the items of the owner's conversation id,
// with the paging of ListInputItems: order Desc (the default) lists the newest item
// first; after is the id of the item the page starts after; hasMore reports whether
// items follow. limit <= 0 means DefaultListLimit; it is not capped here (the server
// bounds what clients ask), so that ConversationItems can read them all.
func (db *DB) ListConversationItems(ctx context.Context, owner, id, after string, limit int, order storage.Order) (items []storage.Item, hasMore bool, err error) {
	items, hasMore, err = db.listConversationItems(ctx, owner, id, after, limit, order)
	if err != nil {
		return nil, false, fmt.Errorf("storage: list items of conversation %s: %w", id, err)
	}
	return items, hasMore, nil
}

func (db *DB) listConversationItems(ctx context.Context, owner, id, after string, limit int, order storage.Order) ([]storage.Item, bool, error) {
	if limit <= 0 {
		limit = storage.DefaultListLimit
	}
	query := `SELECT item_id, type, body FROM conversation_items
		WHERE conversation_id = ? AND position < ? ORDER BY position DESC LIMIT ?`
	var from int64 = math.MaxInt64
	switch order {
	case storage.Asc:
		query = strings.NewReplacer("<", ">", "DESC", "ASC").Replace(query)
		from = -1
	case storage.Desc, "":
	default:
		return nil, false, fmt.Errorf("order %q: want asc or desc", order)
	}
	// One read transaction: the owner check, the cursor and the page see one snapshot.
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, false, err
	}
	defer tx.Rollback()
	if _, err := getConversation(ctx, tx, owner, id); err != nil {
		return nil, false, err
	}
	if after != "" {
		err := tx.QueryRowContext(ctx, `SELECT position FROM conversation_items WHERE conversation_id = ? AND item_id = ?`,
			id, after).Scan(&from)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("%w: %q", storage.ErrInvalidCursor, after)
		} else if err != nil {
			return nil, false, err
		}
	}
	// One more than asked for tells whether there is a next page without a COUNT.
	fetch := int64(limit)
	if fetch < math.MaxInt64 {
		fetch++
	}
	rows, err := tx.QueryContext(ctx, query, id, from, fetch)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var items []storage.Item
	for rows.Next() {
		var it storage.Item
		var body string
		if err := rows.Scan(&it.ID, &it.Type, &body); err != nil {
			return nil, false, err
		}
		it.JSON = json.RawMessage(body)
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

// GetConversationItem returns the item itemID of the owner's conversation id:
// ErrConversationNotFound for the conversation, ErrItemNotFound for the item.
func (db *DB) GetConversationItem(ctx context.Context, owner, id, itemID string) (*storage.Item, error) {
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("storage: get item %s of conversation %s: %w", itemID, id, err)
	}
	defer tx.Rollback()
	if _, err := getConversation(ctx, tx, owner, id); err != nil {
		return nil, fmt.Errorf("storage: get item %s of conversation %s: %w", itemID, id, err)
	}
	it := storage.Item{ID: itemID}
	var body string
	err = tx.QueryRowContext(ctx, `SELECT type, body FROM conversation_items WHERE conversation_id = ? AND item_id = ?`,
		id, itemID).Scan(&it.Type, &body)
	if errors.Is(err, sql.ErrNoRows) {
		err = storage.ErrItemNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get item %s of conversation %s: %w", itemID, id, err)
	}
	it.JSON = json.RawMessage(body)
	return &it, nil
}

// DeleteConversationItem deletes the item itemID of the owner's conversation id and
// returns the conversation (what the API answers with).
func (db *DB) DeleteConversationItem(ctx context.Context, owner, id, itemID string) (*storage.Conversation, error) {
	var c *storage.Conversation
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if c, err = getConversation(ctx, tx, owner, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?`, id, itemID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return storage.ErrItemNotFound
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: delete item %s of conversation %s: %w", itemID, id, err)
	}
	return c, nil
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func getConversation(ctx context.Context, q queryRower, owner, id string) (*storage.Conversation, error) {
	c := storage.Conversation{ID: id, Owner: owner}
	var meta string
	var created int64
	err := q.QueryRowContext(ctx, `SELECT metadata, created_at FROM conversations WHERE id = ? AND owner = ?`, id, owner).
		Scan(&meta, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storage.ErrConversationNotFound
	}
	if err != nil {
		return nil, err
	}
	c.Metadata = json.RawMessage(meta)
	c.CreatedAt = time.UnixMilli(created)
	return &c, nil
}

// appendConversationItems inserts items after the conversation's last one. A taken id
// is ErrDuplicateItem (the unique index says so; the transaction then rolls back).
func appendConversationItems(ctx context.Context, tx *sql.Tx, id, responseID string, items []storage.Item) error {
	if len(items) == 0 {
		return nil
	}
	var next int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(position) + 1, 0) FROM conversation_items WHERE conversation_id = ?`,
		id).Scan(&next); err != nil {
		return err
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO conversation_items (conversation_id, position, item_id, type, body, response_id)
		VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for i, it := range items {
		if it.ID == "" {
			return fmt.Errorf("item %d has no id", i)
		}
		if _, err := st.ExecContext(ctx, id, next+int64(i), it.ID, it.Type, string(it.JSON), nullString(responseID)); err != nil {
			var se sqlite3.Error
			if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique {
				return &storage.DuplicateItemError{Index: i, ID: it.ID}
			}
			return err
		}
	}
	return nil
}
