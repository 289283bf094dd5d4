package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
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
