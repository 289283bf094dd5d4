package sqlite

import (
	"path/filepath"
	"sync"
	"testing"

	"hearth/storage"
	"hearth/storage/storetest"
)

// TestConformance runs the store conformance suite against SQLite: each test gets a
// file of its own, which a second open in the same test opens again.
func TestConformance(t *testing.T) {
	var mu sync.Mutex
	paths := map[*testing.T]string{}
	storetest.Run(t, func(t *testing.T) storage.Store {
		mu.Lock()
		path, ok := paths[t]
		if !ok {
			path = filepath.Join(t.TempDir(), "hearth.db")
			paths[t] = path
		}
		mu.Unlock()
		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() }) // tests that restart the store close it first
		return db
	})
}
