package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"hearth/storage"
)

func itemIDs(items []storage.Item) []string {
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

func testConversations(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice, bob := storage.OwnerOf("alice"), storage.OwnerOf("bob")

	if err := db.CreateConversation(ctx, storage.NewConversation{ID: "conv_1", Owner: alice,
		Metadata: []byte(`{"topic":"x"}`), Items: []storage.Item{UserMessage("m1", "one")}}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateConversation(ctx, storage.NewConversation{ID: "conv_1", Owner: alice}); !errors.Is(err, storage.ErrExists) {
		t.Errorf("same id again: %v", err)
	}
	c, err := db.GetConversation(ctx, alice, "conv_1")
	if err != nil || string(c.Metadata) != `{"topic":"x"}` || c.CreatedAt.IsZero() {
		t.Fatalf("get: %+v %v", c, err)
	}
	// Another owner sees nothing, and changes nothing.
	if _, err := db.GetConversation(ctx, bob, "conv_1"); !errors.Is(err, storage.ErrConversationNotFound) {
		t.Errorf("bob get: %v", err)
	}
	if err := db.AppendConversationItems(ctx, bob, "conv_1", "", []storage.Item{UserMessage("b1", "x")}); !errors.Is(err, storage.ErrConversationNotFound) {
		t.Errorf("bob append: %v", err)
	}
	if err := db.DeleteConversation(ctx, bob, "conv_1"); !errors.Is(err, storage.ErrConversationNotFound) {
		t.Errorf("bob delete: %v", err)
	}
	if _, err := db.GetConversationItem(ctx, bob, "conv_1", "m1"); !errors.Is(err, storage.ErrConversationNotFound) {
		t.Errorf("bob get item: %v", err)
	}

	// A response's turn, appended at once; a duplicate id appends nothing.
	turn := []storage.Item{UserMessage("m2", "two"), Reasoning("r2", "think"), AssistantMessage("a2", "answer")}
	if err := db.AppendConversationItems(ctx, alice, "conv_1", "resp_2", turn); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendConversationItems(ctx, alice, "conv_1", "", []storage.Item{UserMessage("m3", "x"), UserMessage("m1", "dup")}); !errors.Is(err, storage.ErrDuplicateItem) {
		t.Errorf("duplicate: %v", err)
	}
	all, err := db.ConversationItems(ctx, alice, "conv_1")
	if got := itemIDs(all); err != nil || !slices.Equal(got, []string{"m1", "m2", "r2", "a2"}) {
		t.Fatalf("items %v %v", got, err)
	}

	// Paging both ways, with cursors.
	for _, tc := range []struct {
		after string
		limit int
		order storage.Order
		want  []string
		more  bool
	}{
		{"", 2, "", []string{"a2", "r2"}, true},
		{"r2", 2, storage.Desc, []string{"m2", "m1"}, false},
		{"", 3, storage.Asc, []string{"m1", "m2", "r2"}, true},
		{"r2", 3, storage.Asc, []string{"a2"}, false},
		{"", 0, storage.Asc, []string{"m1", "m2", "r2", "a2"}, false},
	} {
		items, more, err := db.ListConversationItems(ctx, alice, "conv_1", tc.after, tc.limit, tc.order)
		if got := itemIDs(items); err != nil || !slices.Equal(got, tc.want) || more != tc.more {
			t.Errorf("list after %q limit %d %s: %v more %v (%v), want %v more %v", tc.after, tc.limit, tc.order, got, more, err, tc.want, tc.more)
		}
	}
	if _, _, err := db.ListConversationItems(ctx, alice, "conv_1", "nope", 2, storage.Asc); !errors.Is(err, storage.ErrInvalidCursor) {
		t.Errorf("bad cursor: %v", err)
	}

	it, err := db.GetConversationItem(ctx, alice, "conv_1", "r2")
	if err != nil || it.Type != "reasoning" || string(it.JSON) != string(turn[1].JSON) {
		t.Errorf("get item: %+v %v", it, err)
	}
	if _, err := db.GetConversationItem(ctx, alice, "conv_1", "zz"); !errors.Is(err, storage.ErrItemNotFound) {
		t.Errorf("missing item: %v", err)
	}
	if c, err := db.DeleteConversationItem(ctx, alice, "conv_1", "m2"); err != nil || c.ID != "conv_1" {
		t.Errorf("delete item: %+v %v", c, err)
	}
	if _, err := db.DeleteConversationItem(ctx, alice, "conv_1", "m2"); !errors.Is(err, storage.ErrItemNotFound) {
		t.Errorf("delete item again: %v", err)
	}
	// A deleted item leaves no hole in the order; appending continues at the end.
	if err := db.AppendConversationItems(ctx, alice, "conv_1", "", []storage.Item{UserMessage("m4", "four")}); err != nil {
		t.Fatal(err)
	}
	if c, err := db.UpdateConversation(ctx, alice, "conv_1", []byte(`{"topic":"y"}`)); err != nil || string(c.Metadata) != `{"topic":"y"}` {
		t.Errorf("update: %+v %v", c, err)
	}
	if _, err := db.UpdateConversation(ctx, bob, "conv_1", nil); !errors.Is(err, storage.ErrConversationNotFound) {
		t.Errorf("bob update: %v", err)
	}

	// Everything survives a restart.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = open(t) // the same records, as after a restart
	all, err = db.ConversationItems(ctx, alice, "conv_1")
	if got := itemIDs(all); err != nil || !slices.Equal(got, []string{"m1", "r2", "a2", "m4"}) {
		t.Errorf("after restart: %v %v", got, err)
	}
	if c, err := db.GetConversation(ctx, alice, "conv_1"); err != nil || string(c.Metadata) != `{"topic":"y"}` {
		t.Errorf("after restart: %+v %v", c, err)
	}

	// Deleting the conversation deletes its items, and only them.
	if err := db.CreateResponse(ctx, storage.NewResponse{ID: "resp_2", Owner: alice, Model: "m", Status: storage.StatusInProgress,
		Request: []byte(`{}`), Input: turn[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteConversation(ctx, alice, "conv_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetConversation(ctx, alice, "conv_1"); !errors.Is(err, storage.ErrConversationNotFound) {
		t.Errorf("after delete: %v", err)
	}
	// Its items went with it: a new conversation of the same id starts empty, and may
	// reuse their ids.
	if err := db.CreateConversation(ctx, storage.NewConversation{ID: "conv_1", Owner: alice, Items: turn[1:2]}); err != nil {
		t.Fatalf("recreate with a deleted item's id: %v", err)
	}
	if got, err := db.ConversationItems(ctx, alice, "conv_1"); err != nil || !slices.Equal(itemIDs(got), itemIDs(turn[1:2])) {
		t.Errorf("recreated conversation: %v %v", itemIDs(got), err)
	}
	if _, err := db.GetResponse(ctx, alice, "resp_2"); err != nil {
		t.Errorf("the response went with the conversation: %v", err)
	}
}
