package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"hearth/storage"
	"hearth/storage/record"
)

// AppendEvents adds a batch of events to the journal of response id, in one
// transaction, and marks the journal ended when end is set. The server calls it at
// intervals while the response runs (one transaction per batch, not per event: each
// commit is an fsync); the last batch goes with CompleteResponse (Final.Events).
// Sequence numbers go on from the journal's last without a gap: an event already
// journaled, or one after a gap, is an error.
func (db *DB) AppendEvents(ctx context.Context, id string, events []storage.Event, end bool) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error { return db.appendJournal(ctx, tx, id, events, end, false) })
	if err != nil {
		return fmt.Errorf("storage: journal of %s: %w", id, err)
	}
	db.changes.Tell(storage.Change{Kind: storage.JournalChanged, ID: id})
	return nil
}

// appendJournal writes events as one batch row. Sequence numbers must go on from the
// journal's last one without a gap, so a journal never loses or repeats an event.
// lenient is for the final batch, stored with the response: there a journal problem
// must not cost the response, so events already journaled are skipped and a batch
// after a gap is left out (the journal then ends short, and a replay ends it from the
// stored response).
func (db *DB) appendJournal(ctx context.Context, tx *sql.Tx, id string, events []storage.Event, end, lenient bool) error {
	if len(events) > 0 {
		var next int
		if err := tx.StmtContext(ctx, db.st.journalNext).QueryRowContext(ctx, id).Scan(&next); err != nil {
			return err
		}
		for lenient && len(events) > 0 && events[0].Seq < next {
			events = events[1:]
		}
		data, err := record.PackEvents(events, next)
		switch {
		case err != nil && lenient:
			events = nil
		case err != nil:
			return err
		}
		if len(events) > 0 {
			last := events[len(events)-1]
			if _, err := tx.StmtContext(ctx, db.st.insertEvent).ExecContext(ctx, id, events[0].Seq, last.Seq, last.Type, data); err != nil {
				return err
			}
		}
	}
	if end {
		if _, err := tx.StmtContext(ctx, db.st.endJournal).ExecContext(ctx, id, time.Now().UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// Journal returns the journaled events of response id after sequence number after
// (-1: all of them), in order, and the journal's last event without its data; last
// is nil when there is no journal (a response stored before journals existed, one
// whose journal was pruned). It does not check the owner: the caller has loaded the
// response with GetResponse first.
func (db *DB) Journal(ctx context.Context, id string, after int) (events []storage.Event, last *storage.Event, err error) {
	var l storage.Event
	err = db.st.journalLast.QueryRowContext(ctx, id).Scan(&l.Seq, &l.Type)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("storage: journal of %s: %w", id, err)
	}
	rows, err := db.st.journalAfter.QueryContext(ctx, id, after)
	if err != nil {
		return nil, nil, fmt.Errorf("storage: journal of %s: %w", id, err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, nil, fmt.Errorf("storage: journal of %s: %w", id, err)
		}
		if events, err = record.UnpackEvents(events, data, seq, after); err != nil {
			return nil, nil, fmt.Errorf("storage: journal of %s: %w", id, err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("storage: journal of %s: %w", id, err)
	}
	return events, &l, nil
}

// PruneJournals deletes the journals that ended before cutoff, their events with them,
// and returns how many it deleted. The responses stay: a response without a journal
// replays from its stored state, as those stored before journals existed do.
// Journals still open (their response runs, or a crash left it) are kept.
func (db *DB) PruneJournals(ctx context.Context, cutoff time.Time) (int, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		at := cutoff.UnixMilli()
		if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE response_id IN
			(SELECT response_id FROM journals WHERE ended_at IS NOT NULL AND ended_at < ?)`, at); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM journals WHERE ended_at IS NOT NULL AND ended_at < ?`, at)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("storage: prune journals: %w", err)
	}
	return int(n), nil
}
