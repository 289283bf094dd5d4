package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"hearth/storage"
)

// ConsoleResponses lists responses newest first, without their bodies. hasMore says
// whether another page follows the last row.
func (db *DB) ConsoleResponses(ctx context.Context, f storage.ConsoleFilter) (rows []*storage.Response, hasMore bool, err error) {
	limit := f.Limit
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	var where []string
	var args []any
	add := func(cond string, a ...any) { where = append(where, cond); args = append(args, a...) }
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
		// A row value, which SQLite matches to the index (created_at, id) as one range;
		// the same condition spelt with OR took 9 ms instead of 0.16 ms on a deep page
		// (BenchmarkConsoleResponses).
		c := f.AfterCreated.UnixMilli()
		add("(created_at, id) < (?, ?)", c, f.AfterID)
	}
	q := `SELECT ` + consoleColumns + ` FROM responses`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT ?"
	args = append(args, limit+1)
	rows, err = db.consoleQuery(ctx, q, args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: console list: %w", err)
	}
	if len(rows) > limit {
		rows, hasMore = rows[:limit], true
	}
	return rows, hasMore, nil
}

// consoleColumns are responseColumns without the request and response JSON, which a
// list does not show (NULL keeps scanResponse's shape).
const consoleColumns = `id, owner, model, status, background, previous_response_id, NULL, NULL, error,
	input_tokens, output_tokens, cached_tokens, reasoning_tokens, created_at, completed_at`

func (db *DB) consoleQuery(ctx context.Context, q string, args ...any) ([]*storage.Response, error) {
	rs, err := db.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, db.seen(err)
	}
	defer rs.Close()
	var out []*storage.Response
	for rs.Next() {
		r, err := scanResponse(rs)
		if err != nil {
			return nil, db.seen(err)
		}
		out = append(out, r)
	}
	return out, db.seen(rs.Err())
}

// ConsoleChain returns the tree id belongs to: from its root (the first ancestor whose
// previous response is absent) every descendant, branches included, in creation order,
// at most MaxConsoleChain of them. ErrNotFound when id is not stored.
func (db *DB) ConsoleChain(ctx context.Context, id string) ([]*storage.ConsoleTurn, error) {
	var root string
	err := db.r.QueryRowContext(ctx, `
		WITH RECURSIVE up(id, prev, depth) AS (
			SELECT id, previous_response_id, 0 FROM responses WHERE id = ?
			UNION ALL
			SELECT r.id, r.previous_response_id, up.depth + 1 FROM responses r JOIN up ON r.id = up.prev
		)
		SELECT id FROM up ORDER BY depth DESC LIMIT 1`, id).Scan(&root)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: console chain %s: %w", id, db.seen(err))
	}
	rows, err := db.r.QueryContext(ctx, `
		WITH RECURSIVE down(id, tree_depth) AS (
			SELECT ?, 0
			UNION
			SELECT r.id, down.tree_depth + 1 FROM responses r JOIN down ON r.previous_response_id = down.id
		)
		SELECT `+responseColumns+` FROM responses JOIN down USING (id)
		ORDER BY created_at, tree_depth, id LIMIT ?`, root, storage.MaxConsoleChain)
	if err != nil {
		return nil, fmt.Errorf("storage: console chain %s: %w", id, db.seen(err))
	}
	var turns []*storage.ConsoleTurn
	byID := map[string]*storage.ConsoleTurn{}
	for rows.Next() {
		r, err := scanResponse(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("storage: console chain %s: %w", id, db.seen(err))
		}
		t := &storage.ConsoleTurn{Response: *r}
		turns = append(turns, t)
		byID[r.ID] = t
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: console chain %s: %w", id, db.seen(err))
	}
	// Items per response through the primary key: one short range each, instead of an
	// IN list the planner may turn into a scan.
	for _, t := range turns {
		rs, err := db.r.QueryContext(ctx, `SELECT kind, item_id, type, body FROM items WHERE response_id = ? ORDER BY kind, position`, t.ID)
		if err != nil {
			return nil, fmt.Errorf("storage: console chain items %s: %w", t.ID, db.seen(err))
		}
		for rs.Next() {
			var kind string
			var it storage.Item
			if err := rs.Scan(&kind, &it.ID, &it.Type, (*[]byte)(&it.JSON)); err != nil {
				rs.Close()
				return nil, fmt.Errorf("storage: console chain items %s: %w", t.ID, db.seen(err))
			}
			if kind == "input" {
				t.Input = append(t.Input, it)
			} else {
				t.Output = append(t.Output, it)
			}
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, fmt.Errorf("storage: console chain items %s: %w", t.ID, db.seen(err))
		}
	}
	return turns, nil
}

// ConsoleUsage sums tokens of the responses created since `since`, per owner, model
// and bucket of the given width, oldest bucket first.
func (db *DB) ConsoleUsage(ctx context.Context, since time.Time, bucket time.Duration) ([]storage.UsageBucket, error) {
	w := bucket.Milliseconds()
	if w <= 0 {
		return nil, errors.New("storage: console usage: bucket must be positive")
	}
	rs, err := db.r.QueryContext(ctx, `
		SELECT (created_at / ?) * ? AS b, owner, model, COUNT(*),
			SUM(input_tokens), SUM(output_tokens), SUM(cached_tokens), SUM(reasoning_tokens)
		FROM responses WHERE created_at >= ?
		GROUP BY b, owner, model ORDER BY b, owner, model`, w, w, since.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("storage: console usage: %w", db.seen(err))
	}
	defer rs.Close()
	var out []storage.UsageBucket
	for rs.Next() {
		var u storage.UsageBucket
		var start int64
		if err := rs.Scan(&start, &u.Owner, &u.Model, &u.Responses,
			&u.InputTokens, &u.OutputTokens, &u.CachedTokens, &u.ReasoningTokens); err != nil {
			return nil, fmt.Errorf("storage: console usage: %w", db.seen(err))
		}
		u.Start = time.UnixMilli(start)
		out = append(out, u)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("storage: console usage: %w", db.seen(err))
	}
	return out, nil
}
