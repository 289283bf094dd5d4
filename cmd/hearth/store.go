package main

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"hearth/cmd/hearth/bench"
	"hearth/storage"
	"hearth/storage/postgres"
	"hearth/storage/sqlite"
)

// databaseSpec is where --database says hearth keeps its records: a PostgreSQL URL, or
// the path of a SQLite file.
type databaseSpec struct {
	postgresURL string
	sqlitePath  string
}

// parseDatabase reads a --database value: empty for hearth.db in dataDir (the
// default), postgres://... or postgresql://... for PostgreSQL (the PG* environment
// variables fill in what the URL leaves out), sqlite://PATH or a plain path for a
// SQLite file.
func parseDatabase(spec, dataDir string) databaseSpec {
	switch {
	case spec == "":
		return databaseSpec{sqlitePath: filepath.Join(dataDir, databaseFile)}
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return databaseSpec{postgresURL: spec}
	case strings.HasPrefix(spec, "sqlite://"):
		return databaseSpec{sqlitePath: strings.TrimPrefix(spec, "sqlite://")}
	}
	return databaseSpec{sqlitePath: spec}
}

// String names the database for logs, without a password.
func (d databaseSpec) String() string {
	if d.postgresURL == "" {
		return d.sqlitePath
	}
	if u, err := url.Parse(d.postgresURL); err == nil {
		return u.Redacted()
	}
	return "postgres"
}

// postgresOpenTimeout bounds connecting to PostgreSQL and migrating its schema at
// start; a database that does not answer by then is reported, not waited for.
const postgresOpenTimeout = 30 * time.Second

// openStore opens the store dsn names (a --database value: a PostgreSQL URL, or a
// SQLite file's path). It and openServeStore are the places that pick an
// implementation of storage.Store; everything past them, the server included, sees the
// interface. `hearth serve` opens a SQLite file through openServeDatabase
// (database.go), which adds the file's own checks (a lost or damaged file).
func openStore(dsn string) (storage.Store, error) {
	d := parseDatabase(dsn, "")
	if d.postgresURL != "" {
		return openPostgres(context.Background(), d.postgresURL, "", nil)
	}
	db, err := sqlite.Open(d.sqlitePath)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return db, nil
}

func openPostgres(ctx context.Context, url, replica string, log *slog.Logger) (storage.Store, error) {
	ctx, cancel := context.WithTimeout(ctx, postgresOpenTimeout)
	defer cancel()
	db, err := postgres.OpenWith(ctx, url, postgres.Options{Replica: replica, Log: log})
	if err != nil {
		return nil, err
	}
	return db, nil
}

// openBenchStore is openStore as the bench harness takes it.
func openBenchStore(path string) (bench.Store, error) {
	st, err := openStore(path)
	if err != nil {
		return nil, err
	}
	return st, nil
}
