package main

import (
	"hearth/cmd/hearth/bench"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// openStore opens the store at dsn, today the path of a SQLite file. It is the one
// place that picks an implementation of storage.Store (a postgres:// URL would open
// storage/postgres here); everything past it, the server included, sees the interface.
// `hearth serve` opens its SQLite file through openServeDatabase (database.go), which
// adds the file's own checks (a lost or damaged file) before serving from it.
func openStore(dsn string) (storage.Store, error) {
	db, err := sqlite.Open(dsn)
	if err != nil {
		return nil, err // not a typed nil in the interface
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
