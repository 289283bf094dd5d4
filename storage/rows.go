package storage

import (
	"fmt"
	"time"
)

// The helpers below are what the SQLite and PostgreSQL stores read alike: the
// same columns scanned into the same records, and the same paging by a seq
// column. Each store keeps its own SQL (placeholders, drivers, transactions);
// these take over from the point where a driver hands back a row.

// RowScanner is one result row of either store's driver: database/sql's Row and
// Rows, pgx's Row and Rows.
type RowScanner interface {
	Scan(dest ...any) error
}

// Rows is a result set of either store's driver, read row by row. Closing it
// stays with the caller, which opened it.
type Rows interface {
	RowScanner
	Next() bool
	Err() error
}

// ScanAll reads every remaining row with scan.
func ScanAll[T any](rows Rows, scan func(RowScanner) (*T, error)) ([]T, error) {
	var all []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		all = append(all, *v)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return all, nil
}

// TrimPage cuts a page that was read with one row more than limit back to limit,
// saying whether that extra row was there: more follow.
func TrimPage[T any](items []T, limit int) ([]T, bool) {
	if len(items) > limit {
		return items[:limit], true
	}
	return items, false
}

// SeqOrder is how a list page walks its table's seq column in order o: the
// comparison that keeps the rows past the cursor's seq, and the ORDER BY direction.
func SeqOrder(o Order) (cmp, dir string) {
	if o == Asc {
		return ">", "ASC"
	}
	return "<", "DESC"
}

// FileColumns are the columns of the files table that ScanFile reads, in its order.
const FileColumns = `id, owner, filename, purpose, bytes, created_at`

// ScanFile reads a row of FileColumns.
func ScanFile(row RowScanner) (*File, error) {
	var f File
	var created int64
	if err := row.Scan(&f.ID, &f.Owner, &f.Filename, &f.Purpose, &f.Bytes, &created); err != nil {
		return nil, err
	}
	f.CreatedAt = time.UnixMilli(created)
	return &f, nil
}

// VectorStoreColumns are the columns of the vector_stores table that
// ScanVectorStore reads, in its order.
const VectorStoreColumns = `id, owner, name, model, chunk_max_tokens, chunk_overlap_tokens,
	expires_after_days, metadata, created_at, last_active_at, chunks_version`

// ScanVectorStore reads a row of VectorStoreColumns; the files are counted apart.
func ScanVectorStore(row RowScanner) (*VectorStore, error) {
	var s VectorStore
	var meta string
	var created, active int64
	if err := row.Scan(&s.ID, &s.Owner, &s.Name, &s.Model, &s.Chunking.MaxTokens, &s.Chunking.OverlapTokens,
		&s.ExpiresAfterDays, &meta, &created, &active, &s.ChunksVersion); err != nil {
		return nil, err
	}
	s.Metadata = []byte(meta)
	s.CreatedAt, s.LastActiveAt = time.UnixMilli(created), time.UnixMilli(active)
	return &s, nil
}

// VectorStoreFileColumns are the columns that ScanVectorStoreFile reads, in its
// order, from vector_store_files f joined with its store s (for the owner).
const VectorStoreFileColumns = `f.store_id, f.file_id, s.owner, f.batch_id, f.status, f.error_code, f.error_message,
	f.attributes, f.chunk_max_tokens, f.chunk_overlap_tokens, f.usage_bytes, f.created_at`

// ScanVectorStoreFile reads a row of VectorStoreFileColumns.
func ScanVectorStoreFile(row RowScanner) (*VectorStoreFile, error) {
	var f VectorStoreFile
	var attrs string
	var created int64
	if err := row.Scan(&f.StoreID, &f.FileID, &f.Owner, &f.BatchID, &f.Status, &f.ErrorCode, &f.ErrorMsg,
		&attrs, &f.Chunking.MaxTokens, &f.Chunking.OverlapTokens, &f.UsageBytes, &created); err != nil {
		return nil, err
	}
	f.Attributes = []byte(attrs)
	f.CreatedAt = time.UnixMilli(created)
	return &f, nil
}

// ChunkColumns are the columns that ScanChunk reads, in its order, from
// vector_store_chunks c, its attachment f and its file u (which may be gone).
const ChunkColumns = `c.file_id, c.idx, c.text, c.vector, f.attributes, COALESCE(u.filename, '')`

// ScanChunk reads a row of ChunkColumns.
func ScanChunk(row RowScanner) (*Chunk, error) {
	var c Chunk
	var vec []byte
	var attrs string
	if err := row.Scan(&c.FileID, &c.Index, &c.Text, &vec, &attrs, &c.Filename); err != nil {
		return nil, err
	}
	var err error
	if c.Vector, err = DecodeVector(vec); err != nil {
		return nil, err
	}
	c.Attributes = []byte(attrs)
	return &c, nil
}

// CountFiles reads the rows of a count of a store's files by status: status,
// count and bytes of chunk text, one row a status. It returns the counts and the
// bytes of them all.
func CountFiles(rows Rows) (FileCounts, int64, error) {
	var c FileCounts
	var usage int64
	for rows.Next() {
		var status string
		var n int
		var bytes int64
		if err := rows.Scan(&status, &n, &bytes); err != nil {
			return c, 0, err
		}
		c.Add(status, n)
		usage += bytes
	}
	return c, usage, rows.Err()
}

// Add counts n files in the given status.
func (c *FileCounts) Add(status string, n int) {
	switch status {
	case FileInProgress:
		c.InProgress = n
	case FileCompleted:
		c.Completed = n
	case FileFailed:
		c.Failed = n
	case FileCancelled:
		c.Cancelled = n
	}
	c.Total += n
}

// Row checks a new store and returns what its row holds beyond s's own fields:
// the metadata as stored, and the creation time (now when s leaves it zero).
func (s NewVectorStore) Row() (meta string, created time.Time, err error) {
	if s.ID == "" || s.Owner == "" {
		return "", time.Time{}, fmt.Errorf("storage: create vector store: id and owner are required")
	}
	if meta, err = MetadataJSON(s.Metadata); err != nil {
		return "", time.Time{}, err
	}
	created = s.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	return meta, created, nil
}

// MetadataColumn is the update's metadata as stored, nil when it leaves it alone.
func (u VectorStoreUpdate) MetadataColumn() (*string, error) {
	if u.Metadata == nil {
		return nil, nil
	}
	m, err := MetadataJSON(u.Metadata)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// CheckFailStatus checks the status a file in progress may fail into.
func CheckFailStatus(status string) error {
	if status != FileFailed && status != FileCancelled {
		return fmt.Errorf("storage: fail vector store file: status %q", status)
	}
	return nil
}

// CheckInProgress checks that an attachment in the given status may still finish.
func CheckInProgress(status string) error {
	if status != FileInProgress {
		return ErrFinished
	}
	return nil
}
