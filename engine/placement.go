package engine

import (
	"sync"
)

// Inputs are what preparing a response takes besides its request and history: who it
// is for, where it runs, what the chain's previous turn left for it. They are given
// to Prepare (and PrepareCompaction) as a value and the job keeps them for its every
// call and later turn; a context carries only cancellation and deadlines. The zero
// value is a response for the caller "" on a single runtime, with nothing kept.
type Inputs struct {
	// Caller is whom the response is for: the server's storage owner of the API key
	// (one value for every caller when no key is required). What a hosted tool kind
	// issues for a client to answer (MCP's approval requests) is bound to it, and
	// only the same caller may have it run.
	Caller string
	// Placement names the runtime of a pool (engine/pool) the response runs on; nil
	// lets the pool choose at the first call.
	Placement *Placement
	// CacheGroup scopes cached_tokens: a response counts only what a response of the
	// same group left in the runtime's KV cache (kvslots.go). "" is one user: every
	// response shares what is cached.
	CacheGroup string
	// Memo is what the chain's previous turn kept of its build (memo.go); nil when
	// nothing was kept.
	Memo *Memo
	// Saved is the prompt saved with the chain's checkpoint (saved.go), for the
	// renderer to splice onto; nil when none.
	Saved *SavedPrompt

	// laterTurn marks a response's later turn (hosted.go): its hosted items are the
	// response's own, made for this very request.
	laterTurn bool
}

// Placement names which of several runtimes behind one Runtime (engine/pool) serves the
// calls of a response: the server chooses it per response (engine/pool's placement
// policy: the runtime whose KV cache holds a chain's prefix, else the least loaded),
// the pool sends that response's every call there (Placer), and the engine keeps what
// it knows of each runtime's KV cache apart (cached_tokens). A pool that had to move a
// response elsewhere (its runtime refused the connection) says so with Move, so the
// response reports where it really ran.
type Placement struct {
	mu      sync.Mutex
	runtime string
}

// NewPlacement returns a Placement on the runtime labelled label ("" lets the pool
// choose at the first call).
func NewPlacement(label string) *Placement { return &Placement{runtime: label} }

// Runtime is the label of the runtime the placement names now.
func (p *Placement) Runtime() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runtime
}

// Move names another runtime.
func (p *Placement) Move(label string) {
	p.mu.Lock()
	p.runtime = label
	p.mu.Unlock()
}

// Placer is a Runtime made of several (engine/pool): On returns it bound to a
// placement, so that every call made through the result goes to the runtime the
// placement names (and a move the pool makes is written there). On(nil) lets the pool
// choose at each call.
type Placer interface {
	On(*Placement) Runtime
}

// on is the engine's runtime for the calls of a response placed at pl.
func (e *Engine) on(pl *Placement) Runtime {
	if p, ok := e.rt.(Placer); ok {
		return traced(p.On(pl))
	}
	return traced(e.rt)
}

// seqKey is the key of what the engine remembers of a KV cache: one per model and
// runtime, as each runtime of a pool holds its own cache.
func seqKey(pl *Placement, model string) string {
	if r := pl.Runtime(); r != "" {
		return r + "\x00" + model
	}
	return model
}
