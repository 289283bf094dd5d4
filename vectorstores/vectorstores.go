package vectorstores

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/singleflight"

	"hearth"
	"hearth/engine"
	"hearth/internal/attrfilter"
	"hearth/internal/gencache"
	"hearth/internal/textcap"
	"hearth/internal/vectorindex"
	"hearth/storage"
)

// Vector stores (/v1/vector_stores, OpenAI's shapes): collections of the key's files,
// each file read, chunked and embedded in the background (ingest.go), searched by
// the cosine of the query's embedding with the chunks'. Owned per key like files: a
// store of another key answers as a missing one.
//
// A search scans the store's chunks exactly (internal/vectorindex). The index of a
// store is kept between searches, bounded (indexCache), and read again when the
// store's ChunksVersion moves, which every replica sees in the database.

// The bounds of the API (OpenAI's).
const (
	maxStoreFileIDs     = 500 // file ids of one create or batch
	defaultChunkTokens  = 800 // the auto strategy
	defaultChunkOverlap = 400
	minChunkTokens      = 100
	maxChunkTokens      = 4096
	defaultSearchHits   = 10
	maxSearchHits       = 50
	maxExpiresDays      = 365
	maxQueries          = 16 // queries of one search (hearth's bound)
	// maxQueryChars bounds one query string, in characters, checked before any
	// tokenizer runs: within it a query never reaches the 8,192 tokens OpenAI
	// documents as its embedding models' input limit (a token is at least a
	// character), and its embedding takes a bounded time.
	maxQueryChars = 8192
)

// queryTooLong is the error of a query string over maxQueryChars (nil for one within).
func queryTooLong(param, query string) *hearth.Error {
	n := utf8.RuneCountInString(query)
	if n <= maxQueryChars {
		return nil
	}
	return hearth.InvalidRequest(param, hearth.CodeStringAboveMaxLength,
		fmt.Sprintf("Invalid '%s': %d characters; a search query is at most %d.", param, n, maxQueryChars))
}

// vectorStoreError maps storage's errors to the API's 404s.
func vectorStoreError(err error, id string) error {
	switch {
	case errors.Is(err, storage.ErrVectorStoreNotFound):
		return hearth.NotFound("vector_store_id", hearth.CodeVectorStoreNotFound,
			fmt.Sprintf("Vector store with id '%s' not found.", textcap.Cut(id, 100)))
	case errors.Is(err, storage.ErrVectorStoreFileNotFound):
		return hearth.NotFound("file_id", hearth.CodeFileNotFound,
			fmt.Sprintf("No such file or batch in vector store '%s'.", textcap.Cut(id, 100)))
	case errors.Is(err, storage.ErrFileNotFound):
		return hearth.FileNotFound("file_id", "")
	}
	return err
}

// vectorStoreObject is the API's object for a stored vector store.
func vectorStoreObject(v *storage.VectorStore, now time.Time) hearth.VectorStore {
	o := hearth.VectorStore{ID: v.ID, Object: hearth.ObjectVectorStore, CreatedAt: v.CreatedAt.Unix(), Name: v.Name,
		UsageBytes: v.UsageBytes, FileCounts: hearth.FileCounts(v.Files), LastActiveAt: v.LastActiveAt.Unix(),
		Hearth: hearth.VectorStoreHearth{EmbeddingModel: v.Model}}
	_ = json.Unmarshal(v.Metadata, &o.Metadata)
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	switch {
	case v.Expired(now):
		o.Status = "expired"
	case v.Files.InProgress > 0:
		o.Status = "in_progress"
	default:
		o.Status = "completed"
	}
	if v.ExpiresAfterDays > 0 {
		o.ExpiresAfter = &hearth.ExpiresAfter{Anchor: "last_active_at", Days: v.ExpiresAfterDays}
		at := v.ExpiresAt().Unix()
		o.ExpiresAt = &at
	}
	return o
}

func vectorStoreFileObject(f *storage.VectorStoreFile) hearth.VectorStoreFile {
	o := hearth.VectorStoreFile{ID: f.FileID, Object: hearth.ObjectVectorStoreFile, CreatedAt: f.CreatedAt.Unix(),
		VectorStoreID: f.StoreID, Status: f.Status, UsageBytes: f.UsageBytes,
		ChunkingStrategy: hearth.ChunkingStrategy{Type: "static", Static: hearth.StaticChunking{
			MaxChunkSizeTokens: f.Chunking.MaxTokens, ChunkOverlapTokens: f.Chunking.OverlapTokens}}}
	_ = json.Unmarshal(f.Attributes, &o.Attributes)
	if o.Attributes == nil {
		o.Attributes = map[string]any{}
	}
	if f.Status == storage.FileFailed {
		o.LastError = &hearth.FileError{Code: f.ErrorCode, Message: f.ErrorMsg}
	}
	return o
}

func fileBatchObject(b *storage.FileBatch) hearth.VectorStoreFilesBatch {
	o := hearth.VectorStoreFilesBatch{ID: b.ID, Object: hearth.ObjectVectorStoreFilesBatch, CreatedAt: b.CreatedAt.Unix(),
		VectorStoreID: b.StoreID, FileCounts: hearth.FileCounts(b.Files)}
	switch {
	case b.Files.InProgress > 0:
		o.Status = "in_progress"
	case b.Files.Cancelled > 0:
		o.Status = "cancelled"
	default:
		o.Status = "completed"
	}
	return o
}

