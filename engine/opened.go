package engine

import (
	"sync"

	"hearth/internal/seal"
)

// openedCache keeps the text of sealed reasoning already opened, by key and blob: a
// Codex-style client sends every earlier turn's encrypted_content back on every turn
// (30 turns: 30 blobs opened and their payloads decoded per request, a tenth of
// hearth's own time for it). A blob opens to the same text under the same key for
// good, so entries never go stale; the cache is bounded by the blobs' bytes, in two
// generations like the server's caches.
type openedCache struct {
	mu                 sync.Mutex
	cur, old           map[openedKey]string
	curBytes, oldBytes int
	hits, misses       uint64
}

// OpenedCacheStats says what the cache of opened reasoning holds: entries, the bytes
// of their blobs against the bound, and lookups served and not.
type OpenedCacheStats struct {
	Entries, Bytes, Budget int
	Hits, Misses           uint64
}

// ReadOpenedCacheStats returns the process's opened-reasoning cache statistics.
func ReadOpenedCacheStats() OpenedCacheStats {
	opened.mu.Lock()
	defer opened.mu.Unlock()
	return OpenedCacheStats{Entries: len(opened.cur) + len(opened.old), Bytes: opened.curBytes + opened.oldBytes,
		Budget: 2 * openedBudget, Hits: opened.hits, Misses: opened.misses}
}

type openedKey struct {
	key  *seal.Key
	blob string
}

// openedBudget bounds the blobs one generation keys (a reasoning blob is a kilobyte
// or so).
const openedBudget = 8 << 20

var opened = &openedCache{cur: map[openedKey]string{}}

func (c *openedCache) get(k openedKey) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.cur[k]; ok {
		c.hits++
		return t, true
	}
	t, ok := c.old[k]
	if ok {
		c.hits++
		c.putLocked(k, t)
	} else {
		c.misses++
	}
	return t, ok
}

func (c *openedCache) put(k openedKey, text string) {
	c.mu.Lock()
	c.putLocked(k, text)
	c.mu.Unlock()
}

func (c *openedCache) putLocked(k openedKey, text string) {
	if c.curBytes+len(k.blob) > openedBudget {
		c.old, c.cur, c.oldBytes, c.curBytes = c.cur, map[openedKey]string{}, c.curBytes, 0
	}
	if _, ok := c.cur[k]; !ok {
		c.cur[k] = text
		c.curBytes += len(k.blob)
	}
}
