package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"hearth/storage"
)

// Keys keeps the API keys: their hashes, roles and cache groups. What a request
// checks (HasKeys, CheckKey) each store answers in its own fewest steps.
type Keys struct{ b Backend }

// KeyColumns are what ScanKey reads.
const KeyColumns = `id, name, hash, prefix, role, created_at, revoked_at, cache_group`

var (
	sqlInsertKey = SQL(`INSERT INTO api_keys (id, name, hash, prefix, role, created_at, cache_group) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	// Creation order; the row's own sequence breaks ties of one millisecond.
	sqlListKeys = Dialects(`SELECT `+KeyColumns+` FROM api_keys ORDER BY created_at, rowid`,
		`SELECT `+KeyColumns+` FROM api_keys ORDER BY created_at, seq`)
	sqlRevokeKey   = SQL(`UPDATE api_keys SET revoked_at = ?1 WHERE (id = ?2 OR name = ?2) AND revoked_at IS NULL`)
	sqlKeyByName   = SQL(`SELECT ` + KeyColumns + ` FROM api_keys WHERE id = ?1 OR name = ?1`)
	sqlSetKeyGroup = SQL(`UPDATE api_keys SET cache_group = ?1 WHERE id = ?2 OR name = ?2 RETURNING ` + KeyColumns)
	sqlKeyByHash   = SQL(`SELECT ` + KeyColumns + ` FROM api_keys WHERE hash = ?`)
	// One statement per table storage.AdoptTables names, in its order.
	sqlAdopt = func() []*Stmt {
		s := make([]*Stmt, len(storage.AdoptTables))
		for i, table := range storage.AdoptTables {
			s[i] = SQL(`UPDATE ` + table + ` SET owner = ? WHERE owner = ?`)
		}
		return s
	}()
)

// CreateKey generates a new user key named name and stores its hash. The returned
// secret is the only copy of the key.
func (s Keys) CreateKey(ctx context.Context, name string) (storage.Key, string, error) {
	return s.CreateKeyAs(ctx, name, storage.RoleUser)
}

// CreateKeyAs is CreateKey for a key of role.
func (s Keys) CreateKeyAs(ctx context.Context, name string, role storage.Role) (storage.Key, string, error) {
	return s.CreateKeyWith(ctx, name, storage.KeyOptions{Role: role})
}

// CreateKeyWith is CreateKey for a key created with opt; a name once used is
// ErrKeyExists.
func (s Keys) CreateKeyWith(ctx context.Context, name string, opt storage.KeyOptions) (storage.Key, string, error) {
	k, secret, err := storage.NewKey(name, opt)
	if err != nil {
		return storage.Key{}, "", err
	}
	err = s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if _, err := tx.Exec(ctx, sqlInsertKey,
			k.ID, k.Name, k.Hash, k.Prefix, string(k.Role), k.CreatedAt.UnixMilli(), k.CacheGroup); err != nil {
			return err
		}
		return tx.Notify(ctx, storage.Change{Kind: storage.KeysChanged})
	})
	if s.b.Unique(err) {
		return storage.Key{}, "", fmt.Errorf("%w: %q", storage.ErrKeyExists, k.Name)
	}
	if err != nil {
		return storage.Key{}, "", fmt.Errorf("storage: create key: %w", err)
	}
	return k, secret, nil
}

// ListKeys returns every key, revoked ones included, oldest first.
func (s Keys) ListKeys(ctx context.Context) ([]storage.Key, error) {
	keys, err := queryAll(ctx, s.b.Reader(), ScanKey, sqlListKeys)
	if err != nil {
		return nil, fmt.Errorf("storage: list keys: %w", err)
	}
	return keys, nil
}

// RevokeKey revokes the key whose id or name is idOrName. Revoking a revoked key is not
// an error (the first time stays); it returns the key either way.
func (s Keys) RevokeKey(ctx context.Context, idOrName string) (storage.Key, error) {
	var k *storage.Key
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if _, err := tx.Exec(ctx, sqlRevokeKey, time.Now().UnixMilli(), idOrName); err != nil {
			return err
		}
		var err error
		if k, err = ScanKey(tx.QueryRow(ctx, sqlKeyByName, idOrName)); err != nil {
			return err
		}
		// Every open WebSocket (of every replica) checks its key again.
		return tx.Notify(ctx, storage.Change{Kind: storage.KeysChanged})
	})
	if errors.Is(err, ErrNoRows) {
		return storage.Key{}, fmt.Errorf("%w: %q", storage.ErrKeyNotFound, idOrName)
	}
	if err != nil {
		return storage.Key{}, fmt.Errorf("storage: revoke key: %w", err)
	}
	return *k, nil
}

// SetKeyCacheGroup puts the key whose id or name is idOrName in the cache group group
// ("" takes it out of any: a group of its own). A running server applies it from the
// key's next request on.
func (s Keys) SetKeyCacheGroup(ctx context.Context, idOrName, group string) (storage.Key, error) {
	if err := storage.CheckCacheGroup(group); err != nil {
		return storage.Key{}, err
	}
	var k *storage.Key
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		k, err = ScanKey(tx.QueryRow(ctx, sqlSetKeyGroup, group, idOrName))
		return err
	})
	if errors.Is(err, ErrNoRows) {
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
func (s Keys) KeyByHash(ctx context.Context, hash string) (*storage.Key, error) {
	k, err := ScanKey(s.b.Reader().QueryRow(ctx, sqlKeyByHash, hash))
	if errors.Is(err, ErrNoRows) {
		return nil, storage.ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: look up key: %w", err)
	}
	return k, nil
}

// ScanKey reads a row of KeyColumns.
func ScanKey(row storage.RowScanner) (*storage.Key, error) {
	var (
		k       storage.Key
		role    string
		created int64
		revoked sql.NullInt64
	)
	if err := row.Scan(&k.ID, &k.Name, &k.Hash, &k.Prefix, &role, &created, &revoked, &k.CacheGroup); err != nil {
		return nil, err
	}
	k.Role = storage.Role(role)
	k.CreatedAt = time.UnixMilli(created)
	if revoked.Valid {
		k.RevokedAt = time.UnixMilli(revoked.Int64)
	}
	return &k, nil
}

// AdoptKeyless gives the key whose id or name is idOrName everything made while no key
// was required (storage.KeylessOwner), in one transaction. The chain epoch moves, so
// that a holder of a chain under the old owner (another replica's too) reads it again.
func (s Keys) AdoptKeyless(ctx context.Context, idOrName string) (storage.Key, storage.Adopted, error) {
	var (
		k       *storage.Key
		adopted storage.Adopted
	)
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		if k, err = ScanKey(tx.QueryRow(ctx, sqlKeyByName, idOrName)); err != nil {
			return err
		}
		if !k.Active() {
			return fmt.Errorf("%w: %q", storage.ErrKeyRevoked, k.Name)
		}
		if err := tx.LockChains(ctx); err != nil {
			return err
		}
		for i, table := range storage.AdoptTables {
			n, err := tx.Exec(ctx, sqlAdopt[i], k.Hash, storage.KeylessOwner)
			if err != nil {
				return err
			}
			adopted.SetAdopted(table, n)
		}
		return tx.ChainsChanged(ctx)
	})
	if errors.Is(err, ErrNoRows) {
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
