package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event is one journaled event of a response: its sequence number, its type and its
// JSON as sent.
type Event struct {
	Seq  int
	Type string
	Data json.RawMessage
}

// AppendEvents adds events to the journal of response id, in one transaction, and
// marks the journal ended when end is set. The server calls it with batches while
// the response runs (one transaction per batch, not per event: each commit is an
// fsync) and once more at its end. An event already journaled (the same sequence
// number) is an error: a journal is written once, in order.
func (db *DB) AppendEvents(ctx context.Context, id string, events []Event, end bool) error {
	err := db.write(ctx, func(tx *sql.Tx) error { return db.appendJournal(ctx, tx, id, events, end) })
	if err != nil {
		return fmt.Errorf("storage: journal of %s: %w", id, err)
	}
	return nil
}

func (db *DB) appendJournal(ctx context.Context, tx *sql.Tx, id string, events []Event, end bool) error {
	if _, err := tx.StmtContext(ctx, db.st.openJournal).ExecContext(ctx, id); err != nil {
		return err
	}
	ins := tx.StmtContext(ctx, db.st.insertEvent)
	for _, e := range events {
		if _, err := ins.ExecContext(ctx, id, e.Seq, e.Type, string(e.Data)); err != nil {
			return fmt.Errorf("event %d: %w", e.Seq, err)
		}
	}
	if end {
		if _, err := tx.StmtContext(ctx, db.st.endJournal).ExecContext(ctx, time.Now().UnixMilli(), id); err != nil {
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
func (db *DB) Journal(ctx context.Context, id string, after int) (events []Event, last *Event, err error) {
	var l Event
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
		var e Event
		var data string
		if err := rows.Scan(&e.Seq, &e.Type, &data); err != nil {
			return nil, nil, fmt.Errorf("storage: journal of %s: %w", id, err)
		}
		e.Data = json.RawMessage(data)
		events = append(events, e)
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
	err := db.write(ctx, func(tx *sql.Tx) error {
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
