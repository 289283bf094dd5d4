package postgres

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"hearth/storage"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/sqlite"
	"hearth/storage/storetest"
)

// TestCopyFromSQLite copies a SQLite store holding a chain long enough for
// checkpoints (and their saved prompts): every table arrives whole, the chain loads
// the same from both stores, from its checkpoint, and the saved prompt reads back. A
// source with a response still in flight fails the copy, which then leaves the
// target as it was.
func TestCopyFromSQLite(t *testing.T) {
	ctx := context.Background()
	lite, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	defer storage.SetCheckpointEvery(4)()
	prev := ""
	const turns = 10
	for i := range turns {
		id := fmt.Sprintf("resp_%03d", i)
		err := lite.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: "alice", Model: "m", Status: storage.StatusInProgress,
			PreviousResponseID: prev, Request: storetest.Request("m", ""), Body: storetest.Body(id, "in_progress"),
			Input: []storage.Item{storetest.UserMessage(fmt.Sprintf("msg_%03d", i), "turn")}})
		if err != nil {
			t.Fatal(err)
		}
		err = lite.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: storetest.Body(id, "completed"),
			Usage: storage.Usage{InputTokens: int64(10 * i)}, SavedPrompt: func() []byte { return []byte("prompt of " + id) }})
		if err != nil {
			t.Fatal(err)
		}
		prev = id
	}
	if n, _ := lite.CountRows("contexts"); n == 0 {
		t.Fatal("no checkpoint in the source: the test does not exercise them")
	}

	db, err := Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.CopyFrom(ctx, lite, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range storage.CopyTables {
		ns, _ := lite.CountRows(tb.Name)
		nd, _ := db.CountRows(tb.Name)
		if ns != nd || res.Rows[tb.Name] != ns {
			t.Errorf("%s: source %d rows, copied %d, target %d", tb.Name, ns, res.Rows[tb.Name], nd)
		}
	}
	a, err := lite.LoadChain(ctx, "alice", prev)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.LoadChain(ctx, "alice", prev)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Links) != len(a.Links) || len(b.Items) != len(a.Items) || b.Base == nil || a.Base == nil || b.Base.ID != a.Base.ID {
		t.Fatalf("chain after the copy: %d links, %d items, base %+v; source %d, %d, %+v", len(b.Links), len(b.Items), b.Base, len(a.Links), len(a.Items), a.Base)
	}
	if p, err := db.CheckpointPrompt(ctx, b.Base.ID, b.Base.Stamp); err != nil || string(p) != "prompt of "+b.Base.ID {
		t.Errorf("saved prompt of checkpoint %s after the copy: %q, %v", b.Base.ID, p, err)
	}
	if _, err := db.CopyFrom(ctx, lite, false); err != storage.ErrNotEmpty {
		t.Errorf("a second copy: %v, want ErrNotEmpty", err)
	}

	// In flight in the source: refused, and nothing written.
	storetest.Turn(t, lite, "bob", "resp_bob", "", []storage.Item{storetest.UserMessage("msg_bob", "hi")}, nil)
	if err := lite.CreateResponse(ctx, storage.NewResponse{ID: "resp_running", Owner: "bob", Model: "m", Status: storage.StatusInProgress,
		Request: storetest.Request("m", ""), Body: storetest.Body("resp_running", "in_progress")}); err != nil {
		t.Fatal(err)
	}
	empty, err := Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if _, err := empty.CopyFrom(ctx, lite, false); err == nil || !strings.Contains(err.Error(), "resp_running is still in_progress") {
		t.Errorf("copy of a source with a response in flight: %v", err)
	}
	if n, _ := empty.CountRows("responses"); n != 0 {
		t.Errorf("a failed copy left %d responses", n)
	}
}
