// Package vectorstores is files and vector stores as a service: uploads owned by the
// key that made them, vector stores of those files read, chunked and embedded in the
// background (ingest.go), their search (vectorstores.go), the file_search kind's
// stores (filesearch.go), and the files of a request read into what the model sees
// (inputfiles.go). It speaks the API's shapes and errors (package hearth) and the
// store's interfaces; HTTP is the server's, which decodes a request, calls the
// service and frames what it answers. cmd/hearth hands the service to the
// file_search kind, so a kind never calls back into the HTTP layer.
package vectorstores

import (
	"cmp"
	"context"
	"log/slog"

	"hearth/engine"
	"hearth/internal/gencache"
	"hearth/internal/urlpolicy"
	"hearth/storage"
)

// Store is what the service keeps in the database: the files and the vector stores.
type Store interface {
	storage.Files
	storage.VectorStores
}

// Runtime is what the service needs of the runtimes: embeddings of chunks and
// queries, the tokenizer of embedding models, and which models they serve (a store's
// embedding model). A *pool.Pool is one.
type Runtime interface {
	engine.Embedder
	engine.Tokenizer
	Model(ctx context.Context, name string) (*engine.ModelInfo, error)
	Models(ctx context.Context) ([]engine.ListedModel, error)
}

// Config wires a Service to its parts.
type Config struct {
	// Store keeps the files and vector stores; nil means none are kept (a request's
	// input_file may still carry its bytes or a URL).
	Store   Store
	Runtime Runtime
	// Admit waits for a slot of model for one embedding call of ingestion and
	// returns the embedder to make the call with (on the runtime it was placed on)
	// and the slot's release, so that ingestion takes turns with the keys' requests;
	// nil: no waiting.
	Admit func(ctx context.Context, model string) (engine.Embedder, func(), error)
	// EmbeddingModel is the embedding model of a vector store created without one
	// (--embedding-model); "" picks the only embedding model the runtimes serve.
	EmbeddingModel string
	// IngestWorkers is how many vector store files are read and embedded at once;
	// zero means DefaultIngestWorkers. IngestQueue bounds the files waiting; zero
	// means DefaultIngestQueue.
	IngestWorkers, IngestQueue int
	// IndexMemory bounds the memory of vector stores' search indexes kept between
	// searches (--vector-index-memory); zero means DefaultIndexMemory.
	IndexMemory int64
	// MaxFileBytes bounds one file a request reads (--max-file-bytes; negative: no
	// bound), MaxImageBytes one image (--max-image-bytes; zero or less: no bound).
	MaxFileBytes, MaxImageBytes int64
	// RequestFileBytes bounds the bytes of all the files one request reads together;
	// negative: no bound.
	RequestFileBytes int64
	// FileURLs are the URLs an input_file's file_url may name (--file-allow-url); nil
	// or empty refuses every file_url.
	FileURLs *urlpolicy.Policy
	Logger   *slog.Logger
}

// Service is files and vector stores: their records, ingestion, indexes and search.
type Service struct {
	db    Store
	rt    Runtime
	log   *slog.Logger
	limit struct {
		file, image, request int64
	}
	fileURLs *urlpolicy.Policy
	// embedModel: Config.EmbeddingModel.
	embedModel string
	// ingest reads, chunks and embeds vector store files in the background
	// (ingest.go); nil without a store.
	ingest *ingester
	// indexes keeps vector stores' indexes between searches (vectorstores.go).
	indexes *indexCache
}

// New makes the service and starts its ingestion workers (Close stops them).
func New(cfg Config) *Service {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Service{db: cfg.Store, rt: cfg.Runtime, log: log, fileURLs: cfg.FileURLs, embedModel: cfg.EmbeddingModel,
		indexes: newIndexCache(int(cmp.Or(cfg.IndexMemory, DefaultIndexMemory)))}
	s.limit.file, s.limit.image, s.limit.request = cfg.MaxFileBytes, cfg.MaxImageBytes, cfg.RequestFileBytes
	if cfg.Store != nil {
		s.ingest = newIngester(cfg.Store, cfg.Runtime, cfg.Runtime, log, cmp.Or(cfg.IngestWorkers, DefaultIngestWorkers), cmp.Or(cfg.IngestQueue, DefaultIngestQueue))
		s.ingest.admit = cfg.Admit
	}
	return s
}

// Stored reports whether the service keeps files (it has a store).
func (s *Service) Stored() bool { return s.db != nil }

// Close stops the ingestion workers, cancelling the files in hand: they stay
// in_progress for the next start (ResumeIngestion).
func (s *Service) Close() {
	if s.ingest != nil {
		s.ingest.close()
	}
}

// IndexStats is what /metrics reports of the indexes kept between searches.
func (s *Service) IndexStats() gencache.Stats { return s.indexes.Stats() }
