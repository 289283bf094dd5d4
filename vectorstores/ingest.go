package vectorstores

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"hearth/engine"
	"hearth/internal/filetext"
	"hearth/internal/scrub"
	"hearth/internal/textchunk"
	"hearth/storage"
)

// Ingestion: a file attached to a vector store is read (internal/filetext), cut into
// chunks (internal/textchunk) and embedded with the store's model in the background,
// its chunks stored batch by batch, then the file completed (storage.CompleteVectorStoreFile).
// The work is bounded: one queue of files waiting (a full queue fails the file at
// once, with a message saying to attach it again) and a fixed number of workers. Each
// embedding call takes a slot of the model in admission like a request
// (Config.Admit), so ingestion takes turns with the keys' requests.
//
// A file's status lives in the store, not here: a process that stops leaves its files
// in_progress, and the next one takes them up again (Service.ResumeIngestion) after
// the last batch of chunks stored: each embedded batch is stored as the file's
// progress (storage.SaveVectorStoreFileChunks), which searches do not see until the
// file completes. Each attempt at a file is counted in the store before it starts, so
// an attempt that ends the process (a file whose reading exhausts memory, say) stays
// counted: after maxIngestAttempts without progress the file fails instead of being
// resumed at every start. Shutdown cancels the files being embedded; they stay
// in_progress for the next start, their attempt uncounted.
//
// A file's work runs under a context of its own, cancelled when the file is withdrawn:
// its store deleted, the file detached, its batch cancelled. This process cancels at
// once the files it withdraws (withdraw); a watcher polls the file's status every
// ingestWatchEvery for withdrawals made elsewhere (another replica).

// Ingestion's defaults: workers embedding at once, and files waiting.
const (
	DefaultIngestWorkers = 2
	DefaultIngestQueue   = 1024
	// embedBatch is how many chunks one embedding call carries, and one stored step
	// of a file's progress.
	embedBatch = 32
	// maxIngestAttempts is how many times a file is taken up without progress before
	// it fails: an attempt that ended the process is not resumed for ever.
	maxIngestAttempts = 3
)

// ingestWatchEvery is how often a file being ingested is checked for a withdrawal
// made by another process.
var ingestWatchEvery = 2 * time.Second

// errWithdrawn ends the work of a file withdrawn while it was read.
var errWithdrawn = errors.New("the vector store file was withdrawn")

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
	StartVectorStoreFileAttempt(ctx context.Context, storeID, fileID string) (attempts, stored int, err error)
	SaveVectorStoreFileChunks(ctx context.Context, storeID, fileID string, from int, chunks []storage.NewChunk) error
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
	// admit waits for a slot of model for one embedding call and returns the embedder
	// to make it with (on the runtime it was placed on) and the slot's release
	// (Config.Admit); nil: no waiting.
	admit func(ctx context.Context, model string) (engine.Embedder, func(), error)
	log   *slog.Logger
	queue chan ingestJob
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup

	mu sync.Mutex
	// running cancels the files in hand, by store and file.
	running map[[2]string]*context.CancelCauseFunc
}

func newIngester(db ingestStore, embed engine.Embedder, tokens engine.Tokenizer, log *slog.Logger, workers, queue int) *ingester {
	ctx, stop := context.WithCancel(context.Background())
	in := &ingester{db: db, embed: embed, tokens: tokens, log: log, queue: make(chan ingestJob, queue), ctx: ctx, stop: stop,
		running: map[[2]string]*context.CancelCauseFunc{}}
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

// withdraw cancels the work in hand on the store's file (fileID "": on all its
// files): it was deleted, detached or cancelled.
func (in *ingester) withdraw(storeID, fileID string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for k, cancel := range in.running {
		if k[0] == storeID && (fileID == "" || k[1] == fileID) {
			(*cancel)(errWithdrawn)
		}
	}
}

// watch cancels ctx when the file stops being in progress in the store.
func (in *ingester) watch(ctx context.Context, cancel context.CancelCauseFunc, j ingestJob) {
	t := time.NewTicker(ingestWatchEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f, err := in.db.GetVectorStoreFile(ctx, j.owner, j.storeID, j.fileID)
			if errors.Is(err, storage.ErrVectorStoreFileNotFound) || errors.Is(err, storage.ErrVectorStoreNotFound) ||
				(err == nil && f.Status != storage.FileInProgress) {
				cancel(errWithdrawn)
				return
			}
		}
	}
}

