package sqlite

import (
	"context"
	"strings"
	"testing"

	"hearth/storage"
)

// TestLookupItems finds input and output items by id, only the owner's, the latest copy
// of an id stored twice, and nothing of a deleted response; the query uses the index.
func TestLookupItems(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	alice, bob := storage.OwnerOf("alice"), storage.OwnerOf("bob")
	turn(t, db, alice, "resp_1", "", []storage.Item{userMessage("msg_in", "weather?")},
		[]storage.Item{reasoning("rs_1", "think"), functionCall("fc_1", "get_weather", `{"city":"Paris"}`)})
	turn(t, db, bob, "resp_b", "", []storage.Item{userMessage("msg_bob", "hi")}, []storage.Item{assistantMessage("msg_bob_out", "hello")})
	// The client sends the call back as input of the next turn, changed: the later copy wins.
	turn(t, db, alice, "resp_2", "", []storage.Item{functionCall("fc_1", "get_weather", `{"city":"Lyon"}`)},
		[]storage.Item{assistantMessage("msg_out", "sunny")})

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

	var plan strings.Builder
	rows, err := db.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlLookupItem, "x", alice)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "\n")
	}
	if !strings.Contains(plan.String(), "items_item_id") || strings.Contains(plan.String(), "SCAN i") {
		t.Errorf("lookup does not use the item index:\n%s", plan.String())
	}
}
