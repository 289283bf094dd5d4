package storage

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Vector stores: named collections of the owner's files, each file read, cut into
// chunks and embedded in the background. The store keeps the records the API shows
// (stores, their files with a status, batches of files attached together) and the
// chunks (text and vector) a search reads; it computes no embedding and searches
// nothing itself: the server does, over the chunks it loads.
//
// A file's ingestion is a small state machine: attached in_progress, then finished
// once as completed (with its chunks, written in the same transaction), failed (with
// an error) or cancelled. Finishing a file that is no longer in progress (deleted,
// cancelled, re-attached) is ErrFinished or ErrVectorStoreFileNotFound, so a worker
// that lost the race writes nothing.

// ErrVectorStoreNotFound: the vector store does not exist, was deleted, or belongs to
// another owner (indistinguishable on purpose).
var ErrVectorStoreNotFound = errors.New("storage: vector store not found")

// ErrVectorStoreFileNotFound: the file is not attached to that vector store (or the
// store is not the owner's), or the batch is not the store's.
var ErrVectorStoreFileNotFound = errors.New("storage: vector store file not found")

// The statuses of a file in a vector store (OpenAI's).
const (
	FileInProgress = "in_progress"
	FileCompleted  = "completed"
	FileFailed     = "failed"
	FileCancelled  = "cancelled"
)

// Vector store lists: OpenAI's default and largest page.
const (
	DefaultVectorStoreListLimit = 20
	MaxVectorStoreListLimit     = 100
)

// Chunking is the static chunking strategy a file is cut with, in tokens of the
// store's embedding model. The server resolves "auto" to numbers before storing.
type Chunking struct {
	MaxTokens     int
	OverlapTokens int
}

// FileCounts counts a store's (or a batch's) files by status.
type FileCounts struct {
	InProgress, Completed, Failed, Cancelled, Total int
}

// VectorStore is a store's record with its files counted.
type VectorStore struct {
	ID       string
	Owner    string
	Name     string
	Model    string // the embedding model its chunks were embedded with
	Chunking Chunking
	// ExpiresAfterDays > 0: the store expires that many days after LastActiveAt
	// (OpenAI's expires_after with anchor last_active_at); 0: never.
	ExpiresAfterDays int
	Metadata         json.RawMessage // a JSON object
	CreatedAt        time.Time
	LastActiveAt     time.Time
	Files            FileCounts
	UsageBytes       int64 // the sum of its completed files' UsageBytes
	// ChunksVersion moves with every change of the store's chunks (a file completed,
	// attached again, detached) or of their files' attributes: chunks read at one
	// version are the store's for as long as it stays.
	ChunksVersion int64
}

// ExpiresAt is when the store expires; zero when it does not.
func (s *VectorStore) ExpiresAt() time.Time {
	if s.ExpiresAfterDays <= 0 {
		return time.Time{}
	}
	return s.LastActiveAt.Add(time.Duration(s.ExpiresAfterDays) * 24 * time.Hour)
}

// NewVectorStore is what CreateVectorStore stores; its Files are attached in the same
// transaction (in_progress).
type NewVectorStore struct {
	ID               string
	Owner            string
	Name             string
	Model            string
	Chunking         Chunking
	ExpiresAfterDays int
	Metadata         json.RawMessage
	CreatedAt        time.Time // zero means now; LastActiveAt starts there
	Files            []NewVectorStoreFile
}

// VectorStoreUpdate changes what is not nil.
type VectorStoreUpdate struct {
	Name             *string
	ExpiresAfterDays *int
	Metadata         json.RawMessage
}

// VectorStoreFile is a file attached to a store, with its ingestion's status.
type VectorStoreFile struct {
	StoreID    string
	FileID     string
	Owner      string
	BatchID    string // "" when attached alone
	Status     string
	ErrorCode  string // last_error, when Status is failed
	ErrorMsg   string
	Attributes json.RawMessage // a JSON object, the filters' subject
	Chunking   Chunking
	UsageBytes int64 // the bytes of its chunks' text, once completed
	CreatedAt  time.Time
}

// NewVectorStoreFile attaches one of the owner's files (FileID must name a stored
// file of the owner) to a store.
type NewVectorStoreFile struct {
	FileID     string
	BatchID    string
	Attributes json.RawMessage
	Chunking   Chunking
}

// VectorStoreFileQuery selects a page of ListVectorStoreFiles, like FileQuery; Status
// and BatchID ("" any) filter.
type VectorStoreFileQuery struct {
	Status  string
	BatchID string
	After   string
	Limit   int
	Order   Order
}

// VectorStoreQuery selects a page of ListVectorStores, like FileQuery.
type VectorStoreQuery struct {
	After string
	Limit int
	Order Order
}

// ListLimit is the limit as the stores apply it.
func (q VectorStoreQuery) ListLimit() int { return vectorStoreLimit(q.Limit) }

// ListLimit is the limit as the stores apply it.
func (q VectorStoreFileQuery) ListLimit() int { return vectorStoreLimit(q.Limit) }

func vectorStoreLimit(n int) int {
	if n <= 0 {
		return DefaultVectorStoreListLimit
	}
	return min(n, MaxVectorStoreListLimit)
}

// FileBatch is a batch of files attached together, with them counted.
type FileBatch struct {
	ID        string
	StoreID   string
	Owner     string
	CreatedAt time.Time
	Files     FileCounts
}

// Chunk is one piece of a file's text with its embedding.
type Chunk struct {
	FileID     string
	Index      int // its place in the file, from 0
	Text       string
	Vector     []float32
	Attributes json.RawMessage // its file's, as they are now
	Filename   string          // its file's
}

// NewChunk is a chunk CompleteVectorStoreFile stores.
type NewChunk struct {
	Text   string
	Vector []float32
}

// EncodeVector is a vector as the stores keep it: little-endian float32s.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// DecodeVector reverses EncodeVector.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("storage: a vector of %d bytes: %w", len(b), ErrCorrupt)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// AttributesJSON checks a file's attributes (a JSON object, or nothing) and returns
// the text both stores keep.
func AttributesJSON(a json.RawMessage) (string, error) {
	if len(a) == 0 || string(a) == "null" {
		return "{}", nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(a, &probe); err != nil {
		return "", fmt.Errorf("storage: attributes must be a JSON object: %w", err)
	}
	return string(a), nil
}
