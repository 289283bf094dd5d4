package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"hearth/storage"
	"hearth/storage/sqlstore"
)

var (
	alice = storage.OwnerOf("sk-alice")
	bob   = storage.OwnerOf("sk-bob")
)

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
	ms, err := sqlstore.SQLite.Migrations()
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

// TestChainThroughForeignResponse: even a chain that passes through a foreign response
// is not loadable. It cannot be created through the store; write it directly, and drop
// the materialised contexts, which only the store keeps in step with the rows.
func TestChainThroughForeignResponse(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	turn(t, db, alice, "resp_1", "", []storage.Item{userMessage("msg_u1", "What is 2+2?")}, nil)
	turn(t, db, alice, "resp_2", "resp_1", []storage.Item{userMessage("msg_u2", "And times 3?")}, nil)
	turn(t, db, bob, "resp_b1", "", []storage.Item{userMessage("m_b1", "x")}, nil)
	if _, err := db.w.ExecContext(ctx, `UPDATE responses SET previous_response_id = 'resp_b1' WHERE id = 'resp_1';
		DELETE FROM contexts`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LoadChain(ctx, alice, "resp_2"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("chain through bob's response: %v", err)
	}
}
