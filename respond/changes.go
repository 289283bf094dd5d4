package respond

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"hearth/storage"
)

// changes is what the core does with the changes the store tells it
// (storage.Changes): its own and, where several hearth processes share the store,
// theirs. A reader following a response that another process runs wakes when its
// journal grows; a cancel or a deletion stops the generation wherever it runs; the
// rest (a key revoked anywhere) goes to the front door (Service.OnChange). The core
// does not know which store it has: SQLite tells its own commits in-process,
// PostgreSQL every replica's.
type changes struct {
	mu sync.Mutex
	// waiters wait for the journal of a response to change, by response id.
	waiters map[string]map[chan struct{}]struct{}
	// also hears what the core does not act on; nil: nothing does. Set once the front
	// door exists (OnChange), while the store's goroutine may already be telling.
	also atomic.Pointer[func(storage.Change)]
	stop func()
}

// watchChanges starts listening to the store's changes, for as long as the service
// runs (Shutdown stops it).
func (s *Service) watchChanges() {
	s.changes = &changes{waiters: map[string]map[chan struct{}]struct{}{}, stop: func() {}}
	if s.db == nil {
		return
	}
	s.changes.stop = s.db.Watch(s.heard)
}

// heard acts on one change; it runs on the store's goroutine and must not block.
func (s *Service) heard(c storage.Change) {
	switch c.Kind {
	case storage.JournalChanged:
		s.changes.wake(c.ID)
	case storage.ResponseCancelled:
		// Only where it runs does this stop something.
		s.cancelJob(c.ID)
	case storage.ChangesLost:
		s.changes.wake("")
	}
	if also := s.changes.also.Load(); also != nil {
		(*also)(c)
	}
}

// OnChange gives the changes of the store the core does not act on itself (keys
// changed, changes lost) to hear, from now on: the front door's, which closes the
// WebSockets of a key revoked anywhere. hear runs on the store's goroutine and must not
// block.
func (s *Service) OnChange(hear func(storage.Change)) { s.changes.also.Store(&hear) }

// waitJournal returns a channel that receives when the journal of response id may
// have changed, until stop is called.
func (ch *changes) waitJournal(id string) (<-chan struct{}, func()) {
	w := make(chan struct{}, 1)
	ch.mu.Lock()
	if ch.waiters[id] == nil {
		ch.waiters[id] = map[chan struct{}]struct{}{}
	}
	ch.waiters[id][w] = struct{}{}
	ch.mu.Unlock()
	return w, func() {
		ch.mu.Lock()
		delete(ch.waiters[id], w)
		if len(ch.waiters[id]) == 0 {
			delete(ch.waiters, id)
		}
		ch.mu.Unlock()
	}
}

// wake wakes the waiters of response id; "" wakes them all.
func (ch *changes) wake(id string) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for wid, ws := range ch.waiters {
		if id != "" && wid != id {
			continue
		}
		for w := range ws {
			select {
			case w <- struct{}{}:
			default: // a wake is pending already
			}
		}
	}
}

// followStored streams the journal of response rec, which another process runs, as
// that process writes it to the store (in batches, journalFlushEvery apart): the
// events after sequence number after, then each batch as the store tells of it. It
// returns once the stored response has finished, with the last sequence number sent
// and the response as then stored, for Replay to end the stream; ok is false
// when the client went away or the response could no longer be read.
func (s *Service) followStored(ctx context.Context, owner string, out EncodedSink, rec *storage.Response, after int) (int, *storage.Response, bool) {
	wake, stop := s.changes.waitJournal(rec.ID)
	defer stop()
	var settled <-chan time.Time // nil until it is cancelled
	for {
		// The row before the journal: a response read as finished has its whole
		// journal in the store already (both are written in one transaction).
		var err error
		if rec, err = s.db.GetResponse(ctx, owner, rec.ID); err != nil {
			return after, nil, false
		}
		events, last, err := s.db.Journal(ctx, rec.ID, after)
		if err != nil {
			return after, nil, false
		}
		for _, e := range events {
			out.Stored(e.Type, e.Data)
			after = e.Seq
		}
		switch {
		case last != nil && isTerminal(last.Type):
			return after, rec, true
		case rec.Status == storage.StatusCancelled:
			// Cancelled, the process running it stores what it made before it
			// heard: wait a little for that (it may have stopped for good), then
			// end as stored.
			if settled == nil {
				settled = time.After(cancelSettle)
			}
		case !rec.Status.InFlight():
			return after, rec, true
		}
		select {
		case <-ctx.Done():
			return after, nil, false
		case <-wake:
		case <-settled:
			return after, rec, true
		}
	}
}

// cancelSettle is how long a cancel waits for the process running the response to
// store what it made before it stopped.
const cancelSettle = 5 * time.Second

// awaitCancelled waits, after a cancel of a response that another process runs, for
// that process to store its output (its journal then ends), up to cancelSettle.
func (s *Service) awaitCancelled(ctx context.Context, id string, wake <-chan struct{}) {
	deadline := time.NewTimer(cancelSettle)
	defer deadline.Stop()
	for {
		_, last, err := s.db.Journal(ctx, id, 1<<30)
		if err != nil || (last != nil && isTerminal(last.Type)) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-wake:
		}
	}
}

// DefaultReplicaLease is how long a replica's lease lasts without renewal: the other
// replicas fail its in-flight responses between that and 4/3 of it after it stopped.
const DefaultReplicaLease = 15 * time.Second

// KeepLeases holds this process's lease in the store while ctx lasts, renewing it
// every third of ttl, and at each renewal fails the in-flight responses of the
// processes whose lease ran out (storage.Leases). A process killed is noticed
// between ttl and 4/3 ttl after its last renewal. The store of one process has no
// leases; it returns at once there.
func (s *Service) KeepLeases(ctx context.Context, ttl time.Duration) {
	if s.db == nil || ttl <= 0 {
		return
	}
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	warned := false
	for {
		rctx, cancel := context.WithTimeout(ctx, ttl/3)
		err := s.db.RenewLease(rctx, ttl)
		var failed []string
		if err == nil {
			failed, err = s.db.FailExpired(rctx)
		}
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && !warned:
			s.log.Warn("renew lease", "error", err)
			warned = true
		case err == nil:
			warned = false
		}
		if len(failed) > 0 {
			s.log.Warn("failed the in-flight responses of a replica whose lease expired", "responses", len(failed), "ids", failed)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
