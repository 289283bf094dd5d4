package server

import (
	"encoding/json"
	"sync"

	"hearth"
)

// generations is a cache bounded by the bytes its entries stand for, in two
// generations: when the current one has taken in budget/2 bytes it becomes the old one
// and the previous old one is dropped; a hit in the old generation moves forward. Its
// entries are never invalid (each key names its contents), so nothing is ever
// invalidated: what stops being asked for ages out.
type generations[V any] struct {
	mu                 sync.Mutex
	cur, old           map[string]weighed[V]
	curBytes, oldBytes int
	budget             int
	hits, misses       uint64
}

type weighed[V any] struct {
	v     V
	bytes int
}

func newGenerations[V any](budget int) generations[V] {
	return generations[V]{cur: map[string]weighed[V]{}, old: map[string]weighed[V]{}, budget: budget}
}

func (g *generations[V]) stats() CacheStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return CacheStats{Entries: len(g.cur) + len(g.old), Bytes: g.curBytes + g.oldBytes, Budget: g.budget,
		Hits: g.hits, Misses: g.misses}
}

// get returns the entry of key, counting the lookup as a hit or a miss.
func (g *generations[V]) get(key string) (V, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.cur[key]
	if !ok {
		if e, ok = g.old[key]; ok {
			g.putLocked(key, e)
		}
	}
	if ok {
		g.hits++
	} else {
		g.misses++
	}
	return e.v, ok
}

// put keeps v under key, weighing bytes.
func (g *generations[V]) put(key string, v V, bytes int) {
	g.mu.Lock()
	g.putLocked(key, weighed[V]{v, bytes})
	g.mu.Unlock()
}

func (g *generations[V]) putLocked(key string, e weighed[V]) {
	if e.bytes > g.budget/2 {
		return // larger than a generation: not worth keeping
	}
	if g.curBytes+e.bytes > g.budget/2 {
		g.old, g.cur, g.oldBytes, g.curBytes = g.cur, map[string]weighed[V]{}, g.curBytes, 0
	}
	if old, ok := g.cur[key]; ok {
		g.curBytes -= old.bytes
	}
	g.cur[key] = e
	g.curBytes += e.bytes
}

// itemCache keeps stored items decoded, keyed by their stored JSON. Every turn that
// continues a chain decodes the items of the links after its checkpoint (and, once per
// checkpoint, the checkpoint's: see contextCache), and the same bytes always decode to
// the same item. An entry weighs its JSON.
type itemCache struct{ generations[hearth.Item] }

// itemCacheBudget is the JSON a cache holds at most, over both generations (the
// decoded items take about as much again).
const itemCacheBudget = 32 << 20

func newItemCache(budget int) *itemCache {
	return &itemCache{newGenerations[hearth.Item](budget)}
}

// decode returns the item raw encodes, from the cache when it has it. The caller owns
// the result: it is a copy, whatever the caller does to its parts.
func (c *itemCache) decode(raw []byte) (hearth.Item, error) {
	if it, ok := c.get(string(raw)); ok {
		return it.Clone(), nil
	}
	var it hearth.Item
	if err := json.Unmarshal(raw, &it); err != nil {
		return hearth.Item{}, err
	}
	c.put(string(raw), it, len(raw))
	return it.Clone(), nil
}

// contextCache keeps the items of chains' checkpoints decoded, by the checkpoint's
// stamp (storage.Checkpoint): a continuation of a 1,000-turn chain then decodes only
// the links after its checkpoint (storage.LoadChainTail), not 3,000 items. A stamp
// names a checkpoint's contents for good, so an entry never goes stale; a checkpoint
// that is dropped (its chain changed) is simply not asked for again. An entry weighs
// its items' stored JSON.
//
// Entries are shared by every request that continues the chain: the engine reads
// history items and never changes them (openSealed copies what it replaces).
type contextCache struct{ generations[checkpointItems] }

// checkpointItems are a checkpoint's items; settled: every response of its chain had
// finished for good when it was read (storage.Status.Settled), so they never change;
// depth is its chain's links.
type checkpointItems struct {
	items   []hearth.Item
	settled bool
	depth   int
}

// contextCacheBudget bounds the stored JSON the kept checkpoints stand for (a
// 1,000-turn chain's is about a megabyte; decoded items take about as much again).
const contextCacheBudget = 64 << 20

func newContextCache(budget int) *contextCache {
	return &contextCache{newGenerations[checkpointItems](budget)}
}
