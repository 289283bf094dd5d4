package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"hearth/storage"
)

func TestListInputItems(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	// resp_5 has inputs i0..i4 (and outputs, which must never be listed); resp_150 has
	// 150 inputs to exercise the limit cap.
	var five []storage.Item
	for i := range 5 {
		five = append(five, userMessage(fmt.Sprintf("i%d", i), "x"))
	}
	turn(t, db, alice, "resp_5", "", five, []storage.Item{assistantMessage("o0", "y")})
	var many []storage.Item
	for i := range 150 {
		many = append(many, userMessage(fmt.Sprintf("m%03d", i), "x"))
	}
	turn(t, db, alice, "resp_150", "", many, nil)
	// A later turn in the same chain: its input is not resp_5's.
	turn(t, db, alice, "resp_6", "resp_5", []storage.Item{userMessage("i5", "z")}, nil)

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
			if got := ids(items); !slices.Equal(got, c.want) || more != c.wantMore {
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
			got = append(got, ids(items)...)
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

func TestCancel(t *testing.T) {
	ctx := context.Background()
	create := func(t *testing.T, db *DB, id string, status storage.Status) {
		t.Helper()
		err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: alice, Model: "m", Status: status, Background: true,
			Request: request("m", ""), Body: body(id, string(status)), Input: []storage.Item{userMessage("msg_"+id, "hi")}})
		if err != nil {
			t.Fatal(err)
		}
	}

	for _, from := range []storage.Status{storage.StatusQueued, storage.StatusInProgress} {
		t.Run(string(from), func(t *testing.T) {
			db := openTestDB(t)
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
				if err := db.CompleteResponse(ctx, "resp_1", storage.Final{Status: storage.StatusCancelled, Body: body("resp_1", "cancelled"),
					Output: []storage.Item{assistantMessage("msg_partial", "Hel")}}); err != nil {
					t.Fatal(err)
				}
			}
			c, err := db.LoadChain(ctx, alice, "resp_1")
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(c.Items); !slices.Equal(got, []string{"msg_resp_1", "msg_partial"}) || c.Last().Status != storage.StatusCancelled {
				t.Fatalf("chain after cancel = %v %s", got, c.Last().Status)
			}
		})
	}

	for _, final := range []storage.Status{storage.StatusCompleted, storage.StatusIncomplete, storage.StatusFailed} {
		t.Run("from "+string(final), func(t *testing.T) {
			db := openTestDB(t)
			create(t, db, "resp_1", storage.StatusInProgress)
			if err := db.CompleteResponse(ctx, "resp_1", storage.Final{Status: final, Body: body("resp_1", string(final))}); err != nil {
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
		db := openTestDB(t)
		if r, err := db.Cancel(ctx, alice, "resp_nope"); !errors.Is(err, storage.ErrNotFound) || r != nil {
			t.Fatalf("%v %v", r, err)
		}
	})
}

func TestUpdateStatus(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	if err := db.CreateResponse(ctx, storage.NewResponse{ID: "resp_1", Owner: alice, Model: "m", Status: storage.StatusQueued,
		Request: request("m", ""), Body: body("resp_1", "queued")}); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateStatus(ctx, "resp_1", storage.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	r, err := db.GetResponse(ctx, alice, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != storage.StatusInProgress || string(r.Body) != string(body("resp_1", "in_progress")) || !r.CompletedAt.IsZero() {
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

func TestRecoverInFlight(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	turn(t, db, alice, "resp_done", "", []storage.Item{userMessage("u1", "a")}, []storage.Item{assistantMessage("a1", "b")})
	for _, c := range []struct {
		id     string
		status storage.Status
		body   json.RawMessage
	}{
		{"resp_queued", storage.StatusQueued, body("resp_queued", "queued")},
		{"resp_running", storage.StatusInProgress, body("resp_running", "in_progress")},
		{"resp_nobody", storage.StatusInProgress, nil},
	} {
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: c.id, Owner: bob, Model: "m", Status: c.status,
			Request: request("m", ""), Body: c.body, Input: []storage.Item{userMessage("u_"+c.id, "x")}}); err != nil {
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
		if r.Status != storage.StatusFailed || string(r.Error) != string(recoveredError) || r.CompletedAt.IsZero() {
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
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Fatal(err)
	}
}
