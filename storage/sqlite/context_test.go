package sqlite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"hearth/storage"
)

// TestContextsMatchWalk drives random API operations (continue any response, complete,
// cancel, fail, delete, recover) and after each checks, for every response, that
// LoadChain (materialised context where there is one) returns exactly what walking
// the chain returns, errors included.
func TestContextsMatchWalk(t *testing.T) {
	defer storage.SetCheckpointEvery(2)() // checkpoints everywhere, to test them
	db := openTestDB(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	var ids []string
	inFlight := map[string]bool{}
	kept := map[string][]storage.Item{} // checkpoints' items by stamp, as a caller of LoadChainTail keeps them
	n := 0
	for step := range 400 {
		switch op := rng.IntN(10); {
		case op < 5 || len(ids) == 0: // create (a new chain, or continue any response)
			prev := ""
			if len(ids) > 0 && rng.IntN(5) > 0 {
				prev = ids[rng.IntN(len(ids))]
			}
			id := fmt.Sprintf("resp_%d", n)
			n++
			err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: alice, Model: "m", Status: storage.StatusInProgress,
				PreviousResponseID: prev, Request: request("m", ""), Input: []storage.Item{userMessage(id+"_u", text(40, id))}})
			if errors.Is(err, storage.ErrNotFound) {
				continue // prev was deleted
			}
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			inFlight[id] = true
		case op < 8: // finish something in flight
			for id := range inFlight {
				status := []storage.Status{storage.StatusCompleted, storage.StatusIncomplete, storage.StatusFailed}[rng.IntN(3)]
				if rng.IntN(4) == 0 {
					if _, err := db.Cancel(ctx, alice, id); err != nil {
						t.Fatal(err)
					}
					status = storage.StatusCancelled
				}
				if err := db.CompleteResponse(ctx, id, storage.Final{Status: status, Body: body(id, string(status)),
					Output: []storage.Item{assistantMessage(id+"_a", text(40, id))}}); err != nil {
					t.Fatal(err)
				}
				delete(inFlight, id)
				break
			}
		case op == 8: // delete
			id := ids[rng.IntN(len(ids))]
			if err := db.DeleteResponse(ctx, alice, id); err != nil && !errors.Is(err, storage.ErrNotFound) {
				t.Fatal(err)
			}
			delete(inFlight, id)
		default: // a restart's recovery
			if rng.IntN(4) == 0 {
				if _, err := db.RecoverInFlight(ctx); err != nil {
					t.Fatal(err)
				}
				clear(inFlight)
			}
		}
		for _, id := range ids {
			got, gotErr := db.LoadChain(ctx, alice, id)
			want, wantErr := walkWithoutCheckpoints(db, id)
			if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && errors.Is(gotErr, storage.ErrNotFound) != errors.Is(wantErr, storage.ErrNotFound)) {
				t.Fatalf("step %d, %s: LoadChain error %v, walk error %v", step, id, gotErr, wantErr)
			}
			if gotErr == nil && !sameChain(got, want) {
				t.Fatalf("step %d, %s: LoadChain\n%+v\nwalk\n%+v", step, id, got, want)
			}
			// A caller keeping checkpoints by stamp gets the same items.
			items, tailErr := loadThroughKept(db, kept, id)
			if (tailErr == nil) != (wantErr == nil) || (tailErr != nil && errors.Is(tailErr, storage.ErrNotFound) != errors.Is(wantErr, storage.ErrNotFound)) {
				t.Fatalf("step %d, %s: LoadChainTail error %v, walk error %v", step, id, tailErr, wantErr)
			}
			if tailErr == nil && !reflect.DeepEqual(items, want.Items) {
				t.Fatalf("step %d, %s: LoadChainTail gave %d items, unlike the walk's %d", step, id, len(items), len(want.Items))
			}
		}
	}
	var contexts int
	db.r.QueryRowContext(ctx, `SELECT count(*) FROM contexts`).Scan(&contexts)
	t.Logf("%d responses created, %d materialised contexts at the end", n, contexts)
}

