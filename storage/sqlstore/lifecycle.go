package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"hearth/storage"
	"hearth/storage/record"
)

// A response's life in the store: created in flight with its input (CreateResponse),
// ended with its output (CompleteResponse), or both at once (StoreResponse), and
// failed at startup if a stopped process left it in flight (RecoverInFlight). The
// order of the steps and their checks are written here once; how a step reaches the
// database, where the stores differ in mechanism rather than in SQL, is the store's
// (ResponseWrites): PostgreSQL checks the parent on the server and inserts all items
// with one array statement, so that a creation is one round trip; SQLite checks in
// Go and inserts an item per prepared statement, which costs no round trip there.

// ResponseWrites are the steps of a response's writes that each store does its own
// way. Each runs in the transaction tx of Backend.Pipeline (or Write, for
// FailInFlight).
type ResponseWrites interface {
	// CreateStarts begins a CreateResponse's transaction (PostgreSQL: the commit of a
	// response that is not in the background does not wait for the WAL flush).
	CreateStarts(ctx context.Context, tx Tx, r *storage.NewResponse) error
	// ShareParent checks that r's parent is stored and r.Owner's (ParentMissing
	// otherwise, now or when the transaction ends), and keeps it from being deleted
	// before tx commits.
	ShareParent(ctx context.Context, tx Tx, r *storage.NewResponse) error
	// Replica is the replica a response's row names as its writer (PostgreSQL's
	// replicas lease their in-flight responses), or false where the store has none.
	Replica() (string, bool)
	// InsertItems inserts the items of a response in order, as kind (input, output);
	// there is at least one.
	InsertItems(ctx context.Context, tx Tx, responseID, kind string, items []storage.Item) error
	// CreateError words an error of a transaction that inserted r as the store's
	// (for checks that failed on the server).
	CreateError(err error, r *storage.NewResponse) error
	// LockCompleting locks response id for its completion with f and reads its state
	// (SQLLockResponse) and, where it is read in the same round trip, the journal's
	// next sequence number (SQLNextSeq; -1 when not read).
	LockCompleting(ctx context.Context, tx Tx, id string, f *storage.Final) (row Stored, next int, err error)
	// Checkpoint materialises completed response id's context where its chain is due
	// one (storage.CheckpointInterval).
	Checkpoint(ctx context.Context, tx Tx, id string, f *storage.Final) error
	// FailInFlight fails with error errJSON the responses this process (or replica)
	// left in flight, ending their journals and dropping the checkpoints below them,
	// and answers how many.
	FailInFlight(ctx context.Context, tx Tx, errJSON json.RawMessage) (int, error)
}

// RecoveredError is stored on responses that a stopped process left in flight.
// server_error is the API's code for "our fault"; the message tells the client that
// retrying is fine.
var RecoveredError = json.RawMessage(`{"code":"server_error","message":"hearth stopped before this response finished"}`)

