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
	"hearth/storage/sqlstore"
)

// The steps of a response's writes (sqlstore.ResponseWrites), on a pipe (pipe.go): a
// round trip is most of what a write costs here, so a creation's checks fail on the
// server, aborting the transaction, and nothing waits for their answers in Go
// (CreateError words their errors); all items go in one statement.

// CreateStarts: a response that is not in the background is committed without
// waiting for the WAL flush (synchronous_commit off for this transaction, unless the
// URL sets synchronous_commit): its completion's commit does wait, and it flushes the
// WAL up to itself, so a response that completed is as durable as any, and a crash of
// PostgreSQL loses at most the creation of a response that was still running (whose
// stream then failed anyway). A background response's id is the client's only handle
// on it, so its creation waits for the flush as every other write does.
func (b backend) CreateStarts(ctx context.Context, tx sqlstore.Tx, r *storage.NewResponse) error {
	if !r.Background && b.db.asyncCreate {
		return queue(ctx, tx.(*pgTx).q, `SELECT set_config('synchronous_commit', 'off', true)`)
	}
	return nil
}

// ShareParent reads the parent FOR SHARE, on the server: a deletion of it waits for
// this transaction, or this one finds it gone (hearth_share_parent's no_data_found).
func (backend) ShareParent(ctx context.Context, tx sqlstore.Tx, r *storage.NewResponse) error {
	return queue(ctx, tx.(*pgTx).q, `SELECT hearth_share_parent($1, $2)`, r.PreviousResponseID, r.Owner)
}

// Replica names this replica (Options.Replica) on the responses it writes, whose
// leases it keeps.
func (b backend) Replica() (string, bool) { return b.db.replica, true }

// CreateError words the errors of the checks that failed on the server as the
// store's: a parent missing or another owner's (hearth_share_parent's
// no_data_found), an id taken.
func (backend) CreateError(err error, r *storage.NewResponse) error {
	var pe *pgconn.PgError
	switch {
	case !errors.As(err, &pe):
		return err
	case pe.Code == "P0002":
		return sqlstore.ParentMissing(r)
	case uniqueViolation(err) && pe.ConstraintName == "responses_pkey":
		return storage.ErrExists
	}
	return err
}

func (backend) InsertItems(ctx context.Context, tx sqlstore.Tx, responseID, kind string, items []storage.Item) error {
	ids, types, bodies := make([]string, len(items)), make([]string, len(items)), make([]string, len(items))
	for i, it := range items {
		ids[i], types[i], bodies[i] = it.ID, it.Type, string(it.JSON)
	}
	// One statement for all items: positions are their order in the arrays.
	err := queue(ctx, tx.(*pgTx).q, `INSERT INTO items (response_id, kind, position, item_id, type, body)
		SELECT $1, $2, t.ord - 1, t.item_id, t.type, t.body
		FROM unnest($3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS t (item_id, type, body, ord)
		ORDER BY t.ord`, responseID, kind, ids, types, bodies)
	if err != nil {
		return fmt.Errorf("%s items: %w", kind, err)
	}
	return nil
}

// LockCompleting reads the row's lock and then the journal's next number, in one
// round trip on a pipe: the number is read once the lock is held, as the writes after
// it are.
func (backend) LockCompleting(ctx context.Context, t sqlstore.Tx, id string, f *storage.Final) (row sqlstore.Stored, next int, err error) {
	tx := t.(*pgTx).q
	next = -1
	if err := queueRow(ctx, tx, func(r pgx.Row) error { return row.Scan(r) }, sqlstore.SQLLockResponse.Postgres(), id); err != nil {
		return row, next, err
	}
	if f.EndJournal && len(f.Events) > 0 {
		if err := queueRow(ctx, tx, func(r pgx.Row) error { return r.Scan(&next) }, sqlstore.SQLNextSeq.Postgres(), id); err != nil {
			return row, next, err
		}
	}
	return row, next, send(ctx, tx)
}

func (backend) Checkpoint(ctx context.Context, tx sqlstore.Tx, id string, f *storage.Final) error {
	return checkpoint(ctx, tx.(*pgTx).q, id, f.SavedPrompt, f.Distance, f.Depth)
}

// FailInFlight fails every response this replica (Options.Replica) left in flight.
// Other replicas' responses are theirs to finish, or FailExpired's once their lease
// runs out.
func (b backend) FailInFlight(ctx context.Context, tx sqlstore.Tx, errJSON json.RawMessage) (int, error) {
	ids, err := failInFlight(ctx, tx.(*pgTx).q.(pgx.Tx), `SELECT id, response FROM responses
		WHERE replica = $1 AND status IN ('queued', 'in_progress') FOR UPDATE`, []any{b.db.replica}, errJSON)
	return len(ids), err
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
