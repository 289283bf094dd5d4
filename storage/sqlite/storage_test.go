package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"hearth/storage"
)

var (
	alice = storage.OwnerOf("sk-alice")
	bob   = storage.OwnerOf("sk-bob")
)

func TestOwnerOf(t *testing.T) {
	// SHA-256 of "abc", so the owner key is stable across versions and tools.
	if got, want := storage.OwnerOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Fatalf("OwnerOf(abc) = %s, want %s", got, want)
	}
	if storage.OwnerOf("sk-alice") == storage.OwnerOf("sk-bob") {
		t.Fatal("different keys, same owner")
	}
}

func TestOpenSetsPragmasAndMigrates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "dir", "hearth.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		pragma string
		want   string
	}{
		{"journal_mode", "wal"},
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
		{"synchronous", "2"}, // FULL
	} {
		var got string
		if err := db.w.QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("writer PRAGMA %s = %s, want %s", c.pragma, got, c.want)
		}
	}
	if _, err := db.r.ExecContext(ctx, `DELETE FROM responses`); err == nil {
		t.Error("read pool accepted a write")
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var n, max int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) || max != len(ms) {
		t.Fatalf("schema_migrations: %d rows, max version %d; want %d", n, max, len(ms))
	}
	turn(t, db, alice, "resp_1", "", []storage.Item{userMessage("msg_1", "hi")}, nil)
	db.Close()

	// Reopening applies nothing twice and keeps the data.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) {
		t.Fatalf("after reopen: %d migrations recorded, want %d", n, len(ms))
	}
	if _, err := db.GetResponse(ctx, alice, "resp_1"); err != nil {
		t.Fatal(err)
	}

	// A database migrated by a newer build is refused rather than misread.
	if _, err := db.w.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if db, err := Open(path); err == nil {
		db.Close()
		t.Fatal("Open accepted a schema newer than the build")
	}
}

func TestOpenRejectsDSN(t *testing.T) {
	for _, p := range []string{"", "file:x.db", "x.db?_fk=0"} {
		if db, err := Open(p); err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}

// threeTurns stores a 3-turn conversation of alice: resp_1 <- resp_2 <- resp_3.
func threeTurns(t *testing.T, db *DB) {
	t.Helper()
	turn(t, db, alice, "resp_1", "",
		[]storage.Item{userMessage("msg_u1", "What is 2+2?")},
		[]storage.Item{reasoning("rs_1", "Add."), assistantMessage("msg_a1", "4")})
	turn(t, db, alice, "resp_2", "resp_1",
		[]storage.Item{userMessage("msg_u2", "And times 3?"), userMessage("msg_u2b", "Use the tool.")},
		[]storage.Item{functionCall("fc_2", "calc", `{"expr":"4*3"}`)})
	turn(t, db, alice, "resp_3", "resp_2",
		[]storage.Item{mkItem("fco_3", "function_call_output", map[string]any{
			"type": "function_call_output", "id": "fco_3", "call_id": "call_fc_2", "output": "12"})},
		[]storage.Item{assistantMessage("msg_a3", "12")})
}

func TestLoadChainThreeTurns(t *testing.T) {
	db := openTestDB(t)
	threeTurns(t, db)
	ctx := context.Background()

	c, err := db.LoadChain(ctx, alice, "resp_3")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"msg_u1", "rs_1", "msg_a1", "msg_u2", "msg_u2b", "fc_2", "fco_3", "msg_a3"}
	if got := ids(c.Items); !slices.Equal(got, want) {
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
			!slices.Equal(ids(l.Input), w.input) || !slices.Equal(ids(l.Output), w.output) {
			t.Errorf("link %d = %s %s %s in=%v out=%v; want %s in=%v out=%v",
				i, l.ID, l.Model, l.Status, ids(l.Input), ids(l.Output), w.id, w.input, w.output)
		}
	}
	if c.Last().ID != "resp_3" {
		t.Errorf("Last = %s", c.Last().ID)
	}
	// Items come back byte for byte, with their types.
	if c.Items[5].Type != "function_call" || string(c.Items[5].JSON) != string(functionCall("fc_2", "calc", `{"expr":"4*3"}`).JSON) {
		t.Errorf("item 5 = %s %s", c.Items[5].Type, c.Items[5].JSON)
	}
	if !json.Valid(c.Request) || string(c.Request) != string(request("qwen3:8b", "")) {
		t.Errorf("Request = %s", c.Request)
	}

	// A chain can be loaded from any link.
	c, err = db.LoadChain(ctx, alice, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(c.Items); !slices.Equal(got, []string{"msg_u1", "rs_1", "msg_a1"}) || len(c.Links) != 1 {
		t.Fatalf("chain of resp_1 = %v (%d links)", got, len(c.Links))
	}
}

func TestLoadChainLinkWithoutItems(t *testing.T) {
	// A failed response can have no output, and nothing forbids an empty input; such
	// links still appear in the chain.
	db := openTestDB(t)
	turn(t, db, alice, "resp_1", "", []storage.Item{userMessage("msg_1", "hi")}, nil)
	turn(t, db, alice, "resp_2", "resp_1", nil, nil)
	turn(t, db, alice, "resp_3", "resp_2", []storage.Item{userMessage("msg_3", "again")}, []storage.Item{assistantMessage("msg_4", "ok")})
	c, err := db.LoadChain(context.Background(), alice, "resp_3")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Links) != 3 || len(c.Links[0].Output) != 0 || len(c.Links[1].Input)+len(c.Links[1].Output) != 0 {
		t.Fatalf("links = %+v", c.Links)
	}
	if got := ids(c.Items); !slices.Equal(got, []string{"msg_1", "msg_3", "msg_4"}) {
		t.Fatalf("context = %v", got)
	}
}

