package engine

import (
	"context"
	"sync"
)

// Placement names which of several runtimes behind one Runtime (engine/pool) serves the
// calls made with a context: the server chooses it per response (the runtime whose KV
// cache holds a chain's prefix, else the least loaded), the pool sends that response's
// every call there, and the engine keeps what it knows of each runtime's KV cache apart
// (cached_tokens). A pool that had to move a response elsewhere (its runtime refused the
// connection) says so with Move, so the response reports where it really ran.
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

type placementKey struct{}

// WithPlacement returns ctx carrying p.
func WithPlacement(ctx context.Context, p *Placement) context.Context {
	return context.WithValue(ctx, placementKey{}, p)
}

// PlacementOf returns the placement ctx carries, nil when none.
func PlacementOf(ctx context.Context) *Placement {
	p, _ := ctx.Value(placementKey{}).(*Placement)
	return p
}

// seqKey is the key of what the engine remembers of a KV cache: one per model and
// runtime, as each runtime of a pool holds its own cache.
func seqKey(ctx context.Context, model string) string {
	if r := PlacementOf(ctx).Runtime(); r != "" {
		return r + "\x00" + model
	}
	return model
}
