package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"hearth/storage"
)

// The store's errors say what a client can do about them: a database that is down or
// restarting is storage.ErrUnavailable (retry later: the server answers 503 with
// Retry-After), a database whose disk is full is storage.ErrFull (as SQLite's full
// disk). Rather than classify at every return of every method, the store talks to
// PostgreSQL through conns, a thin layer over the pool whose every error has been
// through classify: the methods' code stays the driver's, and a method added later is
// covered without thinking of it.

// classify wraps err in the storage sentinel its cause calls for, or returns it as it
// is. The causes are PostgreSQL's SQLSTATEs where the server answered, and the
// connection's failure where it did not.
func classify(err error) error {
	if err == nil || errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrFull) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The caller's context ended: the caller's business, not the database's state.
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "53100": // disk_full
			return fmt.Errorf("%w: %w", storage.ErrFull, err)
		case unavailableCode(pe.Code):
			return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
		}
		return err
	}
	if connectionLost(err) {
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	return err
}

// unavailableCode reports whether a SQLSTATE says the database cannot serve for now,
// rather than that the statement was wrong.
func unavailableCode(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection_exception and its kin
		return true
	case code == "57P01", // admin_shutdown: the server is stopping
		code == "57P02", // crash_shutdown
		code == "57P03", // cannot_connect_now: starting up or in recovery
		code == "53300", // too_many_connections
		code == "25006": // read_only_sql_transaction: a standby, as after a failover
		return true
	}
	return false
}

// connectionLost reports whether err is the connection failing rather than the server
// answering: no connection could be made, or it broke under a query.
func connectionLost(err error) bool {
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, net.ErrClosed) ||
		// pgconn's "conn closed" and the like: nothing reached the server.
		pgconn.SafeToRetry(err)
}

// conns is the pool with every error classified.
type conns struct{ pool *pgxpool.Pool }

func (c conns) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := c.pool.Exec(ctx, sql, args...)
	return tag, classify(err)
}

func (c conns) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r, err := c.pool.Query(ctx, sql, args...)
	if err != nil {
		return r, classify(err)
	}
	return rows{r}, nil
}

func (c conns) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return row{c.pool.QueryRow(ctx, sql, args...)}
}

func (c conns) Begin(ctx context.Context) (pgx.Tx, error) {
	t, err := c.pool.Begin(ctx)
	if err != nil {
		return nil, classify(err)
	}
	return tx{t}, nil
}

// BeginTx makes conns what pgx.BeginTxFunc takes.
func (c conns) BeginTx(ctx context.Context, opt pgx.TxOptions) (pgx.Tx, error) {
	t, err := c.pool.BeginTx(ctx, opt)
	if err != nil {
		return nil, classify(err)
	}
	return tx{t}, nil
}

func (c conns) Acquire(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := c.pool.Acquire(ctx)
	return conn, classify(err)
}

func (c conns) Ping(ctx context.Context) error { return classify(c.pool.Ping(ctx)) }

func (c conns) Close() { c.pool.Close() }

// tx is a transaction with every error classified.
type tx struct{ pgx.Tx }

func (t tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.Tx.Exec(ctx, sql, args...)
	return tag, classify(err)
}

func (t tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	r, err := t.Tx.Query(ctx, sql, args...)
	if err != nil {
		return r, classify(err)
	}
	return rows{r}, nil
}

func (t tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return row{t.Tx.QueryRow(ctx, sql, args...)}
}

func (t tx) Commit(ctx context.Context) error { return classify(t.Tx.Commit(ctx)) }

func (t tx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	n, err := t.Tx.CopyFrom(ctx, table, columns, src)
	return n, classify(err)
}

type rows struct{ pgx.Rows }

func (r rows) Err() error { return classify(r.Rows.Err()) }

func (r rows) Scan(dest ...any) error { return classify(r.Rows.Scan(dest...)) }

type row struct{ pgx.Row }

func (r row) Scan(dest ...any) error { return classify(r.Row.Scan(dest...)) }
