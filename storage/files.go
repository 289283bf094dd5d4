package storage

import (
	"errors"
	"time"
)

// Files: the Files API's uploads, owned by one key like a response. A file's bytes are
// kept in the database itself, next to its record, so that whatever holds the records
// holds the bytes: one SQLite file to back up, and every replica on one PostgreSQL
// reads the same uploads with nothing shared on disk. The server bounds their size
// (--max-file-bytes).

// ErrFileNotFound: the file does not exist, was deleted, or belongs to another owner
// (indistinguishable on purpose, as for responses).
var ErrFileNotFound = errors.New("storage: file not found")

// File lists of the Files API: OpenAI's default and largest page.
const (
	DefaultFileListLimit = 10000
	MaxFileListLimit     = 10000
)

// File is a stored file's record, without its bytes.
type File struct {
	ID        string
	Owner     string
	Filename  string
	Purpose   string
	Bytes     int64 // the length of its content
	CreatedAt time.Time
}

// NewFile is what CreateFile stores.
type NewFile struct {
	ID        string
	Owner     string
	Filename  string
	Purpose   string
	Content   []byte
	CreatedAt time.Time // zero means now
}

// FileQuery selects a page of ListFiles: the owner's files of Purpose ("" any), in
// creation order (Desc by default), after the file id After ("" from the start), at
// most Limit (<= 0 is DefaultFileListLimit, capped at MaxFileListLimit).
type FileQuery struct {
	Purpose string
	After   string
	Limit   int
	Order   Order
}

// FileListLimit is q.Limit as the stores apply it.
func (q FileQuery) FileListLimit() int {
	if q.Limit <= 0 {
		return DefaultFileListLimit
	}
	return min(q.Limit, MaxFileListLimit)
}
