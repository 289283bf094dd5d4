package storage

import (
	"errors"
)

// ErrCorrupt: the database file is damaged (SQLite reported SQLITE_CORRUPT or
// SQLITE_NOTADB, or PRAGMA quick_check found problems). Nothing hearth does at run time
// repairs it; the operator restores a backup or starts a new database.
var ErrCorrupt = errors.New("storage: the database file is damaged")

// ErrFull: the database's file system (or the user's quota on it) has no space for a
// write: SQLite reported SQLITE_FULL, or an I/O error whose cause was ENOSPC or EDQUOT
// (the write-ahead log growing, its fsync). Reads still work and nothing stored is
// lost; writes work again once space is freed, without a restart.
var ErrFull = errors.New("storage full")
