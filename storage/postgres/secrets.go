package postgres

import (
	"context"
	"fmt"
	"time"
)

// SharedSecret returns the secret stored under name, storing value there first when
// none is; created says whether this call stored it. Of replicas starting at once with
// different values, all get the one that was stored first. hearth keeps its seal key
// here when the store is PostgreSQL, so that every replica seals and opens with the
// same key without copying a file between them.
func (db *DB) SharedSecret(ctx context.Context, name string, value []byte) (stored []byte, created bool, err error) {
	tag, err := db.pool.Exec(ctx, `INSERT INTO shared_secrets (name, value, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO NOTHING`, name, value, time.Now().UnixMilli())
	if err != nil {
		return nil, false, fmt.Errorf("storage: store secret %s: %w", name, err)
	}
	if err := db.pool.QueryRow(ctx, `SELECT value FROM shared_secrets WHERE name = $1`, name).Scan(&stored); err != nil {
		return nil, false, fmt.Errorf("storage: read secret %s: %w", name, err)
	}
	return stored, tag.RowsAffected() == 1, nil
}
