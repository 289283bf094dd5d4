package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"hearth/storage"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/storetest"
)

// A response's writes are pipelined: each write method costs two round trips (its
// statements with the begin, then what follows its checks with the commit), however
// many statements it sends. The counts are exact; a statement added to one of these
// paths outside the pipe's queue fails here.
func TestWriteRoundTrips(t *testing.T) {
	trips := &pgtest.RoundTrips{}
	db, err := OpenWith(context.Background(), pgtest.NewDatabase(t), Options{Replica: "test", Tracer: trips})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	n := 0
	newResponse := func(prev string) storage.NewResponse {
		n++
		id := fmt.Sprintf("resp_%d", n)
		return storage.NewResponse{ID: id, Owner: "alice", Model: "m", Status: storage.StatusInProgress,
			PreviousResponseID: prev, Request: storetest.Request("m", ""), Body: storetest.Body(id, "in_progress"),
			Input: []storage.Item{storetest.UserMessage(fmt.Sprintf("in_%d", n), "hello")}}
	}
	final := func(id string) storage.Final {
		return storage.Final{Status: storage.StatusCompleted, Body: storetest.Body(id, "completed"),
			Output: []storage.Item{storetest.AssistantMessage("out_"+id, "hi")}, Distance: 1, EndJournal: true,
			Events: []storage.Event{{Seq: 2, Type: "response.completed", Data: json.RawMessage(`{}`)}}}
	}
	events := []storage.Event{{Seq: 0, Type: "response.created", Data: json.RawMessage(`{}`)},
		{Seq: 1, Type: "response.in_progress", Data: json.RawMessage(`{}`)}}
	// A stream: created, a journal batch, completed with the rest of its journal.
	stream := func(prev string) (id string, counts [3]int64) {
		r := newResponse(prev)
		count := func(i int, write func() error) {
			t.Helper()
			n0 := trips.Total()
			if err := write(); err != nil {
				t.Fatal(err)
			}
			counts[i] = trips.Total() - n0
		}
		count(0, func() error { return db.CreateResponse(ctx, r) })
		count(1, func() error { return db.AppendEvents(ctx, r.ID, events, false) })
		count(2, func() error { return db.CompleteResponse(ctx, r.ID, final(r.ID)) })
		return r.ID, counts
	}
	// A response stored whole.
	whole := func(prev string) (string, int64) {
		r := newResponse(prev)
		n0 := trips.Total()
		if err := db.StoreResponse(ctx, r, final(r.ID)); err != nil {
			t.Fatal(err)
		}
		return r.ID, trips.Total() - n0
	}
	// Every statement once, so that preparing them stays out of the counts.
	root, _ := stream("")
	stream(root)
	id, _ := whole("")
	whole(id)

	if _, got := stream(""); got != [3]int64{2, 2, 2} {
		t.Errorf("a stream's create, journal batch, completion: %v round trips, want [2 2 2]", got)
	}
	if _, got := stream(root); got != [3]int64{2, 2, 2} {
		t.Errorf("a continuing stream's create, journal batch, completion: %v round trips, want [2 2 2]", got)
	}
	if _, got := whole(""); got != 2 {
		t.Errorf("a first turn stored whole: %d round trips, want 2", got)
	}
	if _, got := whole(id); got != 2 {
		t.Errorf("a continuation stored whole: %d round trips, want 2", got)
	}
}

// A pipe runs the statements queued after a check before the check is read: when it
// fails, the transaction is rolled back and nothing of it stays, not even on the row
// whose id was taken, and the connection goes back to the pool out of the transaction.
func TestPipeFailedCheckLeavesNothing(t *testing.T) {
	u := pgtest.NewDatabase(t)
	db, err := OpenWith(context.Background(), u, Options{Replica: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	storetest.Turn(t, db, "alice", "resp_a", "", []storage.Item{storetest.UserMessage("in_a", "x")}, nil)
	before, err := db.GetResponse(ctx, "alice", "resp_a")
	if err != nil {
		t.Fatal(err)
	}
	fin := storage.Final{Status: storage.StatusFailed, Body: storetest.Body("resp_a", "failed"),
		Output: []storage.Item{storetest.AssistantMessage("out_x", "no")}, EndJournal: true,
		Events: []storage.Event{{Seq: 0, Type: "response.failed", Data: json.RawMessage(`{}`)}}}
	for _, c := range []struct {
		name string
		r    storage.NewResponse
		want error
	}{
		{"the id taken", storage.NewResponse{ID: "resp_a", Owner: "alice"}, storage.ErrExists},
		{"a parent of another owner", storage.NewResponse{ID: "resp_b", Owner: "bob", PreviousResponseID: "resp_a"}, storage.ErrNotFound},
		{"no parent", storage.NewResponse{ID: "resp_c", Owner: "alice", PreviousResponseID: "resp_none"}, storage.ErrNotFound},
	} {
		c.r.Model, c.r.Status, c.r.Request = "m", storage.StatusInProgress, storetest.Request("m", "")
		c.r.Input = []storage.Item{storetest.UserMessage("in_x", "y")}
		if err := db.StoreResponse(ctx, c.r, fin); !errors.Is(err, c.want) {
			t.Errorf("%s: StoreResponse: %v, want %v", c.name, err, c.want)
		}
		if err := db.CreateResponse(ctx, c.r); !errors.Is(err, c.want) {
			t.Errorf("%s: CreateResponse: %v, want %v", c.name, err, c.want)
		}
	}
	after, err := db.GetResponse(ctx, "alice", "resp_a")
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != before.Status || string(after.Body) != string(before.Body) {
		t.Errorf("resp_a changed: %s %s, was %s %s", after.Status, after.Body, before.Status, before.Body)
	}
	for _, q := range []struct{ sql, what string }{
		{`SELECT count(*) FROM responses`, "responses"},
		{`SELECT count(*) FROM items WHERE item_id IN ('in_x', 'out_x')`, "items of the failed writes"},
		{`SELECT count(*) FROM events`, "journal batches"},
		{`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`, "connections left in a transaction"},
	} {
		want := int64(0)
		if q.what == "responses" {
			want = 1
		}
		got, err := pgtest.QueryInt(ctx, u, q.sql)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %d, want %d", q.what, got, want)
		}
	}
}
