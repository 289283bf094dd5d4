package postgres

import (
	"context"
	"sync"
	"testing"

	"hearth/storage"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/storetest"
)

// openReplicas opens n stores on one new database, as n hearth replicas would.
func openReplicas(t *testing.T, n int) []*DB {
	t.Helper()
	u := pgtest.NewDatabase(t)
	dbs := make([]*DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range dbs {
		wg.Go(func() { dbs[i], errs[i] = OpenWith(context.Background(), u, Options{Replica: string(rune('a' + i))}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	return dbs
}

// Replicas starting at once on an empty database migrate it once: every open works,
// and each migration is recorded once.
func TestConcurrentMigration(t *testing.T) {
	dbs := openReplicas(t, 4)
	var n, max int
	if err := dbs[0].pool.QueryRow(context.Background(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != max || n == 0 {
		t.Errorf("schema_migrations has %d rows up to version %d", n, max)
	}
}

// A change on one replica moves ChainEpoch on every other, and a chain written by one
// loads on another.
func TestChainEpochShared(t *testing.T) {
	dbs := openReplicas(t, 2)
	a, b := dbs[0], dbs[1]
	ctx := context.Background()
	storetest.Turn(t, a, "alice", "resp_1", "", []storage.Item{storetest.UserMessage("msg_1", "Hi")}, nil)
	storetest.Turn(t, b, "alice", "resp_2", "resp_1", []storage.Item{storetest.UserMessage("msg_2", "And?")}, nil)
	c, err := a.LoadChain(ctx, "alice", "resp_2")
	if err != nil || len(c.Links) != 2 {
		t.Fatalf("chain across replicas: %v, %v", c, err)
	}
	e := b.ChainEpoch()
	if err := a.DeleteResponse(ctx, "alice", "resp_1"); err != nil {
		t.Fatal(err)
	}
	if b.ChainEpoch() == e {
		t.Error("a deletion on replica a did not move replica b's ChainEpoch")
	}
	if _, err := b.LoadChain(ctx, "alice", "resp_2"); err == nil {
		t.Error("replica b loads a chain replica a broke")
	}
}

// RecoverInFlight fails only what this replica left in flight: another replica's
// responses are still being served.
func TestRecoverInFlightIsPerReplica(t *testing.T) {
	dbs := openReplicas(t, 2)
	a, b := dbs[0], dbs[1]
	ctx := context.Background()
	for _, x := range []struct {
		db *DB
		id string
	}{{a, "resp_a"}, {b, "resp_b"}} {
		if err := x.db.CreateResponse(ctx, storage.NewResponse{ID: x.id, Owner: "alice", Model: "m",
			Status: storage.StatusInProgress, Request: storetest.Request("m", "")}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := a.RecoverInFlight(ctx); n != 1 || err != nil {
		t.Fatalf("RecoverInFlight on a = %d, %v; want 1", n, err)
	}
	ra, _ := b.GetResponse(ctx, "alice", "resp_a")
	rb, _ := b.GetResponse(ctx, "alice", "resp_b")
	if ra.Status != storage.StatusFailed || rb.Status != storage.StatusInProgress {
		t.Errorf("after a recovered: resp_a %s, resp_b %s; want failed, in_progress", ra.Status, rb.Status)
	}
}

// setFields patches top-level fields and keeps the others in their order.
func TestSetFields(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"id":"r","status":"queued","output":[]}`, `{"id":"r","status":"cancelled","output":[]}`},
		{`{ "id" : "r" }`, `{"id":"r","status":"cancelled"}`},
		{`not json`, `not json`},
		{`[1]`, `[1]`},
		{`{"a":1} trailing`, `{"a":1} trailing`},
	} {
		if got := string(setFields([]byte(c.in), field{"status", mustJSON("cancelled")})); got != c.want {
			t.Errorf("setFields(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
