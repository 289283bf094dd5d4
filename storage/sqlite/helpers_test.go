package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"testing"

	"hearth/storage"
	"hearth/storage/sqlstore"
	"hearth/storage/storetest"
)

func openTestDB(t testing.TB) *DB {
	t.Helper()
	db, err := Open(filepath.Join(t.TempDir(), "data", "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

// The item builders of the conformance suite, under the short names this package's
// tests use (functions rather than variables, so that benchmarks call them as before).
func userMessage(id, text string) storage.Item      { return storetest.UserMessage(id, text) }
func reasoning(id, text string) storage.Item        { return storetest.Reasoning(id, text) }
func assistantMessage(id, text string) storage.Item { return storetest.AssistantMessage(id, text) }
func functionCall(id, name, args string) storage.Item {
	return storetest.FunctionCall(id, name, args)
}
func mkItem(id, typ string, v any) storage.Item   { return storetest.NewItem(id, typ, v) }
func text(n int, tag string) string               { return storetest.Text(n, tag) }
func request(model, extra string) json.RawMessage { return storetest.Request(model, extra) }
func body(id, status string) json.RawMessage      { return storetest.Body(id, status) }
func ids(items []storage.Item) []string           { return storetest.IDs(items) }
func sameChain(a, b *storage.Chain) bool          { return storetest.SameChain(a, b) }

// turn creates and completes one response with the given input and output.
func turn(t testing.TB, db *DB, owner, id, prev string, input, output []storage.Item) {
	t.Helper()
	storetest.Turn(t, db, owner, id, prev, input, output)
}

// applyMigration applies one migration to a file opened without the store, as an
// older hearth left it.
func applyMigration(ctx context.Context, w *sql.DB, m sqlstore.Migration) error {
	return sqlstore.Apply(ctx, migrator{conn: conn{q: w}, w: w}, m)
}
