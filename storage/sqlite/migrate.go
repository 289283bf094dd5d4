package sqlite

import (
	"context"
	"database/sql"
	"embed"

	"hearth/storage/sqlstore"
)

// The schema's versions, in SQLite's types (sqlstore.LoadMigrations says how they are
// named and applied).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrator migrates on the writer: one connection, so nothing else writes meanwhile.
func migrator(w *sql.DB) sqlstore.Migrator {
	return sqlstore.Migrator{
		Q: conn{q: w},
		InTx: func(ctx context.Context, fn func(sqlstore.Querier) error) error {
			tx, err := w.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if err := fn(conn{q: tx, tx: tx}); err != nil {
				return err
			}
			return tx.Commit()
		},
	}
}

// migrate brings the schema of the file up to date.
func migrate(ctx context.Context, w *sql.DB) error {
	return sqlstore.Migrate(ctx, migrator(w), migrationFiles)
}
