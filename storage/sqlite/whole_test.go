package sqlite

import (
	"context"
	"errors"
	"slices"
	"testing"

	"hearth/storage"
)

// TestStoreResponseWhole: a response stored whole (StoreResponse, one transaction)
// reads back exactly as one created and then completed: its row, its input and output
// items, its usage, its journal ended with its events, its place in its chain; it
// refuses what CreateResponse and CompleteResponse refuse, and a refused one leaves
// nothing behind.
func TestStoreResponseWhole(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	turn(t, db, "alice", "resp_1", "", []storage.Item{userMessage("msg_1", "Hi")}, []storage.Item{assistantMessage("msg_2", "Hello")})

	rec := storage.NewResponse{ID: "resp_2", Owner: "alice", Model: "qwen3:8b", Status: storage.StatusInProgress,
		PreviousResponseID: "resp_1", Request: request("qwen3:8b", ""),
		Input: []storage.Item{userMessage("msg_3", "And?")}}
	final := storage.Final{Status: storage.StatusCompleted, Body: body("resp_2", "completed"),
		Usage:  storage.Usage{InputTokens: 100, OutputTokens: 20, CachedTokens: 80, ReasoningTokens: 5},
		Output: []storage.Item{reasoning("rs_1", "Thinking"), assistantMessage("msg_4", "So.")},
		Events: []storage.Event{{Seq: 0, Type: "response.created", Data: []byte(`{"type":"response.created"}`)},
			{Seq: 1, Type: "response.completed", Data: []byte(`{"type":"response.completed"}`)}},
		EndJournal: true, Runtime: "embedded"}
	if err := db.StoreResponse(ctx, rec, final); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetResponse(ctx, "alice", "resp_2")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != storage.StatusCompleted || string(got.Body) != string(final.Body) || got.Usage != final.Usage ||
		got.PreviousResponseID != "resp_1" || got.CompletedAt.IsZero() {
		t.Errorf("stored whole: %+v", got)
	}
	chain, err := db.LoadChain(ctx, "alice", "resp_2")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"msg_1", "msg_2", "msg_3", "rs_1", "msg_4"}; !slices.Equal(ids(chain.Items), want) {
		t.Errorf("chain items %v, want %v", ids(chain.Items), want)
	}
	if rt, err := db.ResponseRuntime(ctx, "alice", "resp_2"); err != nil || rt != "embedded" {
		t.Errorf("runtime %q (%v), want embedded", rt, err)
	}
	events, last, err := db.Journal(ctx, "resp_2", -1)
	if err != nil || len(events) != 2 || last == nil || last.Type != "response.completed" {
		t.Errorf("journal: %d events, last %+v (%v)", len(events), last, err)
	}

	// Refused: an id taken, a parent that is not the owner's, a status that does not
	// end it. Nothing is left of them.
	if err := db.StoreResponse(ctx, rec, final); !errors.Is(err, storage.ErrExists) {
		t.Errorf("the same id again: %v, want ErrExists", err)
	}
	bob := rec
	bob.ID, bob.Owner = "resp_3", "bob"
	if err := db.StoreResponse(ctx, bob, final); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("under another owner's response: %v, want ErrNotFound", err)
	}
	running := final
	running.Status = storage.StatusInProgress
	other := rec
	other.ID = "resp_4"
	if err := db.StoreResponse(ctx, other, running); err == nil {
		t.Error("stored whole with status in_progress")
	}
	for _, id := range []string{"resp_3", "resp_4"} {
		if _, err := db.GetResponse(ctx, "alice", id); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s after a refused store: %v, want ErrNotFound", id, err)
		}
	}
}

// TestChainEpoch: the count of changes that can alter a settled chain moves with a
// deletion and a cancel, after they commit, and not with responses created and
// finished.
func TestChainEpoch(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	e0 := db.ChainEpoch()
	turn(t, db, "alice", "resp_1", "", []storage.Item{userMessage("msg_1", "Hi")}, nil)
	turn(t, db, "alice", "resp_2", "resp_1", []storage.Item{userMessage("msg_2", "And?")}, nil)
	if e := db.ChainEpoch(); e != e0 {
		t.Errorf("creating and finishing responses moved the count %d -> %d", e0, e)
	}
	if err := db.DeleteResponse(ctx, "alice", "resp_1"); err != nil {
		t.Fatal(err)
	}
	e1 := db.ChainEpoch()
	if e1 == e0 {
		t.Error("a deletion did not move the count")
	}
	if err := db.CreateResponse(ctx, storage.NewResponse{ID: "resp_3", Owner: "alice", Model: "m", Status: storage.StatusInProgress,
		Request: request("m", ""), Background: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Cancel(ctx, "alice", "resp_3"); err != nil {
		t.Fatal(err)
	}
	if db.ChainEpoch() == e1 {
		t.Error("a cancel did not move the count")
	}
}
