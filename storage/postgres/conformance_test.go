package postgres

import (
	"context"
	"sync"
	"testing"

	"hearth/storage"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestConformance runs the store conformance suite against PostgreSQL: each test gets
// a database of its own, which a second open in the same test opens again.
func TestConformance(t *testing.T) {
	var mu sync.Mutex
	urls := map[*testing.T]string{}
	storetest.Run(t, func(t *testing.T) storage.Store {
		mu.Lock()
		u, ok := urls[t]
		mu.Unlock()
		if !ok {
			u = pgtest.NewDatabase(t)
			mu.Lock()
			urls[t] = u
			mu.Unlock()
		}
		db, err := OpenWith(context.Background(), u, Options{Replica: "test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() }) // tests that restart the store close it first
		return db
	})
}