// parseChunking reads a chunking_strategy: absent or auto is OpenAI's auto (800
// tokens, 400 overlap); static takes its numbers, checked as OpenAI checks them.
func parseChunking(raw json.RawMessage, param string, def storage.Chunking) (storage.Chunking, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return def, nil
	}
	var cs struct {
		Type   string `json:"type"`
		Static *struct {
			Max     *int `json:"max_chunk_size_tokens"`
			Overlap *int `json:"chunk_overlap_tokens"`
		} `json:"static"`
	}
	if err := json.Unmarshal(raw, &cs); err != nil {
		return def, hearth.InvalidRequest(param, hearth.CodeInvalidType, "Invalid '"+param+"': expected {type: auto} or {type: static, static: {...}}.")
	}
	switch cs.Type {
	case "auto":
		return storage.Chunking{MaxTokens: defaultChunkTokens, OverlapTokens: defaultChunkOverlap}, nil
	case "static":
	default:
		return def, hearth.InvalidRequest(param+".type", hearth.CodeInvalidValue, "Invalid '"+param+".type': expected 'auto' or 'static'.")
	}
	if cs.Static == nil || cs.Static.Max == nil || cs.Static.Overlap == nil {
		return def, hearth.InvalidRequest(param+".static", hearth.CodeMissingRequiredParameter,
			"A static strategy needs static.max_chunk_size_tokens and static.chunk_overlap_tokens.")
	}
	c := storage.Chunking{MaxTokens: *cs.Static.Max, OverlapTokens: *cs.Static.Overlap}
	if c.MaxTokens < minChunkTokens || c.MaxTokens > maxChunkTokens {
		return def, hearth.InvalidRequest(param+".static.max_chunk_size_tokens", hearth.CodeInvalidValue,
			fmt.Sprintf("max_chunk_size_tokens must be from %d to %d.", minChunkTokens, maxChunkTokens))
	}
	if c.OverlapTokens < 0 || c.OverlapTokens > c.MaxTokens/2 {
		return def, hearth.InvalidRequest(param+".static.chunk_overlap_tokens", hearth.CodeInvalidValue,
			"chunk_overlap_tokens must be from 0 to half of max_chunk_size_tokens.")
	}
	return c, nil
}