func (in *ingester) run(j ingestJob) {
	// A file cancelled, detached or finished while it waited costs nothing more.
	f, err := in.db.GetVectorStoreFile(in.ctx, j.owner, j.storeID, j.fileID)
	if errors.Is(err, storage.ErrVectorStoreFileNotFound) || errors.Is(err, storage.ErrVectorStoreNotFound) ||
		(err == nil && f.Status != storage.FileInProgress) {
		return
	}
	ctx, cancel := context.WithCancelCause(in.ctx)
	defer cancel(nil)
	key := [2]string{j.storeID, j.fileID}
	mine := &cancel // the same file attached again may be in another worker's hands
	in.mu.Lock()
	in.running[key] = mine
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		if in.running[key] == mine {
			delete(in.running, key)
		}
		in.mu.Unlock()
	}()
	go in.watch(ctx, cancel, j)

	// Counted before the work starts: if reading the file ends the process, nothing
	// after this line runs, and the next start finds the attempt counted.
	attempts, stored, err := in.db.StartVectorStoreFileAttempt(ctx, j.storeID, j.fileID)
	switch {
	case errors.Is(err, storage.ErrFinished) || errors.Is(err, storage.ErrVectorStoreFileNotFound):
		return
	case err != nil:
		if in.ctx.Err() == nil {
			in.log.Error("vector store file: counting its attempt failed", "vector_store", j.storeID, "file", j.fileID, "err", err)
			in.fail(j, fileErrServer, "Recording the file's ingestion failed.")
		}
		return
	case attempts > maxIngestAttempts:
		in.log.Warn("vector store file: failed after attempts that did not finish", "vector_store", j.storeID, "file", j.fileID, "attempts", attempts-1)
		in.fail(j, fileErrInvalid, fmt.Sprintf("Ingesting the file was started %d times without finishing or progressing (the server stopped during each, as a file that exhausts its memory makes it); it is not tried again.", attempts-1))
		return
	}
	code, err := in.ingest(ctx, j, stored)
	if in.ctx.Err() != nil {
		// Stopping: the file stays in_progress for the next start, and this attempt,
		// which did not end the process, is not counted against it.
		uncount, done := context.WithTimeout(context.Background(), 5*time.Second)
		defer done()
		if err := in.db.SaveVectorStoreFileChunks(uncount, j.storeID, j.fileID, 0, nil); err != nil &&
			!errors.Is(err, storage.ErrFinished) && !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
			in.log.Warn("vector store file: clearing its attempt at shutdown failed", "vector_store", j.storeID, "file", j.fileID, "err", err)
		}
		return
	}
	if ctx.Err() != nil || errors.Is(err, errWithdrawn) {
		in.log.Info("vector store file withdrawn while it was ingested", "vector_store", j.storeID, "file", j.fileID)
		return
	}
	if err != nil {
		in.fail(j, code, err.Error())
	}
}

func (in *ingester) fail(j ingestJob, code, message string) {
	err := in.db.FailVectorStoreFile(in.ctx, j.storeID, j.fileID, storage.FileFailed, code, message)
	if err != nil && !errors.Is(err, storage.ErrFinished) && !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
		in.log.Error("vector store file: recording its failure failed", "vector_store", j.storeID, "file", j.fileID, "err", err)
	}
}

