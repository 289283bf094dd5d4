package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"hearth/storage"
)

// threeTurns stores a 3-turn conversation of alice: resp_1 <- resp_2 <- resp_3.
func threeTurns(t *testing.T, db storage.Store) {
	t.Helper()
	Turn(t, db, alice, "resp_1", "",
		[]storage.Item{UserMessage("msg_u1", "What is 2+2?")},
		[]storage.Item{Reasoning("rs_1", "Add."), AssistantMessage("msg_a1", "4")})
	Turn(t, db, alice, "resp_2", "resp_1",
		[]storage.Item{UserMessage("msg_u2", "And times 3?"), UserMessage("msg_u2b", "Use the tool.")},
		[]storage.Item{FunctionCall("fc_2", "calc", `{"expr":"4*3"}`)})
	Turn(t, db, alice, "resp_3", "resp_2",
		[]storage.Item{NewItem("fco_3", "function_call_output", map[string]any{
			"type": "function_call_output", "id": "fco_3", "call_id": "call_fc_2", "output": "12"})},
		[]storage.Item{AssistantMessage("msg_a3", "12")})
}

func testLoadChainThreeTurns(t *testing.T, open Opener) {
	db := open(t)
	threeTurns(t, db)
	ctx := context.Background()

	c, err := db.LoadChain(ctx, alice, "resp_3")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"msg_u1", "rs_1", "msg_a1", "msg_u2", "msg_u2b", "fc_2", "fco_3", "msg_a3"}
	if got := IDs(c.Items); !slices.Equal(got, want) {
		t.Fatalf("context = %v\nwant      %v", got, want)
	}
	wantLinks := []struct {
		id            string
		input, output []string
	}{
		{"resp_1", []string{"msg_u1"}, []string{"rs_1", "msg_a1"}},
		{"resp_2", []string{"msg_u2", "msg_u2b"}, []string{"fc_2"}},
		{"resp_3", []string{"fco_3"}, []string{"msg_a3"}},
	}
	if len(c.Links) != len(wantLinks) {
		t.Fatalf("%d links, want %d", len(c.Links), len(wantLinks))
	}
	for i, w := range wantLinks {
		l := c.Links[i]
		if l.ID != w.id || l.Model != "qwen3:8b" || l.Status != storage.StatusCompleted ||
			!slices.Equal(IDs(l.Input), w.input) || !slices.Equal(IDs(l.Output), w.output) {
			t.Errorf("link %d = %s %s %s in=%v out=%v; want %s in=%v out=%v",
				i, l.ID, l.Model, l.Status, IDs(l.Input), IDs(l.Output), w.id, w.input, w.output)
		}
	}
	if c.Last().ID != "resp_3" {
		t.Errorf("Last = %s", c.Last().ID)
	}
	// Items come back byte for byte, with their types.
	if c.Items[5].Type != "function_call" || string(c.Items[5].JSON) != string(FunctionCall("fc_2", "calc", `{"expr":"4*3"}`).JSON) {
		t.Errorf("item 5 = %s %s", c.Items[5].Type, c.Items[5].JSON)
	}
	if !json.Valid(c.Request) || string(c.Request) != string(Request("qwen3:8b", "")) {
		t.Errorf("Request = %s", c.Request)
	}

	// A chain can be loaded from any link.
	c, err = db.LoadChain(ctx, alice, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if got := IDs(c.Items); !slices.Equal(got, []string{"msg_u1", "rs_1", "msg_a1"}) || len(c.Links) != 1 {
		t.Fatalf("chain of resp_1 = %v (%d links)", got, len(c.Links))
	}
}

func testLoadChainLinkWithoutItems(t *testing.T, open Opener) {
	// A failed response can have no output, and nothing forbids an empty input; such
	// links still appear in the chain.
	db := open(t)
	Turn(t, db, alice, "resp_1", "", []storage.Item{UserMessage("msg_1", "hi")}, nil)
	Turn(t, db, alice, "resp_2", "resp_1", nil, nil)
	Turn(t, db, alice, "resp_3", "resp_2", []storage.Item{UserMessage("msg_3", "again")}, []storage.Item{AssistantMessage("msg_4", "ok")})
	c, err := db.LoadChain(context.Background(), alice, "resp_3")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Links) != 3 || len(c.Links[0].Output) != 0 || len(c.Links[1].Input)+len(c.Links[1].Output) != 0 {
		t.Fatalf("links = %+v", c.Links)
	}
	if got := IDs(c.Items); !slices.Equal(got, []string{"msg_1", "msg_3", "msg_4"}) {
		t.Fatalf("context = %v", got)
	}
}