// loadThroughKept loads id's items with LoadChainTail, keeping checkpoints' items in
// kept by stamp as the server does.
func loadThroughKept(db *DB, kept map[string][]storage.Item, id string) ([]storage.Item, error) {
	var prefix []storage.Item
	c, err := db.LoadChainTail(context.Background(), alice, id, func(stamp string) bool {
		var ok bool
		prefix, ok = kept[stamp]
		return ok
	})
	if err != nil {
		return nil, err
	}
	if c.Base == nil || c.Base.Stamp == "" {
		return c.Items, nil
	}
	if c.Base.Omitted {
		if prefix == nil {
			return nil, fmt.Errorf("checkpoint %s left out, but its stamp is not kept", c.Base.ID)
		}
		return append(append([]storage.Item{}, prefix...), c.Items...), nil
	}
	kept[c.Base.Stamp] = c.Items[:c.Base.Items:c.Base.Items]
	return c.Items, nil
}

// TestLoadChainTail: a chain continued past checkpoints loads through the kept
// checkpoint as the links after it (each new checkpoint a new stamp, read once), with
// the same items as LoadChain; a checkpoint dropped between the two queries of a miss
// and one written before stamps are read whole.
func TestLoadChainTail(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	kept := map[string][]storage.Item{}
	prev := ""
	stamps := map[string]bool{}
	for i := range 100 {
		id := fmt.Sprintf("resp_%03d", i)
		turn(t, db, alice, id, prev, []storage.Item{userMessage(id+"_u", "q")}, []storage.Item{assistantMessage(id+"_a", "a")})
		prev = id
		want, err := db.LoadChain(ctx, alice, id)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // a miss, then a hit
			got, err := loadThroughKept(db, kept, id)
			if err != nil || !reflect.DeepEqual(got, want.Items) {
				t.Fatalf("%s: items %v (%v), want %v", id, ids(got), err, ids(want.Items))
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

	// A miss whose checkpoint is dropped before its second query walks to the root.
	clear(kept)
	want, _ := db.LoadChain(ctx, alice, prev)
	c, err := db.LoadChainTail(ctx, alice, prev, func(string) bool {
		if _, err := db.w.Exec(`DELETE FROM contexts`); err != nil {
			t.Fatal(err)
		}
		return false
	})
	if err != nil || c.Base != nil || !sameChain(c, want) {
		t.Fatalf("checkpoint dropped meanwhile: base %+v (%v)", c.Base, err)
	}

	// A checkpoint without a stamp (written before migration 0011) is read whole, and
	// known is not asked.
	if _, err := db.w.Exec(`INSERT INTO contexts (response_id, context) VALUES (?, ?)`, prev, encodeChain(want)); err != nil {
		t.Fatal(err)
	}
	next := "resp_100"
	turn(t, db, alice, next, prev, []storage.Item{userMessage(next+"_u", "q")}, []storage.Item{assistantMessage(next+"_a", "a")})
	want, _ = db.LoadChain(ctx, alice, next)
	c, err = db.LoadChainTail(ctx, alice, next, func(string) bool { t.Fatal("known asked of an unstamped checkpoint"); return true })
	if err != nil || c.Base == nil || c.Base.Stamp != "" || c.Base.Omitted || c.Base.ID != prev || !sameChain(c, want) {
		t.Fatalf("unstamped checkpoint: base %+v (%v)", c.Base, err)
	}
}

func sameChain(a, b *storage.Chain) bool {
	if len(a.Links) != len(b.Links) || string(a.Request) != string(b.Request) || len(a.Items) != len(b.Items) {
		return false
	}
	for i := range a.Items {
		if a.Items[i].ID != b.Items[i].ID || a.Items[i].Type != b.Items[i].Type || string(a.Items[i].JSON) != string(b.Items[i].JSON) {
			return false
		}
	}
	for i := range a.Links {
		la, lb := a.Links[i], b.Links[i]
		if la.ID != lb.ID || la.Model != lb.Model || la.Status != lb.Status ||
			!reflect.DeepEqual(ids(la.Input), ids(lb.Input)) || !reflect.DeepEqual(ids(la.Output), ids(lb.Output)) {
			return false
		}
	}
	return true
}

// walkWithoutCheckpoints loads a chain as if no checkpoint existed.
func walkWithoutCheckpoints(db *DB, id string) (*storage.Chain, error) {
	q := sqlLoadChain
	for _, ref := range []string{"responses.id", "r.id"} {
		sub := "EXISTS (SELECT 1 FROM contexts WHERE contexts.response_id = " + ref + ")"
		if !strings.Contains(q, sub) {
			panic("the chain query no longer reads checkpoints as " + sub)
		}
		q = strings.ReplaceAll(q, sub, "0")
	}
	rows, err := db.r.Query(q, id, alice, maxChainDepth, true)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	c, err := readChain(&sqlRows{rows: rows})
	if err != nil {
		return nil, fmt.Errorf("storage: load chain of %s: %w", id, err)
	}
	return c, nil
}

// TestLinearChainKeepsOneCheckpoint: a chain continued turn after turn keeps one
// checkpoint, the newest, and loads through it.
func TestLinearChainKeepsOneCheckpoint(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	prev := ""
	for i := range 100 {
		id := fmt.Sprintf("resp_%03d", i)
		turn(t, db, alice, id, prev, []storage.Item{userMessage(id+"_u", "q")}, []storage.Item{assistantMessage(id+"_a", "a")})
		prev = id
	}
	// Links 0..31 walk to the root; resp_032 is the first checkpoint, then 064, 096.
	var n int
	var at string
	if err := db.r.QueryRowContext(ctx, `SELECT count(*), max(response_id) FROM contexts`).Scan(&n, &at); err != nil || n != 1 || at != "resp_096" {
		t.Fatalf("checkpoints: %d rows, newest %q (%v); want only resp_096", n, at, err)
	}
	got, err := db.LoadChain(ctx, alice, prev)
	if err != nil {
		t.Fatal(err)
	}
	want, err := walkWithoutCheckpoints(db, prev)
	if err != nil || !sameChain(got, want) || len(got.Links) != 100 || len(got.Items) != 200 {
		t.Fatalf("chain through the checkpoint: %d links, %d items; walk %v", len(got.Links), len(got.Items), err)
	}
	if _, err := db.LoadChain(ctx, bob, prev); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("bob loaded alice's chain: %v", err)
	}
}

// TestCheckpointPrompt: a response's saved prompt is asked for only when it becomes a
// checkpoint, and reads back by the checkpoint's id and stamp; a stamp that is no
// longer the checkpoint's reads nothing.
func TestCheckpointPrompt(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	var asked []string
	prev := ""
	for i := range 40 {
		id := fmt.Sprintf("resp_%03d", i)
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: alice, Model: "m", Status: storage.StatusInProgress,
			PreviousResponseID: prev, Request: request("m", ""), Input: []storage.Item{userMessage(id+"_u", "q")}}); err != nil {
			t.Fatal(err)
		}
		if err := db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: body(id, "completed"),
			Output:      []storage.Item{assistantMessage(id+"_a", "a")},
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

// TestCheckpointInterval: a chain checkpoints every checkpointEvery links until it is
// long, then every eighth of its length, so that the copy a checkpoint makes costs a
// turn a constant share however long the chain (and a load walks at most an eighth).
// A response whose depth the caller gave checkpoints at that interval.
func TestCheckpointInterval(t *testing.T) {
	for depth, want := range map[int]int{0: 32, 1: 32, 256: 32, 1000: 125, 8000: 1000} {
		if got := storage.CheckpointInterval(depth); got != want {
			t.Errorf("CheckpointInterval(%d) = %d, want %d", depth, got, want)
		}
	}
	db := openTestDB(t)
	ctx := context.Background()
	prev := ""
	// A chain of 40 links whose caller says it is 400 deep: the interval is 50, so the
	// 33rd link is no checkpoint, as it would be at depth 33.
	for i := range 40 {
		id := fmt.Sprintf("resp_%d", i)
		err := db.StoreResponse(ctx, storage.NewResponse{ID: id, Owner: "alice", Model: "m", Status: storage.StatusInProgress,
			PreviousResponseID: prev, Request: request("m", ""), Input: []storage.Item{userMessage("msg_"+id, "Hi")}},
			storage.Final{Status: storage.StatusCompleted, Body: body(id, "completed"), Depth: 361 + i})
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