var (
	// The row of a new response, and on PostgreSQL the replica that writes it.
	sqlInsertResponse = Dialects(`INSERT INTO responses
	(id, owner, model, status, background, previous_response_id, request, response, created_at, input_pack)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, `INSERT INTO responses
	(id, owner, model, status, background, previous_response_id, request, response, created_at, input_pack, replica)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`).Prepared()
	sqlDeleteOutput = SQL(`DELETE FROM items WHERE response_id = ? AND kind = 'output'`).Prepared()
	// An empty runtime (?10) keeps the one stored.
	sqlComplete = SQL(`UPDATE responses SET status = ?1, response = ?2, error = ?3,
	input_tokens = ?4, output_tokens = ?5, cached_tokens = ?6, reasoning_tokens = ?7,
	completed_at = ?8, output_pack = ?9, runtime = coalesce(nullif(?10, ''), runtime)
	WHERE id = ?11`).Prepared()
)

// ParentMissing is the error of a response whose parent is not stored, or not its
// owner's: as from LoadChain.
func ParentMissing(r *storage.NewResponse) error {
	return fmt.Errorf("previous response %s: %w", r.PreviousResponseID, storage.ErrNotFound)
}

// CreateResponse stores a response that has just been created (status queued or
// in_progress) together with its input items, in one transaction.
//
// A PreviousResponseID must name a stored response of the same owner: a child is never
// written under a parent that does not exist, or is being deleted. (That also keeps the
// chains acyclic.) The error is then ErrNotFound, as from LoadChain; an id already
// stored gives ErrExists.
func (s Responses) CreateResponse(ctx context.Context, r storage.NewResponse) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("storage: create response %s: %w", r.ID, err)
	}
	err := s.b.Pipeline(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.b.CreateStarts(ctx, tx, &r); err != nil {
			return err
		}
		return s.insert(ctx, tx, &r)
	})
	if err != nil {
		return fmt.Errorf("storage: create response %s: %w", r.ID, s.b.CreateError(err, &r))
	}
	return nil
}

// insert writes the row of new response r and its input items in tx.
func (s Responses) insert(ctx context.Context, tx Tx, r *storage.NewResponse) error {
	created := r.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	if r.PreviousResponseID != "" {
		if err := s.b.ShareParent(ctx, tx, r); err != nil {
			return err
		}
	}
	args := append(make([]any, 0, 11), r.ID, r.Owner, r.Model, string(r.Status), r.Background, NullString(r.PreviousResponseID),
		string(r.Request), NullJSON(r.Body), created.UnixMilli(), record.PackItems(r.Input))
	if replica, ok := s.b.Replica(); ok {
		args = append(args, replica)
	}
	// A store that runs it at once answers an id taken here; a pipelined one when
	// the transaction ends (CreateError).
	if err := tx.Queue(ctx, sqlInsertResponse, args...); err != nil {
		if s.b.Unique(err) {
			return storage.ErrExists
		}
		return err
	}
	return s.insertItems(ctx, tx, r.ID, "input", r.Input)
}

// insertItems stores a response's items as kind (input, output), if it has any.
func (s Responses) insertItems(ctx context.Context, tx Tx, id, kind string, items []storage.Item) error {
	if len(items) == 0 {
		return nil
	}
	return s.b.InsertItems(ctx, tx, id, kind, items)
}

// StoreResponse stores a whole response at once: r as CreateResponse would, then its
// end f as CompleteResponse would, in one transaction (one commit, one fsync instead
// of two). It is for a response nobody can see before it ends: a JSON reply, whose id
// the client learns with the finished response, so no reader needs the in-flight row.
func (s Responses) StoreResponse(ctx context.Context, r storage.NewResponse, f storage.Final) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("storage: store response %s: %w", r.ID, err)
	}
	if err := f.Check(); err != nil {
		return fmt.Errorf("storage: store response %s: %w", r.ID, err)
	}
	err := s.b.Pipeline(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.insert(ctx, tx, &r); err != nil {
			return err
		}
		return s.complete(ctx, tx, r.ID, &f, &r)
	})
	if err != nil {
		return fmt.Errorf("storage: store response %s: %w", r.ID, s.b.CreateError(err, &r))
	}
	return nil
}

// CompleteResponse stores the end of a response: its terminal status, final response
// object, usage, error and all output items, in one transaction, so that a crash leaves
// either the in-flight row or the finished one, never a partial set of items. The row
// is locked (SQLLockResponse), so a concurrent Cancel comes wholly before or after.
//
// The response must be in flight (ErrFinished otherwise), with one exception: a
// response cancelled by Cancel accepts a Final with status cancelled, so the engine can
// store what it produced before it noticed. The server should pass a context that is
// not cancelled when the client disconnects.
func (s Responses) CompleteResponse(ctx context.Context, id string, f storage.Final) error {
	if err := f.Check(); err != nil {
		return fmt.Errorf("storage: complete response %s: %w", id, err)
	}
	err := s.b.Pipeline(ctx, func(ctx context.Context, tx Tx) error {
		if err := s.complete(ctx, tx, id, &f, nil); err != nil {
			return err
		}
		return tx.Notify(ctx, storage.Change{Kind: storage.JournalChanged, ID: id})
	})
	if err != nil {
		return fmt.Errorf("storage: complete response %s: %w", id, err)
	}
	return nil
}

// complete writes the end of response id in tx. fresh is the response's record when
// its row was inserted in this very transaction (StoreResponse): it is in flight, with
// no output, no journal and nothing below it, so those checks are skipped.
func (s Responses) complete(ctx context.Context, tx Tx, id string, f *storage.Final, fresh *storage.NewResponse) error {
	completed := f.CompletedAt
	if completed.IsZero() {
		completed = time.Now()
	}
	var child, parent bool
	next := -1 // the journal's next sequence number, when known here
	if fresh != nil {
		child, next = fresh.PreviousResponseID != "", 0
	} else {
		row, n, err := s.b.LockCompleting(ctx, tx, id, f)
		if err != nil {
			return err
		}
		next, child, parent = n, row.Child, row.Parent
		if !row.Status.InFlight() && !(row.Status == storage.StatusCancelled && f.Status == storage.StatusCancelled) {
			return fmt.Errorf("%w (status %s)", storage.ErrFinished, row.Status)
		}
		if row.Status == storage.StatusCancelled { // output from an earlier call
			if err := tx.Queue(ctx, sqlDeleteOutput, id); err != nil {
				return err
			}
		}
	}
	if parent {
		// Continuations created while it ran hold checkpoints of it as it was.
		if err := tx.LockChains(ctx); err != nil {
			return err
		}
	}
	if err := tx.Queue(ctx, sqlComplete,
		string(f.Status), NullJSON(f.Body), NullJSON(f.Error),
		f.Usage.InputTokens, f.Usage.OutputTokens, f.Usage.CachedTokens, f.Usage.ReasoningTokens,
		completed.UnixMilli(), record.PackItems(f.Output), f.Runtime, id); err != nil {
		return err
	}
	if err := s.insertItems(ctx, tx, id, "output", f.Output); err != nil {
		return err
	}
	if parent {
		if err := DropDescendantContexts(ctx, tx, id); err != nil {
			return err
		}
	}
	if f.EndJournal {
		var err error
		if next >= 0 {
			err = AppendJournalAt(ctx, tx, id, f.Events, next, true, true)
		} else {
			err = AppendJournal(ctx, tx, id, f.Events, true, true)
		}
		if err != nil {
			return err
		}
	}
	if !child {
		return nil // a root is its own checkpoint: nothing to walk
	}
	return s.b.Checkpoint(ctx, tx, id, f)
}

// RecoverInFlight fails every response this process left in flight (queued or
// in_progress) with a server_error, in one transaction, and returns how many it
// changed. Call it once at startup, before serving: nothing will ever complete them.
func (s Responses) RecoverInFlight(ctx context.Context) (int, error) {
	var n int
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) (err error) {
		n, err = s.b.FailInFlight(ctx, tx, RecoveredError)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("storage: recover in-flight responses: %w", err)
	}
	return n, nil
}
