package sqlstore

import (
	"context"
	"fmt"
	"time"

	"hearth/storage"
)

// States moves stored responses between statuses outside their completion: to
// in_progress, to cancelled.
type States struct{ b Backend }

var (
	// SQLLockResponse reads what a write transaction checks of a response first
	// (Stored), locking its row where rows are: writers of one response take turns.
	SQLLockResponse = SQL(`SELECT owner, status, previous_response_id IS NOT NULL,
		EXISTS (SELECT 1 FROM responses AS c WHERE c.previous_response_id = responses.id)
		FROM responses WHERE id = ?`).ForUpdate().Prepared()
	// SQLDropBelow drops the checkpoints of every response below id (checkpoints
	// hold the chain above them as it was).
	SQLDropBelow = SQL(`WITH RECURSIVE below (id) AS (
		SELECT id FROM responses WHERE previous_response_id = ?1
		UNION
		SELECT r.id FROM responses AS r JOIN below ON r.previous_response_id = below.id
	)
	DELETE FROM contexts WHERE response_id IN (SELECT id FROM below)`).Prepared()
	sqlGetForUpdate = SQL(`SELECT ` + ResponseColumns + ` FROM responses WHERE id = ? AND owner = ?`).ForUpdate().Prepared()
)

// Stored is what a write transaction checks of a stored response first.
type Stored struct {
	Owner  string
	Status storage.Status
	// Child: the response continues another (previous_response_id); Parent: others
	// continue it.
	Child, Parent bool
}

// Scan reads a row of SQLLockResponse; no row is storage.ErrNotFound.
func (r *Stored) Scan(row Row) error {
	var status string
	err := row.Scan(&r.Owner, &status, &r.Child, &r.Parent)
	r.Status = storage.Status(status)
	return notFound(err, storage.ErrNotFound)
}

// LockResponse reads response id with SQLLockResponse.
func LockResponse(ctx context.Context, q Querier, id string) (r Stored, err error) {
	err = r.Scan(q.QueryRow(ctx, SQLLockResponse, id))
	return r, err
}

// DropDescendantContexts drops the checkpoints below response id, in tx.
func DropDescendantContexts(ctx context.Context, tx Tx, id string) error {
	return tx.Queue(ctx, SQLDropBelow, id)
}

// UpdateStatus moves an in-flight response to in_progress or cancelled. Status changes
// made by storage alone patch the stored response object too (Backend.SetStatus), so
// that GET returns an object whose "status" agrees with the row.
func (s States) UpdateStatus(ctx context.Context, id string, status storage.Status) error {
	if status != storage.StatusInProgress && status != storage.StatusCancelled {
		return fmt.Errorf("storage: update status of %s: cannot set %q here", id, status)
	}
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		row, err := LockResponse(ctx, tx, id)
		if err != nil {
			return err
		}
		if !row.Status.InFlight() {
			return fmt.Errorf("%w (status %s)", storage.ErrFinished, row.Status)
		}
		var completed any
		if status.Terminal() {
			completed = time.Now().UnixMilli()
		}
		if err := tx.LockChains(ctx); err != nil {
			return err
		}
		if err := s.b.SetStatus(ctx, tx, id, status, completed); err != nil {
			return err
		}
		if status == storage.StatusCancelled {
			if err := tx.ChainsChanged(ctx); err != nil {
				return err
			}
		}
		return DropDescendantContexts(ctx, tx, id)
	})
	if err != nil {
		return fmt.Errorf("storage: update status of %s: %w", id, err)
	}
	return nil
}

// Cancel moves the owner's response id from queued or in_progress to cancelled,
// atomically, and returns the response as it now is. Cancelling a cancelled response
// returns it unchanged (cancel is idempotent). Cancelling one that finished otherwise
// returns the response and an error wrapping ErrFinished, which the server maps to 400.
// Whether non-background responses may be cancelled is the server's call; Response
// carries Background for it.
func (s States) Cancel(ctx context.Context, owner, id string) (*storage.Response, error) {
	var rec *storage.Response
	var finished error
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if rec, err = ScanResponse(tx.QueryRow(ctx, sqlGetForUpdate, id, owner)); err != nil {
			return err
		}
		switch {
		case rec.Status == storage.StatusCancelled:
			return nil
		case rec.Status.Terminal():
			finished = fmt.Errorf("storage: cancel %s: %w (status %s)", id, storage.ErrFinished, rec.Status)
			return nil
		}
		if err := tx.LockChains(ctx); err != nil {
			return err
		}
		if err := s.b.SetStatus(ctx, tx, id, storage.StatusCancelled, time.Now().UnixMilli()); err != nil {
			return err
		}
		if err := DropDescendantContexts(ctx, tx, id); err != nil {
			return err
		}
		if err := tx.ChainsChanged(ctx); err != nil {
			return err
		}
		if err := tx.Notify(ctx, storage.Change{Kind: storage.ResponseCancelled, ID: id}); err != nil {
			return err
		}
		rec, err = ScanResponse(tx.QueryRow(ctx, sqlGetResponse, id, owner))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("storage: cancel %s: %w", id, err)
	}
	return rec, finished
}

var (
	sqlOwnResponse    = SQL(`SELECT 1 FROM responses WHERE id = ? AND owner = ?`).ForUpdate()
	sqlDeleteResponse = SQL(`DELETE FROM responses WHERE id = ?`)
)

// DeleteResponse deletes the owner's response id and its items, or returns ErrNotFound.
// Responses that continued from it keep their previous_response_id; their chains are
// broken from now on, and LoadChain reports them as not found, as OpenAI does when any
// link of a chain is missing.
func (s States) DeleteResponse(ctx context.Context, owner, id string) error {
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		// The row first, then the chains' lock: every writer takes them in this order.
		var one int
		if err := tx.QueryRow(ctx, sqlOwnResponse, id, owner).Scan(&one); err != nil {
			return notFound(err, storage.ErrNotFound)
		}
		if err := tx.LockChains(ctx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlDeleteResponse, id); err != nil {
			return err
		}
		if err := DropDescendantContexts(ctx, tx, id); err != nil {
			return err
		}
		// Whoever generates it stops, as for a cancel.
		if err := tx.Notify(ctx, storage.Change{Kind: storage.ResponseCancelled, ID: id}); err != nil {
			return err
		}
		return tx.ChainsChanged(ctx)
	})
	if err != nil {
		return fmt.Errorf("storage: delete response %s: %w", id, err)
	}
	return nil
}
