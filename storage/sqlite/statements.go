package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"hearth/storage/sqlstore"
)

// statements are prepared once at Open. database/sql prepares each again, lazily, on
// every pool connection that runs it and keeps it there; inside a transaction
// tx.StmtContext reuses the one already prepared on the writer connection. So the hot
// paths never re-parse SQL. (sqlLoadChain runs on the driver connection, whose own
// statement cache keeps it prepared; see LoadChain.)
type statements struct {
	// writer
	insertItem  *sql.Stmt
	setStatus   *sql.Stmt
	distance    *sql.Stmt
	putContext  *sql.Stmt
	dropContext *sql.Stmt

	// readers
	hasKeys    *sql.Stmt
	lookupItem *sql.Stmt

	// shared are the shared layer's statements declared Prepared, by their Index,
	// prepared on the writer and on the read pool.
	shared []struct{ w, r *sql.Stmt }

	all []*sql.Stmt
}

const (
	sqlInsertItem = `INSERT INTO items (response_id, kind, position, item_id, type, body)
	VALUES (?, ?, ?, ?, ?, ?)`

	// Status changes made by storage alone patch the stored response object too, so
	// that GET returns an object whose "status" agrees with the row.
	sqlSetStatus = `UPDATE responses SET status = ?1, completed_at = ?2,
	response = CASE WHEN json_valid(response) THEN json_set(response, '$.status', ?1) ELSE response END
	WHERE id = ?3`

	sqlGet = `SELECT ` + sqlstore.ResponseColumns + ` FROM responses WHERE id = ? AND owner = ?`

	// The chain is walked upwards from the requested response through
	// previous_response_id, one lookup per link, until it reaches the root or a
	// checkpoint: a response whose whole context is materialised (context.go), which
	// the walk takes in one piece. Ancestors must have the same owner: the walk stops at
	// the first missing or foreign one, and the caller sees the gap as a parent on the
	// deepest link found. ?3 bounds the depth so that a cycle (only possible if a
	// deleted id were reused) cannot loop forever.
	//
	// Loading costs per row and per column (cgo calls, driver values), so each link is
	// one row carrying its items packed (pack.go). The walk carries only whether a link
	// is a checkpoint: a context blob in the recursive queue was copied several times
	// over, and tripled the load. All rows have nine columns:
	//   - one row per link: depth, has_parent, id, model, status, input_pack,
	//     output_pack, checkpoint context, checkpoint stamp (both NULL but for the
	//     deepest link, at most)
	//   - one request row:  -1, NULL, NULL, NULL, NULL, request, NULL, NULL, NULL
	// ?4 false leaves out the context of a stamped checkpoint (migration 0011): the
	// caller may hold it decoded already (LoadChainTail), and reads it otherwise.
	sqlLoadChain = `WITH RECURSIVE chain (depth, id, previous_response_id, model, status, input_pack, output_pack, checkpoint) AS (
		SELECT 0, id, previous_response_id, model, status, input_pack, output_pack,
			EXISTS (SELECT 1 FROM contexts WHERE contexts.response_id = responses.id)
		FROM responses WHERE id = ?1 AND owner = ?2
		UNION ALL
		SELECT chain.depth + 1, r.id, r.previous_response_id, r.model, r.status, r.input_pack, r.output_pack,
			EXISTS (SELECT 1 FROM contexts WHERE contexts.response_id = r.id)
		FROM chain JOIN responses AS r ON r.id = chain.previous_response_id
		WHERE NOT chain.checkpoint AND r.owner = ?2 AND chain.depth < ?3
	)
	SELECT depth, previous_response_id IS NOT NULL, id, model, status, input_pack, output_pack,
		CASE WHEN checkpoint THEN (SELECT CASE WHEN ?4 OR contexts.stamp IS NULL THEN contexts.context END
			FROM contexts WHERE contexts.response_id = chain.id) END,
		CASE WHEN checkpoint THEN (SELECT contexts.stamp FROM contexts WHERE contexts.response_id = chain.id) END
	FROM chain
	UNION ALL
	SELECT -1, NULL, NULL, NULL, NULL, request, NULL, NULL, NULL FROM responses WHERE id = ?1 AND owner = ?2`

	// The context of checkpoint ?1 if it still has stamp ?2.
	sqlStampedContext = `SELECT context FROM contexts WHERE response_id = ?1 AND stamp = ?2`

	// The saved prompt of checkpoint ?1 if it still has stamp ?2.
	sqlCheckpointPrompt = `SELECT prompt FROM contexts WHERE response_id = ?1 AND stamp = ?2`

	// How far up from ?1 the nearest checkpoint is: the number of links walked and the
	// checkpoint's id (NULL when the walk reached the root without one).
	sqlCheckpointDistance = `WITH RECURSIVE chain (depth, id, previous_response_id, checkpoint) AS (
		SELECT 0, id, previous_response_id, EXISTS (SELECT 1 FROM contexts WHERE response_id = responses.id)
		FROM responses WHERE id = ?1
		UNION ALL
		SELECT chain.depth + 1, r.id, r.previous_response_id, EXISTS (SELECT 1 FROM contexts WHERE response_id = r.id)
		FROM chain JOIN responses AS r ON r.id = chain.previous_response_id
		WHERE NOT chain.checkpoint AND chain.depth < ?2
	)
	SELECT max(depth), (SELECT id FROM chain WHERE checkpoint) FROM chain`

	sqlHasKeys = `SELECT EXISTS (SELECT 1 FROM api_keys)`

	sqlPutContext = `INSERT OR REPLACE INTO contexts (response_id, context, stamp, prompt) VALUES (?, ?, ?, ?)`

	sqlDropContext = `DELETE FROM contexts WHERE response_id = ?`

	// The materialised contexts of every response below ?1.
)

func (s *statements) prepare(ctx context.Context, w, r *sql.DB) error {
	for _, p := range []struct {
		dst  **sql.Stmt
		db   *sql.DB
		text string
	}{
		{&s.insertItem, w, sqlInsertItem},
		{&s.setStatus, w, sqlSetStatus},
		{&s.distance, w, sqlCheckpointDistance},
		{&s.putContext, w, sqlPutContext},
		{&s.dropContext, w, sqlDropContext},
		{&s.hasKeys, r, sqlHasKeys},
		{&s.lookupItem, r, sqlLookupItem},
	} {
		st, err := p.db.PrepareContext(ctx, p.text)
		if err != nil {
			return fmt.Errorf("storage: prepare: %w\n%s", err, p.text)
		}
		*p.dst = st
		s.all = append(s.all, st)
	}
	// The shared layer's hot statements, on both pools: a transaction of either may
	// run them (conn.stmt).
	for _, q := range sqlstore.PreparedStatements() {
		var p struct{ w, r *sql.Stmt }
		var err error
		if p.w, err = w.PrepareContext(ctx, q.SQLite()); err == nil {
			s.all = append(s.all, p.w)
			if p.r, err = r.PrepareContext(ctx, q.SQLite()); err == nil {
				s.all = append(s.all, p.r)
			}
		}
		if err != nil {
			return fmt.Errorf("storage: prepare: %w\n%s", err, q.SQLite())
		}
		s.shared = append(s.shared, p)
	}
	return nil
}

func (s *statements) close() error {
	var err error
	for _, st := range s.all {
		err = errors.Join(err, st.Close())
	}
	s.all = nil
	return err
}
