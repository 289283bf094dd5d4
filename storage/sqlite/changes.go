package sqlite

import (
	"context"
	"time"

	"hearth/storage"
)

// Watch calls fn with each change this store commits from now on. One process owns
// a SQLite file, so its own writes are every change there is: they are told
// in-process, after each commit.
func (db *DB) Watch(fn func(storage.Change)) (stop func()) { return db.changes.Watch(fn) }

// RenewLease does nothing: no other process serves from the file, so none needs to
// know that this one is alive.
func (db *DB) RenewLease(context.Context, time.Duration) error { return nil }

// FailExpired finds nothing: the process that left responses in flight is the one
// that opens the file next, and RecoverInFlight fails them then.
func (db *DB) FailExpired(context.Context) ([]string, error) { return nil, nil }
