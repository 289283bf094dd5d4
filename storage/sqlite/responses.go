package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"hearth/storage"
	"hearth/storage/sqlstore"
)

// The steps of a response's writes (sqlstore.ResponseWrites), on the single writer:
// a statement costs no round trip here, so the checks run in Go, before the writes
// they guard, and each item is one run of a prepared statement.

// CreateStarts has nothing to do: every commit waits for its fsync.
func (backend) CreateStarts(context.Context, sqlstore.Tx, *storage.NewResponse) error { return nil }

// ShareParent reads the parent in the transaction: the single writer keeps a deletion
// of it out until the commit.
func (backend) ShareParent(ctx context.Context, tx sqlstore.Tx, r *storage.NewResponse) error {
	parent, err := sqlstore.LockResponse(ctx, tx, r.PreviousResponseID)
	if err == nil && parent.Owner != r.Owner {
		return sqlstore.ParentMissing(r)
	}
	if err != nil { // storage.ErrNotFound when it is not stored
		return fmt.Errorf("previous response %s: %w", r.PreviousResponseID, err)
	}
	return nil
}

// Replica: one process owns the file.
func (backend) Replica() (string, bool) { return "", false }

func (b backend) InsertItems(ctx context.Context, tx sqlstore.Tx, responseID, kind string, items []storage.Item) error {
	st := tx.(*writeTx).tx.StmtContext(ctx, b.db.st.insertItem)
	for i, it := range items {
		if _, err := st.ExecContext(ctx, responseID, kind, i, it.ID, it.Type, string(it.JSON)); err != nil {
			return fmt.Errorf("%s item %d: %w", kind, i, err)
		}
	}
	return nil
}

// CreateError: the checks failed in Go, already worded.
func (backend) CreateError(err error, _ *storage.NewResponse) error { return err }

// LockCompleting reads the row; the journal's next number is read when it is needed.
func (backend) LockCompleting(ctx context.Context, tx sqlstore.Tx, id string, _ *storage.Final) (sqlstore.Stored, int, error) {
	row, err := sqlstore.LockResponse(ctx, tx, id)
	return row, -1, err
}

func (b backend) Checkpoint(ctx context.Context, tx sqlstore.Tx, id string, f *storage.Final) error {
	return b.db.checkpoint(ctx, tx.(*writeTx).tx, id, f.SavedPrompt, f.Distance, f.Depth)
}

// FailInFlight fails every in-flight response: one process owns the file, so every
// one of them was left by a process that stopped (it must not run while another
// hearth process serves from the same file, whose in-flight responses it would fail).
func (backend) FailInFlight(ctx context.Context, t sqlstore.Tx, errJSON json.RawMessage) (int, error) {
	tx := t.(*writeTx).tx
	// Materialised contexts below a recovered response hold its in-flight state.
	if _, err := tx.ExecContext(ctx, `WITH RECURSIVE below (id) AS (
		SELECT id FROM responses WHERE previous_response_id IN
			(SELECT id FROM responses WHERE status IN ('queued', 'in_progress'))
		UNION
		SELECT r.id FROM responses AS r JOIN below ON r.previous_response_id = below.id
	)
	DELETE FROM contexts WHERE response_id IN below`); err != nil {
		return 0, err
	}
	// Their journals end here (a replay ends them as the row says), so the
	// retention setting prunes them like any other.
	if _, err := tx.ExecContext(ctx, `INSERT INTO journals (response_id, ended_at)
		SELECT DISTINCT response_id, ? FROM events WHERE response_id IN
			(SELECT id FROM responses WHERE status IN ('queued', 'in_progress'))
		ON CONFLICT (response_id) DO UPDATE SET ended_at = excluded.ended_at`, time.Now().UnixMilli()); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `UPDATE responses
		SET status = 'failed', error = ?1, completed_at = ?2,
		response = CASE WHEN json_valid(response)
			THEN json_set(response, '$.status', 'failed', '$.error', json(?1))
			ELSE response END
		WHERE status IN ('queued', 'in_progress')`,
		string(errJSON), time.Now().UnixMilli())
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return int(n), t.ChainsChanged(ctx)
}

// write runs fn in a transaction on the writer connection. The connection pool has a
// single connection, so concurrent callers queue in database/sql, and BEGIN IMMEDIATE
// (from the DSN) holds the file's write lock for the whole transaction. ctx bounds the
// wait for the connection; fn gets it without its cancellation: a transaction, once
// begun, runs to its end (a few statements, bounded by the busy timeout), and the
// driver runs a statement with a cancellable context in a goroutine of its own, which
// cost a response more than the statement.
func (db *DB) write(ctx context.Context, fn func(context.Context, *sql.Tx) error) (err error) {
	defer func() { err = db.seen(err) }()
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // no-op after Commit
	if err := fn(context.WithoutCancel(ctx), tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	db.writeWorked()
	return nil
}
