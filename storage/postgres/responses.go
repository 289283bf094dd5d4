package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"hearth/storage"
	"hearth/storage/record"
	"hearth/storage/sqlstore"
)

// recoveredError is stored on responses that a stopped replica left in flight.
var recoveredError = json.RawMessage(`{"code":"server_error","message":"hearth stopped before this response finished"}`)

// CreateResponse stores a new in-flight response with its input items, atomically. The
// parent (PreviousResponseID) is read FOR SHARE: a deletion of it waits for this
// transaction, or this one finds it gone, so no child is written under a parent that
// is being deleted. It is one round trip: the statements and the commit go together,
// the checks failing on the server (insertResponse).
//
// A response that is not in the background is committed without waiting for the WAL
// flush (synchronous_commit off for this transaction, unless the URL sets
// synchronous_commit): its completion's commit does wait, and it flushes the WAL up to
// itself, so a response that completed is as durable as any, and a crash of
// PostgreSQL loses at most the creation of a response that was still running (whose
// stream then failed anyway). A background response's id is the client's only handle
// on it, so its creation waits for the flush as every other write does.
func (db *DB) CreateResponse(ctx context.Context, r storage.NewResponse) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("storage: create response %s: %w", r.ID, err)
	}
	err := db.writePipelined(ctx, func(ctx context.Context, tx *pipe) error {
		if !r.Background && db.asyncCreate {
			tx.batch.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
		}
		return db.insertResponse(ctx, tx, r)
	})
	if err != nil {
		return fmt.Errorf("storage: create response %s: %w", r.ID, insertError(err, r))
	}
	return nil
}

