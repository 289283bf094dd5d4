package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hearth/storage"
)

func testListInputItems(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	// resp_5 has inputs i0..i4 (and outputs, which must never be listed); resp_150 has
	// 150 inputs to exercise the limit cap.
	var five []storage.Item
	for i := range 5 {
		five = append(five, UserMessage(fmt.Sprintf("i%d", i), "x"))
	}
	Turn(t, db, alice, "resp_5", "", five, []storage.Item{AssistantMessage("o0", "y")})
	var many []storage.Item
	for i := range 150 {
		many = append(many, UserMessage(fmt.Sprintf("m%03d", i), "x"))
	}
	Turn(t, db, alice, "resp_150", "", many, nil)
	// A later turn in the same chain: its input is not resp_5's.
	Turn(t, db, alice, "resp_6", "resp_5", []storage.Item{UserMessage("i5", "z")}, nil)

	seq := func(prefix string, from, to int) []string { // inclusive, either direction
		var out []string
		for i := from; ; {
			out = append(out, fmt.Sprintf(prefix, i))
			if i == to {
				return out
			}
			if from < to {
				i++
			} else {
				i--
			}
		}
	}

	for _, c := range []struct {
		name     string
		id       string
		after    string
		limit    int
		order    storage.Order
		want     []string
		wantMore bool
		wantErr  error
	}{
		{name: "defaults are desc, 20", id: "resp_5", want: seq("i%d", 4, 0)},
		{name: "desc explicit", id: "resp_5", order: storage.Desc, want: seq("i%d", 4, 0)},
		{name: "asc", id: "resp_5", order: storage.Asc, want: seq("i%d", 0, 4)},
		{name: "asc limit", id: "resp_5", order: storage.Asc, limit: 2, want: []string{"i0", "i1"}, wantMore: true},
		{name: "asc after", id: "resp_5", order: storage.Asc, after: "i1", limit: 2, want: []string{"i2", "i3"}, wantMore: true},
		{name: "asc last page exact", id: "resp_5", order: storage.Asc, after: "i2", limit: 2, want: []string{"i3", "i4"}},
		{name: "asc last page short", id: "resp_5", order: storage.Asc, after: "i3", limit: 2, want: []string{"i4"}},
		{name: "asc after last", id: "resp_5", order: storage.Asc, after: "i4", want: []string{}},
		{name: "desc limit", id: "resp_5", limit: 2, want: []string{"i4", "i3"}, wantMore: true},
		{name: "desc after", id: "resp_5", after: "i3", limit: 2, want: []string{"i2", "i1"}, wantMore: true},
		{name: "desc last page", id: "resp_5", after: "i1", limit: 2, want: []string{"i0"}},
		{name: "desc after first", id: "resp_5", after: "i0", want: []string{}},
		{name: "limit 1", id: "resp_5", limit: 1, want: []string{"i4"}, wantMore: true},
		{name: "limit equals count", id: "resp_5", limit: 5, want: seq("i%d", 4, 0)},
		{name: "default limit 20", id: "resp_150", order: storage.Asc, want: seq("m%03d", 0, 19), wantMore: true},
		{name: "limit capped at 100", id: "resp_150", order: storage.Asc, limit: 1000, want: seq("m%03d", 0, 99), wantMore: true},
		{name: "max limit to the end", id: "resp_150", after: "m100", limit: 100, want: seq("m%03d", 99, 0)},
		{name: "only its own input", id: "resp_6", order: storage.Asc, want: []string{"i5"}},
		{name: "output id is no cursor", id: "resp_5", after: "o0", wantErr: storage.ErrInvalidCursor},
		{name: "other response's item is no cursor", id: "resp_5", after: "i5", wantErr: storage.ErrInvalidCursor},
		{name: "unknown response", id: "resp_nope", wantErr: storage.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			items, more, err := db.ListInputItems(ctx, alice, c.id, c.after, c.limit, c.order)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := IDs(items); !slices.Equal(got, c.want) || more != c.wantMore {
				t.Fatalf("got %v more=%v\nwant %v more=%v", got, more, c.want, c.wantMore)
			}
			for _, it := range items {
				if it.Type != "message" || !json.Valid(it.JSON) {
					t.Fatalf("item %s: type %q, JSON %s", it.ID, it.Type, it.JSON)
				}
			}
		})
	}
	if _, _, err := db.ListInputItems(ctx, alice, "resp_5", "", 0, "sideways"); err == nil {
		t.Error("order sideways accepted")
	}

	// Walking all pages with has_more visits every item exactly once, in both orders.
	for _, order := range []storage.Order{storage.Asc, storage.Desc} {
		var got []string
		after := ""
		for {
			items, more, err := db.ListInputItems(ctx, alice, "resp_150", after, 7, order)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, IDs(items)...)
			if !more {
				break
			}
			after = items[len(items)-1].ID // last_id
		}
		want := seq("m%03d", 0, 149)
		if order == storage.Desc {
			want = seq("m%03d", 149, 0)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s pages: %v", order, got)
		}
	}
}

