package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"

	"hearth/internal/seal"
	"hearth/storage"
)

// sharedSecrets is a store that keeps secrets every replica on it shares
// (storage/postgres); a store without it (SQLite, one process) leaves the seal key in
// --data.
type sharedSecrets interface {
	SharedSecret(ctx context.Context, name string, value []byte) (stored []byte, created bool, err error)
}

// sealSecretName names the seal key among the shared secrets.
const sealSecretName = "seal.key"

// loadSealKey returns the key of encrypted reasoning and compaction items. On a store
// replicas share, the key lives in the database, so that a blob one replica sealed
// opens on every other: the first replica to start stores it (the seal.key of its
// --data when there is one, so that blobs clients already hold stay valid; a new key
// otherwise), and every later start uses the stored one. A seal.key in --data that
// differs from the stored key is refused: that replica would seal blobs the others
// cannot open. On SQLite the key is seal.key in --data, as before.
func loadSealKey(ctx context.Context, db storage.Store, dataDir string, log *slog.Logger) (*seal.Key, error) {
	keyPath := filepath.Join(dataDir, seal.FileName)
	shared, ok := db.(sharedSecrets)
	if !ok {
		key, created, err := seal.LoadOrCreate(keyPath)
		if err != nil {
			return nil, fmt.Errorf("encrypted content key: %w", err)
		}
		if created {
			log.Info("created the key for encrypted content", "path", keyPath)
		}
		return key, nil
	}
	local, err := seal.ReadFile(keyPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("encrypted content key: %w", err)
	}
	offer := local
	if offer == nil {
		offer = seal.NewBytes()
	}
	stored, created, err := shared.SharedSecret(ctx, sealSecretName, offer)
	if err != nil {
		return nil, fmt.Errorf("encrypted content key: %w", err)
	}
	if local != nil && !bytes.Equal(stored, local) {
		return nil, fmt.Errorf("encrypted content key: %s is not the key the database holds, which the other replicas seal with: "+
			"remove the file to use the database's key (blobs sealed under the file's key are then refused), "+
			"or, to keep the file's key instead, write it to the database's shared_secrets row %q while no replica runs",
			keyPath, sealSecretName)
	}
	switch {
	case created && local != nil:
		log.Info("stored the key for encrypted content in the database, from --data, for every replica", "path", keyPath)
	case created:
		log.Info("created the key for encrypted content in the database, for every replica")
	}
	return seal.FromBytes(stored)
}
