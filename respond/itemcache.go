package respond

import (
	"encoding/json"

	"hearth"
	"hearth/internal/gencache"
)

// itemCache keeps stored items decoded, keyed by their stored JSON. Every turn that
// continues a chain decodes the items of the links after its checkpoint (and, once per
// checkpoint, the checkpoint's: see contextCache), and the same bytes always decode to
// the same item. An entry weighs its JSON.
type itemCache struct{ gencache.Cache[hearth.Item] }

// itemCacheBudget is the JSON a cache holds at most, over both generations (the
// decoded items take about as much again).
const itemCacheBudget = 32 << 20

func newItemCache(budget int) *itemCache {
	return &itemCache{gencache.New[hearth.Item](budget)}
}

// decode returns the item raw encodes, from the cache when it has it. The caller owns
// the result: it is a copy, whatever the caller does to its parts.
func (c *itemCache) decode(raw []byte) (hearth.Item, error) {
	if it, ok := c.Get(string(raw)); ok {
		return it.Clone(), nil
	}
	var it hearth.Item
	if err := json.Unmarshal(raw, &it); err != nil {
		return hearth.Item{}, err
	}
	c.Put(string(raw), it, len(raw))
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
type contextCache struct {
	gencache.Cache[checkpointItems]
}

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
	return &contextCache{gencache.New[checkpointItems](budget)}
}

// NamedCache is one of the core's caches as /metrics reports it.
type NamedCache struct {
	Name, What string
	Stats      func() gencache.Stats
}
