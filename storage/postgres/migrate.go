package postgres

import (
	"context"
	"embed"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"hearth/storage/sqlstore"
)

// The schema's versions, in PostgreSQL's types (sqlstore.LoadMigrations says how
// they are named and applied).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLock is the advisory lock that makes replicas starting at once migrate one
// after the other: the second finds the versions the first applied.
const migrateLock = 0x6865617274680000 // "hearth" and 0

// migrate brings the schema up to date. One connection holds the session's advisory
// lock throughout, so concurrent starts apply each migration once.
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
	return sqlstore.Migrate(ctx, sqlstore.Migrator{
		Q: pgConn{conn},
		InTx: func(ctx context.Context, fn func(sqlstore.Querier) error) error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return fn(pgConn{tx}) })
		},
	}, migrationFiles)
}
