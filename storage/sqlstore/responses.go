package sqlstore

import (
	"database/sql"
	"encoding/json"
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
