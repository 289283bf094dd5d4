package sqlite

import (
	"path/filepath"
	"testing"

	"hearth/storage"
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
// tests use.
var (
	userMessage      = storetest.UserMessage
	reasoning        = storetest.Reasoning
	assistantMessage = storetest.AssistantMessage
	functionCall     = storetest.FunctionCall
	mkItem           = storetest.NewItem
	text             = storetest.Text
	request          = storetest.Request
	body             = storetest.Body
	ids              = storetest.IDs
	sameChain        = storetest.SameChain
)

// turn creates and completes one response with the given input and output.
func turn(t testing.TB, db *DB, owner, id, prev string, input, output []storage.Item) {
	t.Helper()
	storetest.Turn(t, db, owner, id, prev, input, output)
}
