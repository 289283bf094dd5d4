package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hearth/storage"
	"hearth/storage/record"
)

// Journals keeps each response's event journal: batches of events (record.PackEvents)
// numbered on without a gap, and whether the journal ended.
type Journals struct{ b Backend }

var (
	// SQLNextSeq reads the sequence number a journal's next event takes (id).
	SQLNextSeq     = SQL(`SELECT coalesce(max(last_seq), -1) + 1 FROM events WHERE response_id = ?`).Prepared()
	sqlInsertEvent = SQL(`INSERT INTO events (response_id, first_seq, last_seq, last_type, data) VALUES (?, ?, ?, ?, ?)`).Prepared()
	sqlEndJournal  = SQL(`INSERT INTO journals (response_id, ended_at) VALUES (?, ?)
		ON CONFLICT (response_id) DO UPDATE SET ended_at = excluded.ended_at`).Prepared()
	sqlJournalLast   = SQL(`SELECT last_seq, last_type FROM events WHERE response_id = ? ORDER BY first_seq DESC LIMIT 1`).Prepared()
	sqlJournalAfter  = SQL(`SELECT first_seq, data FROM events WHERE response_id = ? AND last_seq > ? ORDER BY first_seq`).Prepared()
	sqlPruneEvents   = SQL(`DELETE FROM events WHERE response_id IN (SELECT response_id FROM journals WHERE ended_at IS NOT NULL AND ended_at < ?)`)
	sqlPruneJournals = SQL(`DELETE FROM journals WHERE ended_at IS NOT NULL AND ended_at < ?`)
)

// AppendEvents adds a batch of events to the journal of response id, in one
// transaction, and marks the journal ended when end is set. The server calls it at
// intervals while the response runs (one transaction per batch, not per event: each
// commit is an fsync); the last batch goes with CompleteResponse (Final.Events).
// Sequence numbers go on from the journal's last without a gap: an event already
// journaled, or one after a gap, is an error.
func (j Journals) AppendEvents(ctx context.Context, id string, events []storage.Event, end bool) error {
	err := j.b.Pipeline(ctx, func(ctx context.Context, tx Tx) error {
		if err := AppendJournal(ctx, tx, id, events, end, false); err != nil {
			return err
		}
		return tx.Notify(ctx, storage.Change{Kind: storage.JournalChanged, ID: id})
	})
	if err != nil {
		return fmt.Errorf("storage: journal of %s: %w", id, err)
	}
	return nil
}

// AppendJournal writes events as one batch row in tx. Sequence numbers must go on from
// the journal's last one without a gap, so a journal never loses or repeats an event.
// lenient is for the final batch, stored with the response: there a journal problem
// must not cost the response, so events already journaled are skipped and a batch
// after a gap is left out (the journal then ends short, and a replay ends it from the
// stored response).
func AppendJournal(ctx context.Context, tx Tx, id string, events []storage.Event, end, lenient bool) error {
	var next int
	if len(events) > 0 {
		if err := tx.QueryRow(ctx, SQLNextSeq, id).Scan(&next); err != nil {
			return err
		}
	}
	return AppendJournalAt(ctx, tx, id, events, next, end, lenient)
}

// AppendJournalAt is AppendJournal for a caller that read next (SQLNextSeq) in tx.
func AppendJournalAt(ctx context.Context, tx Tx, id string, events []storage.Event, next int, end, lenient bool) error {
	if len(events) > 0 {
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
			if err := tx.Queue(ctx, sqlInsertEvent, id, events[0].Seq, last.Seq, last.Type, data); err != nil {
				return err
			}
		}
	}
	if end {
		if err := tx.Queue(ctx, sqlEndJournal, id, time.Now().UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// Journal returns the journaled events of response id after sequence number after
// (-1: all of them), in order, and the journal's last event without its data, from one
// snapshot; last is nil when there is no journal (a response stored before journals
// existed, one whose journal was pruned). It does not check the owner: the caller has
// loaded the response with GetResponse first.
func (j Journals) Journal(ctx context.Context, id string, after int) (events []storage.Event, last *storage.Event, err error) {
	err = j.b.Read(ctx, func(ctx context.Context, q Querier) error {
		var l storage.Event
		err := q.QueryRow(ctx, sqlJournalLast, id).Scan(&l.Seq, &l.Type)
		if errors.Is(err, ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		last = &l
		rows, err := q.Query(ctx, sqlJournalAfter, id, after)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var seq int
			var data []byte
			if err := rows.Scan(&seq, &data); err != nil {
				return err
			}
			if events, err = record.UnpackEvents(events, data, seq, after); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("storage: journal of %s: %w", id, err)
	}
	return events, last, nil
}

// PruneJournals deletes the journals that ended before cutoff, their events with them,
// and returns how many it deleted. The responses stay: a response without a journal
// replays from its stored state, as those stored before journals existed do.
// Journals still open (their response runs, or a crash left it) are kept.
func (j Journals) PruneJournals(ctx context.Context, cutoff time.Time) (int, error) {
	var n int64
	err := j.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		at := cutoff.UnixMilli()
		if _, err := tx.Exec(ctx, sqlPruneEvents, at); err != nil {
			return err
		}
		var err error
		n, err = tx.Exec(ctx, sqlPruneJournals, at)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("storage: prune journals: %w", err)
	}
	return int(n), nil
}