// parseExpiresAfter reads expires_after: {anchor: last_active_at, days: 1..365}; null
// is 0 (never).
func parseExpiresAfter(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var e struct {
		Anchor string `json:"anchor"`
		Days   int    `json:"days"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return 0, hearth.InvalidRequest("expires_after", hearth.CodeInvalidType, "Invalid 'expires_after': expected {anchor, days}.")
	}
	if e.Anchor != "last_active_at" {
		return 0, hearth.InvalidRequest("expires_after.anchor", hearth.CodeInvalidValue, "Invalid 'expires_after.anchor': expected 'last_active_at'.")
	}
	if e.Days < 1 || e.Days > maxExpiresDays {
		return 0, hearth.InvalidRequest("expires_after.days", hearth.CodeInvalidValue, fmt.Sprintf("expires_after.days must be from 1 to %d.", maxExpiresDays))
	}
	return e.Days, nil
}

// checkAttributes checks a file's attributes (hearth.CheckAttributes: OpenAI's
// bounds, shared with metadata).
func checkAttributes(raw json.RawMessage, param string) error {
	return hearth.CheckAttributes(raw, param)
}

// embeddingModel picks a new store's embedding model: the one the request names (it
// must be one the runtimes serve), else the configured default, else the only
// embedding model the runtimes serve.
func (s *Service) embeddingModel(ctx context.Context, requested string) (string, error) {
	const param = "hearth.embedding_model"
	if requested != "" {
		if !engine.ParseModelName(requested).Valid() {
			return "", hearth.InvalidRequest(param, hearth.CodeModelNotFound, fmt.Sprintf("The model '%s' does not exist.", textcap.Cut(requested, textcap.Model)))
		}
		info, err := s.rt.Model(ctx, requested)
		if errors.Is(err, engine.ErrModelNotFound) {
			return "", hearth.InvalidRequest(param, hearth.CodeModelNotFound, fmt.Sprintf("The model '%s' does not exist.", textcap.Cut(requested, textcap.Model)))
		} else if err != nil {
			return "", err
		}
		if len(info.Capabilities) > 0 && !slices.Contains(info.Capabilities, "embedding") {
			return "", hearth.InvalidRequest(param, hearth.CodeInvalidValue, fmt.Sprintf("The model '%s' is not an embedding model.", textcap.Cut(requested, textcap.Model)))
		}
		return requested, nil
	}
	if s.embedModel != "" {
		return s.embedModel, nil
	}
	list, err := s.rt.Models(ctx)
	if err != nil {
		return "", err
	}
	var found []string
	for _, m := range list {
		if info, err := s.rt.Model(ctx, m.Name); err == nil && slices.Contains(info.Capabilities, "embedding") {
			found = append(found, m.Name)
		}
	}
	return onlyEmbeddingModel(found)
}

// onlyEmbeddingModel is the embedding model when the runtimes serve exactly one, and
// otherwise the 400 that says what to do, naming those they serve.
func onlyEmbeddingModel(found []string) (string, error) {
	const param = "hearth.embedding_model"
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", hearth.InvalidRequest(param, hearth.CodeMissingRequiredParameter,
			"The runtimes serve no embedding model: pull one (ollama pull nomic-embed-text) or name one in 'hearth.embedding_model'.")
	}
	return "", hearth.InvalidRequest(param, hearth.CodeMissingRequiredParameter,
		fmt.Sprintf("The runtimes serve several embedding models (%s): name one in 'hearth.embedding_model', or configure --embedding-model.",
			strings.Join(found, ", ")))
}

// storeFileIDs checks the file ids of a create or a batch: each one of the key's
// files, none twice.
func (s *Service) storeFileIDs(ctx context.Context, ownerID string, ids []string, param string) error {
	if len(ids) > maxStoreFileIDs {
		return hearth.InvalidRequest(param, hearth.CodeArrayAboveMaxLength, fmt.Sprintf("'%s' has %d files; at most %d.", param, len(ids), maxStoreFileIDs))
	}
	seen := map[string]bool{}
	for i, id := range ids {
		p := fmt.Sprintf("%s[%d]", param, i)
		if seen[id] {
			return hearth.InvalidRequest(p, hearth.CodeInvalidValue, fmt.Sprintf("The file '%s' is named twice.", textcap.Cut(id, 100)))
		}
		seen[id] = true
		if _, err := s.db.GetFile(ctx, ownerID, id); errors.Is(err, storage.ErrFileNotFound) {
			return hearth.FileNotFound(p, id)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// CreateRequest is the body of POST /v1/vector_stores.
type CreateRequest struct {
	Name             *string         `json:"name"`
	Description      *string         `json:"description"`
	FileIDs          []string        `json:"file_ids"`
	ChunkingStrategy json.RawMessage `json:"chunking_strategy"`
	ExpiresAfter     json.RawMessage `json:"expires_after"`
	Metadata         json.RawMessage `json:"metadata"`
	Hearth           *struct {
		EmbeddingModel string `json:"embedding_model"`
	} `json:"hearth"`
}

// CreateVectorStore makes a store of who's files, queues them to be ingested and
// returns the store.
func (s *Service) CreateVectorStore(ctx context.Context, who string, req CreateRequest) (hearth.VectorStore, error) {
	chunking, err := parseChunking(req.ChunkingStrategy, "chunking_strategy",
		storage.Chunking{MaxTokens: defaultChunkTokens, OverlapTokens: defaultChunkOverlap})
	if err != nil {
		return hearth.VectorStore{}, err
	}
	days, err := parseExpiresAfter(req.ExpiresAfter)
	if err != nil {
		return hearth.VectorStore{}, err
	}
	if _, err := hearth.DecodeMetadata(req.Metadata, "metadata"); err != nil {
		return hearth.VectorStore{}, err
	}
	if err := s.storeFileIDs(ctx, who, req.FileIDs, "file_ids"); err != nil {
		return hearth.VectorStore{}, err
	}
	var requested string
	if req.Hearth != nil {
		requested = req.Hearth.EmbeddingModel
	}
	model, err := s.embeddingModel(ctx, requested)
	if err != nil {
		return hearth.VectorStore{}, err
	}
	rec := storage.NewVectorStore{ID: hearth.NewID(hearth.PrefixVectorStore), Owner: who, Model: model,
		Chunking: chunking, ExpiresAfterDays: days, Metadata: req.Metadata, CreatedAt: time.Now()}
	if req.Name != nil {
		rec.Name = textcap.Cut(*req.Name, 256)
	}
	for _, id := range req.FileIDs {
		rec.Files = append(rec.Files, storage.NewVectorStoreFile{FileID: id, Chunking: chunking})
	}
	if err := s.db.CreateVectorStore(ctx, rec); err != nil {
		return hearth.VectorStore{}, vectorStoreError(err, rec.ID)
	}
	for _, id := range req.FileIDs {
		s.ingest.submit(ingestJob{storeID: rec.ID, fileID: id, owner: who, model: model, chunking: chunking})
	}
	s.log.Info("vector store created", "vector_store", rec.ID, "files", len(req.FileIDs), "model", model)
	return s.GetVectorStore(ctx, who, rec.ID)
}

// GetVectorStore returns who's store id.
func (s *Service) GetVectorStore(ctx context.Context, who, id string) (hearth.VectorStore, error) {
	v, err := s.db.GetVectorStore(ctx, who, id)
	if err != nil {
		return hearth.VectorStore{}, vectorStoreError(err, id)
	}
	return vectorStoreObject(v, time.Now()), nil
}

// ListVectorStores returns a page of who's stores, and whether more follow.
func (s *Service) ListVectorStores(ctx context.Context, who string, q storage.VectorStoreQuery) ([]hearth.VectorStore, bool, error) {
	stores, more, err := s.db.ListVectorStores(ctx, who, q)
	if errors.Is(err, storage.ErrInvalidCursor) {
		return nil, false, hearth.InvalidRequest("after", hearth.CodeInvalidValue, "after is not a vector store of this key.")
	} else if err != nil {
		return nil, false, err
	}
	now := time.Now()
	data := make([]hearth.VectorStore, len(stores))
	for i := range stores {
		data[i] = vectorStoreObject(&stores[i], now)
	}
	return data, more, nil
}

// UpdateVectorStore changes a store's name, expires_after (null removes it) and
// metadata: those of req's fields that are present.
func (s *Service) UpdateVectorStore(ctx context.Context, who, id string, req map[string]json.RawMessage) (hearth.VectorStore, error) {
	var u storage.VectorStoreUpdate
	if raw, ok := req["name"]; ok && string(raw) != "null" {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return hearth.VectorStore{}, hearth.InvalidRequest("name", hearth.CodeInvalidType, "Invalid 'name': expected a string.")
		}
		name = textcap.Cut(name, 256)
		u.Name = &name
	}
	if raw, ok := req["expires_after"]; ok {
		days, err := parseExpiresAfter(raw)
		if err != nil {
			return hearth.VectorStore{}, err
		}
		u.ExpiresAfterDays = &days
	}
	if raw, ok := req["metadata"]; ok {
		if _, err := hearth.DecodeMetadata(raw, "metadata"); err != nil {
			return hearth.VectorStore{}, err
		}
		u.Metadata = raw
		if string(raw) == "null" {
			u.Metadata = json.RawMessage("{}")
		}
	}
	v, err := s.db.UpdateVectorStore(ctx, who, id, u)
	if err != nil {
		return hearth.VectorStore{}, vectorStoreError(err, id)
	}
	return vectorStoreObject(v, time.Now()), nil
}

// DeleteVectorStore deletes a store, its chunks and its attachments; the files stay.
// Its files being ingested stop.
func (s *Service) DeleteVectorStore(ctx context.Context, who, id string) error {
	if err := s.db.DeleteVectorStore(ctx, who, id); err != nil {
		return vectorStoreError(err, id)
	}
	s.withdrawIngestion(id, "")
	return nil
}

// FileRequest is one file to attach, as the files route and a batch's files name it.
type FileRequest struct {
	FileID           string          `json:"file_id"`
	Attributes       json.RawMessage `json:"attributes"`
	ChunkingStrategy json.RawMessage `json:"chunking_strategy"`
}

// attach attaches files to the store (its model and default chunking), with a batch
// when batchID is set, and queues them.
func (s *Service) attach(ctx context.Context, who, storeID, batchID string, files []storage.NewVectorStoreFile) error {
	v, err := s.db.GetVectorStore(ctx, who, storeID)
	if err == nil {
		err = s.db.AttachVectorStoreFiles(ctx, who, storeID, batchID, files)
	}
	if err != nil {
		return vectorStoreError(err, storeID)
	}
	for _, f := range files {
		s.ingest.submit(ingestJob{storeID: storeID, fileID: f.FileID, owner: who, model: v.Model, chunking: f.Chunking})
	}
	return nil
}

// storeChunking is the store's default strategy, for a file attached without one.
func (s *Service) storeChunking(ctx context.Context, who, storeID string) (storage.Chunking, error) {
	v, err := s.db.GetVectorStore(ctx, who, storeID)
	if err != nil {
		return storage.Chunking{}, vectorStoreError(err, storeID)
	}
	return v.Chunking, nil
}

// AttachFile attaches one of who's files to the store, queues it to be ingested and
// returns it as the store's file.
func (s *Service) AttachFile(ctx context.Context, who, storeID string, req FileRequest) (hearth.VectorStoreFile, error) {
	def, err := s.storeChunking(ctx, who, storeID)
	if err != nil {
		return hearth.VectorStoreFile{}, err
	}
	if req.FileID == "" {
		return hearth.VectorStoreFile{}, hearth.InvalidRequest("file_id", hearth.CodeMissingRequiredParameter, "Missing required parameter: 'file_id'.")
	}
	f, err := s.storeFile(ctx, who, req, def, "")
	if err != nil {
		return hearth.VectorStoreFile{}, err
	}
	if err := s.attach(ctx, who, storeID, "", []storage.NewVectorStoreFile{f}); err != nil {
		return hearth.VectorStoreFile{}, err
	}
	return s.GetStoreFile(ctx, who, storeID, req.FileID)
}

// storeFile checks one file to attach (param prefixes its fields' names).
func (s *Service) storeFile(ctx context.Context, who string, req FileRequest, def storage.Chunking, param string) (storage.NewVectorStoreFile, error) {
	if err := s.storeFileIDs(ctx, who, []string{req.FileID}, param+"file_id"); err != nil {
		var he *hearth.Error
		if errors.As(err, &he) {
			he.Param = param + "file_id"
		}
		return storage.NewVectorStoreFile{}, err
	}
	if err := checkAttributes(req.Attributes, param+"attributes"); err != nil {
		return storage.NewVectorStoreFile{}, err
	}
	chunking, err := parseChunking(req.ChunkingStrategy, param+"chunking_strategy", def)
	if err != nil {
		return storage.NewVectorStoreFile{}, err
	}
	return storage.NewVectorStoreFile{FileID: req.FileID, Attributes: req.Attributes, Chunking: chunking}, nil
}

// GetStoreFile returns a file of who's store.
func (s *Service) GetStoreFile(ctx context.Context, who, storeID, fileID string) (hearth.VectorStoreFile, error) {
	f, err := s.db.GetVectorStoreFile(ctx, who, storeID, fileID)
	if err != nil {
		return hearth.VectorStoreFile{}, vectorStoreError(err, storeID)
	}
	return vectorStoreFileObject(f), nil
}

// ListStoreFiles returns a page of the files of who's store (of one of its batches
// when q.BatchID is set; of one status when q.Status is), and whether more follow.
func (s *Service) ListStoreFiles(ctx context.Context, who, storeID string, q storage.VectorStoreFileQuery) ([]hearth.VectorStoreFile, bool, error) {
	switch q.Status {
	case "", storage.FileInProgress, storage.FileCompleted, storage.FileFailed, storage.FileCancelled:
	default:
		return nil, false, hearth.InvalidRequest("filter", hearth.CodeInvalidValue, "filter must be in_progress, completed, failed or cancelled.")
	}
	files, more, err := s.db.ListVectorStoreFiles(ctx, who, storeID, q)
	if errors.Is(err, storage.ErrInvalidCursor) {
		return nil, false, hearth.InvalidRequest("after", hearth.CodeInvalidValue, "after is not a file of this vector store.")
	} else if err != nil {
		return nil, false, vectorStoreError(err, storeID)
	}
	data := make([]hearth.VectorStoreFile, len(files))
	for i := range files {
		data[i] = vectorStoreFileObject(&files[i])
	}
	return data, more, nil
}

// UpdateStoreFile replaces a store's file's attributes (req's attributes; null
// clears them); searches filter on them at once.
func (s *Service) UpdateStoreFile(ctx context.Context, who, storeID, fileID string, req map[string]json.RawMessage) (hearth.VectorStoreFile, error) {
	attrs, ok := req["attributes"]
	if !ok {
		return hearth.VectorStoreFile{}, hearth.InvalidRequest("attributes", hearth.CodeMissingRequiredParameter, "Missing required parameter: 'attributes'.")
	}
	if err := checkAttributes(attrs, "attributes"); err != nil {
		return hearth.VectorStoreFile{}, err
	}
	f, err := s.db.UpdateVectorStoreFile(ctx, who, storeID, fileID, attrs)
	if err != nil {
		return hearth.VectorStoreFile{}, vectorStoreError(err, storeID)
	}
	return vectorStoreFileObject(f), nil
}

// DetachFile takes a file out of the store with its chunks; the upload stays. Its
// ingestion, if in hand, stops.
func (s *Service) DetachFile(ctx context.Context, who, storeID, fileID string) error {
	if err := s.db.DetachVectorStoreFile(ctx, who, storeID, fileID); err != nil {
		return vectorStoreError(err, storeID)
	}
	s.withdrawIngestion(storeID, fileID)
	return nil
}

// BatchRequest is the body of POST /v1/vector_stores/{id}/file_batches: file_ids
// (with the batch's attributes and chunking_strategy) or files (each with its own).
type BatchRequest struct {
	FileIDs          []string        `json:"file_ids"`
	Files            []FileRequest   `json:"files"`
	Attributes       json.RawMessage `json:"attributes"`
	ChunkingStrategy json.RawMessage `json:"chunking_strategy"`
}

// CreateFileBatch attaches a batch of who's files to the store, queues them to be
// ingested and returns the batch.
func (s *Service) CreateFileBatch(ctx context.Context, who, storeID string, req BatchRequest) (hearth.VectorStoreFilesBatch, error) {
	def, err := s.storeChunking(ctx, who, storeID)
	if err != nil {
		return hearth.VectorStoreFilesBatch{}, err
	}
	var reqs []FileRequest
	var param func(i int) string
	switch {
	case len(req.FileIDs) > 0 && len(req.Files) > 0:
		return hearth.VectorStoreFilesBatch{}, hearth.InvalidRequest("files", hearth.CodeInvalidValue, "Send 'file_ids' or 'files', not both.")
	case len(req.FileIDs) > 0:
		for _, id := range req.FileIDs {
			reqs = append(reqs, FileRequest{FileID: id, Attributes: req.Attributes, ChunkingStrategy: req.ChunkingStrategy})
		}
		param = func(i int) string { return fmt.Sprintf("file_ids[%d].", i) }
	case len(req.Files) > 0:
		reqs = req.Files
		param = func(i int) string { return fmt.Sprintf("files[%d].", i) }
	default:
		return hearth.VectorStoreFilesBatch{}, hearth.InvalidRequest("file_ids", hearth.CodeMissingRequiredParameter, "Missing required parameter: 'file_ids' (or 'files').")
	}
	if len(reqs) > maxStoreFileIDs {
		return hearth.VectorStoreFilesBatch{}, hearth.InvalidRequest("file_ids", hearth.CodeArrayAboveMaxLength, fmt.Sprintf("A batch has at most %d files.", maxStoreFileIDs))
	}
	seen := map[string]bool{}
	var files []storage.NewVectorStoreFile
	for i, r := range reqs {
		p := param(i)
		if seen[r.FileID] {
			return hearth.VectorStoreFilesBatch{}, hearth.InvalidRequest(strings.TrimSuffix(p, "."), hearth.CodeInvalidValue, "A file is named twice in the batch.")
		}
		seen[r.FileID] = true
		f, err := s.storeFile(ctx, who, r, def, p)
		if err != nil {
			var he *hearth.Error
			if errors.As(err, &he) && len(req.FileIDs) > 0 && he.Param == p+"file_id" {
				he.Param = strings.TrimSuffix(p, ".")
			}
			return hearth.VectorStoreFilesBatch{}, err
		}
		files = append(files, f)
	}
	batchID := hearth.NewID(hearth.PrefixVectorStoreFileBatch)
	if err := s.attach(ctx, who, storeID, batchID, files); err != nil {
		return hearth.VectorStoreFilesBatch{}, err
	}
	return s.GetFileBatch(ctx, who, storeID, batchID)
}

// GetFileBatch returns a batch of who's store.
func (s *Service) GetFileBatch(ctx context.Context, who, storeID, batchID string) (hearth.VectorStoreFilesBatch, error) {
	b, err := s.db.GetFileBatch(ctx, who, storeID, batchID)
	if err != nil {
		return hearth.VectorStoreFilesBatch{}, vectorStoreError(err, storeID)
	}
	return fileBatchObject(b), nil
}

// CancelFileBatch cancels the batch's files not yet ingested (a worker embedding one
// finds it so and keeps nothing) and returns the batch.
func (s *Service) CancelFileBatch(ctx context.Context, who, storeID, batchID string) (hearth.VectorStoreFilesBatch, error) {
	b, err := s.db.CancelFileBatch(ctx, who, storeID, batchID)
	if err != nil {
		return hearth.VectorStoreFilesBatch{}, vectorStoreError(err, storeID)
	}
	return fileBatchObject(b), nil
}

// SearchQuery is a search as checked (ParseSearch).
type SearchQuery struct {
	Queries   []string
	Max       int
	Filter    *attrfilter.Filter
	Threshold float32
}

// SearchRequest is the body of POST /v1/vector_stores/{id}/search as sent.
type SearchRequest struct {
	Query          json.RawMessage `json:"query"`
	MaxNumResults  *int            `json:"max_num_results"`
	Filters        json.RawMessage `json:"filters"`
	RankingOptions *struct {
		Ranker         string   `json:"ranker"`
		ScoreThreshold *float64 `json:"score_threshold"`
	} `json:"ranking_options"`
	// RewriteQuery is accepted and ignored: hearth searches the query as sent.
	RewriteQuery bool `json:"rewrite_query"`
}

// ParseSearch checks a search's body: a 400 naming the field that is wrong.
func ParseSearch(raw SearchRequest) (SearchQuery, error) {
	req := SearchQuery{Max: defaultSearchHits, Threshold: -1}
	q := bytes.TrimSpace(raw.Query)
	switch {
	case len(q) == 0 || string(q) == "null":
		return req, hearth.InvalidRequest("query", hearth.CodeMissingRequiredParameter, "Missing required parameter: 'query'.")
	case q[0] == '"':
		var one string
		_ = json.Unmarshal(q, &one)
		req.Queries = []string{one}
	case q[0] == '[':
		if err := json.Unmarshal(q, &req.Queries); err != nil {
			return req, hearth.InvalidRequest("query", hearth.CodeInvalidType, "Invalid 'query': expected a string or an array of strings.")
		}
		if len(req.Queries) == 0 {
			return req, hearth.InvalidRequest("query", hearth.CodeEmptyArray, "Invalid 'query': expected at least one string.")
		}
		if len(req.Queries) > maxQueries {
			return req, hearth.InvalidRequest("query", hearth.CodeArrayAboveMaxLength, fmt.Sprintf("Invalid 'query': at most %d strings.", maxQueries))
		}
	default:
		return req, hearth.InvalidRequest("query", hearth.CodeInvalidType, "Invalid 'query': expected a string or an array of strings.")
	}
	for i, s := range req.Queries {
		if strings.TrimSpace(s) == "" {
			p := "query"
			if q[0] == '[' {
				p = fmt.Sprintf("query[%d]", i)
			}
			return req, hearth.InvalidRequest(p, hearth.CodeEmptyString, "Invalid '"+p+"': an empty query finds nothing.")
		}
		if q[0] != '[' {
			if err := queryTooLong("query", s); err != nil {
				return req, err
			}
		} else if err := queryTooLong(fmt.Sprintf("query[%d]", i), s); err != nil {
			return req, err
		}
	}
	if raw.MaxNumResults != nil {
		if *raw.MaxNumResults < 1 || *raw.MaxNumResults > maxSearchHits {
			return req, hearth.InvalidRequest("max_num_results", hearth.CodeInvalidValue, fmt.Sprintf("max_num_results must be from 1 to %d.", maxSearchHits))
		}
		req.Max = *raw.MaxNumResults
	}
	if len(raw.Filters) > 0 && string(raw.Filters) != "null" {
		f, err := attrfilter.Parse(raw.Filters, "filters")
		if err != nil {
			var fe *attrfilter.Error
			if errors.As(err, &fe) {
				return req, hearth.InvalidRequest(fe.Param, hearth.CodeInvalidValue, "Invalid '"+fe.Param+"': "+fe.Message+".")
			}
			return req, err
		}
		req.Filter = f
	}
	if ro := raw.RankingOptions; ro != nil {
		switch ro.Ranker {
		case "", "auto", "none", "default-2024-11-15":
		default:
			return req, hearth.InvalidRequest("ranking_options.ranker", hearth.CodeInvalidValue, "Invalid 'ranking_options.ranker': expected 'auto', 'none' or 'default-2024-11-15'.")
		}
		if t := ro.ScoreThreshold; t != nil {
			if *t < 0 || *t > 1 {
				return req, hearth.InvalidRequest("ranking_options.score_threshold", hearth.CodeInvalidValue, "score_threshold must be from 0 to 1.")
			}
			req.Threshold = float32(*t)
		}
	}
	return req, nil
}

// Search returns the chunks of who's store most similar to the query (the best score
// over its strings when it has several), their files' attributes passing filters,
// scoring at least score_threshold. The score is the cosine similarity of the
// embeddings.
func (s *Service) Search(ctx context.Context, who, id string, req SearchQuery) (hearth.VectorStoreSearchPage, error) {
	v, err := s.db.GetVectorStore(ctx, who, id)
	if err != nil {
		return hearth.VectorStoreSearchPage{}, vectorStoreError(err, id)
	}
	hits, chunks, err := s.search(ctx, v, req)
	if err != nil {
		return hearth.VectorStoreSearchPage{}, err
	}
	if err := s.db.TouchVectorStore(ctx, who, id, time.Now()); err != nil {
		s.log.Warn("vector store: recording its activity failed", "vector_store", id, "err", err)
	}
	page := hearth.VectorStoreSearchPage{Object: hearth.ObjectVectorStoreSearchResults, SearchQuery: req.Queries,
		Data: []hearth.VectorStoreSearchResult{}}
	for _, h := range hits {
		ch := chunks[h.ID]
		r := hearth.VectorStoreSearchResult{FileID: ch.FileID, Filename: ch.Filename, Score: float64(h.Score),
			Content: []hearth.SearchResultChunk{{Type: "text", Text: ch.Text}}}
		_ = json.Unmarshal(ch.Attributes, &r.Attributes)
		if r.Attributes == nil {
			r.Attributes = map[string]any{}
		}
		page.Data = append(page.Data, r)
	}
	return page, nil
}

// storeIndex is a vector store's chunks as a search scans them: the index of their
// vectors (ids are positions in chunks) and their files' attributes decoded for
// filters. It is read-only once built, and shared by the searches that find it.
type storeIndex struct {
	index  *vectorindex.Index
	chunks []storage.Chunk
	attrs  []map[string]any
}

// DefaultIndexMemory bounds the memory of the indexes kept between searches: a
// store of 100,000 chunks of 768 dimensions takes about 370 MiB of vectors (float32
// and int8 copies, vectorindex.BytesFor) plus its chunks' text.
const DefaultIndexMemory = 1 << 30

// indexCache keeps stores' indexes, keyed by store id and ChunksVersion: a key
// names its contents, so a store whose chunks change is read again under its new
// version and the old entry ages out. Its budget bounds them all; one store may take
// half (the cache's generation), and a store larger than that is refused, not read
// for each search. builds makes each key's index once however many searches ask for
// it at the same time.
type indexCache struct {
	gencache.Cache[*storeIndex]
	builds singleflight.Group
}

func newIndexCache(budget int) *indexCache {
	return &indexCache{Cache: gencache.New[*storeIndex](budget)}
}

// storeLimit is the most one store's index may take.
func (c *indexCache) storeLimit() int { return c.Budget() / 2 }

// vectorStoreTooLarge is the error of a search of a store whose index would take more
// than a store may.
func vectorStoreTooLarge(id string, need, limit int) error {
	return &hearth.Error{Status: http.StatusBadRequest, Type: hearth.ErrTypeInvalidRequest, Code: "vector_store_too_large",
		Param: "vector_store_id", Message: fmt.Sprintf("Vector store %s needs %d MiB of memory to search, over the %d MiB one store may take on this server (half of --vector-index-memory); split its files into smaller stores.",
			id, (need+(1<<20)-1)>>20, limit>>20)}
}

// vectorStoreExpired is the error of a search of an expired store.
func vectorStoreExpired(v *storage.VectorStore) error {
	return &hearth.Error{Status: http.StatusBadRequest, Type: hearth.ErrTypeInvalidRequest, Code: "vector_store_expired",
		Param: "vector_store_id", Message: fmt.Sprintf("Vector store %s expired at %s (%d days after its last activity) and will be deleted; create it again.",
			v.ID, v.ExpiresAt().UTC().Format(time.RFC3339), v.ExpiresAfterDays)}
}

// vectorStoreSweepEvery is how often Sweep deletes expired stores.
const vectorStoreSweepEvery = time.Hour

// Sweep deletes the expired vector stores of every owner, once now and
// then every hour until ctx ends: an expired store answers no search, and OpenAI
// deletes them too. Their files stay.
func (s *Service) Sweep(ctx context.Context) {
	if s.db == nil {
		return
	}
	t := time.NewTicker(vectorStoreSweepEvery)
	defer t.Stop()
	for {
		s.DeleteExpired(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// DeleteExpired deletes the stores expired at now and returns how many.
func (s *Service) DeleteExpired(ctx context.Context, now time.Time) int {
	ids, err := s.db.DeleteExpiredVectorStores(ctx, now)
	switch {
	case err != nil && ctx.Err() == nil:
		s.log.Warn("delete expired vector stores", "error", err)
	case len(ids) > 0:
		s.log.Info("deleted expired vector stores", "vector_stores", ids)
	}
	for _, id := range ids {
		s.withdrawIngestion(id, "")
	}
	return len(ids)
}

// withdrawIngestion stops the work in hand on a store's file (fileID "": on all its
// files) that was just deleted or detached, so that reading it ends now; a batch
// cancelled stops its files within ingestWatchEvery.
func (s *Service) withdrawIngestion(storeID, fileID string) {
	if s.ingest != nil {
		s.ingest.withdraw(storeID, fileID)
	}
}

// storeIndex returns the store's index, from the cache when its chunks have not
// changed since it was built.
func (s *Service) storeIndex(ctx context.Context, v *storage.VectorStore) (*storeIndex, error) {
	key := v.ID + "@" + strconv.FormatInt(v.ChunksVersion, 10)
	if x, ok := s.indexes.Get(key); ok {
		return x, nil
	}
	// Built apart from the caller's context: the searches waiting for it are not
	// the first caller's to cancel.
	x, err, _ := s.indexes.builds.Do(key, func() (any, error) {
		return s.buildStoreIndex(context.WithoutCancel(ctx), v, key)
	})
	if err != nil {
		return nil, err
	}
	return x.(*storeIndex), nil
}

func (s *Service) buildStoreIndex(ctx context.Context, v *storage.VectorStore, key string) (*storeIndex, error) {
	chunks, err := s.db.VectorStoreChunks(ctx, v.Owner, v.ID)
	if err != nil {
		return nil, err
	}
	x := &storeIndex{chunks: chunks, attrs: make([]map[string]any, len(chunks))}
	if len(chunks) == 0 {
		return x, nil
	}
	dim := len(chunks[0].Vector)
	if dim < 1 || dim > vectorindex.MaxDim {
		return nil, fmt.Errorf("vector store %s: vectors of %d dimensions, not in 1..%d", v.ID, dim, vectorindex.MaxDim)
	}
	bytes := 0
	for _, ch := range chunks {
		bytes += len(ch.Text) + len(ch.Attributes) + len(ch.FileID) + len(ch.Filename)
	}
	bytes += int(vectorindex.BytesFor(len(chunks), dim))
	if limit := s.indexes.storeLimit(); bytes > limit {
		return nil, vectorStoreTooLarge(v.ID, bytes, limit)
	}
	x.index = vectorindex.New(dim)
	x.index.Grow(len(chunks))
	for i := range chunks {
		ch := &chunks[i]
		if err := x.index.Add(int64(i), ch.Vector); err != nil {
			return nil, fmt.Errorf("vector store %s: chunk %d of %s: %w", v.ID, ch.Index, ch.FileID, err)
		}
		// The index holds its own copy; the chunk's would double the memory kept.
		ch.Vector = nil
		_ = json.Unmarshal(ch.Attributes, &x.attrs[i])
	}
	s.indexes.Put(key, x, bytes)
	return x, nil
}

// search embeds the queries with the store's model and scans its chunks. An expired
// store answers no more (the sweeper deletes it).
func (s *Service) search(ctx context.Context, v *storage.VectorStore, req SearchQuery) ([]vectorindex.Hit, []storage.Chunk, error) {
	if v.Expired(time.Now()) {
		return nil, nil, vectorStoreExpired(v)
	}
	x, err := s.storeIndex(ctx, v)
	if err != nil || len(x.chunks) == 0 {
		return nil, nil, err
	}
	out, err := s.rt.Embed(ctx, &engine.EmbedRequest{Model: v.Model, Input: req.Queries, Truncate: true})
	if err != nil {
		return nil, nil, EmbedError(err, v.Model)
	}
	chunks, index := x.chunks, x.index
	var keep func(int64) bool
	if req.Filter != nil {
		pass := make([]bool, len(chunks))
		for i := range chunks {
			pass[i] = req.Filter.Match(x.attrs[i])
		}
		keep = func(id int64) bool { return pass[id] }
	}
	best := map[int64]float32{}
	for i, q := range out.Vectors {
		hits, err := index.Search(q, req.Max, req.Threshold, keep)
		if err != nil {
			return nil, nil, fmt.Errorf("vector store %s: query %d: %w", v.ID, i, err)
		}
		for _, h := range hits {
			if old, ok := best[h.ID]; !ok || h.Score > old {
				best[h.ID] = h.Score
			}
		}
	}
	hits := make([]vectorindex.Hit, 0, len(best))
	for id, score := range best {
		hits = append(hits, vectorindex.Hit{ID: id, Score: score})
	}
	slices.SortFunc(hits, func(a, b vectorindex.Hit) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return int(a.ID - b.ID)
	})
	return hits[:min(len(hits), req.Max)], chunks, nil
}
