package sqlite

import (
	"context"
	"database/sql"

	"hearth/storage/sqlstore"
)

// migrator migrates on the writer: one connection, so nothing else writes meanwhile.
// Its statements run on the writer outside a transaction (the migrations table) and
// each migration in a transaction of its own.
type migrator struct {
	conn
	w *sql.DB
}

func (m migrator) InTx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	tx, err := m.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(conn{q: tx, tx: tx}); err != nil {
		return err
	}
	return tx.Commit()
}

// migrate brings the schema of the file up to date (sqlstore/schema/sqlite).
func migrate(ctx context.Context, w *sql.DB) error {
	return sqlstore.Migrate(ctx, migrator{conn: conn{q: w}, w: w}, sqlstore.SQLite)
}
