package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"

	"hearth/storage"
)

// CreateKey generates a new user key named name and stores its hash. The returned
// secret is the only copy of the key.
func (db *DB) CreateKey(ctx context.Context, name string) (storage.Key, string, error) {
	return db.CreateKeyAs(ctx, name, storage.RoleUser)
}

// CreateKeyAs is CreateKey for a key of role.
func (db *DB) CreateKeyAs(ctx context.Context, name string, role storage.Role) (storage.Key, string, error) {
	return db.CreateKeyWith(ctx, name, storage.KeyOptions{Role: role})
}

// CreateKeyWith is CreateKey for a key created with opt.
func (db *DB) CreateKeyWith(ctx context.Context, name string, opt storage.KeyOptions) (storage.Key, string, error) {
	k, secret, err := storage.NewKey(name, opt)
	if err != nil {
		return storage.Key{}, "", err
	}
	err = db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, name, hash, prefix, role, created_at, cache_group) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			k.ID, k.Name, k.Hash, k.Prefix, string(k.Role), k.CreatedAt.UnixMilli(), k.CacheGroup)
		return err
	})
	var se sqlite3.Error
	if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintUnique {
		return storage.Key{}, "", fmt.Errorf("%w: %q", storage.ErrKeyExists, k.Name)
	}
	if err != nil {
		return storage.Key{}, "", fmt.Errorf("storage: create key: %w", err)
	}
	db.changes.Tell(storage.Change{Kind: storage.KeysChanged})
	return k, secret, nil
}

// ListKeys returns every key, revoked ones included, oldest first.
func (db *DB) ListKeys(ctx context.Context) ([]storage.Key, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY created_at, rowid`)
	if err != nil {
		return nil, db.seen(fmt.Errorf("storage: list keys: %w", err))
	}
	defer rows.Close()
	var keys []storage.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, db.seen(fmt.Errorf("storage: list keys: %w", err))
		}
		keys = append(keys, *k)
	}
	return keys, db.seen(rows.Err())
}

// RevokeKey revokes the key whose id or name is idOrName. Revoking a revoked key is not
// an error; it returns the key either way.
func (db *DB) RevokeKey(ctx context.Context, idOrName string) (storage.Key, error) {
	var k *storage.Key
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ?1 WHERE (id = ?2 OR name = ?2) AND revoked_at IS NULL`,
			time.Now().UnixMilli(), idOrName)
		if err != nil {
			return err
		}
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?1 OR name = ?1`, idOrName))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return storage.Key{}, fmt.Errorf("%w: %q", storage.ErrKeyNotFound, idOrName)
	}
	if err != nil {
		return storage.Key{}, fmt.Errorf("storage: revoke key: %w", err)
	}
	db.changes.Tell(storage.Change{Kind: storage.KeysChanged})
	return *k, nil
}

// SetKeyCacheGroup puts the key whose id or name is idOrName in the cache group group
// ("" takes it out of any: a group of its own). A running server applies it from the
// key's next request on.
func (db *DB) SetKeyCacheGroup(ctx context.Context, idOrName, group string) (storage.Key, error) {
	if err := storage.CheckCacheGroup(group); err != nil {
		return storage.Key{}, err
	}
	var k *storage.Key
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET cache_group = ?1 WHERE id = ?2 OR name = ?2`, group, idOrName); err != nil {
			return err
		}
		var err error
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?1 OR name = ?1`, idOrName))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return storage.Key{}, fmt.Errorf("%w: %q", storage.ErrKeyNotFound, idOrName)
	}
	if err != nil {
		return storage.Key{}, fmt.Errorf("storage: set cache group: %w", err)
	}
	return *k, nil
}

// KeyByHash finds the key whose hash (OwnerOf of the secret) is hash, revoked or not.
// The server calls it per request, so that a key revoked from the command line stops
// working at once; it is one lookup in a unique index.
func (db *DB) KeyByHash(ctx context.Context, hash string) (*storage.Key, error) {
	k, err := scanKey(db.r.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storage.ErrKeyNotFound
	}
	if err != nil {
		return nil, db.seen(fmt.Errorf("storage: look up key: %w", err))
	}
	return k, nil
}

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

const keyColumns = `id, name, hash, prefix, role, created_at, revoked_at, cache_group`

func scanKey(row rowScanner) (*storage.Key, error) {
	var (
		k       storage.Key
		created int64
		revoked sql.NullInt64
	)
	if err := row.Scan(&k.ID, &k.Name, &k.Hash, &k.Prefix, &k.Role, &created, &revoked, &k.CacheGroup); err != nil {
		return nil, err
	}
	k.CreatedAt = time.UnixMilli(created)
	if revoked.Valid {
		k.RevokedAt = time.UnixMilli(revoked.Int64)
	}
	return &k, nil
}

// AdoptKeyless gives the key whose id or name is idOrName everything made while no key
// was required (storage.KeylessOwner), in one transaction.
func (db *DB) AdoptKeyless(ctx context.Context, idOrName string) (storage.Key, storage.Adopted, error) {
	var (
		k       *storage.Key
		adopted storage.Adopted
	)
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?1 OR name = ?1`, idOrName)); err != nil {
			return err
		}
		if !k.Active() {
			return fmt.Errorf("%w: %q", storage.ErrKeyRevoked, k.Name)
		}
		for _, table := range storage.AdoptTables {
			res, err := tx.ExecContext(ctx, `UPDATE `+table+` SET owner = ? WHERE owner = ?`, k.Hash, storage.KeylessOwner)
			if err != nil {
				return err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return err
			}
			adopted.SetAdopted(table, n)
		}
		return nil
	})
	if errors.Is(err, sql.ErrNoRows) {
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
