package hearth

// The vector stores API's objects, as OpenAI's API defines them.

// Object types and id prefixes of vector stores.
const (
	ObjectVectorStore              = "vector_store"
	ObjectVectorStoreDeleted       = "vector_store.deleted"
	ObjectVectorStoreFile          = "vector_store.file"
	ObjectVectorStoreFileDeleted   = "vector_store.file.deleted"
	ObjectVectorStoreFilesBatch    = "vector_store.files_batch"
	ObjectVectorStoreSearchResults = "vector_store.search_results.page"
	PrefixVectorStore              = "vs"
	PrefixVectorStoreFileBatch     = "vsfb"
)

// CodeVectorStoreNotFound is the code of the 404 for an unknown, deleted or foreign
// vector store (and of a file or batch not in it).
const CodeVectorStoreNotFound = "vector_store_not_found"

// FileCounts counts a vector store's or a batch's files by status.
type FileCounts struct {
	InProgress int `json:"in_progress"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
	Cancelled  int `json:"cancelled"`
	Total      int `json:"total"`
}

// ExpiresAfter is a vector store's expiration policy: Days after its last activity.
type ExpiresAfter struct {
	Anchor string `json:"anchor"` // always last_active_at
	Days   int    `json:"days"`
}

// VectorStore is a vector store as the API presents it.
type VectorStore struct {
	ID           string            `json:"id"`
	Object       string            `json:"object"`
	CreatedAt    int64             `json:"created_at"`
	Name         string            `json:"name"`
	Status       string            `json:"status"` // expired, in_progress, completed
	UsageBytes   int64             `json:"usage_bytes"`
	FileCounts   FileCounts        `json:"file_counts"`
	LastActiveAt int64             `json:"last_active_at"`
	Metadata     map[string]string `json:"metadata"`
	ExpiresAfter *ExpiresAfter     `json:"expires_after,omitempty"`
	ExpiresAt    *int64            `json:"expires_at"`
	// Hearth says which embedding model the store's chunks are embedded with.
	Hearth VectorStoreHearth `json:"hearth"`
}

// VectorStoreHearth is hearth's extension of a vector store (the field "hearth" of
// the create request and of the object).
type VectorStoreHearth struct {
	EmbeddingModel string `json:"embedding_model"`
}

// ChunkingStrategy is a file's chunking, as shown: always static, with its numbers.
type ChunkingStrategy struct {
	Type   string         `json:"type"`
	Static StaticChunking `json:"static"`
}

// StaticChunking is the static strategy's numbers, in tokens.
type StaticChunking struct {
	MaxChunkSizeTokens int `json:"max_chunk_size_tokens"`
	ChunkOverlapTokens int `json:"chunk_overlap_tokens"`
}

// VectorStoreFile is a file in a vector store as the API presents it.
type VectorStoreFile struct {
	ID               string           `json:"id"`
	Object           string           `json:"object"`
	CreatedAt        int64            `json:"created_at"`
	VectorStoreID    string           `json:"vector_store_id"`
	Status           string           `json:"status"`
	LastError        *FileError       `json:"last_error"`
	UsageBytes       int64            `json:"usage_bytes"`
	Attributes       map[string]any   `json:"attributes"`
	ChunkingStrategy ChunkingStrategy `json:"chunking_strategy"`
}

// FileError is why a file failed: code server_error, unsupported_file or invalid_file.
type FileError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// VectorStoreFilesBatch is a batch of files attached together.
type VectorStoreFilesBatch struct {
	ID            string     `json:"id"`
	Object        string     `json:"object"`
	CreatedAt     int64      `json:"created_at"`
	VectorStoreID string     `json:"vector_store_id"`
	Status        string     `json:"status"` // in_progress, completed, cancelled, failed
	FileCounts    FileCounts `json:"file_counts"`
}

// VectorStoreSearchResult is one chunk found by a search.
type VectorStoreSearchResult struct {
	FileID     string              `json:"file_id"`
	Filename   string              `json:"filename"`
	Score      float64             `json:"score"`
	Attributes map[string]any      `json:"attributes"`
	Content    []SearchResultChunk `json:"content"`
}

// SearchResultChunk is a found chunk's text.
type SearchResultChunk struct {
	Type string `json:"type"` // text
	Text string `json:"text"`
}

// VectorStoreSearchPage answers a search.
type VectorStoreSearchPage struct {
	Object      string                    `json:"object"`
	SearchQuery []string                  `json:"search_query"`
	Data        []VectorStoreSearchResult `json:"data"`
	HasMore     bool                      `json:"has_more"`
	NextPage    *string                   `json:"next_page"`
}

// Deleted answers the deletion of a vector store or of one of its files.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}
