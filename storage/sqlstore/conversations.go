package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"hearth/storage"
)

// Conversations keeps conversations and their items.
type Conversations struct{ b Backend }

var (
	sqlInsertConversation = SQL(`INSERT INTO conversations (id, owner, metadata, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`)
	sqlGetConversation = SQL(`SELECT metadata, created_at FROM conversations WHERE id = ? AND owner = ?`)
	// The conversation's row, locked where rows are: concurrent appends (from several
	// replicas too) take turns and get positions one after the other.
	sqlLockConversation   = sqlGetConversation.ForUpdate()
	sqlUpdateConversation = SQL(`UPDATE conversations SET metadata = ? WHERE id = ? AND owner = ? RETURNING created_at`)
	sqlDeleteConversation = SQL(`DELETE FROM conversations WHERE id = ? AND owner = ?`)
	sqlNextPosition       = SQL(`SELECT COALESCE(MAX(position) + 1, 0) FROM conversation_items WHERE conversation_id = ?`)
	sqlInsertConvItem     = SQL(`INSERT INTO conversation_items (conversation_id, position, item_id, type, body, response_id)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (conversation_id, item_id) DO NOTHING`)
	// One query: whether the conversation is the owner's, and the item if it has it.
	sqlGetConvItem = SQL(`SELECT i.item_id IS NOT NULL, i.type, i.body FROM conversations AS c
		LEFT JOIN conversation_items AS i ON i.conversation_id = c.id AND i.item_id = ?3
		WHERE c.id = ?1 AND c.owner = ?2`)
	sqlDeleteConvItem = SQL(`DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?`)

	conversationPage = ItemPage{
		Exists:  SQL(`SELECT 1 FROM conversations WHERE id = ? AND owner = ?`),
		Missing: storage.ErrConversationNotFound,
		Cursor:  SQL(`SELECT position FROM conversation_items WHERE conversation_id = ? AND item_id = ?`),
		Asc:     SQL(`SELECT item_id, type, body FROM conversation_items WHERE conversation_id = ? AND position > ? ORDER BY position ASC LIMIT ?`),
		Desc:    SQL(`SELECT item_id, type, body FROM conversation_items WHERE conversation_id = ? AND position < ? ORDER BY position DESC LIMIT ?`),
	}
)

// CreateConversation stores a new conversation with its first items, in one
// transaction. An id already stored gives ErrExists; duplicate item ids
// ErrDuplicateItem.
func (s Conversations) CreateConversation(ctx context.Context, c storage.NewConversation) error {
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
	err = s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := execOne(ctx, tx, storage.ErrExists, sqlInsertConversation, c.ID, c.Owner, meta, created.UnixMilli()); err != nil {
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
func (s Conversations) GetConversation(ctx context.Context, owner, id string) (*storage.Conversation, error) {
	c, err := getConversation(ctx, s.b.Reader(), sqlGetConversation, owner, id)
	if err != nil {
		return nil, fmt.Errorf("storage: get conversation %s: %w", id, err)
	}
	return c, nil
}

// UpdateConversation replaces the metadata of the owner's conversation id and returns
// the conversation as it now is.
func (s Conversations) UpdateConversation(ctx context.Context, owner, id string, metadata json.RawMessage) (*storage.Conversation, error) {
	meta, err := storage.MetadataJSON(metadata)
	if err != nil {
		return nil, fmt.Errorf("storage: update conversation %s: %w", id, err)
	}
	var c *storage.Conversation
	err = s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		var created int64
		if err := tx.QueryRow(ctx, sqlUpdateConversation, meta, id, owner).Scan(&created); err != nil {
			return notFound(err, storage.ErrConversationNotFound)
		}
		c = &storage.Conversation{ID: id, Owner: owner, Metadata: json.RawMessage(meta), CreatedAt: time.UnixMilli(created)}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: update conversation %s: %w", id, err)
	}
	return c, nil
}

// DeleteConversation deletes the owner's conversation id and its items. Responses that
// were appended to it stay, as do their own input and output items.
func (s Conversations) DeleteConversation(ctx context.Context, owner, id string) error {
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		return execOne(ctx, tx, storage.ErrConversationNotFound, sqlDeleteConversation, id, owner)
	})
	if err != nil {
		return fmt.Errorf("storage: delete conversation %s: %w", id, err)
	}
	return nil
}

