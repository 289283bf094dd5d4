// Package gencache is a cache bounded by the bytes its entries stand for, in two
// generations, for values whose key names their contents (so nothing is ever
// invalidated: what stops being asked for ages out). hearth keeps decoded items,
// chains' checkpoints, hot chains and vector stores' search indexes in it.
package gencache

import "sync"

// Cache keeps values in two generations: when the current one has taken in budget/2
// bytes it becomes the old one and the previous old one is dropped; a hit in the old
// generation moves forward. A value larger than a generation is not kept.
type Cache[V any] struct {
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

// New makes a cache of budget bytes over both generations.
func New[V any](budget int) *Cache[V] {
	return &Cache[V]{cur: map[string]weighed[V]{}, old: map[string]weighed[V]{}, budget: budget}
}

// Stats is what a cache holds against its bound, and how often it served a lookup.
type Stats struct {
	Entries, Bytes, Budget int
	// Hits are lookups the cache served; Misses those it could not.
	Hits, Misses uint64
}

// Stats reports the cache's entries, bytes and lookups.
func (g *Cache[V]) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{Entries: len(g.cur) + len(g.old), Bytes: g.curBytes + g.oldBytes, Budget: g.budget,
		Hits: g.hits, Misses: g.misses}
}

// Budget is the bytes the cache holds at most, over both generations.
func (g *Cache[V]) Budget() int { return g.budget }

// Get returns the entry of key, counting the lookup as a hit or a miss.
func (g *Cache[V]) Get(key string) (V, bool) {
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

// Put keeps v under key, weighing bytes.
func (g *Cache[V]) Put(key string, v V, bytes int) {
	g.mu.Lock()
	g.putLocked(key, weighed[V]{v, bytes})
	g.mu.Unlock()
}

func (g *Cache[V]) putLocked(key string, e weighed[V]) {
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

// Clear drops every entry (its counts of lookups stay).
func (g *Cache[V]) Clear() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cur, g.old, g.curBytes, g.oldBytes = map[string]weighed[V]{}, map[string]weighed[V]{}, 0, 0
}
