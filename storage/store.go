package storage

import (
	"context"
	"encoding/json"
	"io"
	"time"
)

// The store's contract, by concern. Each consumer names the concerns it uses (the
// server its Store in server/store.go, the console its own, the bench harness its
// own), so a reader sees at the use site what a package needs of the store, and a
// fake for a unit test implements one small interface. Store is all of them: what an
// implementation provides (storage/sqlite, storage/postgres) and what the conformance
// suite (storage/storetest) checks. The suite, not these comments, is the exact
// definition of each method's behaviour; the comments say what a caller relies on.
//
// Every method is safe for concurrent use. Errors wrap the sentinels of this package
// (ErrNotFound, ErrExists, ErrFinished, ErrInvalidCursor, ErrConversationNotFound,
// ErrItemNotFound, ErrDuplicateItem, ErrFileNotFound, ErrVectorStoreNotFound,
// ErrVectorStoreFileNotFound, ErrKeyNotFound, ErrKeyExists, ErrFull, ErrCorrupt,
// ErrUnavailable), which the server maps to API errors with errors.Is.
// Everything owned is scoped by owner (OwnerOf of the API key): another owner's record is ErrNotFound,
// indistinguishable from a missing one.

// Responses stores responses and their input and output items, through their
// lifecycle: created in flight (queued or in_progress), then finished once.
type Responses interface {
	// CreateResponse stores a new in-flight response with its input items, atomically.
	// A PreviousResponseID must name a stored response of the same owner (else
	// ErrNotFound); a taken id is ErrExists.
	CreateResponse(ctx context.Context, r NewResponse) error
	// StoreResponse is CreateResponse and CompleteResponse in one transaction, for a
	// response nobody can see before it ends.
	StoreResponse(ctx context.Context, r NewResponse, f Final) error
	// CompleteResponse stores the end of an in-flight response (or the output of a
	// cancelled one, with status cancelled) with its output items and final journal
	// events, atomically; a finished one is ErrFinished. When the response becomes its
	// chain's checkpoint (CheckpointInterval), f.SavedPrompt is kept for
	// CheckpointPrompt.
	CompleteResponse(ctx context.Context, id string, f Final) error
	// UpdateStatus moves an in-flight response to in_progress or cancelled; a finished
	// one is ErrFinished.
	UpdateStatus(ctx context.Context, id string, status Status) error
	// Cancel cancels the owner's in-flight response and returns it as it now is;
	// cancelling a cancelled one returns it unchanged; a finished one returns it with
	// an error wrapping ErrFinished.
	Cancel(ctx context.Context, owner, id string) (*Response, error)
	// GetResponse returns the owner's response, without its items.
	GetResponse(ctx context.Context, owner, id string) (*Response, error)
	// DeleteResponse deletes the owner's response and its items; the chains through it
	// are broken from then on (LoadChain of a descendant is ErrNotFound).
	DeleteResponse(ctx context.Context, owner, id string) error
	// ListInputItems returns one page of the response's own input items, in order
	// (Desc by default), after the item id after; hasMore says whether more follow.
	// limit <= 0 is DefaultListLimit, capped at MaxListLimit; an after that is not an
	// input item of the response is ErrInvalidCursor.
	ListInputItems(ctx context.Context, owner, id, after string, limit int, order Order) (items []Item, hasMore bool, err error)
	// LookupItems finds items by id among all the owner's responses (the latest copy
	// of an id stored twice); ids not found are absent from the map.
	LookupItems(ctx context.Context, owner string, ids []string) (map[string]Item, error)
	// ResponseRuntime returns the label of the runtime that served the response
	// (Final.Runtime), "" when none was recorded.
	ResponseRuntime(ctx context.Context, owner, id string) (string, error)
	// RecoverInFlight fails every response left in flight by a process that stopped,
	// and returns how many. It runs at startup, before serving, and only where no
	// other process serves from the same store.
	RecoverInFlight(ctx context.Context) (int, error)
}