func testDeletedLinkBreaksChain(t *testing.T, open Opener) {
	ctx := context.Background()
	for _, deleted := range []string{"resp_1", "resp_2"} {
		t.Run(deleted, func(t *testing.T) {
			db := open(t)
			threeTurns(t, db)
			if err := db.DeleteResponse(ctx, alice, deleted); err != nil {
				t.Fatal(err)
			}
			if _, err := db.LoadChain(ctx, alice, "resp_3"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("LoadChain(resp_3) after deleting %s: err = %v, want ErrNotFound", deleted, err)
			}
			if _, err := db.LoadChain(ctx, alice, deleted); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("LoadChain(%s) of the deleted response: err = %v", deleted, err)
			}
			// The child itself is still there and still names its parent.
			r, err := db.GetResponse(ctx, alice, "resp_3")
			if err != nil || r.PreviousResponseID != "resp_2" {
				t.Fatalf("resp_3 = %+v, %v", r, err)
			}
			// The deleted response's items went with it.
			gone := map[string][]string{"resp_1": {"msg_u1", "rs_1", "msg_a1"}, "resp_2": {"msg_u2", "msg_u2b", "fc_2"}}[deleted]
			if found, err := db.LookupItems(ctx, alice, gone); err != nil || len(found) != 0 {
				t.Fatalf("items of %s still found: %v (%v)", deleted, found, err)
			}
			if err := db.DeleteResponse(ctx, alice, deleted); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("second delete: %v", err)
			}
			// A new turn cannot be hung under the deleted response.
			err = db.CreateResponse(ctx, storage.NewResponse{ID: "resp_x", Owner: alice, Model: "m", Status: storage.StatusQueued,
				PreviousResponseID: deleted, Request: Request("m", "")})
			if !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("create under deleted parent: %v", err)
			}
		})
	}
}

func testForeignOwnerSeesNothing(t *testing.T, open Opener) {
	db := open(t)
	threeTurns(t, db)
	ctx := context.Background()

	if _, err := db.GetResponse(ctx, bob, "resp_2"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetResponse: %v", err)
	}
	if _, err := db.LoadChain(ctx, bob, "resp_3"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("LoadChain: %v", err)
	}
	if _, _, err := db.ListInputItems(ctx, bob, "resp_2", "", 0, ""); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("ListInputItems: %v", err)
	}
	if _, err := db.Cancel(ctx, bob, "resp_2"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Cancel: %v", err)
	}
	if err := db.DeleteResponse(ctx, bob, "resp_2"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("DeleteResponse: %v", err)
	}
	err := db.CreateResponse(ctx, storage.NewResponse{ID: "resp_b", Owner: bob, Model: "m", Status: storage.StatusQueued,
		PreviousResponseID: "resp_3", Request: Request("m", "")})
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("CreateResponse continuing alice's chain: %v", err)
	}
	// Bob's failed delete did not touch alice's data.
	if _, err := db.LoadChain(ctx, alice, "resp_3"); err != nil {
		t.Errorf("alice's chain after bob's attempts: %v", err)
	}
}

// testChainEpoch: the count of changes that can alter a settled chain moves with a
// deletion and a cancel, after they commit, and not with responses created and
// finished.
func testChainEpoch(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	e0 := db.ChainEpoch()
	Turn(t, db, "alice", "resp_1", "", []storage.Item{UserMessage("msg_1", "Hi")}, nil)
	Turn(t, db, "alice", "resp_2", "resp_1", []storage.Item{UserMessage("msg_2", "And?")}, nil)
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
		Request: Request("m", ""), Background: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Cancel(ctx, "alice", "resp_3"); err != nil {
		t.Fatal(err)
	}
	if db.ChainEpoch() == e1 {
		t.Error("a cancel did not move the count")
	}
}

