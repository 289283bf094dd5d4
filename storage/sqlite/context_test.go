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
	"hearth/storage/record"
	"hearth/storage/sqlstore"
	"hearth/storage/storetest"
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

// loadThroughKept loads alice's chain ending at id as the server does
// (storetest.LoadThroughKept).
func loadThroughKept(db *DB, kept map[string][]storage.Item, id string) ([]storage.Item, error) {
	return storetest.LoadThroughKept(db, alice, kept, id)
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
	rows, err := db.r.Query(q, id, alice, sqlstore.MaxChainDepth, true)
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

// TestLoadChainTailCheckpointChanges: a checkpoint dropped between the two queries of a
// miss, and one written before stamps, are read whole (LoadChainTail's paths the
// conformance suite cannot reach without writing the file behind the store's back).
func TestLoadChainTailCheckpointChanges(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	kept := map[string][]storage.Item{}
	prev := ""
	for i := range 100 {
		id := fmt.Sprintf("resp_%03d", i)
		turn(t, db, alice, id, prev, []storage.Item{userMessage(id+"_u", "q")}, []storage.Item{assistantMessage(id+"_a", "a")})
		prev = id
		if _, err := loadThroughKept(db, kept, id); err != nil {
			t.Fatal(err)
		}
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
	if _, err := db.w.Exec(`INSERT INTO contexts (response_id, context) VALUES (?, ?)`, prev, record.EncodeChain(want)); err != nil {
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
