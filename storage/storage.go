// Package storage is hearth's store as its consumers see it: the records (responses,
// items, chains and their checkpoints, journal events, conversations, API keys,
// console reads), the errors every implementation returns, and the interfaces of the
// store by concern (store.go). It imports no database driver.
//
// The store does not know the Open Responses types: request parameters, response
// objects and items are stored as the JSON the caller hands over, and the caller
// (engine, server) converts. What it does own is the shape of a conversation: which
// items belong to which response, in which order, who may see them, and which status
// a response is in.
//
// Implementations live in sub-packages (storage/sqlite, the embedded default), and each
// runs the conformance suite in storage/storetest; only cmd/hearth picks one.
package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
)

// Errors returned by every store's methods. They are sentinels so the server can map
// them to API errors with errors.Is, whatever context a method wraps around them.
var (
	// ErrNotFound: the response does not exist, was deleted, belongs to another owner,
	// or (LoadChain) one of its ancestors is missing. Callers must not be able to tell
	// these apart, or ids of other owners could be probed.
	ErrNotFound = errors.New("storage: response not found")
	// ErrExists: CreateResponse was given an id that is already stored.
	ErrExists = errors.New("storage: response already exists")
	// ErrFinished: the response has reached a terminal status (completed, incomplete,
	// failed, cancelled) and the requested transition needs one still in flight.
	ErrFinished = errors.New("storage: response already finished")
	// ErrInvalidCursor: ListInputItems was given an `after` that is not an input item
	// of the response.
	ErrInvalidCursor = errors.New("storage: cursor is not an item of this response")

	// ErrCorrupt: the store's data is damaged (SQLite: SQLITE_CORRUPT, SQLITE_NOTADB, or
	// problems found by PRAGMA quick_check). Nothing hearth does at run time repairs
	// it; the operator restores a backup or starts a new database.
	ErrCorrupt = errors.New("storage: the database file is damaged")
	// ErrFull: the store has no space for a write (SQLite: SQLITE_FULL, or an I/O error
	// whose cause was ENOSPC or EDQUOT, as the write-ahead log grows). Reads still work
	// and nothing stored is lost; writes work again once space is freed, without a
	// restart.
	ErrFull = errors.New("storage full")
	// ErrUnavailable: the store cannot be reached for now (PostgreSQL: the server is
	// down, restarting, refusing connections, or dropped the connection; SQLite: the
	// file cannot be read or written, an I/O error other than a full disk). Nothing
	// stored is known to be lost, and the same store serves again once the database is
	// back, without a restart. A write that fails with it happened whole or not at all
	// (each is one transaction); only a connection lost during the commit itself leaves
	// the caller unable to tell which.
	ErrUnavailable = errors.New("storage unavailable")
)

// OwnerOf returns the owner key under which responses created with apiKey are stored:
// the SHA-256 of the key in hex, so that the database never holds usable credentials.
// A server without authentication can use OwnerOf("") for everyone.
func OwnerOf(apiKey string) string {
	sum := sha256.Sum256([]byte(apiKey))
	return hex.EncodeToString(sum[:])
}
