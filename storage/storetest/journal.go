package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"hearth/storage"
)

func events(from, to int) []storage.Event {
	var out []storage.Event
	for i := from; i < to; i++ {
		out = append(out, storage.Event{Seq: i, Type: "response.output_text.delta",
			Data: []byte(fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":%d,"delta":"x"}`, i))})
	}
	return out
}

func seqs(es []storage.Event) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// testJournal: batches appended while a response runs and the last ones written with
// its final state read back in order from any point; the journal survives reopening
// the store, ends with the response, is pruned by age (not while open), and goes with
// its response.
func testJournal(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	for _, id := range []string{"resp_a", "resp_b"} {
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: alice, Model: "m", Status: storage.StatusInProgress,
			Request: Request("m", ""), Body: Body(id, "in_progress")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, last, err := db.Journal(ctx, "resp_a", -1); err != nil || last != nil {
		t.Fatalf("journal before any event: last %v, %v", last, err)
	}
	if err := db.AppendEvents(ctx, "resp_a", events(0, 2), false); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendEvents(ctx, "resp_a", events(2, 3), false); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendEvents(ctx, "resp_a", events(2, 3), false); err == nil {
		t.Error("an event journaled twice was accepted")
	}
	if err := db.AppendEvents(ctx, "resp_a", events(4, 5), false); err == nil {
		t.Error("an event after a gap was accepted")
	}
	if err := db.AppendEvents(ctx, "resp_b", events(0, 2), false); err != nil {
		t.Fatal(err)
	}
	// The final batch overlaps what a batch write stored (a write that committed as
	// its context ended): the overlap is skipped, not an error that loses the response.
	if err := db.CompleteResponse(ctx, "resp_a", storage.Final{Status: storage.StatusCompleted, Body: Body("resp_a", "completed"),
		Events: events(2, 6), EndJournal: true}); err != nil {
		t.Fatal(err)
	}
	// A final batch after a gap is left out; the response is stored all the same.
	if err := db.CreateResponse(ctx, storage.NewResponse{ID: "resp_c", Owner: alice, Model: "m", Status: storage.StatusInProgress,
		Request: Request("m", ""), Body: Body("resp_c", "in_progress")}); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendEvents(ctx, "resp_c", events(0, 2), false); err != nil {
		t.Fatal(err)
	}
	if err := db.CompleteResponse(ctx, "resp_c", storage.Final{Status: storage.StatusCompleted, Body: Body("resp_c", "completed"),
		Events: events(5, 7), EndJournal: true}); err != nil {
		t.Fatalf("a journal gap failed the response: %v", err)
	}
	if got, last, err := db.Journal(ctx, "resp_c", -1); err != nil || last == nil || last.Seq != 1 || len(got) != 2 {
		t.Errorf("journal after a gap: %v, last %v, %v", seqs(got), last, err)
	}
	// Pruning now removes nothing: resp_a's journal ended just now, resp_b's is open.
	if n, err := db.PruneJournals(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Errorf("prune before the cutoff: %d, %v", n, err)
	}
	db.Close()

	db = open(t) // the same records, as after a restart
	for _, c := range []struct {
		after int
		want  []int
	}{{-1, []int{0, 1, 2, 3, 4, 5}}, {0, []int{1, 2, 3, 4, 5}}, {2, []int{3, 4, 5}}, {4, []int{5}}, {5, []int{}}, {99, []int{}}} {
		got, last, err := db.Journal(ctx, "resp_a", c.after)
		if err != nil || last == nil || last.Seq != 5 || fmt.Sprint(seqs(got)) != fmt.Sprint(c.want) {
			t.Errorf("journal after %d: %v, last %v (%v), want %v, last 5", c.after, seqs(got), last, err, c.want)
		}
	}
	if got, _, _ := db.Journal(ctx, "resp_a", 3); string(got[0].Data) != string(events(4, 5)[0].Data) {
		t.Errorf("event 4 reads back as %s", got[0].Data)
	}

	if n, err := db.PruneJournals(ctx, time.Now().Add(time.Minute)); err != nil || n != 2 {
		t.Errorf("prune: %d journals, %v; want 2 (resp_a, resp_c)", n, err)
	}
	if got, last, _ := db.Journal(ctx, "resp_a", -1); last != nil || len(got) != 0 {
		t.Errorf("pruned journal still has %d events", len(got))
	}
	if _, err := db.GetResponse(ctx, alice, "resp_a"); err != nil {
		t.Errorf("pruning a journal took its response: %v", err)
	}
	if got, _, _ := db.Journal(ctx, "resp_b", -1); len(got) != 2 {
		t.Errorf("the open journal has %d events after pruning, want 2", len(got))
	}
	// A crash left resp_b in flight: recovery ends its journal, which then prunes.
	if n, err := db.RecoverInFlight(ctx); err != nil || n != 1 {
		t.Fatalf("recover: %d, %v", n, err)
	}
	if n, err := db.PruneJournals(ctx, time.Now().Add(time.Minute)); err != nil || n != 1 {
		t.Errorf("prune after recovery: %d journals, %v; want 1", n, err)
	}
	if err := db.AppendEvents(ctx, "resp_b", events(0, 2), false); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteResponse(ctx, alice, "resp_b"); err != nil {
		t.Fatal(err)
	}
	if got, last, _ := db.Journal(ctx, "resp_b", -1); last != nil || len(got) != 0 {
		t.Errorf("a deleted response's journal still has %d events", len(got))
	}
	// A journal without its response would never be pruned or deleted.
	if err := db.AppendEvents(ctx, "resp_gone", events(0, 1), false); err == nil {
		t.Error("events of a response that does not exist were stored")
	}
}