// Chains loads the conversation behind a previous_response_id: every response from the
// chain's root down to the one named, items in order. A store keeps checkpoints (the
// materialised context of a response every CheckpointInterval links) so a long chain
// loads in bounded time.
type Chains interface {
	// LoadChain loads the chain ending at the owner's response id, in one read. A
	// missing, deleted or foreign link anywhere in it is ErrNotFound.
	LoadChain(ctx context.Context, owner, id string) (*Chain, error)
	// LoadChainTail is LoadChain for a caller holding checkpoints by stamp: when the
	// load reaches a checkpoint whose stamp known reports, the chain holds only the
	// links after it (Chain.Base.Omitted). known must not call the store.
	LoadChainTail(ctx context.Context, owner, id string, known func(stamp string) bool) (*Chain, error)
	// CheckpointPrompt returns the prompt saved with checkpoint id (Final.SavedPrompt)
	// while it still has stamp (Checkpoint.Stamp); nil when it has none or changed.
	CheckpointPrompt(ctx context.Context, id, stamp string) ([]byte, error)
	// ChainEpoch counts the committed changes that can alter a settled chain (a
	// response deleted, cancelled or recovered). A caller that read a settled chain at
	// epoch n may keep it for as long as the epoch is n; a store shared by several
	// processes must move it for the changes of every one of them.
	ChainEpoch() uint64
}

// Journal keeps the events of a response as they were sent, so that a client can
// resume a stream (GET /v1/responses/{id}?stream=true&starting_after=n).
type Journal interface {
	// AppendEvents adds a batch of events to the response's journal, sequence numbers
	// going on from its last without a gap, and marks it ended when end is set.
	AppendEvents(ctx context.Context, id string, events []Event, end bool) error
	// Journal returns the events after sequence number after (-1: all), in order, and
	// the journal's last event without its data; last is nil when the response has no
	// journal (pruned, or stored before journals). It does not check the owner: the
	// caller has read the response with GetResponse first.
	Journal(ctx context.Context, id string, after int) (events []Event, last *Event, err error)
	// PruneJournals deletes the journals that ended before cutoff and returns how many.
	PruneJournals(ctx context.Context, cutoff time.Time) (int, error)
}

// Conversations keeps conversations: an ordered list of items per owner and id, which
// responses read as context and append their turns to.
type Conversations interface {
	CreateConversation(ctx context.Context, c NewConversation) error
	GetConversation(ctx context.Context, owner, id string) (*Conversation, error)
	UpdateConversation(ctx context.Context, owner, id string, metadata json.RawMessage) (*Conversation, error)
	DeleteConversation(ctx context.Context, owner, id string) error
	// AppendConversationItems appends items (of response responseID, "" for items
	// added through the API) atomically; an id already in the conversation is a
	// *DuplicateItemError.
	AppendConversationItems(ctx context.Context, owner, id, responseID string, items []Item) error
	// ConversationItems returns all the conversation's items, oldest first.
	ConversationItems(ctx context.Context, owner, id string) ([]Item, error)
	ListConversationItems(ctx context.Context, owner, id, after string, limit int, order Order) (items []Item, hasMore bool, err error)
	GetConversationItem(ctx context.Context, owner, id, itemID string) (*Item, error)
	DeleteConversationItem(ctx context.Context, owner, id, itemID string) (*Conversation, error)
}

// Files keeps the Files API's uploads, bytes included, per owner.
type Files interface {
	// CreateFile stores a file with its content, atomically; a taken id is ErrExists.
	CreateFile(ctx context.Context, f NewFile) error
	// GetFile returns the owner's file record, or ErrFileNotFound.
	GetFile(ctx context.Context, owner, id string) (*File, error)
	// FileContent returns the owner's file's bytes, or ErrFileNotFound.
	FileContent(ctx context.Context, owner, id string) ([]byte, error)
	// ListFiles returns one page of the owner's files (FileQuery) and whether more
	// follow; an After that is not a file of the owner is ErrInvalidCursor.
	ListFiles(ctx context.Context, owner string, q FileQuery) (files []File, hasMore bool, err error)
	// DeleteFile deletes the owner's file and its content, or is ErrFileNotFound.
	DeleteFile(ctx context.Context, owner, id string) error
}

