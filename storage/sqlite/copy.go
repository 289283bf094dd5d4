package sqlite

import (
	"context"
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

// CopySchema reads the database's tables and their columns with their declared
// types, for storage.PlanCopy.
func (db *DB) CopySchema() (storage.CopySchema, error) {
	ctx := context.Background()
	rows, err := db.r.QueryContext(ctx, `SELECT m.name, p.name, lower(p.type) FROM sqlite_master AS m, pragma_table_info(m.name) AS p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid`)
	if err != nil {
		return nil, fmt.Errorf("storage: read the schema: %w", err)
	}
	defer rows.Close()
	schema := storage.CopySchema{}
	for rows.Next() {
		var table string
		var c storage.CopyColumn
		if err := rows.Scan(&table, &c.Name, &c.Type); err != nil {
			return nil, fmt.Errorf("storage: read the schema: %w", err)
		}
		schema[table] = append(schema[table], c)
	}
	return schema, rows.Err()
}
