// Package respond is hearth's application core: making a response as a service, not
// HTTP. A front door (server's JSON, SSE, background, WebSocket and compact paths)
// decodes a request into a Request and calls the Service, which runs the prologue
// (the chain behind previous_response_id, item references, input files, the
// conversation, hosted access, placement, admission) and the lifecycle (run, journal,
// store, report), and hands the response's events to the front door's Sink. Retrieval
// with stream replay and resume, cancel, delete, input items and the Conversations API
// are here too, with the caches that make a chain's next turn cheap (hot chains,
// decoded items and checkpoints).
//
// The core's inputs are explicit: a Request value, and the parts it is built from
// (Config). It speaks no HTTP: errors are *hearth.Error values the front door maps.
package respond

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"hearth"
	"hearth/engine"
	"hearth/engine/pool"
	"hearth/storage"
)

// Store is what the core needs of the store: responses and their chains, journals,
// conversations, the changes the processes sharing the store make, and the leases that
// keep their in-flight responses from outliving them.
type Store interface {
	storage.Responses
	storage.Chains
	storage.Journal
	storage.Conversations
	storage.Changes
	storage.Leases
}

// Admitter places responses on runtimes and admits them to a generation slot.
type Admitter interface {
	// Place chooses the runtime a response runs on (the pool's placement policy); the
	// choice is reserved until it is released or the response enters admission.
	// fallback is where it goes when nothing else places it.
	Place(ctx context.Context, who string, req *hearth.CreateResponseRequest, fallback string) pool.Placed
	// Admit asks for a slot of req's model on the placement at, ending its
	// reservation (a zero Placed: placed here). A refusal is an error with the
	// Retry-After value to send with it. m is the request's record, which learns the
	// response id.
	Admit(ctx context.Context, m *Meta, req *hearth.CreateResponseRequest, responseID string, at pool.Placed) (Admission, string, error)
	// Served records that a response of who with promptCacheKey ran on runtime, so the
	// next one with that key goes there too.
	Served(who, promptCacheKey, runtime string)
}

// Admission is a response's place in admission.
type Admission interface {
	// Wait blocks until the response may generate.
	Wait(ctx context.Context) error
	// Queued says the response had to wait when it arrived: it is announced (and
	// stored) as queued.
	Queued() bool
	// Waited is how long it waited for its slot.
	Waited() time.Duration
	// Runtime is the label of the runtime it runs on.
	Runtime() string
	// Done frees the slot; safe to call more than once.
	Done()
}

// Files reads the files a request's items name (input_file, input_image by file_id or
// URL) into the items.
type Files interface {
	// ResolveFiles reads the files items name, in place; path names items in errors.
	ResolveFiles(ctx context.Context, owner string, items []hearth.Item, path string) error
	// TooLong words an engine error about a file too long for the model's context as
	// the request error naming the file, or returns err.
	TooLong(err error, input []hearth.Item) error
}

// Metrics is what the core reports of the responses it runs.
type Metrics interface {
	// FirstToken: a response of model on runtime produced its first output ttft after
	// its request arrived.
	FirstToken(model, runtime string, ttft time.Duration)
	// Finished: a response of model ended with status on runtime for key; usage is
	// nil when it has none, tokensPerSecond 0 when it was not measured.
	Finished(model, status, key, runtime string, usage *hearth.Usage, tokensPerSecond float64)
	// RuntimeFailed: the runtime failed a generation (msg says how).
	RuntimeFailed(msg string)
}

// Meta is the record of one request that its log line and metrics need, filled in as
// it is learned: the front door sets who asks, the core the model and response id.
type Meta struct {
	// ID is the request's id (x-request-id).
	ID    string
	Start time.Time
	// Key is the caller's key name ("anonymous" without auth); Fairness is the
	// identity admission shares slots by (the key, or the client address without
	// auth).
	Key, Fairness string
	// Client is the client's address.
	Client string
	// CacheGroup is the caller's cache group (engine.Inputs.CacheGroup): its key's,
	// or the group an admin put the key in; "" without keys.
	CacheGroup string
	Model      string
	// Resolved is the model that runs when an alias maps Model to another; "" when
	// it is Model.
	Resolved   string
	ResponseID string
	Log        *slog.Logger
	// Line, when set, is the request's own log line, still to be written when the
	// request is answered: the response's account (tokens, time to first token) goes
	// into it, so a request is one line. nil (a WebSocket create, of which one
	// connection has many) logs a line of its own per response.
	Line *RequestLine
}

// RequestLine gathers what a request's one log line says of its response. A response
// that ends after its request was answered (a background one) logs its own line.
type RequestLine struct {
	mu      sync.Mutex
	written bool
	attrs   []slog.Attr
}

// add hands a response's account to the line; false when the line was already
// written (or holds another response's), and the caller logs its own.
func (l *RequestLine) add(attrs []slog.Attr) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.written || l.attrs != nil {
		return false
	}
	l.attrs = attrs
	return true
}

// Write marks the line written and returns the response's account it holds, if any.
func (l *RequestLine) Write() []slog.Attr {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.written = true
	return l.attrs
}

