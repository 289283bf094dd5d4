package postgres

import (
	"context"
	"testing"
	"time"

	"hearth/storage"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/storetest"
)

// listener collects what a store's Watch tells, for a test to wait on.
type listener chan storage.Change

func listen(t *testing.T, db *DB) listener {
	l := make(listener, 256)
	stop := db.Watch(func(c storage.Change) {
		select {
		case l <- c:
		default:
		}
	})
	t.Cleanup(stop)
	return l
}

// expect waits up to within for change want, skipping others.
func (l listener) expect(t *testing.T, what string, want storage.Change, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case c := <-l:
			if c == want {
				return
			}
		case <-deadline:
			t.Fatalf("%s: %+v was not told within %v", what, want, within)
		}
	}
}

// A change one replica commits is told to another: journal batches, a cancel, keys.
func TestChangesAcrossReplicas(t *testing.T) {
	dbs := openReplicas(t, 2)
	a, b := dbs[0], dbs[1]
	heard := listen(t, b)
	ctx := context.Background()
	if err := a.CreateResponse(ctx, storage.NewResponse{ID: "resp_1", Owner: "alice", Model: "m", Background: true,
		Status: storage.StatusInProgress, Request: storetest.Request("m", ""), Body: storetest.Body("resp_1", "in_progress")}); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendEvents(ctx, "resp_1", []storage.Event{{Seq: 0, Type: "response.created", Data: []byte(`{}`)}}, false); err != nil {
		t.Fatal(err)
	}
	heard.expect(t, "journal batch on a", storage.Change{Kind: storage.JournalChanged, ID: "resp_1"}, 5*time.Second)
	if _, err := a.Cancel(ctx, "alice", "resp_1"); err != nil {
		t.Fatal(err)
	}
	heard.expect(t, "cancel on a", storage.Change{Kind: storage.ResponseCancelled, ID: "resp_1"}, 5*time.Second)
	if _, _, err := a.CreateKey(ctx, "carol"); err != nil {
		t.Fatal(err)
	}
	heard.expect(t, "key created on a", storage.Change{Kind: storage.KeysChanged}, 5*time.Second)
}

// A listening connection silent past listenProbe is checked and kept: no ChangesLost,
// and changes are still heard.
func TestListenProbe(t *testing.T) {
	probe := listenProbe
	listenProbe = 100 * time.Millisecond
	// Put back once the stores below are closed (cleanups run last first).
	t.Cleanup(func() { listenProbe = probe })
	dbs := openReplicas(t, 2)
	a, b := dbs[0], dbs[1]
	heard := listen(t, b)
	time.Sleep(600 * time.Millisecond) // several probes
	if _, _, err := a.CreateKey(context.Background(), "carol"); err != nil {
		t.Fatal(err)
	}
	heard.expect(t, "after a silence", storage.Change{Kind: storage.KeysChanged}, 5*time.Second)
	lost := 0
	for len(heard) > 0 {
		if c := <-heard; c.Kind == storage.ChangesLost {
			lost++
		}
	}
	// The first listen tells one (consumed by expect or counted here); a probe that
	// broke the connection would tell another.
	if lost > 1 {
		t.Errorf("%d ChangesLost over a silence: the probe broke the connection", lost)
	}
}

// The listening connection breaks when the database restarts: once it is back, the
// store listens again, tells ChangesLost (what was committed meanwhile was not heard)
// and then hears changes as before.
func TestChangesAfterRestart(t *testing.T) {
	c := pgtest.Own(t)
	if !c.Owned() {
		t.Skip("the server HEARTH_TEST_POSTGRES names is not this test's to restart")
	}
	u, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a, err := OpenWith(context.Background(), u, Options{Replica: "a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenWith(context.Background(), u, Options{Replica: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	heard := listen(t, b)
	ctx := context.Background()
	if _, _, err := a.CreateKey(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	heard.expect(t, "before the restart", storage.Change{Kind: storage.KeysChanged}, 5*time.Second)

	up, err := c.Down()
	if err != nil {
		t.Fatal(err)
	}
	if err := up(); err != nil {
		t.Fatal(err)
	}
	heard.expect(t, "after the restart", storage.Change{Kind: storage.ChangesLost}, 15*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, err := a.CreateKey(ctx, "after")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CreateKey after the restart: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	heard.expect(t, "a change after the restart", storage.Change{Kind: storage.KeysChanged}, 5*time.Second)
}
