package respond

import (
	"sync"
	"sync/atomic"

	"hearth"
	"hearth/engine"
	"hearth/internal/gencache"
)

// Hot chains. A turn that continues a chain reads its links after the checkpoint from
// the database, decodes them and lays the whole history out again (at turn 1,000 some
// 2,000 items), then builds and renders it: work that grows with the chain although the
// previous turn, finished a moment ago in this process, had all of it at hand. So a
// stored response that finishes leaves its chain here, by id: the history a
// continuation of it sees (its parent's, then its own input and output, decoded from
// the very JSON stored, so the same items a load gives) and what its job built
// (engine.Memo). The next turn takes both instead of loading and building.
//
// The entries are only valid while the stored chains are as they were: storage counts
// every change that can alter a stored chain (a deleted or cancelled response, an
// unfinished one that finishes below another; storage.Chains.ChainEpoch), and an entry
// made at another count is not used. Only this process writes responses (the CLI
// writes keys alone), so the count sees every change.
//
// Items are shared: a continuation's history is its parent's array with its own
// items appended in place (when it is the first to extend it; another branch copies
// when it is continued), and nobody changes a history item (the engine copies what it
// replaces). Each entry keeps its build, weighed by its messages, so that a branch
// (a retried or regenerated turn) goes on from its parent's build too.
type hotChains struct{ gencache.Cache[*hotChain] }

// hotChainBudget bounds what the entries stand for: their own items' stored JSON,
// plus their kept builds' messages.
const hotChainBudget = 64 << 20

// hotChain is one finished response's chain.
type hotChain struct {
	owner string
	// epoch is storage's chain count when the chain was read.
	epoch uint64
	// memo is what the response's job built; nil when it kept nothing.
	memo *engine.Memo
	// distance is the response's links up to its chain's nearest checkpoint or root,
	// depth from its root (storage.Final), as far as known.
	distance, depth int

	mu sync.Mutex
	// items is the history a continuation sees, once laid out (ready); its array
	// may go on past len(items) with a continuation's items, once extended is set.
	// Until then the history is parent's followed by own: a branch that was not
	// the first to extend its parent's array copies only when it is continued.
	items    []hearth.Item
	ready    bool
	parent   *hotChain
	own      []hearth.Item
	extended atomic.Bool
}

func newHotChains(budget int) *hotChains {
	return &hotChains{gencache.New[*hotChain](budget)}
}

// get returns the chain of response id for owner if it is kept and still valid at
// epoch.
func (h *hotChains) get(owner, id string, epoch uint64) (*hotChain, bool) {
	c, ok := h.Get(id)
	if !ok || c.owner != owner || c.epoch != epoch {
		return nil, false
	}
	return c, true
}

// history is the history a continuation of c sees, with no room to append in place:
// the caller must not change its items.
func (c *hotChain) history() []hearth.Item {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		p := c.parent.history()
		c.items = make([]hearth.Item, 0, 2*(len(p)+len(c.own)))
		c.items = append(append(c.items, p...), c.own...)
		c.ready, c.parent, c.own = true, nil, nil
	}
	return c.items[:len(c.items):len(c.items)]
}

// extend makes child's history c's followed by more: in c's array when c's history
// is laid out and no other continuation extended it first, else later, when the
// child is continued.
func (c *hotChain) extend(child *hotChain, more []hearth.Item) {
	c.mu.Lock()
	ready := c.ready
	items := c.items
	c.mu.Unlock()
	if ready && c.extended.CompareAndSwap(false, true) {
		// The first continuation to finish owns the array past len(items).
		child.items, child.ready = append(items, more...), true
		return
	}
	child.parent, child.own = c, more
}

// memoWeight is what a kept build is taken to weigh: its messages' structs and
// keys, its strings being the items'.
func memoWeight(messages int) int { return messages * 160 }

// put keeps the chain of response id: parent's followed by items, or base's when it
// has no kept parent, read at epoch, with its job's build, distance and depth. weight is
// items' stored JSON. It returns the kept chain.
func (h *hotChains) put(id, owner string, epoch uint64, parent *hotChain, base []hearth.Item, items []hearth.Item, weight int, memo *engine.Memo, distance, depth int) *hotChain {
	c := &hotChain{owner: owner, epoch: epoch, memo: memo, distance: distance, depth: depth}
	if parent != nil {
		parent.extend(c, items)
	} else {
		c.items = make([]hearth.Item, 0, 2*(len(base)+len(items)))
		c.items, c.ready = append(append(c.items, base...), items...), true
	}
	if memo != nil {
		weight += memoWeight(len(base) + len(items))
	}
	h.Put(id, c, weight)
	return c
}