// Request is one response to make, as the front door decoded it.
type Request struct {
	// Body is the decoded and validated request.
	Body *hearth.CreateResponseRequest
	// Meta is the request's record (its log line's).
	Meta *Meta
	// Owner owns the response (storage.OwnerOf the caller's key).
	Owner string
	// Epoch is the chain epoch read with the request's key, from which its chain reads
	// start; nil: they read it.
	Epoch *uint64
	// Local is the latest response of a WebSocket lane, whose chain the lane keeps
	// even where storage has none (store: false); nil over HTTP.
	Local *LocalChain
	// Runtime is where the response goes when nothing else places it: the runtime of
	// the lane's latest response.
	Runtime string
	// KeepChain asks for the response's chain in Outcome.Chain, for the next turn of a
	// lane that keeps its own (Local).
	KeepChain bool
}

// Outcome is how a response ended, or started (a background one).
type Outcome struct {
	// Response is the final response; for a background response without a sink, the
	// queued response the client is answered with.
	Response *hearth.Response
	// JSON is the final response as stored, when it was (Response.MarshalJSON's bytes).
	JSON []byte
	// Runtime is where it ran.
	Runtime string
	// Retry is the Retry-After value of an admission refusal.
	Retry string
	// Chain is the lane's state for its next turn (Request.KeepChain); nil when the
	// response failed.
	Chain *LocalChain
}

// Sink is where a streamed response's events go: an SSE stream or a WebSocket lane.
// The run, storage and budget logic is the same for every response; only the framing
// differs. A JSON reply and a background response have none (a nil sink): their events
// go to the journal alone, and the JSON reply is the final response.
type Sink interface {
	Event(hearth.Event)
	// Done ends one response's events: SSE sends data: [DONE]; a socket stays open
	// for the connection's next response.
	Done()
}

// EncodedSink is a sink that takes an event already encoded in hearth's names (an
// SSE stream): a streamed event is then encoded once, for the journal and the client.
// Stored must not keep data after it returns: a response without a journal encodes
// every event into the same buffer.
type EncodedSink interface {
	Stored(typ string, data []byte)
}

// Opener is a sink that starts only once the response has started (an SSE stream: a
// request error before that is answered as JSON): Open is called once, before the
// first event, with the context the response runs under and where it runs; it returns
// the context to run under (one that ends when the stream's client stops reading, for
// a response that stops with it).
type Opener interface {
	Open(ctx context.Context, runtime string, background bool) context.Context
}

// Config builds a Service from its parts.
type Config struct {
	Engine *engine.Engine
	// Store keeps responses; nil: nothing is stored.
	Store    Store
	Admitter Admitter
	Files    Files
	Metrics  Metrics
	Logger   *slog.Logger
	// LogContent logs each response's input and output text.
	LogContent bool
}

// Service makes responses. Its methods are safe for concurrent use.
type Service struct {
	engine     *engine.Engine
	db         Store
	admitter   Admitter
	files      Files
	metrics    Metrics
	log        *slog.Logger
	logContent bool
	jobs       *jobs
	// changes acts on what the store tells of its changes (changes.go).
	changes *changes
	// items decodes the stored items of chains, once per distinct item.
	items *itemCache
	// contexts keeps chains' checkpoints decoded (itemcache.go).
	contexts *contextCache
	// hot keeps the chains of responses finished here, for their next turns
	// (hotchains.go).
	hot   *hotChains
	convs *Conversations
}

// New builds a Service and starts listening to the store's changes (Shutdown stops).
func New(cfg Config) *Service {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Service{engine: cfg.Engine, db: cfg.Store, admitter: cfg.Admitter, files: cfg.Files, metrics: cfg.Metrics,
		log: log, logContent: cfg.LogContent, jobs: newJobs(),
		items: newItemCache(itemCacheBudget), contexts: newContextCache(contextCacheBudget), hot: newHotChains(hotChainBudget)}
	s.convs = &Conversations{s: s}
	s.watchChanges()
	return s
}

// Conversations is the Conversations API over the service's store.
func (s *Service) Conversations() *Conversations { return s.convs }

// CacheStats are the core's caches, by the name /metrics reports them under.
func (s *Service) CacheStats() []NamedCache {
	return []NamedCache{
		{"item", "stored items kept decoded, by their JSON", s.items.Stats},
		{"checkpoint", "chains' checkpoints kept decoded, by stamp", s.contexts.Stats},
		{"hot_chain", "chains of responses finished here and their builds, by response id", s.hot.Stats},
	}
}

// ForgetHotChains drops every chain kept of responses finished here, so that the next
// continuation loads its chain from storage (tests of the load path use it).
func (s *Service) ForgetHotChains() { s.hot.Clear() }

// Stopping is done once Shutdown began: what serves a client for long (a WebSocket)
// ends then.
func (s *Service) Stopping() context.Context { return s.jobs.root }

// Hold counts something Shutdown waits for (a WebSocket connection's responses in
// flight) until the returned release.
func (s *Service) Hold() (release func()) {
	s.jobs.wg.Add(1)
	return s.jobs.wg.Done
}

// HostedKinds are the engine's hosted tool kinds.
func (s *Service) HostedKinds() []engine.HostedKind {
	if s.engine == nil {
		return nil
	}
	return s.engine.HostedKinds()
}
