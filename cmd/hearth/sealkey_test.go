package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/internal/seal"
	"hearth/storage/postgres"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/sqlite"
)

// TestSealKeySharedOnPostgres: on PostgreSQL the seal key lives in the database. The
// first replica stores the seal.key of its --data (blobs clients hold stay valid), a
// replica with an empty --data uses that key (a blob one seals, the other opens) and
// writes no file, and a replica whose --data holds another key refuses to start,
// saying why. On SQLite the key stays seal.key in --data.
func TestSealKeySharedOnPostgres(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pgURL := pgtest.NewDatabase(t)
	open := func() *postgres.DB {
		db, err := postgres.Open(ctx, pgURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}

	dirA := t.TempDir()
	fileKey, _, err := seal.LoadOrCreate(filepath.Join(dirA, seal.FileName))
	if err != nil {
		t.Fatal(err)
	}
	heldByClient := fileKey.Seal(seal.Reasoning, []byte("sealed before the move to PostgreSQL"))
	a, err := loadSealKey(ctx, open(), dirA, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Open(seal.Reasoning, heldByClient); err != nil {
		t.Errorf("replica a does not open a blob sealed under its own seal.key: %v", err)
	}

	dirB := t.TempDir()
	b, err := loadSealKey(ctx, open(), dirB, log)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.Open(seal.Reasoning, a.Seal(seal.Reasoning, []byte("from a"))); err != nil || string(got) != "from a" {
		t.Errorf("replica b opens replica a's blob: %q, %v", got, err)
	}
	if _, err := b.Open(seal.Reasoning, heldByClient); err != nil {
		t.Errorf("replica b does not open the blob a client held before the move: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dirB, seal.FileName)); err == nil {
		t.Errorf("replica b wrote a seal.key although the key is in the database")
	}

	dirC := t.TempDir()
	if _, _, err := seal.LoadOrCreate(filepath.Join(dirC, seal.FileName)); err != nil {
		t.Fatal(err)
	}
	_, err = loadSealKey(ctx, open(), dirC, log)
	if err == nil || !strings.Contains(err.Error(), "is not the key the database holds") || !strings.Contains(err.Error(), dirC) {
		t.Errorf("replica with another seal.key: %v; want a refusal naming its file", err)
	}

	// SQLite: one process, the key in --data.
	dirS := t.TempDir()
	lite, err := sqlite.Open(filepath.Join(dirS, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	s, err := loadSealKey(ctx, lite, dirS, log)
	if err != nil {
		t.Fatal(err)
	}
	again, _, err := seal.LoadOrCreate(filepath.Join(dirS, seal.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Open(seal.Reasoning, s.Seal(seal.Reasoning, []byte("x"))); err != nil {
		t.Errorf("on SQLite the key is not seal.key in --data: %v", err)
	}
}
