package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"hearth/engine"
	"hearth/internal/filetext"
	"hearth/internal/scrub"
	"hearth/internal/textchunk"
	"hearth/storage"
)

// Ingestion: a file attached to a vector store is read (internal/filetext), cut into
// chunks (internal/textchunk) and embedded with the store's model in the background,
// then stored with its chunks in one transaction (storage.CompleteVectorStoreFile).
// The work is bounded: one queue of files waiting (a full queue fails the file at
// once, with a message saying to attach it again) and a fixed number of workers. Each
// embedding call takes a slot of the model in admission like a request
// (Server.admitIngestion), so ingestion takes turns with the keys' requests.
//
// A file's status lives in the store, not here: a process that stops leaves its files
// in_progress, and the next one takes them up again from the start
// (Server.ResumeIngestion), which is safe because nothing of a file is stored before
// it completes. Shutdown cancels the files being embedded; they stay in_progress for
// the next start.

// Ingestion's defaults: workers embedding at once, and files waiting.
const (
	DefaultIngestWorkers = 2
	DefaultIngestQueue   = 1024
	// embedBatch is how many chunks one embedding call carries.
	embedBatch = 32
)

// The codes of a file's last_error (OpenAI's).
const (
	fileErrServer      = "server_error"
	fileErrUnsupported = "unsupported_file"
	fileErrInvalid     = "invalid_file"
)

// ingestStore is what ingestion needs of the store.
type ingestStore interface {
	GetFile(ctx context.Context, owner, id string) (*storage.File, error)
	GetVectorStoreFile(ctx context.Context, owner, storeID, fileID string) (*storage.VectorStoreFile, error)
	FileContent(ctx context.Context, owner, id string) ([]byte, error)
	CompleteVectorStoreFile(ctx context.Context, storeID, fileID string, chunks []storage.NewChunk) error
	FailVectorStoreFile(ctx context.Context, storeID, fileID, status, code, message string) error
}

// ingestJob is one file to ingest.
type ingestJob struct {
	storeID, fileID, owner, model string
	chunking                      storage.Chunking
}

type ingester struct {
	db    ingestStore
	embed engine.Embedder
	// tokens counts chunks' tokens with the embedding model's tokenizer.
	tokens engine.Tokenizer
	// admit waits for a slot of model for one embedding call and returns the context
	// to make it with and the slot's release (Server.admitIngestion); nil: no waiting.
	admit func(ctx context.Context, model string) (context.Context, func(), error)
	log   *slog.Logger
	queue chan ingestJob
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

func newIngester(db ingestStore, embed engine.Embedder, tokens engine.Tokenizer, log *slog.Logger, workers, queue int) *ingester {
	ctx, stop := context.WithCancel(context.Background())
	in := &ingester{db: db, embed: embed, tokens: tokens, log: log, queue: make(chan ingestJob, queue), ctx: ctx, stop: stop}
	for range workers {
		in.wg.Add(1)
		go in.work()
	}
	return in
}

// submit queues a file; a full queue fails it at once.
func (in *ingester) submit(j ingestJob) {
	select {
	case in.queue <- j:
	default:
		in.fail(j, fileErrServer, fmt.Sprintf("The ingestion queue is full (%d files waiting); attach the file again later.", cap(in.queue)))
	}
}

func (in *ingester) work() {
	defer in.wg.Done()
	for {
		select {
		case <-in.ctx.Done():
			return
		case j := <-in.queue:
			in.run(j)
		}
	}
}

// close stops the workers, cancelling the files in hand (they stay in_progress).
func (in *ingester) close() {
	in.stop()
	in.wg.Wait()
}

func (in *ingester) run(j ingestJob) {
	// A file cancelled, detached or finished while it waited costs nothing more.
	f, err := in.db.GetVectorStoreFile(in.ctx, j.owner, j.storeID, j.fileID)
	if errors.Is(err, storage.ErrVectorStoreFileNotFound) || errors.Is(err, storage.ErrVectorStoreNotFound) ||
		(err == nil && f.Status != storage.FileInProgress) {
		return
	}
	chunks, code, err := in.read(j)
	if in.ctx.Err() != nil {
		return // stopping: the file stays in_progress for the next start
	}
	if err != nil {
		in.fail(j, code, err.Error())
		return
	}
	err = in.db.CompleteVectorStoreFile(in.ctx, j.storeID, j.fileID, chunks)
	switch {
	case errors.Is(err, storage.ErrFinished) || errors.Is(err, storage.ErrVectorStoreFileNotFound):
		// Cancelled, detached or its store deleted while it was read: nothing to keep.
		in.log.Info("vector store file ingested after it was withdrawn", "vector_store", j.storeID, "file", j.fileID)
	case err != nil:
		in.log.Error("vector store file: storing its chunks failed", "vector_store", j.storeID, "file", j.fileID, "err", err)
		in.fail(j, fileErrServer, "Storing the file's chunks failed.")
	default:
		in.log.Info("vector store file ingested", "vector_store", j.storeID, "file", j.fileID, "chunks", len(chunks))
	}
}

func (in *ingester) fail(j ingestJob, code, message string) {
	err := in.db.FailVectorStoreFile(in.ctx, j.storeID, j.fileID, storage.FileFailed, code, message)
	if err != nil && !errors.Is(err, storage.ErrFinished) && !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
		in.log.Error("vector store file: recording its failure failed", "vector_store", j.storeID, "file", j.fileID, "err", err)
	}
}

