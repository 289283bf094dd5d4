package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"hearth/storage"
)

// Console reads what the operator's console shows: responses across owners, their
// trees, usage.
type Console struct {
	b Backend
	d *Dialect
}

// consoleColumns are ResponseColumns without the request and response JSON, which a
// list does not show (NULL keeps ScanResponse's shape).
const consoleColumns = `id, owner, model, status, background, previous_response_id, CAST(NULL AS TEXT), CAST(NULL AS TEXT), error,
	input_tokens, output_tokens, cached_tokens, reasoning_tokens, created_at, completed_at`

var (
	sqlChainRoot = SQL(`
		WITH RECURSIVE up (id, prev, depth) AS (
			SELECT id, previous_response_id, 0 FROM responses WHERE id = ?
			UNION ALL
			SELECT r.id, r.previous_response_id, up.depth + 1 FROM responses AS r JOIN up ON r.id = up.prev
			WHERE up.depth < ?
		)
		SELECT id FROM up ORDER BY depth DESC LIMIT 1`)
	// The tree under a root, branches included, in creation order. PostgreSQL types
	// the root's parameter in the base case from a cast.
	sqlChainTree = Dialects(`
		WITH RECURSIVE down (id, tree_depth) AS (
			SELECT ?, 0
			UNION
			SELECT r.id, down.tree_depth + 1 FROM responses AS r JOIN down ON r.previous_response_id = down.id
		)
		SELECT `+ResponseColumns+` FROM responses JOIN down USING (id)
		ORDER BY created_at, tree_depth, id LIMIT ?`, `
		WITH RECURSIVE down (id, tree_depth) AS (
			SELECT $1::text COLLATE "C", 0
			UNION
			SELECT r.id, down.tree_depth + 1 FROM responses AS r JOIN down ON r.previous_response_id = down.id
		)
		SELECT `+ResponseColumns+` FROM responses JOIN down USING (id)
		ORDER BY created_at, tree_depth, id LIMIT $2`)
	// Items per response through the primary key: one short range each, where a
	// statement costs no round trip (SQLite), instead of an IN list its planner may turn
	// into a scan; all at once where it does (PostgreSQL, with an array).
	sqlTurnItems    = SQL(`SELECT response_id, kind, item_id, type, body FROM items WHERE response_id = ? ORDER BY kind, position`)
	sqlTreeItems    = SQL(`SELECT response_id, kind, item_id, type, body FROM items WHERE response_id = ANY (?) ORDER BY response_id, kind, position`)
	sqlUsageBuckets = SQL(`
		SELECT (created_at / ?1) * ?1 AS b, owner, model, COUNT(*),
			CAST(SUM(input_tokens) AS BIGINT), CAST(SUM(output_tokens) AS BIGINT),
			CAST(SUM(cached_tokens) AS BIGINT), CAST(SUM(reasoning_tokens) AS BIGINT)
		FROM responses WHERE created_at >= ?2
		GROUP BY b, owner, model ORDER BY b, owner, model`)
)

// ConsoleResponses lists responses newest first across owners, filtered, without their
// bodies. hasMore says whether another page follows the last row.
func (c Console) ConsoleResponses(ctx context.Context, f storage.ConsoleFilter) ([]*storage.Response, bool, error) {
	limit := f.Limit
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	var conds []string
	w := where{d: c.d}
	add := func(cond string, v any) {
		conds = append(conds, cond+w.arg(v))
	}
	if f.Owner != "" {
		add("owner = ", f.Owner)
	}
	if f.Model != "" {
		add("model = ", f.Model)
	}
	if f.Status != "" {
		add("status = ", string(f.Status))
	}
	if !f.Since.IsZero() {
		add("created_at >= ", f.Since.UnixMilli())
	}
	if !f.Until.IsZero() {
		add("created_at < ", f.Until.UnixMilli())
	}
	if f.AfterID != "" {
		// A row value, which SQLite matches to the index (created_at, id) as one range;
		// the same condition spelt with OR took 9 ms instead of 0.16 ms on a deep page
		// (BenchmarkConsoleResponses).
		conds = append(conds, "(created_at, id) < ("+w.arg(f.AfterCreated.UnixMilli())+", "+w.arg(f.AfterID)+")")
	}
	q := `SELECT ` + consoleColumns + ` FROM responses`
	if len(conds) > 0 {
		q += " WHERE " + strings.Join(conds, " AND ")
	}
	q += " ORDER BY created_at DESC, id DESC LIMIT " + w.arg(limit+1)
	rows, err := queryAll(ctx, c.b.Reader(), ScanResponse, raw(q), w.args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: console list: %w", err)
	}
	out := make([]*storage.Response, len(rows))
	for i := range rows {
		out[i] = &rows[i]
	}
	hasMore := len(out) > limit
	if hasMore {
		out = out[:limit]
	}
	return out, hasMore, nil
}

// ConsoleChain returns the tree id belongs to: from its root (the first ancestor whose
// previous response is absent) every descendant, branches included, in creation order,
// at most MaxConsoleChain of them, with their items, whatever their owner. ErrNotFound
// when id is not stored.
func (c Console) ConsoleChain(ctx context.Context, id string) ([]*storage.ConsoleTurn, error) {
	var root string
	err := c.b.Reader().QueryRow(ctx, sqlChainRoot, id, MaxChainDepth).Scan(&root)
	if errors.Is(err, ErrNoRows) {
		return nil, storage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: console chain %s: %w", id, err)
	}
	rows, err := c.b.Reader().Query(ctx, sqlChainTree, root, storage.MaxConsoleChain)
	if err != nil {
		return nil, fmt.Errorf("storage: console chain %s: %w", id, err)
	}
	var turns []*storage.ConsoleTurn
	byID := map[string]*storage.ConsoleTurn{}
	var ids []string
	for rows.Next() {
		r, err := ScanResponse(rows)
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
	if c.d.arrays {
		if err := c.turnItems(ctx, byID, sqlTreeItems, ids); err != nil {
			return nil, fmt.Errorf("storage: console chain items of %s: %w", id, err)
		}
		return turns, nil
	}
	for _, t := range turns {
		if err := c.turnItems(ctx, byID, sqlTurnItems, t.ID); err != nil {
			return nil, fmt.Errorf("storage: console chain items %s: %w", t.ID, err)
		}
	}
	return turns, nil
}

// turnItems reads items of turns (rows of response_id, kind, item_id, type, body) into
// their turns.
func (c Console) turnItems(ctx context.Context, byID map[string]*storage.ConsoleTurn, s *Stmt, arg any) error {
	rs, err := c.b.Reader().Query(ctx, s, arg)
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		var rid, kind string
		var it storage.Item
		if err := rs.Scan(&rid, &kind, &it.ID, &it.Type, (*[]byte)(&it.JSON)); err != nil {
			return err
		}
		t := byID[rid]
		if kind == "input" {
			t.Input = append(t.Input, it)
		} else {
			t.Output = append(t.Output, it)
		}
	}
	return rs.Err()
}

// ConsoleUsage sums tokens of the responses created since `since`, per owner, model
// and bucket of the given width, oldest bucket first.
func (c Console) ConsoleUsage(ctx context.Context, since time.Time, bucket time.Duration) ([]storage.UsageBucket, error) {
	w := bucket.Milliseconds()
	if w <= 0 {
		return nil, errors.New("storage: console usage: bucket must be positive")
	}
	rs, err := c.b.Reader().Query(ctx, sqlUsageBuckets, w, since.UnixMilli())
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
