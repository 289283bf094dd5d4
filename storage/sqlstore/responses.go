package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"hearth/storage"
)

// ResponseColumns are what ScanResponse reads.
const ResponseColumns = `id, owner, model, status, background, previous_response_id, request,
	response, error, input_tokens, output_tokens, cached_tokens, reasoning_tokens,
	created_at, completed_at`

// MaxChainDepth bounds a walk up a chain (a real one holds a few thousand turns at
// most); the bound only stops a cycle, which can only arise if a deleted response's
// id were reused by a descendant of it.
const MaxChainDepth = 100_000

// ScanResponse reads a row of ResponseColumns; no row is storage.ErrNotFound.
func ScanResponse(row storage.RowScanner) (*storage.Response, error) {
	var (
		r         storage.Response
		status    string
		prev      sql.NullString
		completed sql.NullInt64
		created   int64
	)
	err := row.Scan(&r.ID, &r.Owner, &r.Model, &status, &r.Background, &prev,
		(*[]byte)(&r.Request), (*[]byte)(&r.Body), (*[]byte)(&r.Error),
		&r.Usage.InputTokens, &r.Usage.OutputTokens, &r.Usage.CachedTokens, &r.Usage.ReasoningTokens,
		&created, &completed)
	if err != nil {
		return nil, notFound(err, storage.ErrNotFound)
	}
	r.Status = storage.Status(status)
	r.PreviousResponseID = prev.String
	r.CreatedAt = time.UnixMilli(created)
	if completed.Valid {
		r.CompletedAt = time.UnixMilli(completed.Int64)
	}
	return &r, nil
}

// NullJSON binds empty JSON as SQL NULL, and JSON as a Go string (see NullString).
func NullJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// Responses reads stored responses. Writing them is each store's own: the hot path of
// every response, which SQLite serialises in its single writer with statements
// prepared, and PostgreSQL pipelines with its checks on the server.
type Responses struct{ b Backend }

var (
	sqlGetResponse = SQL(`SELECT ` + ResponseColumns + ` FROM responses WHERE id = ? AND owner = ?`).Prepared()
	sqlRuntime     = SQL(`SELECT runtime FROM responses WHERE id = ? AND owner = ?`)

	inputPage = ItemPage{
		Exists:  SQL(`SELECT 1 FROM responses WHERE id = ? AND owner = ?`).Prepared(),
		Missing: storage.ErrNotFound,
		Cursor: SQL(`SELECT position FROM items WHERE response_id = ? AND kind = 'input' AND item_id = ?
			ORDER BY position LIMIT 1`).Prepared(),
		Asc: SQL(`SELECT item_id, type, body FROM items WHERE response_id = ? AND kind = 'input' AND position > ?
			ORDER BY position ASC LIMIT ?`).Prepared(),
		Desc: SQL(`SELECT item_id, type, body FROM items WHERE response_id = ? AND kind = 'input' AND position < ?
			ORDER BY position DESC LIMIT ?`).Prepared(),
	}
)

// GetResponse returns the owner's response id, or ErrNotFound.
func (s Responses) GetResponse(ctx context.Context, owner, id string) (*storage.Response, error) {
	rec, err := ScanResponse(s.b.Reader().QueryRow(ctx, sqlGetResponse, id, owner))
	if err != nil {
		return nil, fmt.Errorf("storage: get response %s: %w", id, err)
	}
	return rec, nil
}

// ResponseRuntime returns the label of the runtime that served owner's response id
// ("" when none was recorded), or ErrNotFound.
func (s Responses) ResponseRuntime(ctx context.Context, owner, id string) (string, error) {
	var label string
	err := s.b.Reader().QueryRow(ctx, sqlRuntime, id, owner).Scan(&label)
	if err != nil {
		return "", fmt.Errorf("storage: runtime of %s: %w", id, notFound(err, storage.ErrNotFound))
	}
	return label, nil
}

// ListInputItems returns one page of the input items of the owner's response id, for
// GET /v1/responses/{id}/input_items. Only that response's own input is listed, not
// the chain's. Items come in order (Desc, the default when order is "", lists the last
// input item first); after, when not "", is the id of the item the page starts after,
// in that order. limit <= 0 means DefaultListLimit and is capped at MaxListLimit; the
// server rejects out-of-range values before they get here. hasMore reports whether
// items follow the page; first_id and last_id are the ids of its ends.
//
// An unknown, deleted or foreign response is ErrNotFound; an after that is not an input
// item of the response is ErrInvalidCursor. One read transaction, so the existence
// check, the cursor and the page all see the same snapshot even if the response is
// deleted meanwhile.
func (s Responses) ListInputItems(ctx context.Context, owner, id, after string, limit int, order storage.Order) (items []storage.Item, hasMore bool, err error) {
	if limit <= 0 {
		limit = storage.DefaultListLimit
	}
	limit = min(limit, storage.MaxListLimit)
	err = s.b.Read(ctx, func(ctx context.Context, q Querier) error {
		var err error
		items, hasMore, err = ListItems(ctx, q, &inputPage, owner, id, after, int64(limit), order)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("storage: list input items of %s: %w", id, err)
	}
	return items, hasMore, nil
}