// read turns the file into embedded chunks, or says why it cannot (a last_error code
// and a message for the client).
func (in *ingester) read(j ingestJob) ([]storage.NewChunk, string, error) {
	ctx := in.ctx
	f, err := in.db.GetFile(ctx, j.owner, j.fileID)
	var content []byte
	if err == nil {
		content, err = in.db.FileContent(ctx, j.owner, j.fileID)
	}
	if errors.Is(err, storage.ErrFileNotFound) {
		return nil, fileErrInvalid, fmt.Errorf("The file %s was deleted before it was read.", j.fileID)
	} else if err != nil {
		in.log.Error("vector store file: reading it failed", "file", j.fileID, "err", err)
		return nil, fileErrServer, errors.New("Reading the file failed.")
	}
	res, err := filetext.Read(f.Filename, "", content)
	switch {
	case errors.Is(err, filetext.ErrUnsupported):
		return nil, fileErrUnsupported, fmt.Errorf("%s: %v.", f.Filename, err)
	case err != nil:
		return nil, fileErrInvalid, fmt.Errorf("%s: %v.", f.Filename, err)
	case res.Kind != filetext.Text:
		return nil, fileErrUnsupported, fmt.Errorf("%s: an image has no text to search.", f.Filename)
	}
	texts, err := textchunk.Split(res.Text, j.chunking.MaxTokens, j.chunking.OverlapTokens, in.counter(ctx, j))
	if err != nil {
		if ctx.Err() != nil {
			return nil, "", ctx.Err()
		}
		in.log.Warn("vector store file: counting its tokens failed", "file", j.fileID, "model", j.model, "err", err)
		return nil, fileErrServer, fmt.Errorf("Counting the file's tokens with %s failed: %s", j.model, scrub.HostDetails(err.Error()))
	}
	if len(texts) == 0 {
		return nil, fileErrInvalid, fmt.Errorf("%s: %v.", f.Filename, filetext.ErrNoText)
	}
	chunks := make([]storage.NewChunk, 0, len(texts))
	for start := 0; start < len(texts); start += embedBatch {
		batch := texts[start:min(start+embedBatch, len(texts))]
		out, err := in.embedBatch(ctx, j.model, batch)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			code := fileErrServer
			if errors.Is(err, engine.ErrInputTooLong) {
				code = fileErrInvalid
			}
			in.log.Warn("vector store file: embedding failed", "file", j.fileID, "model", j.model, "err", err)
			// last_error is the client's to read: without the runtime's addresses and
			// paths, which the log above keeps.
			return nil, code, fmt.Errorf("Embedding the file's chunks with %s failed: %s", j.model, scrub.HostDetails(err.Error()))
		}
		if len(out.Vectors) != len(batch) {
			return nil, fileErrServer, fmt.Errorf("The embedding model %s answered %d vectors for %d chunks.", j.model, len(out.Vectors), len(batch))
		}
		for i, text := range batch {
			chunks = append(chunks, storage.NewChunk{Text: text, Vector: out.Vectors[i]})
		}
	}
	return chunks, "", nil
}

// embedBatch embeds one batch of chunks, in a slot of the model when admission is on.
func (in *ingester) embedBatch(ctx context.Context, model string, batch []string) (*engine.EmbedResult, error) {
	if in.admit != nil {
		placed, done, err := in.admit(ctx, model)
		if err != nil {
			return nil, err
		}
		defer done()
		ctx = placed
	}
	return in.embed.Embed(ctx, &engine.EmbedRequest{Model: model, Input: batch})
}

// counter counts a file's tokens with its store's embedding model's tokenizer. A
// runtime that cannot tokenize for the model (engine.ErrNoTokenizer) leaves the file
// to textchunk's estimate, from its first count to its last, and the log says so.
func (in *ingester) counter(ctx context.Context, j ingestJob) textchunk.Counter {
	estimate := false
	return func(texts []string) ([]int, error) {
		if !estimate {
			n, err := in.tokens.CountTokens(ctx, j.model, texts)
			if !errors.Is(err, engine.ErrNoTokenizer) {
				return n, err
			}
			estimate = true
			in.log.Warn("vector store file: chunk sizes estimated (a token per word or punctuation mark), not counted by the model's tokenizer",
				"vector_store", j.storeID, "file", j.fileID, "model", j.model, "err", err)
		}
		return textchunk.Estimate(texts)
	}
}

// ResumeIngestion queues again the vector store files a stopped process left
// in_progress, and returns how many; they are read from the start. It runs once at
// startup. Where several processes share one database, each resumes them all: a file
// two of them ingest is stored by the first to finish, the second's work is dropped
// (CompleteVectorStoreFile finds it finished).
func (s *Server) ResumeIngestion(ctx context.Context) (int, error) {
	if s.ingest == nil {
		return 0, nil
	}
	files, err := s.db.InProgressVectorStoreFiles(ctx)
	if err != nil {
		return 0, err
	}
	models := map[string]string{}
	for _, f := range files {
		model, ok := models[f.StoreID]
		if !ok {
			v, err := s.db.GetVectorStore(ctx, f.Owner, f.StoreID)
			if err != nil {
				return 0, err
			}
			model = v.Model
			models[f.StoreID] = model
		}
		s.ingest.submit(ingestJob{storeID: f.StoreID, fileID: f.FileID, owner: f.Owner, model: model, chunking: f.Chunking})
	}
	return len(files), nil
}
