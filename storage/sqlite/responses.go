package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"

	"hearth/storage"
	"hearth/storage/record"
	"hearth/storage/sqlstore"
)

// recoveredError is stored on responses that a crash left in flight. server_error is
// the API's code for "our fault"; the message tells the client that retrying is fine.
var recoveredError = json.RawMessage(`{"code":"server_error","message":"hearth stopped before this response finished"}`)

// CreateResponse stores a response that has just been created (status queued or
// in_progress) together with its input items, in one transaction.
//
// A PreviousResponseID must name a stored response of the same owner: a child is never
// written under a parent that does not exist. (That also keeps the chains acyclic.)
// The error is then ErrNotFound, as from LoadChain; an id already stored gives
// ErrExists.
func (db *DB) CreateResponse(ctx context.Context, r storage.NewResponse) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("storage: create response %s: %w", r.ID, err)
	}
	if err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return db.insertResponse(ctx, tx, r) }); err != nil {
		return fmt.Errorf("storage: create response %s: %w", r.ID, err)
	}
	return nil
}

// insertResponse writes the row of a new response and its input items in tx.
func (db *DB) insertResponse(ctx context.Context, tx *sql.Tx, r storage.NewResponse) error {
	created := r.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	if r.PreviousResponseID != "" {
		parent, err := sqlstore.LockResponse(ctx, db.sharedTx(tx), r.PreviousResponseID)
		if err != nil {
			return fmt.Errorf("previous response %s: %w", r.PreviousResponseID, err)
		}
		if parent.Owner != r.Owner {
			return fmt.Errorf("previous response %s: %w", r.PreviousResponseID, storage.ErrNotFound)
		}
	}
	if _, err := tx.StmtContext(ctx, db.st.insertResponse).ExecContext(ctx,
		r.ID, r.Owner, r.Model, string(r.Status), r.Background, sqlstore.NullString(r.PreviousResponseID),
		string(r.Request), sqlstore.NullJSON(r.Body), created.UnixMilli(), record.PackItems(r.Input)); err != nil {
		var se sqlite3.Error
		if errors.As(err, &se) && (se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey || se.ExtendedCode == sqlite3.ErrConstraintUnique) {
			return storage.ErrExists // the id is taken
		}
		return err
	}
	return insertItems(ctx, tx.StmtContext(ctx, db.st.insertItem), r.ID, "input", r.Input)
}

// StoreResponse stores a whole response at once: r as CreateResponse would, then its
// end f as CompleteResponse would, in one transaction (one commit, one fsync instead
// of two). It is for a response nobody can see before it ends: a JSON reply, whose id
// the client learns with the finished response, so no reader needs the in-flight row.
func (db *DB) StoreResponse(ctx context.Context, r storage.NewResponse, f storage.Final) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("storage: store response %s: %w", r.ID, err)
	}
	if err := f.Check(); err != nil {
		return fmt.Errorf("storage: store response %s: %w", r.ID, err)
	}
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := db.insertResponse(ctx, tx, r); err != nil {
			return err
		}
		return db.completeInTx(ctx, tx, r.ID, f, &r)
	})
	if err != nil {
		return fmt.Errorf("storage: store response %s: %w", r.ID, err)
	}
	return nil
}

// CompleteResponse stores the end of a response: its terminal status, final response
// object, usage, error and all output items, in one transaction, so that a crash leaves
// either the in-flight row or the finished one, never a partial set of items.
//
// The response must be in flight (ErrFinished otherwise), with one exception: a
// response cancelled by Cancel accepts a Final with status cancelled, so the engine can
// store what it produced before it noticed. The server should pass a context that is
// not cancelled when the client disconnects.
func (db *DB) CompleteResponse(ctx context.Context, id string, f storage.Final) error {
	if err := f.Check(); err != nil {
		return fmt.Errorf("storage: complete response %s: %w", id, err)
	}
	if err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return db.completeInTx(ctx, tx, id, f, nil) }); err != nil {
		return fmt.Errorf("storage: complete response %s: %w", id, err)
	}
	db.changes.Tell(storage.Change{Kind: storage.JournalChanged, ID: id})
	return nil
}

