package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"hearth/storage"
	"hearth/storage/storetest"
)

// A replica whose lease runs out has its in-flight responses failed by another, with
// the expired error in the row and the stored object, and every replica hears of it;
// a replica that holds its lease, and one that never held one (of a version before
// leases), keep theirs.
func TestFailExpired(t *testing.T) {
	dbs := openReplicas(t, 3)
	a, b, old := dbs[0], dbs[1], dbs[2]
	ctx := context.Background()
	heard := make(chan storage.Change, 16)
	stop := b.Watch(func(c storage.Change) { heard <- c })
	defer stop()
	// a's lease is long until it is cut short below: a fixed short lease would expire
	// early whenever the test is starved of the CPU for longer (a loaded CI machine).
	if err := a.RenewLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := b.RenewLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		db *DB
		id string
	}{{a, "resp_a"}, {b, "resp_b"}, {old, "resp_old"}} {
		if err := x.db.CreateResponse(ctx, storage.NewResponse{ID: x.id, Owner: "alice", Model: "m", Background: true,
			Status: storage.StatusInProgress, Request: storetest.Request("m", ""), Body: storetest.Body(x.id, "in_progress")}); err != nil {
			t.Fatal(err)
		}
	}
	if ids, err := b.FailExpired(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("FailExpired before a's lease ran out: %v, %v", ids, err)
	}
	if err := a.RenewLease(ctx, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	ids, err := b.FailExpired(ctx)
	if err != nil || !slices.Equal(ids, []string{"resp_a"}) {
		t.Fatalf("FailExpired after a's lease ran out = %v, %v; want [resp_a]", ids, err)
	}
	r, err := b.GetResponse(ctx, "alice", "resp_a")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Status string `json:"status"`
		Error  struct{ Code, Message string }
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if r.Status != storage.StatusFailed || body.Status != "failed" || body.Error.Message != storage.ExpiredMessage {
		t.Errorf("resp_a after its lease ran out: row %s, object %+v", r.Status, body)
	}
	for _, id := range []string{"resp_b", "resp_old"} {
		if r, _ := b.GetResponse(ctx, "alice", id); r.Status != storage.StatusInProgress {
			t.Errorf("%s = %s, want in_progress", id, r.Status)
		}
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-heard:
			if c == (storage.Change{Kind: storage.JournalChanged, ID: "resp_a"}) {
				return
			}
		case <-deadline:
			t.Fatal("no replica was told that resp_a failed")
		}
	}
}
