package sqlite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mattn/go-sqlite3"

	"hearth/storage"
)

// isCorrupt reports whether err is SQLite saying the file is damaged or not a database.
func isCorrupt(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB)
}

// seen records a corruption error met by any query, so that Ping (and so /healthz)
// reports the database degraded from then on: a damaged page shows up only when a
// request happens to read it, and until now every such request was a 500 while the
// health check, which reads no pages, said all was well. It returns err wrapped in
// ErrCorrupt when it is one. A full disk is recorded the same way (ErrFull), until a
// write succeeds again or Ping finds space.
func (db *DB) seen(err error) error {
	if err == nil {
		return nil
	}
	if isFull(err) {
		db.full.Store(&err)
		if errors.Is(err, storage.ErrFull) {
			return err
		}
		return fmt.Errorf("%w: %w", storage.ErrFull, err)
	}
	if isUnavailable(err) {
		if errors.Is(err, storage.ErrUnavailable) {
			return err
		}
		return fmt.Errorf("%w: %w", storage.ErrUnavailable, err)
	}
	if !isCorrupt(err) {
		return err
	}
	db.corrupt.CompareAndSwap(nil, &err)
	if errors.Is(err, storage.ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: %w", storage.ErrCorrupt, err)
}

// isFull reports whether err is the disk having no room for a write.
func isFull(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrFull || se.SystemErrno == syscall.ENOSPC || se.SystemErrno == syscall.EDQUOT
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// isUnavailable reports whether err is the file failing under SQLite rather than SQLite
// refusing the statement: an I/O error other than a full disk, a file that cannot be
// opened, or one that became read-only. The client can only retry later, as with a
// PostgreSQL server that is down (storage.ErrUnavailable); isFull is checked first.
func isUnavailable(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) &&
		(se.Code == sqlite3.ErrIoErr || se.Code == sqlite3.ErrCantOpen || se.Code == sqlite3.ErrReadonly)
}

// writeWorked forgets a full disk once a write has gone through.
func (db *DB) writeWorked() {
	if db.full.Load() != nil {
		db.full.Store(nil)
	}
}

// fullProbeBytes is the room Ping asks of the file system before it believes space
// is back: a response's write is a few pages of the log, plus a checkpoint's.
const fullProbeBytes = 1 << 20

// Full returns, while the last write failed for want of space, an error wrapping
// ErrFull that says so; nil once writes work again. With writes failing, clients
// (and a load balancer reading /healthz) may stop sending any, so it does not wait
// for one: it writes and syncs fullProbeBytes to a scratch file beside the database,
// and takes space to be back when that works. A write that still fails marks the
// disk full again.
func (db *DB) Full() error {
	p := db.full.Load()
	if p == nil {
		return nil
	}
	if err := probeSpace(filepath.Dir(db.path), fullProbeBytes); err == nil {
		db.full.CompareAndSwap(p, nil)
		return nil
	}
	// Not the SQLite error itself: /healthz answers anyone, and the error names what
	// the failed write was storing.
	return fmt.Errorf("%w: the disk holding the database has no space left, so nothing new can be stored; free space on it and hearth recovers by itself", storage.ErrFull)
}

// probeSpace writes n bytes to a new file in dir, syncs and removes it.
func probeSpace(dir string, n int) error {
	f, err := os.CreateTemp(dir, ".hearth-space-check-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(make([]byte, n))
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Corruption returns the first corruption error queries met since Open, or nil.
func (db *DB) Corruption() error {
	if p := db.corrupt.Load(); p != nil {
		return fmt.Errorf("%w (seen at run time: %v); stop hearth and restore the database from a backup", storage.ErrCorrupt, *p)
	}
	return nil
}

// QuickCheck runs PRAGMA quick_check: every page and b-tree of the file is read and
// checked, without the index-against-table cross checks of integrity_check, in time
// linear in the file's size. hearth serve runs it at start so that a damaged file is
// refused before it serves errors. It returns an error wrapping ErrCorrupt listing the
// first problems found.
func (db *DB) QuickCheck(ctx context.Context) error {
	rows, err := db.r.QueryContext(ctx, `PRAGMA quick_check(20)`)
	if err != nil {
		return db.seen(fmt.Errorf("storage: quick check: %w", err))
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return db.seen(fmt.Errorf("storage: quick check: %w", err))
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return db.seen(fmt.Errorf("storage: quick check: %w", err))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: quick_check: %s", storage.ErrCorrupt, strings.Join(problems, "; "))
	}
	return nil
}

// privateFiles makes the database's directory 0700 and its files (the database, its
// write-ahead log and shared-memory index) 0600 where they are looser: they hold every
// stored prompt and output, and key hashes. SQLite creates the -wal and -shm files with
// the database file's mode, so a database created 0600 keeps them private.
func privateFiles(abs string) error {
	dir := filepath.Dir(abs)
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o077 != 0 {
		// A read-only file system cannot be changed, nor written to by anyone: the open
		// reports it (explainOpenError).
		if err := os.Chmod(dir, 0o700); err != nil && !errors.Is(err, syscall.EROFS) {
			return fmt.Errorf("the data directory %s is open to other users (mode %v) and hearth cannot change that: %w", dir, st.Mode().Perm(), err)
		}
	}
	// A new database file is created here, 0600, before SQLite creates it with the
	// umask's mode (usually 0644).
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return explainOpenError(dir, err)
	}
	for _, p := range []string{abs, abs + "-wal", abs + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, syscall.EROFS) {
				return fmt.Errorf("%s is open to other users (mode %v) and hearth cannot change that: %w", p, st.Mode().Perm(), err)
			}
		}
	}
	return nil
}
