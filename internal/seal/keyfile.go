package seal

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FileName is the key's file in hearth's data directory.
const FileName = "seal.key"

// LoadOrCreate reads the key at path (KeySize raw bytes), or creates it (mode 0600)
// when the file does not exist; created says which. The key must outlive restarts:
// blobs clients hold are opened with it, and a new key makes every one of them a 400.
//
// Creation is atomic: the key is written to a temporary file, synced, and linked into
// place, so a crash never leaves a short key file, and of two servers starting at once
// on the same directory both end up with the one key that won.
func LoadOrCreate(path string) (k *Key, created bool, err error) {
	if k, err := load(path); !errors.Is(err, fs.ErrNotExist) {
		return k, false, err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return nil, false, fmt.Errorf("seal: create key: %w", err)
	}
	defer os.Remove(tmp.Name())
	var b [KeySize]byte
	rand.Read(b[:])
	// CreateTemp makes the file 0600; Chmod says so for a umask or platform that differs.
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, false, fmt.Errorf("seal: create key: %w", err)
	}
	if _, err := tmp.Write(b[:]); err != nil {
		tmp.Close()
		return nil, false, fmt.Errorf("seal: write key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, false, fmt.Errorf("seal: write key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, false, fmt.Errorf("seal: write key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process created it first: use that one.
			k, err := load(path)
			return k, false, err
		}
		return nil, false, fmt.Errorf("seal: create key: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // make the new name durable; a failure here only risks a new key after a crash
		d.Close()
	}
	k, err = FromBytes(b[:])
	return k, true, err
}

func load(path string) (*Key, error) {
	b, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return FromBytes(b)
}

// ReadFile returns the raw key in the key file at path (KeySize bytes), for a caller
// that keeps the key elsewhere too (a database replicas share); an error wrapping
// fs.ErrNotExist when there is no file.
func ReadFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("seal: read key: %w", err)
	}
	if len(b) != KeySize {
		return nil, fmt.Errorf("seal: key file %s holds %d bytes, want %d: restore it from a backup, or delete it to have a new key made (encrypted content sealed under the old key is then refused)", path, len(b), KeySize)
	}
	return b, nil
}

// NewBytes returns a fresh random key's KeySize raw bytes, for FromBytes.
func NewBytes() []byte {
	b := make([]byte, KeySize)
	rand.Read(b) // never fails (crypto/rand doc, Go 1.24+)
	return b
}
