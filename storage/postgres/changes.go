package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
)

// changesChannel is the NOTIFY channel on which every replica's writes tell their
// changes (storage.Changes). A payload is a kind letter, then the response's id: "j:"
// JournalChanged, "c:" ResponseCancelled, "k" KeysChanged.
const changesChannel = "hearth_changes"

// notify tells change c to every replica, from inside the transaction that makes it:
// PostgreSQL delivers it once the transaction commits, and never if it rolls back.
func notify(ctx context.Context, tx dbtx, c storage.Change) error {
	var payload string
	switch c.Kind {
	case storage.JournalChanged:
		payload = "j:" + c.ID
	case storage.ResponseCancelled:
		payload = "c:" + c.ID
	case storage.KeysChanged:
		payload = "k"
	default:
		return nil
	}
	return queue(ctx, tx, `SELECT pg_notify($1, $2)`, changesChannel, payload)
}

func parseChange(payload string) (storage.Change, bool) {
	kind, id, _ := strings.Cut(payload, ":")
	switch kind {
	case "j":
		return storage.Change{Kind: storage.JournalChanged, ID: id}, true
	case "c":
		return storage.Change{Kind: storage.ResponseCancelled, ID: id}, true
	case "k":
		return storage.Change{Kind: storage.KeysChanged}, true
	}
	return storage.Change{}, false
}

// Watch calls fn with each change that any replica commits from now on, as
// PostgreSQL's LISTEN hears them on one connection of this store's own (opened at the
// first Watch, made again when it breaks; every time it is listening again, watchers
// are told ChangesLost, since what was committed in between was not heard). The first
// Watch returns once that connection listens, or its first attempt failed.
func (db *DB) Watch(fn func(storage.Change)) (stop func()) {
	stop = db.changes.Watch(fn)
	db.listenOnce.Do(func() {
		ready := make(chan struct{})
		db.listening.Add(1)
		go db.listen(ready)
		select {
		case <-ready:
		case <-time.After(listenRetry):
		}
	})
	return stop
}

// listenRetry bounds the wait between attempts to listen again.
const listenRetry = 2 * time.Second

// listenProbe is how long the listening connection may stay silent before it is
// checked (a variable for its test).
var listenProbe = 30 * time.Second

// listen holds the LISTEN connection until the store closes.
func (db *DB) listen(ready chan struct{}) {
	defer db.listening.Done()
	ctx := db.closing
	wait := 50 * time.Millisecond
	for ctx.Err() == nil {
		err := db.listenOn(ctx, ready)
		ready = nil
		if ctx.Err() != nil {
			return
		}
		// Once per outage: the attempts that follow fail the same way.
		if !db.listenFailing.Swap(true) {
			db.log("listen for changes (other replicas' changes are not heard until it works again)", err)
			wait = 50 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, listenRetry)
	}
}

// listenOn connects, listens, and tells what it hears until the connection fails.
// ready (when not nil) is closed once it listens or has failed to.
func (db *DB) listenOn(ctx context.Context, ready chan struct{}) error {
	if ready != nil {
		defer func() {
			select {
			case <-ready:
			default:
				close(ready)
			}
		}()
	}
	conn, err := pgx.ConnectConfig(ctx, db.connConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+changesChannel); err != nil {
		return err
	}
	if db.listenFailing.Swap(false) {
		db.logger.Info("database: listening for changes again")
	}
	// Whatever was committed before this point was not heard.
	db.changes.Tell(storage.Change{Kind: storage.ChangesLost})
	if ready != nil {
		close(ready)
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, listenProbe)
		n, err := conn.WaitForNotification(wctx)
		silent := wctx.Err() != nil
		cancel()
		switch {
		case err == nil:
			if c, ok := parseChange(n.Payload); ok {
				db.changes.Tell(c)
			}
			continue
		case ctx.Err() != nil:
			return nil
		case silent && !conn.IsClosed():
			// Silent for a while: make sure the connection still carries something.
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = conn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
		}
		return err
	}
}

// log reports a problem of the store's own goroutines.
func (db *DB) log(what string, err error) {
	if err != nil {
		db.logger.Warn("database: "+what, "error", err)
	}
}

// RenewLease records that this replica serves its in-flight responses for ttl more,
// on the database's clock.
func (db *DB) RenewLease(ctx context.Context, ttl time.Duration) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO replicas (name, lease_until)
		VALUES ($1, clock_timestamp() + $2 * interval '1 millisecond')
		ON CONFLICT (name) DO UPDATE SET lease_until = excluded.lease_until`, db.replica, ttl.Milliseconds())
	if err != nil {
		return fmt.Errorf("storage: renew lease: %w", err)
	}
	return nil
}

// expiredError is stored on the responses FailExpired fails.
var expiredError = mustJSON(struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}{"server_error", storage.ExpiredMessage})

// FailExpired fails the in-flight responses of every replica whose lease ran out, in
// one transaction, and tells each as JournalChanged. A replica that never held a
// lease (one of a version before leases, in a rolling upgrade) is left alone: its own
// restart recovers what it left (RecoverInFlight). Rows that another transaction
// holds (their replica completing them right now) are skipped, not waited for.
func (db *DB) FailExpired(ctx context.Context) ([]string, error) {
	var ids []string
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		ids, err = failInFlight(ctx, tx, `SELECT r.id, r.response FROM responses AS r
			JOIN replicas AS l ON l.name = r.replica
			WHERE r.status IN ('queued', 'in_progress') AND l.lease_until < clock_timestamp()
			FOR UPDATE OF r SKIP LOCKED`, nil, expiredError)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := notify(ctx, tx, storage.Change{Kind: storage.JournalChanged, ID: id}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: fail expired responses: %w", err)
	}
	return ids, nil
}
