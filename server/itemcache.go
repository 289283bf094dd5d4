package server

import (
	"encoding/json"
	"sync"

	"hearth"
)

// itemCache keeps stored items decoded, keyed by their stored JSON. Every turn that
// continues a chain decodes the items of all its earlier turns (turn 200: 400 items,
// about half of hearth's own time for the request), and the same bytes always decode
// to the same item, so nothing ever needs invalidating: a deleted response's items
// simply stop being asked for and age out. Memory is bounded by two generations of
// entries: when the current one has taken in budget/2 bytes of JSON it becomes the old
// one and the previous old one is dropped; a hit in the old generation moves forward.
type itemCache struct {
	mu                 sync.Mutex
	cur, old           map[string]hearth.Item
	curBytes, oldBytes int
	budget             int
	hits, misses       uint64
}

func (c *itemCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Entries: len(c.cur) + len(c.old), Bytes: c.curBytes + c.oldBytes, Budget: c.budget,
		Hits: c.hits, Misses: c.misses}
}

// itemCacheBudget is the JSON a cache holds at most, over both generations (the
// decoded items take about as much again).
const itemCacheBudget = 32 << 20

func newItemCache(budget int) *itemCache {
	return &itemCache{cur: map[string]hearth.Item{}, old: map[string]hearth.Item{}, budget: budget}
}

// decode returns the item raw encodes, from the cache when it has it. The caller owns
// the result: it is a copy, whatever the caller does to its parts.
func (c *itemCache) decode(raw []byte) (hearth.Item, error) {
	c.mu.Lock()
	it, ok := c.cur[string(raw)]
	if !ok {
		if it, ok = c.old[string(raw)]; ok {
			c.put(string(raw), it)
		}
	}
	if ok {
		c.hits++
	} else {
		c.misses++
	}
	c.mu.Unlock()
	if ok {
		return it.Clone(), nil
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return hearth.Item{}, err
	}
	c.mu.Lock()
	c.put(string(raw), it)
	c.mu.Unlock()
	return it.Clone(), nil
}

// put stores it under key in the current generation; c.mu is held.
func (c *itemCache) put(key string, it hearth.Item) {
	if len(key) > c.budget/2 {
		return // larger than a generation: not worth keeping
	}
	if c.curBytes+len(key) > c.budget/2 {
		c.old, c.cur, c.oldBytes, c.curBytes = c.cur, map[string]hearth.Item{}, c.curBytes, 0
	}
	c.cur[key] = it
	c.curBytes += len(key)
}
