package respond

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"

	"hearth"
	"hearth/engine"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// TestAppendResponseByStatus: which finished responses a conversation takes (completed
// and incomplete ones, but not when the client left), which it does not (failed,
// cancelled), and that the conversation is let go either way.
func TestAppendResponseByStatus(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &Service{db: db, log: slog.New(slog.DiscardHandler)}
	s.convs = &Conversations{s: s}
	owner := storage.OwnerOf("")
	input := []hearth.Item{{Type: hearth.ItemMessage, ID: "msg_in", Role: hearth.RoleUser,
		Content: []hearth.ContentPart{{Type: hearth.PartInputText, Text: "hi"}}}}
	output := []hearth.Item{{Type: hearth.ItemMessage, ID: "msg_out", Role: hearth.RoleAssistant, Status: hearth.StatusIncomplete,
		Content: []hearth.ContentPart{{Type: hearth.PartOutputText, Text: "hel"}}}}
	for _, tc := range []struct {
		status, reason string
		appended       bool
	}{
		{hearth.StatusCompleted, "", true},
		{hearth.StatusIncomplete, hearth.IncompleteMaxOutputTokens, true},
		{hearth.StatusIncomplete, engine.IncompleteClientDisconnected, false},
		{hearth.StatusFailed, "", false},
		{hearth.StatusCancelled, "", false},
	} {
		id := hearth.NewID(hearth.PrefixConversation)
		if err := db.CreateConversation(ctx, storage.NewConversation{ID: id, Owner: owner}); err != nil {
			t.Fatal(err)
		}
		if !s.convs.locks.lock(id) {
			t.Fatal("lock")
		}
		final := &hearth.Response{ID: "resp_1", Status: tc.status, Output: output}
		if tc.reason != "" {
			final.IncompleteDetails = &hearth.IncompleteDetails{Reason: tc.reason}
		}
		turn := &conversationTurn{s: s, id: id, owner: owner}
		if err := turn.appendResponse(ctx, input, final); err != nil {
			t.Fatal(err)
		}
		items, err := db.ConversationItems(ctx, owner, id)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(items) == 2; got != tc.appended {
			t.Errorf("%s %s: %d items appended, want appended=%v", tc.status, tc.reason, len(items), tc.appended)
		}
		if s.convs.locks.locked(id) {
			t.Errorf("%s %s: the conversation is still held", tc.status, tc.reason)
		}
	}
	// A conversation deleted while the response ran: nothing to append, no error.
	turn := &conversationTurn{s: s, id: "conv_gone", owner: owner}
	if err := turn.appendResponse(ctx, input, &hearth.Response{ID: "resp_2", Status: hearth.StatusCompleted}); err != nil {
		t.Errorf("deleted conversation: %v", err)
	}
}