func TestDeletedLinkBreaksChain(t *testing.T) {
	ctx := context.Background()
	for _, deleted := range []string{"resp_1", "resp_2"} {
		t.Run(deleted, func(t *testing.T) {
			db := openTestDB(t)
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
			// The deleted row's items went with it.
			var n int
			if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM items WHERE response_id = ?`, deleted).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d items left for %s (%v)", n, deleted, err)
			}
			if err := db.DeleteResponse(ctx, alice, deleted); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("second delete: %v", err)
			}
			// A new turn cannot be hung under the deleted response.
			err = db.CreateResponse(ctx, storage.NewResponse{ID: "resp_x", Owner: alice, Model: "m", Status: storage.StatusQueued,
				PreviousResponseID: deleted, Request: request("m", "")})
			if !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("create under deleted parent: %v", err)
			}
		})
	}
}

func TestForeignOwnerSeesNothing(t *testing.T) {
	db := openTestDB(t)
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
		PreviousResponseID: "resp_3", Request: request("m", "")})
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("CreateResponse continuing alice's chain: %v", err)
	}
	// Bob's failed delete did not touch alice's data.
	if _, err := db.LoadChain(ctx, alice, "resp_3"); err != nil {
		t.Errorf("alice's chain after bob's attempts: %v", err)
	}
	// Even a chain that passes through a foreign response is not loadable. (It cannot be
	// created through the API; write it directly, and drop the materialised contexts,
	// which only the API keeps in step with the rows.)
	turn(t, db, bob, "resp_b1", "", []storage.Item{userMessage("m_b1", "x")}, nil)
	if _, err := db.w.ExecContext(ctx, `UPDATE responses SET previous_response_id = 'resp_b1' WHERE id = 'resp_1';
		DELETE FROM contexts`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LoadChain(ctx, alice, "resp_3"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("chain through bob's response: %v", err)
	}
}

func TestGetResponseRoundTrip(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	created := time.UnixMilli(1_700_000_000_123)
	completed := created.Add(1500 * time.Millisecond)
	err := db.CreateResponse(ctx, storage.NewResponse{
		ID: "resp_1", Owner: alice, Model: "gpt-oss:20b", Status: storage.StatusQueued, Background: true,
		Request: request("gpt-oss:20b", `"tools":[]`), Body: body("resp_1", "queued"),
		Input: []storage.Item{userMessage("msg_1", "hi")}, CreatedAt: created,
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := db.GetResponse(ctx, alice, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != storage.StatusQueued || !r.Background || !r.CreatedAt.Equal(created) || !r.CompletedAt.IsZero() ||
		r.Error != nil || r.PreviousResponseID != "" || string(r.Body) != string(body("resp_1", "queued")) {
		t.Fatalf("queued record = %+v", r)
	}

	errJSON := json.RawMessage(`{"code":"context_length_exceeded","message":"too long"}`)
	usage := storage.Usage{InputTokens: 1234, OutputTokens: 56, CachedTokens: 1000, ReasoningTokens: 7}
	err = db.CompleteResponse(ctx, "resp_1", storage.Final{
		Status: storage.StatusFailed, Body: body("resp_1", "failed"), Usage: usage, Error: errJSON, CompletedAt: completed,
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
		string(r.Request) != string(request("gpt-oss:20b", `"tools":[]`)) || string(r.Body) != string(body("resp_1", "failed")) {
		t.Fatalf("failed record = %+v", r)
	}
	// A finished response cannot be completed twice.
	if err := db.CompleteResponse(ctx, "resp_1", storage.Final{Status: storage.StatusCompleted}); !errors.Is(err, storage.ErrFinished) {
		t.Fatalf("second complete: %v", err)
	}
}

func TestCreateResponseRejects(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	ok := storage.NewResponse{ID: "resp_1", Owner: alice, Model: "m", Status: storage.StatusQueued, Request: request("m", "")}
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
	// Nothing half-written: only resp_1 exists.
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM responses`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d responses (%v)", n, err)
	}
}

func TestCompleteResponseIsAtomic(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	if err := db.CreateResponse(ctx, storage.NewResponse{ID: "resp_1", Owner: alice, Model: "m", Status: storage.StatusInProgress,
		Request: request("m", ""), Input: []storage.Item{userMessage("msg_1", "hi")}}); err != nil {
		t.Fatal(err)
	}
	// Make the third output insert fail inside the transaction (the API cannot produce
	// such a failure, so a temporary trigger on the writer connection does): the
	// status update and the first two items must roll back with it.
	if _, err := db.w.ExecContext(ctx, `CREATE TEMP TRIGGER fail_third AFTER INSERT ON items
		WHEN NEW.kind = 'output' AND NEW.position = 2 BEGIN SELECT RAISE(ABORT, 'boom'); END`); err != nil {
		t.Fatal(err)
	}
	err := db.CompleteResponse(ctx, "resp_1", storage.Final{Status: storage.StatusCompleted, Body: body("resp_1", "completed"),
		Output: []storage.Item{assistantMessage("o1", "a"), assistantMessage("o2", "b"), assistantMessage("o3", "c")}})
	if err == nil {
		t.Fatal("complete succeeded through the failing trigger")
	}
	r, err := db.GetResponse(ctx, alice, "resp_1")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM items WHERE kind = 'output'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if r.Status != storage.StatusInProgress || n != 0 {
		t.Fatalf("after failed complete: status %s, %d output items; want in_progress, 0", r.Status, n)
	}
}
