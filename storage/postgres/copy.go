package postgres

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
)

// CopyResult is what CopyFrom moved: the rows written per table, and the rows it left
// out on purpose (Skipped: storage.CopySkips).
type CopyResult struct {
	Rows    map[string]int64
	Skipped map[string]int64
}

// PlanCopyFrom is storage.PlanCopy of src's schema and this database's: what a copy
// from src moves, or why it cannot (storage.ErrCannotCopy). It writes nothing.
func (db *DB) PlanCopyFrom(src storage.CopySource) ([]storage.CopyTable, error) {
	from, err := src.CopySchema()
	if err != nil {
		return nil, err
	}
	to, err := db.CopySchema()
	if err != nil {
		return nil, err
	}
	return storage.PlanCopy(from, to)
}

// CopyFrom copies the tables of plan (PlanCopyFrom) from src into this database in
// one transaction: either all of it is there afterwards or, on any error, none of it.
// The database must hold no responses, conversations, keys, files or vector stores
// unless addTo is set; with it set, a record whose id both hold fails the copy (and
// the copy changes nothing). A response still in flight in the source fails it too:
// its hearth must be stopped, and started and stopped once if it crashed, so that its
// responses are settled. The chain epoch moves, so that a replica already running
// drops any chain it holds.
func (db *DB) CopyFrom(ctx context.Context, src storage.CopySource, plan []storage.CopyTable, addTo bool) (*CopyResult, error) {
	res := &CopyResult{Rows: map[string]int64{}, Skipped: map[string]int64{}}
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := lockChainsExclusive(ctx, tx); err != nil {
			return err
		}
		if !addTo {
			var held bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM responses) OR EXISTS (SELECT 1 FROM conversations)
				OR EXISTS (SELECT 1 FROM api_keys) OR EXISTS (SELECT 1 FROM files) OR EXISTS (SELECT 1 FROM vector_stores)`).Scan(&held); err != nil {
				return err
			}
			if held {
				return storage.ErrNotEmpty
			}
		}
		for _, t := range plan {
			rows, skipped, err := copyTable(ctx, tx, t, src.CopyRows(t))
			if err != nil {
				return fmt.Errorf("storage: copy %s: %w", t.Name, err)
			}
			res.Rows[t.Name], res.Skipped[t.Name] = rows, skipped
		}
		return chainsChanged(ctx, tx)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// copyTable streams one table's rows into tx with COPY, converting what PostgreSQL's
// types want.
func copyTable(ctx context.Context, tx pgx.Tx, t storage.CopyTable, src iter.Seq2[[]any, error]) (rows, skipped int64, err error) {
	next, stop := iter.Pull2(src)
	defer stop()
	status := -1
	if t.Name == "responses" {
		status = slices.Index(t.Columns, "status")
	}
	var fail error
	rows, err = tx.CopyFrom(ctx, pgx.Identifier{t.Name}, t.Columns, pgx.CopyFromFunc(func() ([]any, error) {
		for {
			row, err, ok := next()
			if !ok {
				return nil, nil
			}
			if err != nil {
				fail = err
				return nil, err
			}
			if storage.CopySkips(t, row) {
				skipped++
				continue
			}
			if status >= 0 {
				if s, _ := row[status].(string); !storage.Status(s).Settled() {
					fail = fmt.Errorf("response %v is still %s in the source: stop its hearth (start and stop it once if it crashed) and copy again", row[0], s)
					return nil, fail
				}
			}
			for i, typ := range t.Types {
				if n, ok := row[i].(int64); ok && typ == "boolean" {
					row[i] = n != 0
				}
			}
			return row, nil
		}
	}))
	if fail != nil {
		return 0, 0, fail
	}
	return rows, skipped, err
}
