package storetest

import (
	"context"
	"testing"
	"time"

	"hearth/storage"
)

// heard collects the changes a store tells (ChangesLost aside) for a test to wait on.
type heard chan storage.Change

func watch(t *testing.T, db storage.Store) heard {
	h := make(heard, 64)
	stop := db.Watch(func(c storage.Change) {
		if c.Kind != storage.ChangesLost {
			select {
			case h <- c:
			default: // a test that stopped reading
			}
		}
	})
	t.Cleanup(stop)
	return h
}

// expect waits up to a few seconds for change want, skipping others.
func (h heard) expect(t *testing.T, what string, want storage.Change) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c := <-h:
			if c == want {
				return
			}
		case <-deadline:
			t.Fatalf("%s: %+v was not told", what, want)
		}
	}
}

// testChanges: a watcher hears, after each commit, the journal of a response growing
// and its end, a cancel, a deletion (as a cancel: its generation stops) and keys
// created and revoked; a stopped watcher hears nothing more. Leases have nothing to
// fail where no process let one run out.
func testChanges(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	h := watch(t, db)
	for _, id := range []string{"resp_a", "resp_b"} {
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: alice, Model: "m", Status: storage.StatusInProgress,
			Background: true, Request: Request("m", ""), Body: Body(id, "in_progress")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AppendEvents(ctx, "resp_a", events(0, 2), false); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "events appended", storage.Change{Kind: storage.JournalChanged, ID: "resp_a"})
	if err := db.CompleteResponse(ctx, "resp_a", storage.Final{Status: storage.StatusCompleted, Body: Body("resp_a", "completed"),
		Events: events(2, 3), EndJournal: true}); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "response completed", storage.Change{Kind: storage.JournalChanged, ID: "resp_a"})
	if _, err := db.Cancel(ctx, alice, "resp_b"); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "response cancelled", storage.Change{Kind: storage.ResponseCancelled, ID: "resp_b"})
	if err := db.DeleteResponse(ctx, alice, "resp_a"); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "response deleted", storage.Change{Kind: storage.ResponseCancelled, ID: "resp_a"})
	if _, _, err := db.CreateKey(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "key created", storage.Change{Kind: storage.KeysChanged})
	if _, err := db.RevokeKey(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "key revoked", storage.Change{Kind: storage.KeysChanged})

	if err := db.RenewLease(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if ids, err := db.FailExpired(ctx); err != nil || len(ids) != 0 {
		t.Errorf("FailExpired with every lease held: %v, %v", ids, err)
	}

	// A second watcher stopped at once hears nothing; the first still hears.
	var late int
	stop := db.Watch(func(storage.Change) { late++ })
	stop()
	if _, _, err := db.CreateKey(ctx, "dave"); err != nil {
		t.Fatal(err)
	}
	h.expect(t, "key created", storage.Change{Kind: storage.KeysChanged})
	if late != 0 {
		t.Errorf("a stopped watcher heard %d changes", late)
	}
}
