// Package sqlite is hearth's embedded store: storage.Store on one SQLite file, the
// default of `hearth serve` and the only package that imports the SQLite driver. It
// keeps responses, their items and the chains formed by previous_response_id, so that a
// conversation survives a restart of hearth.
//
// One *DB owns two connection pools on the same file: a single writer connection,
// whose transactions start with BEGIN IMMEDIATE, and a pool of read-only connections.
// SQLite allows one writer at a time anyway; serialising writes in Go keeps them from
// fighting over the lock (and from SQLITE_BUSY on lock upgrades), while WAL mode lets
// readers proceed next to the writer.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver

	"hearth/storage"
	"hearth/storage/sqlstore"
)

// busyTimeout is how long a connection waits for a lock held by another connection
// (or another process on the same file) before failing with SQLITE_BUSY. Writes here
// are short, so anything near this long means something is wrong, not merely busy.
const busyTimeoutMillis = 5000

// DB is a hearth database. It is safe for concurrent use.
type DB struct {
	// The records both stores keep alike, written once (storage/sqlstore).
	sqlstore.Shared

	path string
	w    *sql.DB // one connection; every write goes through it
	r    *sql.DB // read-only pool
	st   statements
	// corrupt holds the first corruption error a query met (see seen).
	corrupt atomic.Pointer[error]
	// full holds the error of the last write that failed for want of space, until a
	// write works again (seen, Full).
	full atomic.Pointer[error]
	// chains counts committed changes that can alter a stored chain (ChainEpoch).
	chains atomic.Uint64
	// changes tells the watchers of this store its commits (changes.go).
	changes storage.Feed
}

// A SQLite file is the source of `hearth db copy` (sqlstore.Copy reads it).
var _ storage.CopySource = (*DB)(nil)

// ChainEpoch counts the committed changes that can alter a stored chain whose every
// response has finished (Status.Settled): a response deleted (and, to be safe, any
// cancelled, and rows recovered after a crash). A settled chain read when the count
// was n is as stored for as long as the count is n, as far as this process's writes
// go (another process writing responses to the file is not seen): a reader takes the
// count before reading, and the count moves after the change commits. Chains with a
// response in flight or cancelled change as that response ends; they are not settled.
func (db *DB) ChainEpoch() uint64 { return db.chains.Load() }

// chainsChanged moves ChainEpoch on, after a change committed.
func (db *DB) chainsChanged() { db.chains.Add(1) }