// VectorStores keeps vector stores, the files attached to them with their ingestion's
// status, and the chunks a search reads (vectorstores.go tells the life of a file).
type VectorStores interface {
	// CreateVectorStore stores a store and attaches its files (in_progress),
	// atomically; a taken id is ErrExists, a file that is not the owner's
	// ErrFileNotFound.
	CreateVectorStore(ctx context.Context, s NewVectorStore) error
	// GetVectorStore returns the owner's store with its files counted, or
	// ErrVectorStoreNotFound.
	GetVectorStore(ctx context.Context, owner, id string) (*VectorStore, error)
	// ListVectorStores returns a page of the owner's stores (VectorStoreQuery).
	ListVectorStores(ctx context.Context, owner string, q VectorStoreQuery) (stores []VectorStore, hasMore bool, err error)
	// UpdateVectorStore changes the owner's store and returns it as it now is.
	UpdateVectorStore(ctx context.Context, owner, id string, u VectorStoreUpdate) (*VectorStore, error)
	// TouchVectorStore moves the store's LastActiveAt to at (a search used it).
	TouchVectorStore(ctx context.Context, owner, id string, at time.Time) error
	// DeleteVectorStore deletes the owner's store, its files' attachments and chunks
	// (not the files themselves).
	DeleteVectorStore(ctx context.Context, owner, id string) error
	// DeleteExpiredVectorStores deletes, as DeleteVectorStore does, every owner's
	// stores whose ExpiresAt is at or before now, and returns their ids in order.
	DeleteExpiredVectorStores(ctx context.Context, now time.Time) ([]string, error)

	// AttachVectorStoreFiles attaches files to the owner's store, atomically, each
	// in_progress; a file attached already starts over (its chunks dropped, its
	// attributes replaced). A non-empty batchID creates that batch with them.
	AttachVectorStoreFiles(ctx context.Context, owner, storeID, batchID string, files []NewVectorStoreFile) error
	GetVectorStoreFile(ctx context.Context, owner, storeID, fileID string) (*VectorStoreFile, error)
	// ListVectorStoreFiles returns a page of the store's files in attachment order.
	ListVectorStoreFiles(ctx context.Context, owner, storeID string, q VectorStoreFileQuery) (files []VectorStoreFile, hasMore bool, err error)
	// UpdateVectorStoreFile replaces the attributes of a file in the owner's store
	// (its chunks' too, as searches filter them) and returns it as it now is.
	UpdateVectorStoreFile(ctx context.Context, owner, storeID, fileID string, attributes json.RawMessage) (*VectorStoreFile, error)
	// DetachVectorStoreFile removes the file and its chunks from the store.
	DetachVectorStoreFile(ctx context.Context, owner, storeID, fileID string) error
	// GetFileBatch returns the store's batch with its files counted, or
	// ErrVectorStoreFileNotFound.
	GetFileBatch(ctx context.Context, owner, storeID, batchID string) (*FileBatch, error)
	// CancelFileBatch cancels the batch's files still in progress.
	CancelFileBatch(ctx context.Context, owner, storeID, batchID string) (*FileBatch, error)

	// StartVectorStoreFileAttempt counts, durably, one more attempt at ingesting a
	// file in progress before the attempt starts, and returns the attempts counted
	// since the file last made progress (this one included) and how many of its
	// chunks are stored already (SaveVectorStoreFileChunks): an attempt that ends the
	// process stays counted. ErrFinished or ErrVectorStoreFileNotFound like
	// CompleteVectorStoreFile.
	StartVectorStoreFileAttempt(ctx context.Context, storeID, fileID string) (attempts, stored int, err error)
	// SaveVectorStoreFileChunks stores chunks of a file in progress, from index from
	// on (replacing any there), and clears its attempts: the file made progress, and
	// a process that is taken up again starts after them. Searches see no chunk of a
	// file before it completes. ErrFinished or ErrVectorStoreFileNotFound like
	// CompleteVectorStoreFile.
	SaveVectorStoreFileChunks(ctx context.Context, storeID, fileID string, from int, chunks []NewChunk) error
	// CompleteVectorStoreFile stores the file's last chunks (after those
	// SaveVectorStoreFileChunks stored) and marks it completed, in one transaction,
	// when it is still in progress (else ErrFinished, or ErrVectorStoreFileNotFound
	// when it was detached). Its usage counts all its chunks.
	CompleteVectorStoreFile(ctx context.Context, storeID, fileID string, chunks []NewChunk) error
	// FailVectorStoreFile marks a file in progress failed (with code and message) or
	// cancelled, like CompleteVectorStoreFile, and drops the chunks it stored.
	FailVectorStoreFile(ctx context.Context, storeID, fileID, status, code, message string) error
	// InProgressVectorStoreFiles lists every owner's files still in progress, oldest
	// first: the work a restarted process takes up again.
	InProgressVectorStoreFiles(ctx context.Context) ([]VectorStoreFile, error)
	// VectorStoreChunks returns all the store's chunks (of completed files), by file
	// and index, with their files' attributes and names.
	VectorStoreChunks(ctx context.Context, owner, storeID string) ([]Chunk, error)
}

