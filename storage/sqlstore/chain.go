package sqlstore

import (
	"context"

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
