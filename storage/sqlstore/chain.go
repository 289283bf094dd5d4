package sqlstore

import (
	"context"
	"fmt"

	"hearth/storage"
	"hearth/storage/record"
)

// ChainReader is how a store reads a chain: the chain query (each store's own, the
// hottest read there is), and a checkpoint by its stamp (nil when it is gone).
type ChainReader interface {
	ChainRows(ctx context.Context, owner, id string, withContext bool) (*record.Rows, error)
	StampedCheckpoint(ctx context.Context, id string, stamp []byte) ([]byte, error)
}

// LoadChainTail loads the chain behind id with r: whole when known is nil or does not
// know the stamp of the checkpoint the walk ends at, else only the links after that
// checkpoint (Base.Omitted). A checkpoint left out of the first query is read by a
// second, which finds it gone if a write dropped it in between; the third try reads it
// in the same query, as a whole load does.
func LoadChainTail(ctx context.Context, r ChainReader, owner, id string, known func(string) bool) (*storage.Chain, error) {
	for try := 0; ; try++ {
		cr, err := r.ChainRows(ctx, owner, id, known == nil || try == 2)
		if err != nil {
			return nil, err
		}
		deepest := cr.Deepest()
		if deepest == nil || deepest.Checkpoint != nil || deepest.Stamp == nil {
			return cr.Assemble(false)
		}
		if known(string(deepest.Stamp)) {
			return cr.Assemble(true)
		}
		if deepest.Checkpoint, err = r.StampedCheckpoint(ctx, deepest.ID, deepest.Stamp); err != nil {
			return nil, err
		}
		if deepest.Checkpoint != nil {
			return cr.Assemble(false)
		}
	}
}

// ChainLoads is how a store loads a chain: LoadChainTail over its own ChainReader, on
// what it holds for the load (SQLite: a driver connection of the read pool;
// PostgreSQL: the pool), its errors classified as the store's.
type ChainLoads interface {
	ChainTail(ctx context.Context, owner, id string, known func(string) bool) (*storage.Chain, error)
}

// Chains loads the conversation behind a response: storage.Store's LoadChain and
// LoadChainTail, over the store's ChainLoads.
type Chains struct{ l ChainLoads }

// LoadChain loads, in one query, the conversation behind previous_response_id = id:
// every response from the root of the chain down to id, each with its input items and
// then its output items, in order. The walk stops at a checkpoint, whose context is
// materialised, so a long chain costs at most storage.CheckpointInterval links.
//
// It returns ErrNotFound when id is unknown, deleted or another owner's, and also when
// any ancestor is: a chain with a missing link is broken (OpenAI answers not found when
// any link is missing) rather than silently shortened to the links that remain.
//
// Statuses are reported per link and not judged: whether an unfinished or failed
// response may be continued is the caller's decision.
func (c Chains) LoadChain(ctx context.Context, owner, id string) (*storage.Chain, error) {
	return c.LoadChainTail(ctx, owner, id, nil)
}

// LoadChainTail is LoadChain for a caller that keeps checkpoints decoded by their
// stamp (Checkpoint.Stamp): when the walk ends at a checkpoint whose stamp known
// reports, the checkpoint is not read, and the chain holds only the links after it
// (Base.Omitted). A 1,000-turn chain then loads as at most a checkpoint interval of
// links. When known reports false, the chain is whole, as from LoadChain, and Base
// says how many of its items the checkpoint gave, for the caller to keep under the
// stamp. known is called at most once per load, with the connection held: it must not
// call the store.
func (c Chains) LoadChainTail(ctx context.Context, owner, id string, known func(stamp string) bool) (*storage.Chain, error) {
	ch, err := c.l.ChainTail(ctx, owner, id, known)
	if err != nil {
		return nil, fmt.Errorf("storage: load chain of %s: %w", id, err)
	}
	return ch, nil
}
