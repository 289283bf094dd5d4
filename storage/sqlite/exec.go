package sqlite

import (
	"context"
	"database/sql"
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
