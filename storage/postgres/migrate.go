package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"hearth/storage/sqlstore"
)

// migrateLock is the advisory lock that makes replicas starting at once migrate one
// after the other: the second finds the versions the first applied.
const migrateLock = 0x6865617274680000 // "hearth" and 0

// lockedConn is the one connection that holds the migration lock; each migration's
// transaction runs on it too, inside the lock.
type lockedConn struct {
	pgConn
	conn *pgxpool.Conn
}

func (l lockedConn) InTx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return pgx.BeginFunc(ctx, l.conn, func(tx pgx.Tx) error { return fn(pgConn{tx}) })
}

// migrate brings the schema up to date (sqlstore/schema/postgres). One connection
// holds the session's advisory lock throughout, so concurrent starts apply each
// migration once.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("storage: postgres: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLock)); err != nil {
		return fmt.Errorf("storage: postgres: lock for migrations: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrateLock))
	return sqlstore.Migrate(ctx, lockedConn{pgConn: pgConn{conn}, conn: conn}, sqlstore.Postgres)
}
