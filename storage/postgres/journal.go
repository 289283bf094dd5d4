package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
	"hearth/storage/record"
)

// AppendEvents adds a batch of events to response id's journal, numbered on from its
// last without a gap, and marks it ended when end is set.
func (db *DB) AppendEvents(ctx context.Context, id string, events []storage.Event, end bool) error {
	err := db.writePipelined(ctx, func(ctx context.Context, tx *pipe) error {
		if err := appendJournal(ctx, tx, id, events, end, false); err != nil {
			return err
		}
		return notify(ctx, tx, storage.Change{Kind: storage.JournalChanged, ID: id})
	})
	if err != nil {
		return fmt.Errorf("storage: journal of %s: %w", id, err)
	}
	return nil
}

// sqlNextSeq reads the sequence number a journal's next event takes.
const sqlNextSeq = `SELECT coalesce(max(last_seq), -1) + 1 FROM events WHERE response_id = $1`

// appendJournal writes events in tx. lenient (the final batch, written with the
// response's end) skips events already journaled and drops a batch that does not
// follow on, rather than fail the response's completion over its journal.
func appendJournal(ctx context.Context, tx dbtx, id string, events []storage.Event, end, lenient bool) error {
	var next int
	if len(events) > 0 {
		if err := tx.QueryRow(ctx, sqlNextSeq, id).Scan(&next); err != nil {
			return err
		}
	}
	return appendJournalAt(ctx, tx, id, events, next, end, lenient)
}

// appendJournalAt is appendJournal for a caller that read next (sqlNextSeq) in tx.
func appendJournalAt(ctx context.Context, tx dbtx, id string, events []storage.Event, next int, end, lenient bool) error {
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
			if err := queue(ctx, tx, `INSERT INTO events (response_id, first_seq, last_seq, last_type, data) VALUES ($1, $2, $3, $4, $5)`,
				id, events[0].Seq, last.Seq, last.Type, data); err != nil {
				return err
			}
		}
	}
	if end {
		if err := queue(ctx, tx, `INSERT INTO journals (response_id, ended_at) VALUES ($1, $2)
			ON CONFLICT (response_id) DO UPDATE SET ended_at = excluded.ended_at`, id, time.Now().UnixMilli()); err != nil {
			return err
		}
	}
	return nil
}

// Journal returns the events of response id after sequence number after, and its
// journal's last event without data (nil when it has no journal), from one snapshot.
func (db *DB) Journal(ctx context.Context, id string, after int) (events []storage.Event, last *storage.Event, err error) {
	err = pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var l storage.Event
		err := tx.QueryRow(ctx, `SELECT last_seq, last_type FROM events WHERE response_id = $1 ORDER BY first_seq DESC LIMIT 1`, id).
			Scan(&l.Seq, &l.Type)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		last = &l
		rows, err := tx.Query(ctx, `SELECT first_seq, data FROM events WHERE response_id = $1 AND last_seq > $2 ORDER BY first_seq`, id, after)
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

// PruneJournals deletes the journals that ended before cutoff and returns how many.
func (db *DB) PruneJournals(ctx context.Context, cutoff time.Time) (int, error) {
	var n int64
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		at := cutoff.UnixMilli()
		if _, err := tx.Exec(ctx, `DELETE FROM events WHERE response_id IN
			(SELECT response_id FROM journals WHERE ended_at IS NOT NULL AND ended_at < $1)`, at); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM journals WHERE ended_at IS NOT NULL AND ended_at < $1`, at)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("storage: prune journals: %w", err)
	}
	return int(n), nil
}