func testCancel(t *testing.T, open Opener) {
	ctx := context.Background()
	create := func(t *testing.T, db storage.Store, id string, status storage.Status) {
		t.Helper()
		err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: alice, Model: "m", Status: status, Background: true,
			Request: Request("m", ""), Body: Body(id, string(status)), Input: []storage.Item{UserMessage("msg_"+id, "hi")}})
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, from := range []storage.Status{storage.StatusQueued, storage.StatusInProgress} {
		t.Run(string(from), func(t *testing.T) {
			db := open(t)
			create(t, db, "resp_1", from)
			r, err := db.Cancel(ctx, alice, "resp_1")
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != storage.StatusCancelled || r.CompletedAt.IsZero() {
				t.Fatalf("after cancel: %+v", r)
			}
			var b struct{ ID, Status string }
			if err := json.Unmarshal(r.Body, &b); err != nil || b.Status != "cancelled" || b.ID != "resp_1" {
				t.Fatalf("body after cancel = %s (%v)", r.Body, err)
			}
			// Idempotent.
			r2, err := db.Cancel(ctx, alice, "resp_1")
			if err != nil || r2.Status != storage.StatusCancelled || !r2.CompletedAt.Equal(r.CompletedAt) {
				t.Fatalf("second cancel: %+v, %v", r2, err)
			}
			// The worker learns not to start it, or that it was stopped.
			if err := db.UpdateStatus(ctx, "resp_1", storage.StatusInProgress); !errors.Is(err, storage.ErrFinished) {
				t.Fatalf("UpdateStatus after cancel: %v", err)
			}
			if err := db.CompleteResponse(ctx, "resp_1", storage.Final{Status: storage.StatusCompleted}); !errors.Is(err, storage.ErrFinished) {
				t.Fatalf("complete as completed after cancel: %v", err)
			}
			// ... but may record what it produced before it noticed, as cancelled.
			for range 2 {
				if err := db.CompleteResponse(ctx, "resp_1", storage.Final{Status: storage.StatusCancelled, Body: Body("resp_1", "cancelled"),
					Output: []storage.Item{AssistantMessage("msg_partial", "Hel")}}); err != nil {
					t.Fatal(err)
				}
			}
			c, err := db.LoadChain(ctx, alice, "resp_1")
			if err != nil {
				t.Fatal(err)
			}
			if got := IDs(c.Items); !slices.Equal(got, []string{"msg_resp_1", "msg_partial"}) || c.Last().Status != storage.StatusCancelled {
				t.Fatalf("chain after cancel = %v %s", got, c.Last().Status)
			}
		})
	}

	for _, final := range []storage.Status{storage.StatusCompleted, storage.StatusIncomplete, storage.StatusFailed} {
		t.Run("from "+string(final), func(t *testing.T) {
			db := open(t)
			create(t, db, "resp_1", storage.StatusInProgress)
			if err := db.CompleteResponse(ctx, "resp_1", storage.Final{Status: final, Body: Body("resp_1", string(final))}); err != nil {
				t.Fatal(err)
			}
			r, err := db.Cancel(ctx, alice, "resp_1")
			if !errors.Is(err, storage.ErrFinished) {
				t.Fatalf("err = %v, want ErrFinished", err)
			}
			if r == nil || r.Status != final {
				t.Fatalf("record = %+v", r)
			}
		})
	}

	t.Run("unknown", func(t *testing.T) {
		db := open(t)
		if r, err := db.Cancel(ctx, alice, "resp_nope"); !errors.Is(err, storage.ErrNotFound) || r != nil {
			t.Fatalf("%v %v", r, err)
		}
	})
}

