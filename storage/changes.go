package storage

import (
	"context"
	"sync"
	"time"
)

// ChangeKind says what a Change is about.
type ChangeKind uint8

const (
	// JournalChanged: events were added to response ID's journal, or the response
	// ended (it was completed, or failed by FailExpired). A reader following the
	// journal reads the response and its journal again.
	JournalChanged ChangeKind = iota + 1
	// ResponseCancelled: response ID was cancelled; the process generating it stops.
	ResponseCancelled
	// KeysChanged: an API key was created, revoked or changed; connections that
	// outlive a request (WebSockets) check their key again.
	KeysChanged
	// ChangesLost: the store may have missed changes (its connection to the others
	// broke and was made again). Whoever waits on a change reads what it waits on
	// again, as if it had heard of it.
	ChangesLost
)

// Change is a committed change that the processes sharing a store hear of.
type Change struct {
	Kind ChangeKind
	// ID is the response of JournalChanged and ResponseCancelled.
	ID string
}

// Changes tells the processes sharing a store what any of them changed, so that a
// process waiting on a record hears of its change instead of reading it again in a
// loop. A store of one process (SQLite) tells its own writes in-process; a store that
// several processes share (PostgreSQL) tells every process's.
type Changes interface {
	// Watch calls fn with each change committed from now on, by this process or
	// another, until stop is called. fn runs on the store's own goroutine and must
	// not block; a change may be told more than once, never before its commit.
	Watch(fn func(Change)) (stop func())
}

// Leases keep the in-flight responses of processes sharing a store from outliving
// them: each process holds a lease that it renews while it runs, and any process
// fails the in-flight responses of one whose lease ran out (killed, or cut off from
// the store). A store of one process has nothing to do here: RecoverInFlight at its
// next start fails what it left.
type Leases interface {
	// RenewLease records that this process serves its in-flight responses for ttl
	// more, on the store's clock.
	RenewLease(ctx context.Context, ttl time.Duration) error
	// FailExpired fails every in-flight response (queued or in_progress) of a process
	// whose lease ran out, with ExpiredError, and returns their ids. Each is told as
	// JournalChanged.
	FailExpired(ctx context.Context) ([]string, error)
}

// ExpiredMessage is the error message of a response failed by FailExpired.
const ExpiredMessage = "The hearth replica serving this response stopped (its lease expired) before the response finished."

// Feed fans the changes of a store out to its watchers: what a store's Watch hands
// to, and what it tells each change to. The zero value is ready to use.
type Feed struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(Change)
}

// Watch adds fn until stop is called.
func (f *Feed) Watch(fn func(Change)) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fns == nil {
		f.fns = map[int]func(Change){}
	}
	f.next++
	n := f.next
	f.fns[n] = fn
	return func() {
		f.mu.Lock()
		delete(f.fns, n)
		f.mu.Unlock()
	}
}

// Tell calls every watcher with c.
func (f *Feed) Tell(c Change) {
	f.mu.Lock()
	fns := make([]func(Change), 0, len(f.fns))
	for _, fn := range f.fns {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}

// Watching reports whether anyone watches.
func (f *Feed) Watching() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.fns) > 0
}
