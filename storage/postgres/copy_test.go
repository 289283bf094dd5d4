package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth/storage"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/sqlite"
	"hearth/storage/storetest"
)

// TestCopyFromSQLite copies a SQLite store holding a chain long enough for
// checkpoints (and their saved prompts): every table arrives whole, the chain loads
// the same from both stores, from its checkpoint, and the saved prompt reads back. A
// source with a response still in flight fails the copy, which then leaves the
// target as it was.
func TestCopyFromSQLite(t *testing.T) {
	ctx := context.Background()
	lite, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	defer storage.SetCheckpointEvery(4)()
	prev := ""
	const turns = 10
	for i := range turns {
		id := fmt.Sprintf("resp_%03d", i)
		err := lite.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: "alice", Model: "m", Status: storage.StatusInProgress,
			PreviousResponseID: prev, Request: storetest.Request("m", ""), Body: storetest.Body(id, "in_progress"),
			Input: []storage.Item{storetest.UserMessage(fmt.Sprintf("msg_%03d", i), "turn")}})
		if err != nil {
			t.Fatal(err)
		}
		err = lite.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: storetest.Body(id, "completed"),
			Usage: storage.Usage{InputTokens: int64(10 * i)}, SavedPrompt: func() []byte { return []byte("prompt of " + id) }})
		if err != nil {
			t.Fatal(err)
		}
		prev = id
	}
	if err := lite.CreateFile(ctx, storage.NewFile{ID: "file-1", Owner: "alice", Filename: "b.bin", Purpose: "user_data", Content: []byte{0, 1, 2, 255}}); err != nil {
		t.Fatal(err)
	}

	db, err := Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	plan, err := db.PlanCopyFrom(lite)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.CopyFrom(ctx, lite, plan, false)
	if err != nil {
		t.Fatal(err)
	}
	digest := func(src storage.CopySource, tb storage.CopyTable) storage.Digest {
		d, err := storage.DigestRows(tb, src.CopyRows(tb))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tb := range plan {
		ds, dd := digest(lite, tb), digest(db, tb)
		if ds != dd || res.Rows[tb.Name] != ds.Rows {
			t.Errorf("%s: source %+v, copied %d, target %+v", tb.Name, ds, res.Rows[tb.Name], dd)
		}
		if tb.Name == "contexts" && ds.Rows == 0 {
			t.Error("no checkpoint in the source: the test does not exercise them")
		}
	}
	// One byte changed in the target changes its digest.
	if _, err := db.pool.Exec(ctx, `UPDATE file_contents SET content = '\x00010203'::bytea`); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(plan, func(tb storage.CopyTable) bool { return tb.Name == "file_contents" })
	if digest(lite, plan[i]) == digest(db, plan[i]) {
		t.Error("a changed file content leaves the digests equal")
	}
	a, err := lite.LoadChain(ctx, "alice", prev)
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.LoadChain(ctx, "alice", prev)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Links) != len(a.Links) || len(b.Items) != len(a.Items) || b.Base == nil || a.Base == nil || b.Base.ID != a.Base.ID {
		t.Fatalf("chain after the copy: %d links, %d items, base %+v; source %d, %d, %+v", len(b.Links), len(b.Items), b.Base, len(a.Links), len(a.Items), a.Base)
	}
	if p, err := db.CheckpointPrompt(ctx, b.Base.ID, b.Base.Stamp); err != nil || string(p) != "prompt of "+b.Base.ID {
		t.Errorf("saved prompt of checkpoint %s after the copy: %q, %v", b.Base.ID, p, err)
	}
	if _, err := db.CopyFrom(ctx, lite, plan, false); err != storage.ErrNotEmpty {
		t.Errorf("a second copy: %v, want ErrNotEmpty", err)
	}

	// In flight in the source: refused, and nothing written.
	storetest.Turn(t, lite, "bob", "resp_bob", "", []storage.Item{storetest.UserMessage("msg_bob", "hi")}, nil)
	if err := lite.CreateResponse(ctx, storage.NewResponse{ID: "resp_running", Owner: "bob", Model: "m", Status: storage.StatusInProgress,
		Request: storetest.Request("m", ""), Body: storetest.Body("resp_running", "in_progress")}); err != nil {
		t.Fatal(err)
	}
	empty, err := Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if _, err := empty.CopyFrom(ctx, lite, plan, false); err == nil || !strings.Contains(err.Error(), "resp_running is still in_progress") {
		t.Errorf("copy of a source with a response in flight: %v", err)
	}
	if d := digest(empty, plan[0]); d.Rows != 0 {
		t.Errorf("a failed copy left %d responses", d.Rows)
	}
}

// TestCopyTablesComplete lists the tables of both schemas as the migrations make them:
// each is one a copy moves (storage.CopyTables) or one it leaves out with a reason
// (storage.CopyExcluded), and the columns of the moved ones are the same on both sides
// but for the ones each store fills itself. A migration that adds a table or a column
// to one store only fails here, and a copy refuses it (before writing anything) until
// it is said which it is.
func TestCopyTablesComplete(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hearth.db")
	lite, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	db, err := Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []storage.CopySource{lite, db} {
		schema, err := s.CopySchema()
		if err != nil {
			t.Fatal(err)
		}
		for table := range schema {
			if !slices.Contains(storage.CopyTables, table) && storage.CopyExcluded[table] == "" {
				t.Errorf("%T: table %s is neither copied (storage.CopyTables) nor left out with a reason (storage.CopyExcluded)", s, table)
			}
		}
		for _, table := range storage.CopyTables {
			if _, ok := schema[table]; !ok {
				t.Errorf("%T has no table %s", s, table)
			}
		}
	}
	plan, err := db.PlanCopyFrom(lite)
	if err != nil {
		t.Fatalf("the copy of a fresh SQLite schema into a fresh PostgreSQL one: %v", err)
	}
	if len(plan) != len(storage.CopyTables) {
		t.Errorf("plan of %d tables, want %d", len(plan), len(storage.CopyTables))
	}

	// A column or a table one side lacks stops the copy before it writes anything.
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, c := range []struct{ ddl, says string }{
		{`ALTER TABLE vector_store_files ADD COLUMN review_note TEXT`, "vector_store_files.review_note is missing in the target"},
		{`CREATE TABLE notes (id TEXT)`, "table notes"},
	} {
		if _, err := raw.Exec(c.ddl); err != nil {
			t.Fatal(err)
		}
		if _, err := db.PlanCopyFrom(lite); !errors.Is(err, storage.ErrCannotCopy) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("after %s: %v, want ErrCannotCopy saying %q", c.ddl, err, c.says)
		}
	}
	// Added to both, a column is copied like the others.
	if _, err := db.pool.Exec(ctx, `ALTER TABLE vector_store_files ADD COLUMN review_note text`); err != nil {
		t.Fatal(err)
	}
	raw.Exec(`DROP TABLE notes`)
	plan, err = db.PlanCopyFrom(lite)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(plan, func(tb storage.CopyTable) bool { return tb.Name == "vector_store_files" })
	if !slices.Contains(plan[i].Columns, "review_note") {
		t.Errorf("a column both schemas have is not copied: %v", plan[i].Columns)
	}
}
