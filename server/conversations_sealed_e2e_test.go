package server_test

import (
	"net/http"
	"testing"

	"hearth"
	"hearth/engine"
	"hearth/internal/seal"
	"hearth/scriptmodel"
)

// TestConversationSealedItemsE2E: a conversation's items carrying encrypted content
// hearth cannot open (a forged compaction item, forged reasoning) are refused where
// they are sent, naming the item, as in a response's input; stored, they would fail
// every later turn with an error about a previous_response_id never sent. Content
// hearth sealed is still taken, and the conversation goes on.
func TestConversationSealedItemsE2E(t *testing.T) {
	srv, _, key, _ := sealedHearth(t, t.TempDir())
	model := scriptmodel.PlainModel
	foreign := seal.NewKey().Seal(seal.Reasoning, []byte(`{"text":"thought"}`))

	convRefused(t, srv, "", "POST", "/v1/conversations", `{"items":[{"type":"compaction","encrypted_content":"zz"}]}`,
		http.StatusBadRequest, engine.CodeInvalidEncryptedContent, "items[0].encrypted_content")
	convRefused(t, srv, "", "POST", "/v1/conversations", `{"items":[{"role":"user","content":"hi"},
		{"type":"reasoning","summary":[],"encrypted_content":"`+foreign+`"}]}`,
		http.StatusBadRequest, engine.CodeInvalidEncryptedContent, "items[1].encrypted_content")

	var c conversation
	convDo(t, srv, "", "POST", "/v1/conversations", `{"items":[{"role":"user","content":"hi"}]}`, &c)
	convRefused(t, srv, "", "POST", "/v1/conversations/"+c.ID+"/items", `{"items":[{"type":"compaction","encrypted_content":"zz"}]}`,
		http.StatusBadRequest, engine.CodeInvalidEncryptedContent, "items[0].encrypted_content")
	convRefused(t, srv, "", "POST", "/v1/conversations/"+c.ID+"/items", `{"items":[{"role":"user","content":"a"},
		{"type":"reasoning","summary":[],"encrypted_content":"zz"}]}`,
		http.StatusBadRequest, engine.CodeInvalidEncryptedContent, "items[1].encrypted_content")
	if items := allItems(t, srv, "", c.ID); len(items) != 1 {
		t.Fatalf("refused items were stored: %v", ids(items))
	}

	// A compaction item hearth sealed is taken, and the next turn reads it.
	mine := key.Seal(seal.Compaction, []byte(`{"summary":"We said hello."}`))
	convDo(t, srv, "", "POST", "/v1/conversations/"+c.ID+"/items", `{"items":[{"type":"compaction","encrypted_content":"`+mine+`"}]}`, nil)
	r := createJSON(t, srv, reqBody(model, false, `"conversation":"`+c.ID+`","input":"and now?"`))
	if r.Status != hearth.StatusCompleted {
		t.Errorf("turn after a sealed compaction item: %s %+v", r.Status, r.Error)
	}
}
