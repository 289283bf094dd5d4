package sqlstore

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"hearth/storage"
)

// Copy reads a store's tables whole, for `hearth db copy` (storage.CopySource): its
// source side, and the check of what a copy wrote. Writing a copy is each store's
// own (PostgreSQL's COPY); SQLite is only ever a source.
type Copy struct {
	b Backend
	d *Dialect
}

// CopySchema reads the database's tables and their columns with their declared
// types, for storage.PlanCopy.
func (c Copy) CopySchema() (storage.CopySchema, error) {
	rows, err := c.b.Reader().Query(context.Background(), c.d.schema)
	if err != nil {
		return nil, fmt.Errorf("storage: read the schema: %w", err)
	}
	defer rows.Close()
	schema := storage.CopySchema{}
	for rows.Next() {
		var table string
		var col storage.CopyColumn
		if err := rows.Scan(&table, &col.Name, &col.Type); err != nil {
			return nil, fmt.Errorf("storage: read the schema: %w", err)
		}
		schema[table] = append(schema[table], col)
	}
	return schema, rows.Err()
}

// CopyRows reads table t's rows, in the order they were stored where the store keeps
// one (SQLite's rowid), else in none (storage.DigestRows does not need one). It runs on
// the read pool, so a hearth serving meanwhile is not blocked, but the copy is only
// consistent with hearth stopped.
func (c Copy) CopyRows(t storage.CopyTable) iter.Seq2[[]any, error] {
	return func(yield func([]any, error) bool) {
		ctx := context.Background()
		cols := make([]string, len(t.Columns))
		for i, col := range t.Columns {
			cols[i] = quote(col)
		}
		rows, err := c.b.Reader().Query(ctx, raw(`SELECT `+strings.Join(cols, ", ")+` FROM `+quote(t.Name)+c.d.storedOrder))
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

// quote is name as an SQL identifier, which both stores read in double quotes.
func quote(name string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(name, "\x00", ""), `"`, `""`) + `"`
}
