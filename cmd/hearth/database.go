package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"hearth/internal/seal"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// databaseFile is the database's file in the data directory.
const databaseFile = "hearth.db"

// newDatabaseFlag is the serve flag that accepts starting with an empty database where
// the data directory's one was lost or is damaged.
const newDatabaseFlag = "--new-database"

// errDatabaseLost: the data directory held hearth's data but its database is gone or
// empty.
var errDatabaseLost = errors.New("the database was lost")

// checkDatabaseNotLost refuses a data directory whose database vanished or was emptied
// (a restore that missed it, a truncating copy, a file system repair): hearth would
// otherwise create a new one and serve as if it never had any responses or keys. The
// directory held data when its seal.key exists, which hearth creates after the first
// successful open of the database. A database emptied by SQLite itself does not exist:
// from its first open on the file holds at least its header page, and a crash before
// the first checkpoint leaves the data in the -wal file, which counts.
func checkDatabaseNotLost(dataDir string) error {
	if _, err := os.Stat(filepath.Join(dataDir, seal.FileName)); err != nil {
		return nil // a new data directory (or one without a key yet)
	}
	path := filepath.Join(dataDir, databaseFile)
	empty := func(p string) (bool, string) {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return true, "is missing"
		}
		return err == nil && st.Size() == 0, "is empty (0 bytes)"
	}
	dbEmpty, how := empty(path)
	walEmpty, _ := empty(path + "-wal")
	if !dbEmpty || !walEmpty {
		return nil
	}
	return fmt.Errorf("%w: %s %s, but %s held hearth's data before (%s is there). "+
		"Restore %s from a backup, or start with an empty database (no stored responses, no keys) with %s",
		errDatabaseLost, path, how, dataDir, seal.FileName, databaseFile, newDatabaseFlag+".")
}

// openServeDatabase opens the database of dataDir for serving: it refuses a lost
// database (checkDatabaseNotLost) and a damaged one (SQLite's quick_check, whose time is
// logged), unless fresh, which starts with an empty database instead and keeps a
// damaged one beside it.
//
// path is the SQLite file (--database); the lost-database check applies to the data
// directory's own hearth.db, whose loss its seal.key reveals.
func openServeDatabase(ctx context.Context, dataDir, path string, fresh bool, log *slog.Logger) (*sqlite.DB, error) {
	if filepath.Clean(path) == filepath.Join(dataDir, databaseFile) {
		if err := checkDatabaseNotLost(dataDir); err != nil {
			if !fresh {
				return nil, err
			}
			log.Warn("starting with a new, empty database", "reason", err.Error())
		}
	}
	db, err := openChecked(ctx, path, log)
	if errors.Is(err, storage.ErrCorrupt) && fresh {
		aside, merr := moveAside(path)
		if merr != nil {
			return nil, fmt.Errorf("database: %w; and moving it aside failed: %w", err, merr)
		}
		log.Warn("the database is damaged: moved it aside and starting with a new, empty one", "damaged", aside, "error", err.Error())
		db, err = openChecked(ctx, path, log)
	}
	if errors.Is(err, storage.ErrCorrupt) {
		return nil, fmt.Errorf("database: %w.\nhearth does not serve from a damaged database: requests reading the damaged pages would fail. "+
			"Stop here and restore %s from a backup; or salvage what SQLite can read "+
			"(sqlite3 %s .recover | sqlite3 recovered.db, then put recovered.db in its place); "+
			"or start with %s, which moves the damaged files aside (%s.damaged-TIME) and starts with an empty database.",
			err, path, path, newDatabaseFlag, databaseFile)
	}
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	return db, nil
}

// openChecked opens path and runs its quick_check.
func openChecked(ctx context.Context, path string, log *slog.Logger) (*sqlite.DB, error) {
	db, err := sqlite.Open(path)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := db.QuickCheck(ctx); err != nil {
		db.Close()
		return nil, err
	}
	var size int64
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	log.Info("database checked", "path", path, "bytes", size, "quick_check", time.Since(start).Round(time.Millisecond))
	return db, nil
}

// moveAside renames a damaged database and its -wal and -shm files to
// <name>.damaged-<time>, where sqlite3 can still open them together.
func moveAside(path string) (string, error) {
	aside := path + ".damaged-" + time.Now().UTC().Format("20060102T150405Z")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Rename(path+suffix, aside+suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return aside, nil
}
