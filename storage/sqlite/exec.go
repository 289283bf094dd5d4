package sqlite

import (
	"context"
	"database/sql"

	"hearth/storage"
)

// execOne runs a statement that must change a row, and answers notFound (or
// storage.ErrExists, for an insert that conflicts) when it changed none.
func execOne(ctx context.Context, tx *sql.Tx, notFound error, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return notFound
	}
	return nil
}

// queryAll runs a query on the read pool and reads every row it returns with scan.
func queryAll[T any](ctx context.Context, db *DB, scan func(storage.RowScanner) (*T, error), query string, args ...any) ([]T, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return storage.ScanAll(rows, scan)
}