// insertResponse queues new response r and its input items on a pipe. Its checks (the
// parent there and the owner's, the id not taken) fail on the server, aborting the
// transaction, so that nothing waits for their answers in Go: insertError words
// their errors.
func (db *DB) insertResponse(ctx context.Context, tx *pipe, r storage.NewResponse) error {
	created := r.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	if r.PreviousResponseID != "" {
		tx.batch.Queue(`SELECT hearth_share_parent($1, $2)`, r.PreviousResponseID, r.Owner)
	}
	tx.batch.Queue(`INSERT INTO responses
		(id, owner, model, status, background, previous_response_id, request, response, created_at, input_pack, replica)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		r.ID, r.Owner, r.Model, string(r.Status), r.Background, sqlstore.NullString(r.PreviousResponseID),
		string(r.Request), sqlstore.NullJSON(r.Body), created.UnixMilli(), record.PackItems(r.Input), db.replica)
	return insertItems(ctx, tx, r.ID, "input", r.Input)
}

// insertError words the errors of insertResponse's checks as the store's: a parent
// missing or another owner's (hearth_share_parent's no_data_found), an id taken.
func insertError(err error, r storage.NewResponse) error {
	var pe *pgconn.PgError
	switch {
	case !errors.As(err, &pe):
		return err
	case pe.Code == "P0002":
		return fmt.Errorf("previous response %s: %w", r.PreviousResponseID, storage.ErrNotFound)
	case uniqueViolation(err) && pe.ConstraintName == "responses_pkey":
		return storage.ErrExists
	}
	return err
}

func insertItems(ctx context.Context, tx dbtx, responseID, kind string, items []storage.Item) error {
	if len(items) == 0 {
		return nil
	}
	ids, types, bodies := make([]string, len(items)), make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		ids[i], types[i], bodies[i] = it.ID, it.Type, string(it.JSON)
	}
	// One statement for all items: positions are their order in the arrays.
	err := queue(ctx, tx, `INSERT INTO items (response_id, kind, position, item_id, type, body)
		SELECT $1, $2, t.ord - 1, t.item_id, t.type, t.body
		FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS t (item_id, type, body, ord)
		ORDER BY t.ord`, responseID, kind, ids, types, bodies)
	if err != nil {
		return fmt.Errorf("%s items: %w", kind, err)
	}
	return nil
}

// StoreResponse is CreateResponse and CompleteResponse in one transaction, and one
// round trip but when the response's chain takes a checkpoint.
func (db *DB) StoreResponse(ctx context.Context, r storage.NewResponse, f storage.Final) error {
	if err := r.Check(); err != nil {
		return fmt.Errorf("storage: store response %s: %w", r.ID, err)
	}
	if err := f.Check(); err != nil {
		return fmt.Errorf("storage: store response %s: %w", r.ID, err)
	}
	err := db.writePipelined(ctx, func(ctx context.Context, tx *pipe) error {
		if err := db.insertResponse(ctx, tx, r); err != nil {
			return err
		}
		return db.completeInTx(ctx, tx, r.ID, f, &r)
	})
	if err != nil {
		return fmt.Errorf("storage: store response %s: %w", r.ID, insertError(err, r))
	}
	return nil
}

// CompleteResponse stores the end of an in-flight response (or the output of a
// cancelled one, with status cancelled), atomically; the row is locked FOR UPDATE, so
// a concurrent Cancel comes wholly before or after.
func (db *DB) CompleteResponse(ctx context.Context, id string, f storage.Final) error {
	if err := f.Check(); err != nil {
		return fmt.Errorf("storage: complete response %s: %w", id, err)
	}
	err := db.writePipelined(ctx, func(ctx context.Context, tx *pipe) error {
		if err := db.completeInTx(ctx, tx, id, f, nil); err != nil {
			return err
		}
		return notify(ctx, tx, storage.Change{Kind: storage.JournalChanged, ID: id})
	})
	if err != nil {
		return fmt.Errorf("storage: complete response %s: %w", id, err)
	}
	return nil
}

func (db *DB) completeInTx(ctx context.Context, tx dbtx, id string, f storage.Final, fresh *storage.NewResponse) error {
	completed := f.CompletedAt
	if completed.IsZero() {
		completed = time.Now()
	}
	var child, parent bool
	next := -1 // the journal's next sequence number, when known here
	if fresh != nil {
		// A response written in this transaction has no journal yet (its id was not
		// taken, or the transaction fails), so nothing needs reading.
		child, next = fresh.PreviousResponseID != "", 0
	} else {
		// The row's lock and then the journal's next number, in one round trip on a
		// pipe: the number is read once the lock is held, as the writes after it are.
		var row sqlstore.Stored
		if err := queueRow(ctx, tx, func(r pgx.Row) error { return row.Scan(r) }, sqlstore.SQLLockResponse.Postgres(), id); err != nil {
			return err
		}
		if f.EndJournal && len(f.Events) > 0 {
			if err := queueRow(ctx, tx, func(r pgx.Row) error { return r.Scan(&next) }, sqlstore.SQLNextSeq.Postgres(), id); err != nil {
				return err
			}
		}
		if err := send(ctx, tx); err != nil {
			return err
		}
		child, parent = row.Child, row.Parent
		if !row.Status.InFlight() && !(row.Status == storage.StatusCancelled && f.Status == storage.StatusCancelled) {
			return fmt.Errorf("%w (status %s)", storage.ErrFinished, row.Status)
		}
		if row.Status == storage.StatusCancelled { // output from an earlier call
			if err := queue(ctx, tx, `DELETE FROM items WHERE response_id = $1 AND kind = 'output'`, id); err != nil {
				return err
			}
		}
	}
	if parent {
		// Continuations created while it ran hold checkpoints of it as it was.
		if err := lockChainsExclusive(ctx, tx); err != nil {
			return err
		}
	}
	if err := queue(ctx, tx, `UPDATE responses SET status = $1, response = $2, error = $3,
		input_tokens = $4, output_tokens = $5, cached_tokens = $6, reasoning_tokens = $7,
		completed_at = $8, output_pack = $9, runtime = coalesce(nullif($10, ''), runtime)
		WHERE id = $11`,
		string(f.Status), sqlstore.NullJSON(f.Body), sqlstore.NullJSON(f.Error),
		f.Usage.InputTokens, f.Usage.OutputTokens, f.Usage.CachedTokens, f.Usage.ReasoningTokens,
		completed.UnixMilli(), record.PackItems(f.Output), f.Runtime, id); err != nil {
		return err
	}
	if err := insertItems(ctx, tx, id, "output", f.Output); err != nil {
		return err
	}
	if parent {
		if err := dropDescendantContexts(ctx, tx, id); err != nil {
			return err
		}
	}
	if f.EndJournal {
		var err error
		if next >= 0 {
			err = sqlstore.AppendJournalAt(ctx, pgTx{pgConn{tx}}, id, f.Events, next, true, true)
		} else {
			err = sqlstore.AppendJournal(ctx, pgTx{pgConn{tx}}, id, f.Events, true, true)
		}
		if err != nil {
			return err
		}
	}
	if !child {
		return nil // a root is its own checkpoint
	}
	return checkpoint(ctx, tx, id, f.SavedPrompt, f.Distance, f.Depth)
}

// setStatus moves response id to status, patching its stored object's "status".
func setStatus(ctx context.Context, tx dbtx, id string, status storage.Status, completed any) error {
	var body []byte
	if err := tx.QueryRow(ctx, `SELECT response FROM responses WHERE id = $1`, id).Scan(&body); err != nil {
		return err
	}
	if body != nil {
		body = setFields(body, field{"status", mustJSON(string(status))})
	}
	_, err := tx.Exec(ctx, `UPDATE responses SET status = $1, completed_at = $2, response = $3 WHERE id = $4`,
		string(status), completed, sqlstore.NullJSON(body), id)
	return err
}

// RecoverInFlight fails every response this replica (Options.Replica) left in flight,
// in one transaction, and returns how many. Other replicas' responses are theirs to
// finish, or FailExpired's once their lease runs out.
func (db *DB) RecoverInFlight(ctx context.Context) (int, error) {
	var n int
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		ids, err := failInFlight(ctx, tx, `SELECT id, response FROM responses
			WHERE replica = $1 AND status IN ('queued', 'in_progress') FOR UPDATE`, []any{db.replica}, recoveredError)
		n = len(ids)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("storage: recover in-flight responses: %w", err)
	}
	return n, nil
}

// failInFlight fails the in-flight responses that query selects (id and stored
// object, locked FOR UPDATE) with error errJSON, in tx, and returns their ids.
func failInFlight(ctx context.Context, tx pgx.Tx, query string, args []any, errJSON json.RawMessage) ([]string, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	type left struct {
		id   string
		body []byte
	}
	var all []left
	for rows.Next() {
		var l left
		if err := rows.Scan(&l.id, &l.body); err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, nil
	}
	if err := lockChainsExclusive(ctx, tx); err != nil {
		return nil, err
	}
	now := time.Now().UnixMilli()
	ids := make([]string, len(all))
	for i, l := range all {
		if l.body != nil {
			l.body = setFields(l.body, field{"status", mustJSON("failed")}, field{"error", errJSON})
		}
		if _, err := tx.Exec(ctx, `UPDATE responses SET status = 'failed', error = $1, completed_at = $2, response = $3
			WHERE id = $4`, string(errJSON), now, sqlstore.NullJSON(l.body), l.id); err != nil {
			return nil, err
		}
		// Checkpoints below it hold its in-flight state.
		if err := dropDescendantContexts(ctx, tx, l.id); err != nil {
			return nil, err
		}
		// Its journal ends here, so the retention setting prunes it like any other.
		if _, err := tx.Exec(ctx, `INSERT INTO journals (response_id, ended_at)
			SELECT $1, $2 WHERE EXISTS (SELECT 1 FROM events WHERE response_id = $1)
			ON CONFLICT (response_id) DO UPDATE SET ended_at = excluded.ended_at`, l.id, now); err != nil {
			return nil, err
		}
		ids[i] = l.id
	}
	return ids, chainsChanged(ctx, tx)
}

// scanItems reads rows of item_id, type, body.
func scanItems(rows pgx.Rows) ([]storage.Item, error) {
	defer rows.Close()
	var items []storage.Item
	for rows.Next() {
		var it storage.Item
		var body string
		if err := rows.Scan(&it.ID, &it.Type, &body); err != nil {
			return nil, err
		}
		it.JSON = json.RawMessage(body)
		items = append(items, it)
	}
	return items, rows.Err()
}

// LookupItems finds items by id among all the owner's responses, the latest copy of
// each, in one query.
func (db *DB) LookupItems(ctx context.Context, owner string, ids []string) (map[string]storage.Item, error) {
	found := make(map[string]storage.Item, len(ids))
	if len(ids) == 0 {
		return found, nil
	}
	// Per id, the newest copy among the owner's: one descent of items_item_id each
	// (backwards, newest first), stopping at the first that is the owner's.
	rows, err := db.pool.Query(ctx, `SELECT x.item_id, x.type, x.body
		FROM unnest($1::text[]) AS want (id)
		CROSS JOIN LATERAL (
			SELECT i.item_id, i.type, i.body FROM items AS i JOIN responses AS r ON r.id = i.response_id
			WHERE i.item_id = want.id AND r.owner = $2
			ORDER BY i.seq DESC LIMIT 1
		) AS x`, ids, owner)
	if err != nil {
		return nil, fmt.Errorf("storage: look up items: %w", err)
	}
	items, err := scanItems(rows)
	if err != nil {
		return nil, fmt.Errorf("storage: look up items: %w", err)
	}
	for _, it := range items {
		found[it.ID] = it
	}
	return found, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
