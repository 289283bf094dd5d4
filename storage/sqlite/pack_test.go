package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"hearth/storage/sqlstore"
)

// TestBackfillPacks opens a database written before item packs existed (schema
// version 2, items only in the items table): Open packs them, and the chain loads
// with every item in place.
func TestBackfillPacks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hearth.db")
	ctx := context.Background()
	old, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.ExecContext(ctx, `CREATE TABLE schema_migrations (
		version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
		t.Fatal(err)
	}
	ms, err := sqlstore.SQLite.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms[:2] {
		if err := applyMigration(ctx, old, m); err != nil {
			t.Fatal(err)
		}
	}
	// 1,200 responses (more than one backfill batch) in chains of three.
	const n = 1200
	var want []string
	for i := range n {
		id, prev := fmt.Sprintf("resp_%04d", i), any(nil)
		if i%3 != 0 {
			prev = fmt.Sprintf("resp_%04d", i-1)
		} else {
			want = want[:0]
		}
		if _, err := old.ExecContext(ctx, `INSERT INTO responses (id, owner, model, status, previous_response_id, request, created_at)
			VALUES (?, ?, 'm', 'completed', ?, '{}', 0)`, id, alice, prev); err != nil {
			t.Fatal(err)
		}
		for k, kind := range []string{"input", "output", "output"} {
			itemID := fmt.Sprintf("%s_%d", id, k)
			if _, err := old.ExecContext(ctx, `INSERT INTO items (response_id, kind, position, item_id, type, body)
				VALUES (?, ?, ?, ?, 'message', ?)`, id, kind, k, itemID, `{"id":"`+itemID+`"}`); err != nil {
				t.Fatal(err)
			}
			want = append(want, itemID)
		}
	}
	old.Close()

	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := db.LoadChain(ctx, alice, fmt.Sprintf("resp_%04d", n-1))
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(c.Items); !slices.Equal(got, want) {
		t.Fatalf("context after backfill %v, want %v", got, want)
	}
	var unpacked int
	if err := db.w.QueryRowContext(ctx, `SELECT count(*) FROM responses WHERE input_pack IS NULL OR output_pack IS NULL`).Scan(&unpacked); err != nil || unpacked != 0 {
		t.Fatalf("%d responses left unpacked (%v)", unpacked, err)
	}
}