// completeInTx writes the end of response id in tx. fresh is the response's record
// when its row was inserted in this very transaction (StoreResponse): it is in
// flight, with no output and nothing below it, so those checks are skipped.
func (db *DB) completeInTx(ctx context.Context, tx *sql.Tx, id string, f storage.Final, fresh *storage.NewResponse) error {
	completed := f.CompletedAt
	if completed.IsZero() {
		completed = time.Now()
	}
	var child, parent bool
	if fresh != nil {
		child = fresh.PreviousResponseID != ""
	} else {
		row, err := sqlstore.LockResponse(ctx, db.sharedTx(tx), id)
		if err != nil {
			return err
		}
		status := row.Status
		child, parent = row.Child, row.Parent
		if !status.InFlight() && !(status == storage.StatusCancelled && f.Status == storage.StatusCancelled) {
			return fmt.Errorf("%w (status %s)", storage.ErrFinished, status)
		}
		// Only a cancelled response can already have output (from an earlier call).
		if status == storage.StatusCancelled {
			if _, err := tx.StmtContext(ctx, db.st.deleteOutput).ExecContext(ctx, id); err != nil {
				return err
			}
		}
	}
	if _, err := tx.StmtContext(ctx, db.st.complete).ExecContext(ctx,
		string(f.Status), sqlstore.NullJSON(f.Body), sqlstore.NullJSON(f.Error),
		f.Usage.InputTokens, f.Usage.OutputTokens, f.Usage.CachedTokens, f.Usage.ReasoningTokens,
		completed.UnixMilli(), record.PackItems(f.Output), f.Runtime, id); err != nil {
		return err
	}
	if err := insertItems(ctx, tx.StmtContext(ctx, db.st.insertItem), id, "output", f.Output); err != nil {
		return err
	}
	if parent { // continuations created while it ran hold checkpoints of it as it was
		if err := sqlstore.DropDescendantContexts(ctx, db.sharedTx(tx), id); err != nil {
			return err
		}
	}
	if f.EndJournal {
		if err := sqlstore.AppendJournal(ctx, db.sharedTx(tx), id, f.Events, true, true); err != nil {
			return err
		}
	}
	if !child {
		return nil // a root is its own checkpoint: nothing to walk
	}
	return db.checkpoint(ctx, tx, id, f.SavedPrompt, f.Distance, f.Depth)
}

// RecoverInFlight marks every response still queued or in_progress as failed with a
// server_error, in one transaction, and returns how many it changed. Call it once at
// startup, before serving: such rows were left by a process that stopped without
// finishing them, and nothing will ever complete them. It must not run while another
// hearth process serves from the same file, whose in-flight responses it would fail.
func (db *DB) RecoverInFlight(ctx context.Context) (int, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// Materialised contexts below a recovered response hold its in-flight state.
		if _, err := tx.ExecContext(ctx, `WITH RECURSIVE below (id) AS (
			SELECT id FROM responses WHERE previous_response_id IN
				(SELECT id FROM responses WHERE status IN ('queued', 'in_progress'))
			UNION
			SELECT r.id FROM responses AS r JOIN below ON r.previous_response_id = below.id
		)
		DELETE FROM contexts WHERE response_id IN below`); err != nil {
			return err
		}
		// Their journals end here (a replay ends them as the row says), so the
		// retention setting prunes them like any other.
		if _, err := tx.ExecContext(ctx, `INSERT INTO journals (response_id, ended_at)
			SELECT DISTINCT response_id, ? FROM events WHERE response_id IN
				(SELECT id FROM responses WHERE status IN ('queued', 'in_progress'))
			ON CONFLICT (response_id) DO UPDATE SET ended_at = excluded.ended_at`, time.Now().UnixMilli()); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE responses
			SET status = 'failed', error = ?1, completed_at = ?2,
			response = CASE WHEN json_valid(response)
				THEN json_set(response, '$.status', 'failed', '$.error', json(?1))
				ELSE response END
			WHERE status IN ('queued', 'in_progress')`,
			string(recoveredError), time.Now().UnixMilli())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("storage: recover in-flight responses: %w", err)
	}
	db.chainsChanged()
	return int(n), nil
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

func insertItems(ctx context.Context, st *sql.Stmt, responseID, kind string, items []storage.Item) error {
	for i, it := range items {
		if _, err := st.ExecContext(ctx, responseID, kind, i, it.ID, it.Type, string(it.JSON)); err != nil {
			return fmt.Errorf("%s item %d: %w", kind, i, err)
		}
	}
	return nil
}