// testLoadChainTail: a chain continued past checkpoints loads through the kept
// checkpoint as the links after it (each new checkpoint a new stamp, read once), with
// the same items as LoadChain.
func testLoadChainTail(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	kept := map[string][]storage.Item{}
	prev := ""
	stamps := map[string]bool{}
	for i := range 100 {
		id := fmt.Sprintf("resp_%03d", i)
		Turn(t, db, alice, id, prev, []storage.Item{UserMessage(id+"_u", "q")}, []storage.Item{AssistantMessage(id+"_a", "a")})
		prev = id
		want, err := db.LoadChain(ctx, alice, id)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // a miss, then a hit
			got, err := LoadThroughKept(db, alice, kept, id)
			if err != nil || !reflect.DeepEqual(got, want.Items) {
				t.Fatalf("%s: items %v (%v), want %v", id, IDs(got), err, IDs(want.Items))
			}
		}
		tail, err := db.LoadChainTail(ctx, alice, id, func(stamp string) bool { stamps[stamp] = true; return true })
		if err != nil {
			t.Fatal(err)
		}
		if i >= 32 {
			// Links 0..31 walk to the root; then a checkpoint every 32 turns.
			if b := tail.Base; b == nil || !b.Omitted || len(tail.Links) != i%32 || len(tail.Items) != 2*(i%32) {
				t.Fatalf("%s: base %+v, %d links after it", id, b, len(tail.Links))
			}
		} else if tail.Base != nil || len(tail.Links) != i+1 {
			t.Fatalf("%s: base %+v before any checkpoint", id, tail.Base)
		}
	}
	if len(stamps) != 3 || len(kept) != 3 {
		t.Fatalf("%d stamps seen, %d kept; want one per checkpoint written (3)", len(stamps), len(kept))
	}
}

// testCheckpointPrompt: a response's saved prompt is asked for only when it becomes a
// checkpoint, and reads back by the checkpoint's id and stamp; a stamp that is no
// longer the checkpoint's reads nothing.
func testCheckpointPrompt(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	var asked []string
	prev := ""
	for i := range 40 {
		id := fmt.Sprintf("resp_%03d", i)
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: alice, Model: "m", Status: storage.StatusInProgress,
			PreviousResponseID: prev, Request: Request("m", ""), Input: []storage.Item{UserMessage(id+"_u", "q")}}); err != nil {
			t.Fatal(err)
		}
		if err := db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: Body(id, "completed"),
			Output:      []storage.Item{AssistantMessage(id+"_a", "a")},
			SavedPrompt: func() []byte { asked = append(asked, id); return []byte("prompt of " + id) }}); err != nil {
			t.Fatal(err)
		}
		prev = id
	}
	if len(asked) != 1 || asked[0] != "resp_032" {
		t.Fatalf("saved prompts asked of %v; want only the checkpoint resp_032", asked)
	}
	c, err := db.LoadChainTail(ctx, alice, prev, func(string) bool { return true })
	if err != nil || c.Base == nil || c.Base.ID != "resp_032" {
		t.Fatalf("chain base %+v (%v)", c.Base, err)
	}
	if p, err := db.CheckpointPrompt(ctx, c.Base.ID, c.Base.Stamp); err != nil || string(p) != "prompt of resp_032" {
		t.Fatalf("saved prompt %q (%v)", p, err)
	}
	if p, err := db.CheckpointPrompt(ctx, c.Base.ID, "another stamp"); err != nil || p != nil {
		t.Fatalf("saved prompt under another stamp: %q (%v)", p, err)
	}
}

// testCheckpointInterval: a chain checkpoints every 32 links until it is
// long, then every eighth of its length, so that the copy a checkpoint makes costs a
// turn a constant share however long the chain (and a load walks at most an eighth).
// A response whose depth the caller gave checkpoints at that interval.
func testCheckpointInterval(t *testing.T, open Opener) {
	for depth, want := range map[int]int{0: 32, 1: 32, 256: 32, 1000: 125, 8000: 1000} {
		if got := storage.CheckpointInterval(depth); got != want {
			t.Errorf("CheckpointInterval(%d) = %d, want %d", depth, got, want)
		}
	}
	db := open(t)
	ctx := context.Background()
	prev := ""
	// A chain of 40 links whose caller says it is 400 deep: the interval is 50, so the
	// 33rd link is no checkpoint, as it would be at depth 33.
	for i := range 40 {
		id := fmt.Sprintf("resp_%d", i)
		err := db.StoreResponse(ctx, storage.NewResponse{ID: id, Owner: "alice", Model: "m", Status: storage.StatusInProgress,
			PreviousResponseID: prev, Request: Request("m", ""), Input: []storage.Item{UserMessage("msg_"+id, "Hi")}},
			storage.Final{Status: storage.StatusCompleted, Body: Body(id, "completed"), Depth: 361 + i})
		if err != nil {
			t.Fatal(err)
		}
		prev = id
	}
	chain, err := db.LoadChain(ctx, "alice", prev)
	if err != nil {
		t.Fatal(err)
	}
	if chain.Base != nil {
		t.Errorf("a checkpoint at %s, 40 links into a chain said to be 400 deep (interval %d)", chain.Base.ID, storage.CheckpointInterval(400))
	}
}
