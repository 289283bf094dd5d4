package sqlite

import (
	"context"
	"errors"
	"fmt"

	"hearth/storage"
)

// The keys are kept by the shared layer (sqlstore.Keys); what a request checks is
// answered here in the fewest steps on this store: a prepared statement, and the
// chain epoch this process holds.

// HasKeys reports whether any key was ever created, revoked ones included: a server
// whose keys were all revoked must keep requiring one.
func (db *DB) HasKeys(ctx context.Context) (bool, error) {
	var n int
	// One row of one index: not worth the driver's watch on a cancellable context.
	if err := db.st.hasKeys.QueryRowContext(context.WithoutCancel(ctx)).Scan(&n); err != nil {
		return false, db.seen(fmt.Errorf("storage: count keys: %w", err))
	}
	return n == 1, nil
}

// CheckKey is KeyByHash (when hash is not empty) and HasKeys, in as few queries as
// answer them (a key found answers both), with the chain epoch, which this process
// holds.
func (db *DB) CheckKey(ctx context.Context, hash string) (storage.KeyCheck, error) {
	check := storage.KeyCheck{Epoch: db.ChainEpoch()}
	if hash != "" {
		k, err := db.KeyByHash(ctx, hash)
		switch {
		case err == nil:
			check.HasKeys, check.Key = true, k
			return check, nil
		case !errors.Is(err, storage.ErrKeyNotFound):
			return check, err
		}
	}
	var err error
	check.HasKeys, err = db.HasKeys(ctx)
	return check, err
}
