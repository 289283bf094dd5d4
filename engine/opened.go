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
	mu       sync.Mutex
	cur, old map[openedKey]string
	curBytes int
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
		return t, true
	}
	t, ok := c.old[k]
	if ok {
		c.putLocked(k, t)
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
		c.old, c.cur, c.curBytes = c.cur, map[openedKey]string{}, 0
	}
	if _, ok := c.cur[k]; !ok {
		c.cur[k] = text
		c.curBytes += len(k.blob)
	}
}
