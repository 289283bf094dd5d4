package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
)

// CreateConversation stores a new conversation with its first items, atomically; a
// taken id is ErrExists.
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
	err = db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO conversations (id, owner, metadata, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (id) DO NOTHING`, c.ID, c.Owner, meta, created.UnixMilli())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return storage.ErrExists
		}
		return appendConversationItems(ctx, tx, c.ID, "", c.Items)
	})
	if err != nil {
		return fmt.Errorf("storage: create conversation %s: %w", c.ID, err)
	}
	return nil
}

// GetConversation returns the owner's conversation, or ErrConversationNotFound.
func (db *DB) GetConversation(ctx context.Context, owner, id string) (*storage.Conversation, error) {
	c, err := getConversation(ctx, db.pool, owner, id, false)
	if err != nil {
		return nil, fmt.Errorf("storage: get conversation %s: %w", id, err)
	}
	return c, nil
}

// UpdateConversation replaces the conversation's metadata and returns it.
func (db *DB) UpdateConversation(ctx context.Context, owner, id string, metadata json.RawMessage) (*storage.Conversation, error) {
	meta, err := storage.MetadataJSON(metadata)
	if err != nil {
		return nil, fmt.Errorf("storage: update conversation %s: %w", id, err)
	}
	var c *storage.Conversation
	err = db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var created int64
		err := tx.QueryRow(ctx, `UPDATE conversations SET metadata = $1 WHERE id = $2 AND owner = $3 RETURNING created_at`,
			meta, id, owner).Scan(&created)
		if err != nil {
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

// DeleteConversation deletes the owner's conversation and its items.
func (db *DB) DeleteConversation(ctx context.Context, owner, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM conversations WHERE id = $1 AND owner = $2`, id, owner)
	if err == nil && tag.RowsAffected() == 0 {
		err = storage.ErrConversationNotFound
	}
	if err != nil {
		return fmt.Errorf("storage: delete conversation %s: %w", id, err)
	}
	return nil
}

// AppendConversationItems appends items atomically. The conversation's row is locked
// FOR UPDATE, so concurrent appends (from several replicas too) take turns and get
// positions one after the other.
func (db *DB) AppendConversationItems(ctx context.Context, owner, id, responseID string, items []storage.Item) error {
	if err := storage.CheckItems(items); err != nil {
		return fmt.Errorf("storage: append to conversation %s: item %w", id, err)
	}
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := getConversation(ctx, tx, owner, id, true); err != nil {
			return err
		}
		return appendConversationItems(ctx, tx, id, responseID, items)
	})
	if err != nil {
		return fmt.Errorf("storage: append to conversation %s: %w", id, err)
	}
	return nil
}

// ConversationItems returns all the conversation's items, oldest first.
func (db *DB) ConversationItems(ctx context.Context, owner, id string) ([]storage.Item, error) {
	items, _, err := db.ListConversationItems(ctx, owner, id, "", math.MaxInt, storage.Asc)
	return items, err
}

// ListConversationItems returns one page of the conversation's items.
func (db *DB) ListConversationItems(ctx context.Context, owner, id, after string, limit int, order storage.Order) ([]storage.Item, bool, error) {
	if limit <= 0 {
		limit = storage.DefaultListLimit
	}
	var items []storage.Item
	var hasMore bool
	err := pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		items, hasMore, err = listItems(ctx, tx, listQuery{
			exists: `SELECT 1 FROM conversations WHERE id = $1 AND owner = $2`, missing: storage.ErrConversationNotFound,
			cursor: `SELECT position FROM conversation_items WHERE conversation_id = $1 AND item_id = $2`,
			page:   `SELECT item_id, type, body FROM conversation_items WHERE conversation_id = $1 AND position %s $2 ORDER BY position %s LIMIT $3`,
		}, owner, id, after, int64(limit), order)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("storage: list items of conversation %s: %w", id, err)
	}
	return items, hasMore, nil
}

// GetConversationItem returns one item of the owner's conversation.
func (db *DB) GetConversationItem(ctx context.Context, owner, id, itemID string) (*storage.Item, error) {
	var found, has bool
	it := storage.Item{ID: itemID}
	var typ, body *string
	// One query: whether the conversation is the owner's, and the item if it has it.
	err := db.pool.QueryRow(ctx, `SELECT true, i.item_id IS NOT NULL, i.type, i.body FROM conversations AS c
		LEFT JOIN conversation_items AS i ON i.conversation_id = c.id AND i.item_id = $3
		WHERE c.id = $1 AND c.owner = $2`, id, owner, itemID).Scan(&found, &has, &typ, &body)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		err = storage.ErrConversationNotFound
	case err == nil && !has:
		err = storage.ErrItemNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get item %s of conversation %s: %w", itemID, id, err)
	}
	it.Type, it.JSON = *typ, json.RawMessage(*body)
	return &it, nil
}

// DeleteConversationItem deletes one item and returns the conversation.
func (db *DB) DeleteConversationItem(ctx context.Context, owner, id, itemID string) (*storage.Conversation, error) {
	var c *storage.Conversation
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if c, err = getConversation(ctx, tx, owner, id, true); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM conversation_items WHERE conversation_id = $1 AND item_id = $2`, id, itemID)
		if err == nil && tag.RowsAffected() == 0 {
			err = storage.ErrItemNotFound
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("storage: delete item %s of conversation %s: %w", itemID, id, err)
	}
	return c, nil
}

func getConversation(ctx context.Context, q querier, owner, id string, lock bool) (*storage.Conversation, error) {
	query := `SELECT metadata, created_at FROM conversations WHERE id = $1 AND owner = $2`
	if lock {
		query += ` FOR UPDATE`
	}
	var meta string
	var created int64
	if err := q.QueryRow(ctx, query, id, owner).Scan(&meta, &created); err != nil {
		return nil, notFound(err, storage.ErrConversationNotFound)
	}
	return &storage.Conversation{ID: id, Owner: owner, Metadata: json.RawMessage(meta), CreatedAt: time.UnixMilli(created)}, nil
}

// appendConversationItems inserts items after the conversation's last, one statement
// each so that a duplicate id names its index (a *DuplicateItemError); the
// conversation's row is the caller's to lock (or to have just inserted).
func appendConversationItems(ctx context.Context, tx pgx.Tx, id, responseID string, items []storage.Item) error {
	if len(items) == 0 {
		return nil
	}
	var next int64
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(position) + 1, 0) FROM conversation_items WHERE conversation_id = $1`, id).Scan(&next); err != nil {
		return err
	}
	for i, it := range items {
		if it.ID == "" {
			return fmt.Errorf("item %d has no id", i)
		}
		tag, err := tx.Exec(ctx, `INSERT INTO conversation_items (conversation_id, position, item_id, type, body, response_id)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (conversation_id, item_id) DO NOTHING`,
			id, next+int64(i), it.ID, it.Type, string(it.JSON), nullString(responseID))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return &storage.DuplicateItemError{Index: i, ID: it.ID}
		}
	}
	return nil
}
