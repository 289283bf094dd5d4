package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
	"hearth/storage/sqlstore"
)

// The keys are kept by the shared layer (sqlstore.Keys); what a request checks is
// answered here in one round trip: a batch.

// HasKeys reports whether any key was ever created.
func (db *DB) HasKeys(ctx context.Context) (bool, error) {
	var has bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM api_keys)`).Scan(&has); err != nil {
		return false, fmt.Errorf("storage: count keys: %w", err)
	}
	return has, nil
}

// CheckKey sends HasKeys's, KeyByHash's (when hash is not empty) and ChainEpoch's
// statements in one batch: one round trip.
func (db *DB) CheckKey(ctx context.Context, hash string) (storage.KeyCheck, error) {
	var (
		check storage.KeyCheck
		epoch int64
	)
	b := &pgx.Batch{}
	b.Queue(`SELECT EXISTS (SELECT 1 FROM api_keys)`).QueryRow(func(r pgx.Row) error { return r.Scan(&check.HasKeys) })
	b.Queue(sqlChainEpoch).QueryRow(func(r pgx.Row) error { return r.Scan(&epoch) })
	if hash != "" {
		b.Queue(`SELECT `+sqlstore.KeyColumns+` FROM api_keys WHERE hash = $1`, hash).QueryRow(func(r pgx.Row) error {
			k, err := sqlstore.ScanKey(r)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			check.Key = k
			return err
		})
	}
	if err := db.pool.SendBatch(ctx, b); err != nil {
		return storage.KeyCheck{}, fmt.Errorf("storage: check key: %w", err)
	}
	check.Epoch = uint64(epoch) &^ (1 << 63)
	return check, nil
}
