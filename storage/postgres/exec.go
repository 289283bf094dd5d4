package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
)

// execOne runs a statement that must change a row, and answers notFound (or
// storage.ErrExists, for an insert that conflicts) when it changed none.
func execOne(ctx context.Context, tx pgx.Tx, notFound error, query string, args ...any) error {
	tag, err := tx.Exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return notFound
	}
	return nil
}

// queryAll runs a query on the pool and reads every row it returns with scan.
func queryAll[T any](ctx context.Context, db *DB, scan func(storage.RowScanner) (*T, error), query string, args ...any) ([]T, error) {
	rows, err := db.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return storage.ScanAll(rows, scan)
}