// AppendConversationItems appends items to the end of the owner's conversation id in
// one transaction: all of them or, on any error, none. responseID, when not "", is the
// response whose input and output they are.
func (s Conversations) AppendConversationItems(ctx context.Context, owner, id, responseID string, items []storage.Item) error {
	if err := storage.CheckItems(items); err != nil {
		return fmt.Errorf("storage: append to conversation %s: item %w", id, err)
	}
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if _, err := getConversation(ctx, tx, sqlLockConversation, owner, id); err != nil {
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
func (s Conversations) ConversationItems(ctx context.Context, owner, id string) ([]storage.Item, error) {
	items, _, err := s.ListConversationItems(ctx, owner, id, "", math.MaxInt, storage.Asc)
	return items, err
}

// ListConversationItems returns one page of the items of the owner's conversation id,
// with the paging of ListInputItems: order Desc (the default) lists the newest item
// first; after is the id of the item the page starts after; hasMore reports whether
// items follow. limit <= 0 means DefaultListLimit; it is not capped here (the server
// bounds what clients ask), so that ConversationItems can read them all.
func (s Conversations) ListConversationItems(ctx context.Context, owner, id, after string, limit int, order storage.Order) (items []storage.Item, hasMore bool, err error) {
	if limit <= 0 {
		limit = storage.DefaultListLimit
	}
	// One read transaction: the owner check, the cursor and the page see one snapshot.
	err = s.b.Read(ctx, func(ctx context.Context, q Querier) error {
		var err error
		items, hasMore, err = ListItems(ctx, q, &conversationPage, owner, id, after, int64(limit), order)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("storage: list items of conversation %s: %w", id, err)
	}
	return items, hasMore, nil
}

// GetConversationItem returns the item itemID of the owner's conversation id:
// ErrConversationNotFound for the conversation, ErrItemNotFound for the item.
func (s Conversations) GetConversationItem(ctx context.Context, owner, id, itemID string) (*storage.Item, error) {
	it := storage.Item{ID: itemID}
	var has bool
	var typ, body sql.NullString
	err := s.b.Reader().QueryRow(ctx, sqlGetConvItem, id, owner, itemID).Scan(&has, &typ, &body)
	switch {
	case errors.Is(err, ErrNoRows):
		err = storage.ErrConversationNotFound
	case err == nil && !has:
		err = storage.ErrItemNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get item %s of conversation %s: %w", itemID, id, err)
	}
	it.Type, it.JSON = typ.String, json.RawMessage(body.String)
	return &it, nil
}

// DeleteConversationItem deletes the item itemID of the owner's conversation id and
// returns the conversation (what the API answers with).
func (s Conversations) DeleteConversationItem(ctx context.Context, owner, id, itemID string) (*storage.Conversation, error) {
	var c *storage.Conversation
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if c, err = getConversation(ctx, tx, sqlLockConversation, owner, id); err != nil {
			return err
		}
		return execOne(ctx, tx, storage.ErrItemNotFound, sqlDeleteConvItem, id, itemID)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: delete item %s of conversation %s: %w", itemID, id, err)
	}
	return c, nil
}

func getConversation(ctx context.Context, q Querier, st *Stmt, owner, id string) (*storage.Conversation, error) {
	var meta string
	var created int64
	if err := q.QueryRow(ctx, st, id, owner).Scan(&meta, &created); err != nil {
		return nil, notFound(err, storage.ErrConversationNotFound)
	}
	return &storage.Conversation{ID: id, Owner: owner, Metadata: json.RawMessage(meta), CreatedAt: time.UnixMilli(created)}, nil
}

// appendConversationItems inserts items after the conversation's last, one statement
// each so that a taken id names its index (a *DuplicateItemError; the transaction then
// rolls back). The conversation's row is the caller's to lock (or to have just
// inserted).
func appendConversationItems(ctx context.Context, tx Tx, id, responseID string, items []storage.Item) error {
	if len(items) == 0 {
		return nil
	}
	var next int64
	if err := tx.QueryRow(ctx, sqlNextPosition, id).Scan(&next); err != nil {
		return err
	}
	for i, it := range items {
		if it.ID == "" {
			return fmt.Errorf("item %d has no id", i)
		}
		n, err := tx.Exec(ctx, sqlInsertConvItem, id, next+int64(i), it.ID, it.Type, string(it.JSON), NullString(responseID))
		if err != nil {
			return err
		}
		if n == 0 {
			return &storage.DuplicateItemError{Index: i, ID: it.ID}
		}
	}
	return nil
}

// NullString binds "" as SQL NULL. JSON is bound as a Go string: a []byte would be
// bound by SQLite as a BLOB, which its STRICT TEXT columns refuse and its JSON
// functions would read as JSONB.
func NullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ItemPage is how a list of items (a response's input, a conversation's) is read a
// page at a time: Exists checks the owner's parent (id, owner), Cursor finds an item's
// position (id, item), Asc and Desc read a page (id, position, limit) of rows of
// item_id, type, body; Missing is the error for a parent not found.
type ItemPage struct {
	Exists, Cursor, Asc, Desc *Stmt
	Missing                   error
}

// ListItems reads a page of p's items, in q (a read transaction, for one snapshot).
func ListItems(ctx context.Context, q Querier, p *ItemPage, owner, id, after string, limit int64, order storage.Order) ([]storage.Item, bool, error) {
	page := p.Desc
	var from int64 = math.MaxInt64
	switch order {
	case storage.Asc:
		page, from = p.Asc, -1
	case storage.Desc, "":
	default:
		return nil, false, fmt.Errorf("order %q: want asc or desc", order)
	}
	var one int
	if err := q.QueryRow(ctx, p.Exists, id, owner).Scan(&one); err != nil {
		return nil, false, notFound(err, p.Missing)
	}
	if after != "" {
		if err := q.QueryRow(ctx, p.Cursor, id, after).Scan(&from); err != nil {
			if errors.Is(err, ErrNoRows) {
				return nil, false, fmt.Errorf("%w: %q", storage.ErrInvalidCursor, after)
			}
			return nil, false, err
		}
	}
	// One more than asked for tells whether there is a next page without a COUNT.
	fetch := limit
	if fetch < math.MaxInt64 {
		fetch++
	}
	rows, err := q.Query(ctx, page, id, from, fetch)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	items := make([]storage.Item, 0, min(fetch, 32))
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
	hasMore := int64(len(items)) > limit
	if hasMore {
		items = items[:limit]
	}
	return items, hasMore, nil
}