// Open opens (creating if needed) the database file at path, its parent directory
// included, and brings the schema up to date. cmd/hearth passes a file inside its data
// directory, e.g. filepath.Join(dataDir, "hearth.db").
//
// Open does not recover rows left in flight by a crash; call RecoverInFlight once at
// startup, before serving, when this process is the only hearth using the file.
func Open(path string) (*DB, error) {
	if path == "" {
		return nil, errors.New("storage: empty database path")
	}
	if strings.HasPrefix(path, "file:") || strings.Contains(path, "?") {
		// A DSN would bypass the pragmas below, which the package's guarantees rely on.
		return nil, fmt.Errorf("storage: %q: want a file path, not a DSN", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("storage: create data directory: %w", err)
	}
	if err := privateFiles(abs); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}

	// Pragmas are set through the DSN so that every connection the pools open (including
	// ones reopened later) gets them, not only the first.
	common := url.Values{}
	common.Set("_busy_timeout", fmt.Sprint(busyTimeoutMillis))
	common.Set("_foreign_keys", "on") // items cascade with their response

	wq := url.Values{}
	for k, v := range common {
		wq[k] = v
	}
	wq.Set("_journal_mode", "WAL")
	// FULL: a transaction is on disk when Commit returns, also across power loss. The
	// server sends a terminal event only after CompleteResponse, so a client must never
	// see "completed" for a response a power cut can take back. Writes are a few per
	// response (which takes seconds to generate), so the fsync is cheap in context.
	wq.Set("_synchronous", "FULL")
	// IMMEDIATE takes the write lock at BEGIN, so a transaction that reads and then
	// writes can never fail halfway with SQLITE_BUSY when upgrading its lock.
	wq.Set("_txlock", "immediate")

	rq := url.Values{}
	for k, v := range common {
		rq[k] = v
	}
	// query_only rather than mode=ro: a read-only open of a WAL database fails when the
	// -shm file is missing, while query_only keeps the normal open and refuses writes.
	rq.Set("_query_only", "true")
	// LoadChain queries the driver connection directly; this keeps its statement
	// prepared on each read connection.
	rq.Set("_stmt_cache_size", "16")
	// 16 MiB of page cache per read connection (the default is 2 MiB): a long chain with
	// real item sizes is several MiB, and a sequential read bigger than the cache evicts
	// the pages the next load of the same chain needs.
	rq.Set("_cache_size", "-16384")

	fileURL := "file:" + (&url.URL{Path: abs}).EscapedPath()

	w, err := sql.Open("sqlite3", fileURL+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)

	ctx := context.Background()
	var mode string
	if err := w.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		w.Close()
		if isCorrupt(err) {
			return nil, fmt.Errorf("storage: open %s: %w: %w", abs, storage.ErrCorrupt, err)
		}
		return nil, fmt.Errorf("storage: open %s: %w", abs, explainOpenError(filepath.Dir(abs), err))
	}
	if mode != "wal" {
		w.Close()
		return nil, fmt.Errorf("storage: open %s: journal_mode is %q, want wal", abs, mode)
	}
	if err := migrate(ctx, w); err != nil {
		w.Close()
		if isCorrupt(err) {
			return nil, fmt.Errorf("storage: open %s: %w: %w", abs, storage.ErrCorrupt, err)
		}
		return nil, err
	}
	if err := backfillPacks(ctx, w); err != nil {
		w.Close()
		if isCorrupt(err) {
			return nil, fmt.Errorf("storage: open %s: %w: %w", abs, storage.ErrCorrupt, err)
		}
		return nil, err
	}

	r, err := sql.Open("sqlite3", fileURL+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("storage: open %s: %w", abs, err)
	}
	// Reads are short and CPU-bound in SQLite; a few connections per core is plenty, and
	// keeping them idle keeps their prepared statements and page caches warm.
	r.SetMaxOpenConns(4)
	r.SetMaxIdleConns(4)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(0)

	db := &DB{path: abs, w: w, r: r}
	db.Shared = sqlstore.New(backend{db}, sqlstore.SQLite)
	if err := db.st.prepare(ctx, w, r); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// explainOpenError names the usual cause of a failed open that SQLite reports vaguely:
// a data directory hearth cannot write to (a read-only file system, a full disk, wrong
// permissions) makes it fail to create the -wal file, which it reports as "unable to
// open database file: no such file or directory".
func explainOpenError(dir string, err error) error {
	probe, perr := os.CreateTemp(dir, ".hearth-write-check-*")
	if perr != nil {
		return fmt.Errorf("the data directory %s is not writable (%v): %w", dir, perr, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return err
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Close closes the database. In-flight rows stay as they are; RecoverInFlight at the
// next start settles them.
func (db *DB) Close() error {
	err := db.st.close()
	if db.r != nil {
		err = errors.Join(err, db.r.Close())
	}
	if db.w != nil {
		err = errors.Join(err, db.w.Close())
	}
	return err
}

// IntegrityCheck runs PRAGMA integrity_check and returns an error listing the problems
// it reports, or nil when the database is intact.
func (db *DB) IntegrityCheck(ctx context.Context) error {
	rows, err := db.r.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("storage: integrity check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("storage: integrity check: %w", err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("storage: integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("storage: integrity check failed: %s", strings.Join(problems, "; "))
	}
	return nil
}

// Ping checks that both the writer and the read pool answer, for health checks. A
// read-only or vanished file shows up here before a response fails on it; a damaged
// file once any query has met the damage (Corruption); a full disk while writes fail
// for want of space (Full).
func (db *DB) Ping(ctx context.Context) error {
	if err := db.Corruption(); err != nil {
		return err
	}
	if err := db.Full(); err != nil {
		return err
	}
	if err := db.r.PingContext(ctx); err != nil {
		return fmt.Errorf("database read pool: %w", err)
	}
	if err := db.w.PingContext(ctx); err != nil {
		return fmt.Errorf("database writer: %w", err)
	}
	return nil
}

// OpenRaw opens the database file at path with plain database/sql, beside any *DB on
// it and outside its guarantees: for tests and tools that inspect the file or change
// it behind the store's back (to cut a journal, to checkpoint the log), so that they
// need not know the driver.
func OpenRaw(path string) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(busyTimeoutMillis))
	return sql.Open("sqlite3", "file:"+(&url.URL{Path: abs}).EscapedPath()+"?"+q.Encode())
}