// KeyLookup reads API keys, as authentication does on every request.
type KeyLookup interface {
	// KeyByHash returns the key whose Hash is hash (revoked keys included: the caller
	// checks Active); ErrKeyNotFound when none.
	KeyByHash(ctx context.Context, hash string) (*Key, error)
	// HasKeys reports whether any key was ever created.
	HasKeys(ctx context.Context) (bool, error)
	// CheckKey reads what a request's authentication needs at once: HasKeys, the key
	// whose Hash is hash when hash is not empty (KeyByHash), and the chain epoch
	// (Chains.ChainEpoch) at that moment, from which the request's chain reads may
	// start. On a store across a network that is one round trip, where the reads one
	// by one would be up to three.
	CheckKey(ctx context.Context, hash string) (KeyCheck, error)
	ListKeys(ctx context.Context) ([]Key, error)
}

// KeyCheck is what KeyLookup.CheckKey read.
type KeyCheck struct {
	HasKeys bool
	// Key is the key asked for, revoked or not; nil when there is none (or none was
	// asked for).
	Key *Key
	// Epoch is ChainEpoch's answer, read with the rest.
	Epoch uint64
}

// Keys manages API keys (`hearth keys`): the secret is returned once and only its hash
// is stored; names are never reused (ErrKeyExists).
type Keys interface {
	KeyLookup
	CreateKey(ctx context.Context, name string) (Key, string, error)
	CreateKeyAs(ctx context.Context, name string, role Role) (Key, string, error)
	CreateKeyWith(ctx context.Context, name string, opt KeyOptions) (Key, string, error)
	RevokeKey(ctx context.Context, idOrName string) (Key, error)
	SetKeyCacheGroup(ctx context.Context, idOrName, group string) (Key, error)
	// AdoptKeyless gives the key whose id or name is idOrName everything KeylessOwner
	// owns (responses, conversations, files, vector stores), in one transaction, and
	// returns the key and how many of each it got. A revoked key is refused
	// (ErrKeyRevoked): what it would get nobody could reach.
	AdoptKeyless(ctx context.Context, idOrName string) (Key, Adopted, error)
}

// Console is the web console's reads. They cross owners on purpose: only an admin
// reaches the console.
type Console interface {
	ConsoleResponses(ctx context.Context, f ConsoleFilter) (rows []*Response, hasMore bool, err error)
	ConsoleChain(ctx context.Context, id string) ([]*ConsoleTurn, error)
	ConsoleUsage(ctx context.Context, since time.Time, bucket time.Duration) ([]UsageBucket, error)
	// ConsoleFiles lists stored files newest first across owners, a page of at most
	// limit after the file afterID ("" from the newest; ErrInvalidCursor for an unknown
	// one), without their bytes.
	ConsoleFiles(ctx context.Context, afterID string, limit int) (files []File, hasMore bool, err error)
	// ConsoleFileHead returns a file's record, whoever owns it, and at most n of its
	// first bytes: a preview never reads the whole of a large file. ErrFileNotFound.
	ConsoleFileHead(ctx context.Context, id string, n int) (*File, []byte, error)
	// ConsoleVectorStores lists vector stores newest first across owners, their files
	// counted, like ConsoleFiles.
	ConsoleVectorStores(ctx context.Context, afterID string, limit int) (stores []VectorStore, hasMore bool, err error)
	// ConsoleVectorStore returns a store, whoever owns it, with its first limit files
	// and their ingestion status; ErrVectorStoreNotFound.
	ConsoleVectorStore(ctx context.Context, id string, limit int) (*VectorStore, []VectorStoreFile, error)
}

// Health reports whether the store can serve, for /healthz: nil, or an error that may
// wrap ErrFull, ErrCorrupt or ErrUnavailable and says what the operator should do.
type Health interface {
	Ping(ctx context.Context) error
}

// Store is the whole contract: what an implementation provides and the conformance
// suite checks. Close releases it; records in flight stay for RecoverInFlight.
type Store interface {
	Responses
	Chains
	Journal
	Conversations
	Files
	VectorStores
	Keys
	Console
	Health
	Changes
	Leases
	io.Closer
}
