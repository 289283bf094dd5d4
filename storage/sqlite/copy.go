package sqlite

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"hearth/storage"
)

var _ storage.CopySource = (*DB)(nil)

// CopyRows reads table t's rows in the order they were stored (rowid), for `hearth db
// copy`. It runs on the reader connections, so a hearth serving from the file meanwhile
// is not blocked, but the copy is only consistent with hearth stopped.
func (db *DB) CopyRows(t storage.CopyTable) iter.Seq2[[]any, error] {
	return func(yield func([]any, error) bool) {
		ctx := context.Background()
		rows, err := db.r.QueryContext(ctx, `SELECT `+strings.Join(t.Columns, ", ")+` FROM `+t.Name+` ORDER BY rowid`)
		if err != nil {
			yield(nil, fmt.Errorf("storage: read %s: %w", t.Name, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			row := make([]any, len(t.Columns))
			ptrs := make([]any, len(row))
			for i := range row {
				ptrs[i] = &row[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				yield(nil, fmt.Errorf("storage: read %s: %w", t.Name, err))
				return
			}
			if !yield(row, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, fmt.Errorf("storage: read %s: %w", t.Name, err))
		}
	}
}

// CountRows counts the rows of one of storage.CopyTables.
func (db *DB) CountRows(table string) (n int64, err error) {
	if !storage.IsCopyTable(table) {
		return 0, errors.New("storage: not a table a copy moves: " + table)
	}
	err = db.r.QueryRowContext(context.Background(), `SELECT count(*) FROM `+table).Scan(&n)
	return n, err
}
