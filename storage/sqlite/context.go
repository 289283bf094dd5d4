package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"hearth/storage"
	"hearth/storage/record"
	"hearth/storage/sqlstore"
)

// checkpoint runs in the transaction that completes response id: when id is
// CheckpointInterval(depth) links or more below the nearest checkpoint, it materialises id's
// context (walked from that checkpoint) and drops the older checkpoint, so that a
// linear chain keeps one. A branch from above the newest checkpoint walks further; it
// is rare and stays correct.
func (db *DB) checkpoint(ctx context.Context, tx *sql.Tx, id string, savedPrompt func() []byte, hint, depth int) error {
	every := storage.CheckpointInterval(depth)
	if hint > 0 && hint < every {
		return nil
	}
	var distance int
	var older sql.NullString
	if err := tx.StmtContext(ctx, db.st.distance).QueryRowContext(ctx, id, every).Scan(&distance, &older); err != nil {
		return err
	}
	if distance < every {
		return nil
	}
	row, err := sqlstore.LockResponse(ctx, db.sharedTx(tx), id)
	if err != nil {
		return err
	}
	c, err := walkInTx(ctx, tx, row.Owner, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // a broken chain: nothing to materialise; LoadChain says not found
	}
	if err != nil {
		return err
	}
	var prompt []byte
	if savedPrompt != nil {
		prompt = savedPrompt()
	}
	if _, err := tx.StmtContext(ctx, db.st.putContext).ExecContext(ctx, id, record.EncodeChain(c), newStamp(), prompt); err != nil {
		return err
	}
	if older.Valid {
		if _, err := tx.StmtContext(ctx, db.st.dropContext).ExecContext(ctx, older.String); err != nil {
			return err
		}
	}
	return nil
}

// CheckpointPrompt returns the prompt record saved with checkpoint id (Final.SavedPrompt)
// if it still has stamp (Checkpoint.Stamp); nil when it has none or changed.
func (db *DB) CheckpointPrompt(ctx context.Context, id, stamp string) ([]byte, error) {
	var p []byte
	err := db.r.QueryRowContext(ctx, sqlCheckpointPrompt, id, []byte(stamp)).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, db.seen(fmt.Errorf("storage: saved prompt of %s: %w", id, err))
	}
	return p, nil
}

// newStamp is a new checkpoint's stamp (migration 0011). Random rather than counted:
// it must differ from every stamp a process ever read, across restarts and copies of
// the database, and 128 random bits do.
func newStamp() []byte {
	b := make([]byte, 16)
	rand.Read(b)
	return b
}

// walkInTx loads a chain by walking it, inside a write transaction.
func walkInTx(ctx context.Context, tx *sql.Tx, owner, id string) (*storage.Chain, error) {
	rows, err := tx.QueryContext(ctx, sqlLoadChain, id, owner, sqlstore.MaxChainDepth, true)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return readChain(&sqlRows{rows: rows})
}

// sqlRows adapts database/sql rows to the driver.Rows that readChain reads.
type sqlRows struct {
	rows *sql.Rows
	vals []any
	ptrs []any
}

func (r *sqlRows) Columns() []string {
	cols, _ := r.rows.Columns()
	return cols
}

func (r *sqlRows) Close() error { return r.rows.Close() }

func (r *sqlRows) Next(dest []driver.Value) error {
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return io.EOF
	}
	if r.vals == nil {
		r.vals, r.ptrs = make([]any, len(dest)), make([]any, len(dest))
		for i := range r.vals {
			r.ptrs[i] = &r.vals[i]
		}
	}
	if err := r.rows.Scan(r.ptrs...); err != nil {
		return err
	}
	for i, v := range r.vals {
		if b, ok := v.([]byte); ok {
			v = append([]byte(nil), b...) // Scan's []byte is only valid until Next
		}
		dest[i] = v
	}
	return nil
}