// ingest reads the file, cuts it into chunks and embeds those after the first stored
// (the progress of an earlier attempt), storing each batch as progress and the file
// as completed at the end; or says why it cannot (a last_error code and a message
// for the client).
func (in *ingester) ingest(ctx context.Context, j ingestJob, stored int) (string, error) {
	f, err := in.db.GetFile(ctx, j.owner, j.fileID)
	var content []byte
	if err == nil {
		content, err = in.db.FileContent(ctx, j.owner, j.fileID)
	}
	if errors.Is(err, storage.ErrFileNotFound) {
		return fileErrInvalid, fmt.Errorf("The file %s was deleted before it was read.", j.fileID)
	} else if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		in.log.Error("vector store file: reading it failed", "file", j.fileID, "err", err)
		return fileErrServer, errors.New("Reading the file failed.")
	}
	res, err := filetext.ReadContext(ctx, f.Filename, "", content)
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, filetext.ErrUnsupported):
		return fileErrUnsupported, fmt.Errorf("%s: %v.", f.Filename, err)
	case err != nil:
		return fileErrInvalid, fmt.Errorf("%s: %v.", f.Filename, err)
	case res.Kind != filetext.Text:
		return fileErrUnsupported, fmt.Errorf("%s: an image has no text to search.", f.Filename)
	}
	texts, err := textchunk.Split(res.Text, j.chunking.MaxTokens, j.chunking.OverlapTokens, in.counter(ctx, j))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		in.log.Warn("vector store file: counting its tokens failed", "file", j.fileID, "model", j.model, "err", err)
		return fileErrServer, fmt.Errorf("Counting the file's tokens with %s failed: %s", j.model, scrub.HostDetails(err.Error()))
	}
	if len(texts) == 0 {
		return fileErrInvalid, fmt.Errorf("%s: %v.", f.Filename, filetext.ErrNoText)
	}
	if stored > len(texts) {
		// The file was cut differently before (the model's tokenizer changed): its
		// progress does not apply.
		in.log.Warn("vector store file: its stored progress does not match its chunks", "file", j.fileID, "stored", stored, "chunks", len(texts))
		return fileErrServer, fmt.Errorf("The file's stored progress (%d chunks) does not match its %d chunks; attach it again.", stored, len(texts))
	}
	if stored > 0 {
		in.log.Info("vector store file: resuming after its stored chunks", "vector_store", j.storeID, "file", j.fileID, "stored", stored, "chunks", len(texts))
	}
	for start := stored; start < len(texts); start += embedBatch {
		batch := texts[start:min(start+embedBatch, len(texts))]
		out, err := in.embedBatch(ctx, j.model, batch)
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			code := fileErrServer
			if errors.Is(err, engine.ErrInputTooLong) {
				code = fileErrInvalid
			}
			in.log.Warn("vector store file: embedding failed", "file", j.fileID, "model", j.model, "err", err)
			// last_error is the client's to read: without the runtime's addresses and
			// paths, which the log above keeps.
			return code, fmt.Errorf("Embedding the file's chunks with %s failed: %s", j.model, scrub.HostDetails(err.Error()))
		}
		if len(out.Vectors) != len(batch) {
			return fileErrServer, fmt.Errorf("The embedding model %s answered %d vectors for %d chunks.", j.model, len(out.Vectors), len(batch))
		}
		chunks := make([]storage.NewChunk, len(batch))
		for i, text := range batch {
			chunks[i] = storage.NewChunk{Text: text, Vector: out.Vectors[i]}
		}
		if err := in.db.SaveVectorStoreFileChunks(ctx, j.storeID, j.fileID, start, chunks); err != nil {
			if ctx.Err() != nil || errors.Is(err, storage.ErrFinished) || errors.Is(err, storage.ErrVectorStoreFileNotFound) {
				return "", errWithdrawn
			}
			in.log.Error("vector store file: storing its chunks failed", "vector_store", j.storeID, "file", j.fileID, "err", err)
			return fileErrServer, errors.New("Storing the file's chunks failed.")
		}
	}
	err = in.db.CompleteVectorStoreFile(ctx, j.storeID, j.fileID, nil)
	switch {
	case errors.Is(err, storage.ErrFinished) || errors.Is(err, storage.ErrVectorStoreFileNotFound):
		// Cancelled, detached or its store deleted while it was read: nothing to keep.
		in.log.Info("vector store file ingested after it was withdrawn", "vector_store", j.storeID, "file", j.fileID)
		return "", errWithdrawn
	case err != nil:
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		in.log.Error("vector store file: storing its chunks failed", "vector_store", j.storeID, "file", j.fileID, "err", err)
		return fileErrServer, errors.New("Storing the file's chunks failed.")
	}
	in.log.Info("vector store file ingested", "vector_store", j.storeID, "file", j.fileID, "chunks", len(texts))
	return "", nil
}

// embedBatch embeds one batch of chunks, in a slot of the model when admission is on.
func (in *ingester) embedBatch(ctx context.Context, model string, batch []string) (*engine.EmbedResult, error) {
	if in.admit != nil {
		placed, done, err := in.admit(ctx, model)
		if err != nil {
			return nil, err
		}
		defer done()
		return placed.Embed(ctx, &engine.EmbedRequest{Model: model, Input: batch})
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
// in_progress, and returns how many; each is embedded after its stored chunks. It runs once at
// startup. Where several processes share one database, each resumes them all: a file
// two of them ingest is stored by the first to finish, the second's work is dropped
// (CompleteVectorStoreFile finds it finished).
func (s *Service) ResumeIngestion(ctx context.Context) (int, error) {
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
