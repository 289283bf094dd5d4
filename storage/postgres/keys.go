package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hearth/storage"
)

// CreateKey creates a user key named name; the secret is returned once.
func (db *DB) CreateKey(ctx context.Context, name string) (storage.Key, string, error) {
	return db.CreateKeyAs(ctx, name, storage.RoleUser)
}

// CreateKeyAs creates a key with role.
func (db *DB) CreateKeyAs(ctx context.Context, name string, role storage.Role) (storage.Key, string, error) {
	return db.CreateKeyWith(ctx, name, storage.KeyOptions{Role: role})
}

// CreateKeyWith creates a key; only its hash is stored, and a name once used is
// ErrKeyExists.
func (db *DB) CreateKeyWith(ctx context.Context, name string, opt storage.KeyOptions) (storage.Key, string, error) {
	k, secret, err := storage.NewKey(name, opt)
	if err != nil {
		return storage.Key{}, "", err
	}
	err = db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO api_keys (id, name, hash, prefix, role, created_at, cache_group) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			k.ID, k.Name, k.Hash, k.Prefix, string(k.Role), k.CreatedAt.UnixMilli(), k.CacheGroup); err != nil {
			return err
		}
		return notify(ctx, tx, storage.Change{Kind: storage.KeysChanged})
	})
	if uniqueViolation(err) {
		return storage.Key{}, "", fmt.Errorf("%w: %q", storage.ErrKeyExists, k.Name)
	}
	if err != nil {
		return storage.Key{}, "", fmt.Errorf("storage: create key: %w", err)
	}
	return k, secret, nil
}

const keyColumns = `id, name, hash, prefix, role, created_at, revoked_at, cache_group`

// ListKeys returns every key, revoked ones included, oldest first.
func (db *DB) ListKeys(ctx context.Context) ([]storage.Key, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY created_at, seq`)
	if err != nil {
		return nil, fmt.Errorf("storage: list keys: %w", err)
	}
	defer rows.Close()
	var keys []storage.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("storage: list keys: %w", err)
		}
		keys = append(keys, *k)
	}
	return keys, rows.Err()
}

// RevokeKey revokes the key with that id or name (once: a second revocation keeps the
// first time) and returns it.
func (db *DB) RevokeKey(ctx context.Context, idOrName string) (storage.Key, error) {
	var k *storage.Key
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		k, err = scanKey(tx.QueryRow(ctx, `WITH revoked AS (
				UPDATE api_keys SET revoked_at = $1 WHERE (id = $2 OR name = $2) AND revoked_at IS NULL RETURNING `+keyColumns+`
			)
			SELECT * FROM revoked
			UNION ALL
			SELECT `+keyColumns+` FROM api_keys WHERE (id = $2 OR name = $2) AND NOT EXISTS (SELECT 1 FROM revoked)
			LIMIT 1`, time.Now().UnixMilli(), idOrName))
		if err != nil {
			return err
		}
		// Every replica's open WebSockets check their key again.
		return notify(ctx, tx, storage.Change{Kind: storage.KeysChanged})
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Key{}, fmt.Errorf("%w: %q", storage.ErrKeyNotFound, idOrName)
	}
	if err != nil {
		return storage.Key{}, fmt.Errorf("storage: revoke key: %w", err)
	}
	return *k, nil
}

// SetKeyCacheGroup puts the key with that id or name in a cache group.
func (db *DB) SetKeyCacheGroup(ctx context.Context, idOrName, group string) (storage.Key, error) {
	if err := storage.CheckCacheGroup(group); err != nil {
		return storage.Key{}, err
	}
	k, err := scanKey(db.pool.QueryRow(ctx, `UPDATE api_keys SET cache_group = $1 WHERE id = $2 OR name = $2
		RETURNING `+keyColumns, group, idOrName))
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Key{}, fmt.Errorf("%w: %q", storage.ErrKeyNotFound, idOrName)
	}
	if err != nil {
		return storage.Key{}, fmt.Errorf("storage: set cache group: %w", err)
	}
	return *k, nil
}

// KeyByHash returns the key whose hash is hash, revoked or not; ErrKeyNotFound when none.
func (db *DB) KeyByHash(ctx context.Context, hash string) (*storage.Key, error) {
	k, err := scanKey(db.pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, storage.ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: look up key: %w", err)
	}
	return k, nil
}

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
		b.Queue(`SELECT `+keyColumns+` FROM api_keys WHERE hash = $1`, hash).QueryRow(func(r pgx.Row) error {
			k, err := scanKey(r)
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

func scanKey(row pgx.Row) (*storage.Key, error) {
	var (
		k       storage.Key
		role    string
		created int64
		revoked *int64
	)
	if err := row.Scan(&k.ID, &k.Name, &k.Hash, &k.Prefix, &role, &created, &revoked, &k.CacheGroup); err != nil {
		return nil, err
	}
	k.Role = storage.Role(role)
	k.CreatedAt = time.UnixMilli(created)
	if revoked != nil {
		k.RevokedAt = time.UnixMilli(*revoked)
	}
	return &k, nil
}

// AdoptKeyless gives the key with that id or name everything made while no key was
// required (storage.KeylessOwner), in one transaction. The chain epoch moves, so that a
// replica holding a chain under the old owner reads it again.
func (db *DB) AdoptKeyless(ctx context.Context, idOrName string) (storage.Key, storage.Adopted, error) {
	var (
		k       *storage.Key
		adopted storage.Adopted
	)
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if k, err = scanKey(tx.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1 OR name = $1`, idOrName)); err != nil {
			return err
		}
		if !k.Active() {
			return fmt.Errorf("%w: %q", storage.ErrKeyRevoked, k.Name)
		}
		if err := lockChainsExclusive(ctx, tx); err != nil {
			return err
		}
		for _, table := range storage.AdoptTables {
			tag, err := tx.Exec(ctx, `UPDATE `+table+` SET owner = $1 WHERE owner = $2`, k.Hash, storage.KeylessOwner)
			if err != nil {
				return err
			}
			adopted.SetAdopted(table, tag.RowsAffected())
		}
		return chainsChanged(ctx, tx)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Key{}, adopted, fmt.Errorf("%w: %q", storage.ErrKeyNotFound, idOrName)
	}
	if errors.Is(err, storage.ErrKeyRevoked) {
		return storage.Key{}, adopted, err
	}
	if err != nil {
		return storage.Key{}, adopted, fmt.Errorf("storage: adopt: %w", err)
	}
	return *k, adopted, nil
}