func testUpdateStatus(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	if err := db.CreateResponse(ctx, storage.NewResponse{ID: "resp_1", Owner: alice, Model: "m", Status: storage.StatusQueued,
		Request: Request("m", ""), Body: Body("resp_1", "queued")}); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateStatus(ctx, "resp_1", storage.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	r, err := db.GetResponse(ctx, alice, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != storage.StatusInProgress || string(r.Body) != string(Body("resp_1", "in_progress")) || !r.CompletedAt.IsZero() {
		t.Fatalf("after queued -> in_progress: %s %s %v", r.Status, r.Body, r.CompletedAt)
	}
	for _, s := range []storage.Status{storage.StatusCompleted, storage.StatusFailed, storage.StatusQueued, "bogus"} {
		if err := db.UpdateStatus(ctx, "resp_1", s); err == nil {
			t.Errorf("UpdateStatus(%s) accepted", s)
		}
	}
	if err := db.UpdateStatus(ctx, "resp_nope", storage.StatusInProgress); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("unknown id: %v", err)
	}
	if err := db.UpdateStatus(ctx, "resp_1", storage.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	if r, _ = db.GetResponse(ctx, alice, "resp_1"); r.Status != storage.StatusCancelled || r.CompletedAt.IsZero() {
		t.Fatalf("after cancel: %+v", r)
	}
}

func testRecoverInFlight(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	Turn(t, db, alice, "resp_done", "", []storage.Item{UserMessage("u1", "a")}, []storage.Item{AssistantMessage("a1", "b")})
	for _, c := range []struct {
		id     string
		status storage.Status
		body   json.RawMessage
	}{
		{"resp_queued", storage.StatusQueued, Body("resp_queued", "queued")},
		{"resp_running", storage.StatusInProgress, Body("resp_running", "in_progress")},
		{"resp_nobody", storage.StatusInProgress, nil},
	} {
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: c.id, Owner: bob, Model: "m", Status: c.status,
			Request: Request("m", ""), Body: c.body, Input: []storage.Item{UserMessage("u_"+c.id, "x")}}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.RecoverInFlight(ctx)
	if err != nil || n != 3 {
		t.Fatalf("RecoverInFlight = %d, %v; want 3", n, err)
	}
	for _, id := range []string{"resp_queued", "resp_running", "resp_nobody"} {
		r, err := db.GetResponse(ctx, bob, id)
		if err != nil {
			t.Fatal(err)
		}
		var e struct{ Code, Message string }
		if json.Unmarshal(r.Error, &e); r.Status != storage.StatusFailed || e.Code != "server_error" || e.Message == "" || r.CompletedAt.IsZero() {
			t.Errorf("%s: %s %s %v", id, r.Status, r.Error, r.CompletedAt)
		}
		if r.Body != nil {
			var b struct {
				Status string
				Error  struct{ Code, Message string }
			}
			if err := json.Unmarshal(r.Body, &b); err != nil || b.Status != "failed" || b.Error.Code != "server_error" {
				t.Errorf("%s body = %s", id, r.Body)
			}
		}
	}
	if r, _ := db.GetResponse(ctx, alice, "resp_done"); r.Status != storage.StatusCompleted || r.Error != nil {
		t.Errorf("completed response touched: %+v", r)
	}
	if n, err := db.RecoverInFlight(ctx); n != 0 || err != nil {
		t.Errorf("second RecoverInFlight = %d, %v", n, err)
	}
}

func testGetResponseRoundTrip(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	created := time.UnixMilli(1_700_000_000_123)
	completed := created.Add(1500 * time.Millisecond)
	err := db.CreateResponse(ctx, storage.NewResponse{
		ID: "resp_1", Owner: alice, Model: "gpt-oss:20b", Status: storage.StatusQueued, Background: true,
		Request: Request("gpt-oss:20b", `"tools":[]`), Body: Body("resp_1", "queued"),
		Input: []storage.Item{UserMessage("msg_1", "hi")}, CreatedAt: created,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.GetResponse(ctx, alice, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != storage.StatusQueued || !r.Background || !r.CreatedAt.Equal(created) || !r.CompletedAt.IsZero() ||
		r.Error != nil || r.PreviousResponseID != "" || string(r.Body) != string(Body("resp_1", "queued")) {
		t.Fatalf("queued record = %+v", r)
	}

	errJSON := json.RawMessage(`{"code":"context_length_exceeded","message":"too long"}`)
	usage := storage.Usage{InputTokens: 1234, OutputTokens: 56, CachedTokens: 1000, ReasoningTokens: 7}
	err = db.CompleteResponse(ctx, "resp_1", storage.Final{
		Status: storage.StatusFailed, Body: Body("resp_1", "failed"), Usage: usage, Error: errJSON, CompletedAt: completed,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err = db.GetResponse(ctx, alice, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "resp_1" || r.Owner != alice || r.Model != "gpt-oss:20b" || r.Status != storage.StatusFailed ||
		r.Usage != usage || string(r.Error) != string(errJSON) || !r.CompletedAt.Equal(completed) ||
		string(r.Request) != string(Request("gpt-oss:20b", `"tools":[]`)) || string(r.Body) != string(Body("resp_1", "failed")) {
		t.Fatalf("failed record = %+v", r)
	}
	// A finished response cannot be completed twice.
	if err := db.CompleteResponse(ctx, "resp_1", storage.Final{Status: storage.StatusCompleted}); !errors.Is(err, storage.ErrFinished) {
		t.Fatalf("second complete: %v", err)
	}
}

func testCreateResponseRejects(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	ok := storage.NewResponse{ID: "resp_1", Owner: alice, Model: "m", Status: storage.StatusQueued, Request: Request("m", "")}
	if err := db.CreateResponse(ctx, ok); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateResponse(ctx, ok); !errors.Is(err, storage.ErrExists) {
		t.Errorf("duplicate id: %v", err)
	}
	for name, mod := range map[string]func(*storage.NewResponse){
		"no id":           func(r *storage.NewResponse) { r.ID = "" },
		"no owner":        func(r *storage.NewResponse) { r.Owner = "" },
		"terminal status": func(r *storage.NewResponse) { r.Status = storage.StatusCompleted },
		"bad status":      func(r *storage.NewResponse) { r.Status = "paused" },
		"bad request":     func(r *storage.NewResponse) { r.Request = json.RawMessage(`{`) },
		"bad body":        func(r *storage.NewResponse) { r.Body = json.RawMessage(`nope`) },
		"bad item":        func(r *storage.NewResponse) { r.Input = []storage.Item{{ID: "x", Type: "message", JSON: []byte(`{`)}} },
		"untyped item":    func(r *storage.NewResponse) { r.Input = []storage.Item{{ID: "x", JSON: []byte(`{}`)}} },
		"unknown parent":  func(r *storage.NewResponse) { r.PreviousResponseID = "resp_nope" },
	} {
		r := ok
		r.ID = "resp_2"
		mod(&r)
		if err := db.CreateResponse(ctx, r); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Nothing half-written: only resp_1 exists, for any owner.
	if rows, _, err := db.ConsoleResponses(ctx, storage.ConsoleFilter{}); err != nil || len(rows) != 1 || rows[0].ID != "resp_1" {
		t.Fatalf("%d responses stored (%v), want resp_1 only", len(rows), err)
	}
}

// testStoreResponseWhole: a response stored whole (StoreResponse, one transaction)
// reads back exactly as one created and then completed: its record, its input and output
// items, its usage, its journal ended with its events, its place in its chain; it
// refuses what CreateResponse and CompleteResponse refuse, and a refused one leaves
// nothing behind.
func testStoreResponseWhole(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	Turn(t, db, "alice", "resp_1", "", []storage.Item{UserMessage("msg_1", "Hi")}, []storage.Item{AssistantMessage("msg_2", "Hello")})

	rec := storage.NewResponse{ID: "resp_2", Owner: "alice", Model: "qwen3:8b", Status: storage.StatusInProgress,
		PreviousResponseID: "resp_1", Request: Request("qwen3:8b", ""),
		Input: []storage.Item{UserMessage("msg_3", "And?")}}
	final := storage.Final{Status: storage.StatusCompleted, Body: Body("resp_2", "completed"),
		Usage:  storage.Usage{InputTokens: 100, OutputTokens: 20, CachedTokens: 80, ReasoningTokens: 5},
		Output: []storage.Item{Reasoning("rs_1", "Thinking"), AssistantMessage("msg_4", "So.")},
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
	if want := []string{"msg_1", "msg_2", "msg_3", "rs_1", "msg_4"}; !slices.Equal(IDs(chain.Items), want) {
		t.Errorf("chain items %v, want %v", IDs(chain.Items), want)
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

// testLookupItems finds input and output items by id, only the owner's, the latest copy
// of an id stored twice, and nothing of a deleted response.
func testLookupItems(t *testing.T, open Opener) {
	db := open(t)
	ctx := context.Background()
	alice, bob := storage.OwnerOf("alice"), storage.OwnerOf("bob")
	Turn(t, db, alice, "resp_1", "", []storage.Item{UserMessage("msg_in", "weather?")},
		[]storage.Item{Reasoning("rs_1", "think"), FunctionCall("fc_1", "get_weather", `{"city":"Paris"}`)})
	Turn(t, db, bob, "resp_b", "", []storage.Item{UserMessage("msg_bob", "hi")}, []storage.Item{AssistantMessage("msg_bob_out", "hello")})
	// The client sends the call back as input of the next turn, changed: the later copy wins.
	Turn(t, db, alice, "resp_2", "", []storage.Item{FunctionCall("fc_1", "get_weather", `{"city":"Lyon"}`)},
		[]storage.Item{AssistantMessage("msg_out", "sunny")})

	got, err := db.LookupItems(ctx, alice, []string{"msg_in", "rs_1", "fc_1", "msg_out", "msg_bob", "nope", "rs_1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"msg_in", "rs_1", "fc_1", "msg_out"} {
		if it, ok := got[id]; !ok || it.ID != id {
			t.Errorf("%s: got %+v, %v", id, it, ok)
		}
	}
	if len(got) != 4 {
		t.Errorf("found %d items, want 4 (bob's and unknown ids are absent): %v", len(got), got)
	}
	if it := got["fc_1"]; it.Type != "function_call" || !strings.Contains(string(it.JSON), "Lyon") {
		t.Errorf("fc_1 = %s %s, want the later copy (Lyon)", it.Type, it.JSON)
	}
	if it := got["rs_1"]; it.Type != "reasoning" || !strings.Contains(string(it.JSON), `"think"`) {
		t.Errorf("rs_1 = %s %s", it.Type, it.JSON)
	}

	if err := db.DeleteResponse(ctx, alice, "resp_1"); err != nil {
		t.Fatal(err)
	}
	got, err = db.LookupItems(ctx, alice, []string{"rs_1", "msg_in", "fc_1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["rs_1"]; ok || len(got) != 1 {
		t.Errorf("after deleting resp_1: %v, want only fc_1 (stored again under resp_2)", got)
	}

}
