package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
	"hearth/storage/sqlstore"
)

// backend is this store as the shared SQL layer (storage/sqlstore) sees it: reads on
// the pool, writes in transactions whose changes are told to every replica with
// NOTIFY and whose chain changes take the advisory lock, every error classified
// (unavailable.go).
type backend struct{ db *DB }

var _ sqlstore.Backend = backend{}

// pgConn runs the shared layer's statements in PostgreSQL's text.
type pgConn struct{ q dbtx }

func (c pgConn) Exec(ctx context.Context, s *sqlstore.Stmt, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, s.Postgres(), args...)
	return tag.RowsAffected(), err
}

func (c pgConn) Query(ctx context.Context, s *sqlstore.Stmt, args ...any) (sqlstore.Rows, error) {
	return c.q.Query(ctx, s.Postgres(), args...)
}

func (c pgConn) QueryRow(ctx context.Context, s *sqlstore.Stmt, args ...any) sqlstore.Row {
	return c.q.QueryRow(ctx, s.Postgres(), args...)
}

// pgTx is a write transaction: its changes go out with NOTIFY, which PostgreSQL
// delivers to every replica once it commits.
type pgTx struct{ pgConn }

func (t pgTx) Queue(ctx context.Context, s *sqlstore.Stmt, args ...any) error {
	return queue(ctx, t.q, s.Postgres(), args...)
}
func (t pgTx) Notify(ctx context.Context, c storage.Change) error { return notify(ctx, t.q, c) }
func (t pgTx) ChainsChanged(ctx context.Context) error            { return chainsChanged(ctx, t.q) }
func (t pgTx) LockChains(ctx context.Context) error               { return lockChainsExclusive(ctx, t.q) }

func (b backend) Reader() sqlstore.Querier { return pgConn{b.db.pool} }

// Read sees one snapshot (REPEATABLE READ) of what every replica committed.
func (b backend) Read(ctx context.Context, fn func(context.Context, sqlstore.Querier) error) error {
	return pgx.BeginTxFunc(ctx, b.db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		return fn(ctx, pgConn{tx})
	})
}

func (b backend) Write(ctx context.Context, fn func(context.Context, sqlstore.Tx) error) error {
	return b.db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return fn(ctx, &pgTx{pgConn{tx}})
	})
}

// Pipeline sends the transaction's statements pipelined (pipe.go).
func (b backend) Pipeline(ctx context.Context, fn func(context.Context, sqlstore.Tx) error) error {
	return b.db.writePipelined(ctx, fn)
}

func (backend) Unique(err error) bool { return uniqueViolation(err) }

// SetStatus patches the stored object in Go (fields.go): PostgreSQL has no json_set
// for text, and jsonb would reorder its keys.
func (backend) SetStatus(ctx context.Context, tx sqlstore.Tx, id string, status storage.Status, completed any) error {
	return setStatus(ctx, tx.(*pgTx).q, id, status, completed)
}

// InsertChunks copies the chunks in (COPY: one round trip for any number), after
// deleting any there: a replica that resumed the same file may have stored them first.
func (backend) InsertChunks(ctx context.Context, tx sqlstore.Tx, storeID, fileID string, from int, chunks []storage.NewChunk) error {
	if len(chunks) == 0 {
		return nil
	}
	t := tx.(*pgTx).q.(pgx.Tx)
	if _, err := t.Exec(ctx, `DELETE FROM vector_store_chunks WHERE store_id = $1 AND file_id = $2 AND idx >= $3 AND idx < $4`,
		storeID, fileID, from, from+len(chunks)); err != nil {
		return err
	}
	rows := make([][]any, len(chunks))
	for i, c := range chunks {
		rows[i] = []any{storeID, fileID, from + i, c.Text, storage.EncodeVector(c.Vector)}
	}
	_, err := t.CopyFrom(ctx, pgx.Identifier{"vector_store_chunks"},
		[]string{"store_id", "file_id", "idx", "text", "vector"}, pgx.CopyFromRows(rows))
	return err
}
