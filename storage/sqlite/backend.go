package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/mattn/go-sqlite3"

	"hearth/storage"
	"hearth/storage/sqlstore"
)

// backend is this store as the shared SQL layer (storage/sqlstore) sees it: reads on
// the read pool, writes on the single writer, changes told in-process after the
// commit, and every error through seen (corruption, a full disk).
type backend struct{ db *DB }

var _ sqlstore.Backend = backend{}

// querier is what database/sql runs statements on: the read pool or a transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// conn runs the shared layer's statements in SQLite's text, those declared Prepared
// through the statement prepared at Open on its pool (statements.go). Its errors go
// through the store's seen (none before the store is open: migrations).
type conn struct {
	db *DB
	q  querier
	// tx is q when it is a transaction; writer when its pool is the writer.
	tx     *sql.Tx
	writer bool
}

// stmt is s prepared for c, or nil.
func (c conn) stmt(ctx context.Context, s *sqlstore.Stmt) *sql.Stmt {
	i := s.Index()
	if i < 0 || c.db == nil {
		return nil
	}
	st := c.db.st.shared[i].r
	if c.writer {
		st = c.db.st.shared[i].w
	}
	if c.tx != nil {
		return c.tx.StmtContext(ctx, st)
	}
	return st
}

func (c conn) seen(err error) error {
	if c.db == nil {
		return err
	}
	return c.db.seen(err)
}

func (c conn) Exec(ctx context.Context, s *sqlstore.Stmt, args ...any) (int64, error) {
	var res sql.Result
	var err error
	if st := c.stmt(ctx, s); st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = c.q.ExecContext(ctx, s.SQLite(), args...)
	}
	if err != nil {
		return 0, c.seen(err)
	}
	n, err := res.RowsAffected()
	return n, c.seen(err)
}

func (c conn) Query(ctx context.Context, s *sqlstore.Stmt, args ...any) (sqlstore.Rows, error) {
	var r *sql.Rows
	var err error
	if st := c.stmt(ctx, s); st != nil {
		r, err = st.QueryContext(ctx, args...)
	} else {
		r, err = c.q.QueryContext(ctx, s.SQLite(), args...)
	}
	if err != nil {
		return nil, c.seen(err)
	}
	return liteRows{r, c}, nil
}

func (c conn) QueryRow(ctx context.Context, s *sqlstore.Stmt, args ...any) sqlstore.Row {
	if st := c.stmt(ctx, s); st != nil {
		return liteRow{st.QueryRowContext(ctx, args...), c}
	}
	return liteRow{c.q.QueryRowContext(ctx, s.SQLite(), args...), c}
}

type liteRows struct {
	*sql.Rows
	c conn
}

func (r liteRows) Close()                 { r.Rows.Close() }
func (r liteRows) Scan(dest ...any) error { return r.c.seen(r.Rows.Scan(dest...)) }
func (r liteRows) Err() error             { return r.c.seen(r.Rows.Err()) }

type liteRow struct {
	r *sql.Row
	c conn
}

func (r liteRow) Scan(dest ...any) error {
	return r.c.seen(r.r.Scan(dest...))
}

// writeTx is a transaction of the single writer. What it tells and the chain epoch
// move once it commits: one process owns the file, so its watchers are in-process.
type writeTx struct {
	conn
	changes []storage.Change
	chains  bool
}

// sharedTx is tx, a transaction of the writer, for the shared layer's statements
// inside this store's own.
func (db *DB) sharedTx(tx *sql.Tx) *writeTx {
	return &writeTx{conn: conn{db: db, q: tx, tx: tx, writer: true}}
}

// Queue runs at once: a statement costs no round trip here.
func (t *writeTx) Queue(ctx context.Context, s *sqlstore.Stmt, args ...any) error {
	_, err := t.Exec(ctx, s, args...)
	return err
}

func (t *writeTx) Notify(_ context.Context, c storage.Change) error {
	t.changes = append(t.changes, c)
	return nil
}

func (t *writeTx) ChainsChanged(context.Context) error { t.chains = true; return nil }

// LockChains has nothing to do: the single writer keeps every other write out.
func (t *writeTx) LockChains(context.Context) error { return nil }

func (b backend) Reader() sqlstore.Querier { return conn{db: b.db, q: b.db.r} }

func (b backend) Read(ctx context.Context, fn func(context.Context, sqlstore.Querier) error) error {
	tx, err := b.db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return b.db.seen(err)
	}
	defer tx.Rollback()
	return fn(ctx, conn{db: b.db, q: tx, tx: tx})
}

func (b backend) Write(ctx context.Context, fn func(context.Context, sqlstore.Tx) error) error {
	var t *writeTx
	err := b.db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		t = b.db.sharedTx(tx)
		return fn(ctx, t)
	})
	if err != nil {
		return err
	}
	if t.chains {
		b.db.chainsChanged()
	}
	for _, c := range t.changes {
		b.db.changes.Tell(c)
	}
	return nil
}

// Pipeline is Write: statements cost no round trip here.
func (b backend) Pipeline(ctx context.Context, fn func(context.Context, sqlstore.Tx) error) error {
	return b.Write(ctx, fn)
}

// Unique reports a UNIQUE or PRIMARY KEY constraint's violation.
func (backend) Unique(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey)
}

// SetStatus patches the stored object with json_set, through the statement
// prepared at Open.
func (b backend) SetStatus(ctx context.Context, tx sqlstore.Tx, id string, status storage.Status, completed any) error {
	_, err := tx.(*writeTx).tx.StmtContext(ctx, b.db.st.setStatus).ExecContext(ctx, string(status), completed, id)
	return err
}

// InsertChunks inserts with one statement prepared for the transaction, run per chunk:
// SQLite runs in-process, so a statement costs no round trip.
func (b backend) InsertChunks(ctx context.Context, tx sqlstore.Tx, storeID, fileID string, from int, chunks []storage.NewChunk) error {
	stmt, err := tx.(*writeTx).tx.PrepareContext(ctx, `INSERT OR REPLACE INTO vector_store_chunks (store_id, file_id, idx, text, vector) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, c := range chunks {
		if _, err := stmt.ExecContext(ctx, storeID, fileID, from+i, c.Text, storage.EncodeVector(c.Vector)); err != nil {
			return err
		}
	}
	return nil
}
