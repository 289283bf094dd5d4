package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
)

// ConsoleResponses lists responses newest first across owners, filtered, without their
// request and response JSON.
func (db *DB) ConsoleResponses(ctx context.Context, f storage.ConsoleFilter) ([]*storage.Response, bool, error) {
	limit := f.Limit
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	var where []string
	var args []any
	add := func(cond string, a ...any) {
		for _, v := range a {
			args = append(args, v)
			cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(args)), 1)
		}
		where = append(where, cond)
	}
	if f.Owner != "" {
		add("owner = ?", f.Owner)
	}
	if f.Model != "" {
		add("model = ?", f.Model)
	}
	if f.Status != "" {
		add("status = ?", string(f.Status))
	}
	if !f.Since.IsZero() {
		add("created_at >= ?", f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		add("created_at < ?", f.Until.UnixMilli())
	}
	if f.AfterID != "" {
		add("(created_at, id) < (?, ?)", f.AfterCreated.UnixMilli(), f.AfterID)
	}
	q := `SELECT ` + consoleColumns + ` FROM responses`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, limit+1)
	q += fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT $%d", len(args))
	rows, err := db.consoleQuery(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: console list: %w", err)
	}
	hasMore := len(rows) > limit
	if hasMore {
		rows = rows[:limit]
	}
	return rows, hasMore, nil
}

const consoleColumns = `id, owner, model, status, background, previous_response_id, NULL::text, NULL::text, error,
	input_tokens, output_tokens, cached_tokens, reasoning_tokens, created_at, completed_at`

func (db *DB) consoleQuery(ctx context.Context, q string, args ...any) ([]*storage.Response, error) {
	rs, err := db.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []*storage.Response
	for rs.Next() {
		r, err := scanResponse(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// ConsoleChain returns the tree of turns id belongs to, from its root down, with their
// items, whatever their owner.
func (db *DB) ConsoleChain(ctx context.Context, id string) ([]*storage.ConsoleTurn, error) {
	var root string
	err := db.pool.QueryRow(ctx, `
		WITH RECURSIVE up (id, prev, depth) AS (
			SELECT id, previous_response_id, 0 FROM responses WHERE id = $1
			UNION ALL
			SELECT r.id, r.previous_response_id, up.depth + 1 FROM responses AS r JOIN up ON r.id = up.prev
			WHERE up.depth < $2
		)
		SELECT id FROM up ORDER BY depth DESC LIMIT 1`, id, maxChainDepth).Scan(&root)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: console chain %s: %w", id, err)
	}
	rows, err := db.pool.Query(ctx, `
		WITH RECURSIVE down (id, tree_depth) AS (
			SELECT $1::text COLLATE "C", 0
			UNION
			SELECT r.id, down.tree_depth + 1 FROM responses AS r JOIN down ON r.previous_response_id = down.id
		)
		SELECT `+responseColumns+` FROM responses JOIN down USING (id)
		ORDER BY created_at, tree_depth, id LIMIT $2`, root, storage.MaxConsoleChain)
	if err != nil {
		return nil, fmt.Errorf("storage: console chain %s: %w", id, err)
	}
	var turns []*storage.ConsoleTurn
	byID := map[string]*storage.ConsoleTurn{}
	var ids []string
	for rows.Next() {
		r, err := scanResponse(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("storage: console chain %s: %w", id, err)
		}
		t := &storage.ConsoleTurn{Response: *r}
		turns = append(turns, t)
		byID[r.ID] = t
		ids = append(ids, r.ID)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: console chain %s: %w", id, err)
	}
	rs, err := db.pool.Query(ctx, `SELECT response_id, kind, item_id, type, body FROM items
		WHERE response_id = ANY ($1::text[]) ORDER BY response_id, kind, position`, ids)
	if err != nil {
		return nil, fmt.Errorf("storage: console chain items of %s: %w", id, err)
	}
	defer rs.Close()
	for rs.Next() {
		var rid, kind, body string
		var it storage.Item
		if err := rs.Scan(&rid, &kind, &it.ID, &it.Type, &body); err != nil {
			return nil, fmt.Errorf("storage: console chain items of %s: %w", id, err)
		}
		it.JSON = []byte(body)
		t := byID[rid]
		if kind == "input" {
			t.Input = append(t.Input, it)
		} else {
			t.Output = append(t.Output, it)
		}
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("storage: console chain items of %s: %w", id, err)
	}
	return turns, nil
}

// ConsoleUsage sums usage per bucket, owner and model since a time.
func (db *DB) ConsoleUsage(ctx context.Context, since time.Time, bucket time.Duration) ([]storage.UsageBucket, error) {
	w := bucket.Milliseconds()
	if w <= 0 {
		return nil, errors.New("storage: console usage: bucket must be positive")
	}
	rs, err := db.pool.Query(ctx, `
		SELECT (created_at / $1) * $1 AS b, owner, model, COUNT(*),
			SUM(input_tokens)::bigint, SUM(output_tokens)::bigint, SUM(cached_tokens)::bigint, SUM(reasoning_tokens)::bigint
		FROM responses WHERE created_at >= $2
		GROUP BY b, owner, model ORDER BY b, owner, model`, w, since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("storage: console usage: %w", err)
	}
	defer rs.Close()
	var out []storage.UsageBucket
	for rs.Next() {
		var u storage.UsageBucket
		var start int64
		if err := rs.Scan(&start, &u.Owner, &u.Model, &u.Responses,
			&u.InputTokens, &u.OutputTokens, &u.CachedTokens, &u.ReasoningTokens); err != nil {
			return nil, fmt.Errorf("storage: console usage: %w", err)
		}
		u.Start = time.UnixMilli(start)
		out = append(out, u)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("storage: console usage: %w", err)
	}
	return out, nil
}
