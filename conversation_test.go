package hearth_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"hearth"
)

var testTime = time.Unix(1700000000, 0)

func TestDecodeConversationParam(t *testing.T) {
	for _, body := range []string{
		`{"model":"m","conversation":"conv_1"}`,
		`{"model":"m","conversation":{"id":"conv_1"}}`,
	} {
		req, ignored := decode(t, body)
		if req.ConversationID() != "conv_1" || len(ignored) != 0 {
			t.Errorf("%s: conversation %q, ignored %v", body, req.ConversationID(), ignored)
		}
		// The stored request keeps it, and decodes back to the same.
		b, _ := json.Marshal(req)
		again, _ := decode(t, string(b))
		if again.ConversationID() != "conv_1" {
			t.Errorf("%s: marshalled %s lost the conversation", body, b)
		}
		if r := hearth.NewResponse("resp_1", req, testTime); r.Conversation == nil || r.Conversation.ID != "conv_1" {
			t.Errorf("%s: response conversation %+v", body, r.Conversation)
		}
	}
	req, _ := decode(t, `{"model":"m","conversation":null}`)
	if req.Conversation != nil {
		t.Errorf("null conversation decoded as %+v", req.Conversation)
	}
	b, _ := json.Marshal(hearth.NewResponse("resp_1", req, testTime))
	if strings.Contains(string(b), `"conversation"`) {
		t.Errorf("a response without a conversation writes one: %s", b)
	}
}

func TestDecodeConversationErrors(t *testing.T) {
	item := `{"role":"user","content":"hi"}`
	many := "[" + strings.Repeat(item+",", 20) + item + "]"
	for _, tc := range []struct {
		name, body, param, code string
		decode                  func([]byte) error
	}{
		{"both", `{"model":"m","conversation":"conv_1","previous_response_id":"resp_1"}`, "conversation", "mutually_exclusive_parameters", createDecoder},
		{"empty id", `{"model":"m","conversation":""}`, "conversation", "empty_string", createDecoder},
		{"object without id", `{"model":"m","conversation":{}}`, "conversation.id", "missing_required_parameter", createDecoder},
		{"number", `{"model":"m","conversation":7}`, "conversation", "invalid_type", createDecoder},
		{"create: not an object", `[]`, "", "invalid_json", convDecoder},
		{"create: items type", `{"items":"hi"}`, "items", "invalid_type", convDecoder},
		{"create: 21 items", `{"items":` + many + `}`, "items", "array_above_max_length", convDecoder},
		{"create: bad item", `{"items":[{"role":"robot","content":"x"}]}`, "items[0].role", "invalid_value", convDecoder},
		{"create: reference", `{"items":[{"type":"item_reference","id":"msg_1"}]}`, "items[0].type", "invalid_value", convDecoder},
		{"create: duplicate ids", `{"items":[{"id":"msg_1","role":"user","content":"a"},{"id":"msg_1","role":"user","content":"b"}]}`, "items[1].id", "duplicate_item_id", convDecoder},
		{"create: metadata", `{"metadata":{"k":1}}`, "metadata.k", "invalid_type", convDecoder},
		{"items: missing", `{}`, "items", "missing_required_parameter", itemsDecoder},
		{"items: empty", `{"items":[]}`, "items", "empty_array", itemsDecoder},
		{"items: 21", `{"items":` + many + `}`, "items", "array_above_max_length", itemsDecoder},
		{"update: missing", `{}`, "metadata", "missing_required_parameter", updateDecoder},
		{"update: type", `{"metadata":[]}`, "metadata", "invalid_type", updateDecoder},
	} {
		err := tc.decode([]byte(tc.body))
		var he *hearth.Error
		if !errors.As(err, &he) || he.Status != 400 || he.Param != tc.param || he.Code != tc.code {
			t.Errorf("%s: got %v, want 400 %s on %q", tc.name, err, tc.code, tc.param)
		}
	}
}

func TestDecodeConversationBodies(t *testing.T) {
	c, ignored, err := hearth.DecodeCreateConversationRequest(nil)
	if err != nil || len(c.Items) != 0 || c.Metadata != nil || ignored != nil {
		t.Errorf("empty body: %+v %v %v", c, ignored, err)
	}
	c, ignored, err = hearth.DecodeCreateConversationRequest([]byte(
		`{"items":[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"c1","output":"x"}],"metadata":{"topic":"t"},"extra":1}`))
	if err != nil || len(c.Items) != 2 || c.Items[1].CallID != "c1" || c.Metadata["topic"] != "t" || len(ignored) != 1 || ignored[0] != "extra" {
		t.Errorf("create: %+v %v %v", c, ignored, err)
	}
	m, _, err := hearth.DecodeConversationUpdateRequest([]byte(`{"metadata":null}`))
	if err != nil || m == nil || len(m) != 0 {
		t.Errorf("metadata null: %v %v", m, err)
	}
	it := hearth.Item{Type: hearth.ItemMessage}
	hearth.ConversationItemStatus(&it)
	rs := hearth.Item{Type: hearth.ItemReasoning}
	hearth.ConversationItemStatus(&rs)
	if it.Status != "completed" || rs.Status != "" {
		t.Errorf("statuses: message %q, reasoning %q", it.Status, rs.Status)
	}
}

func createDecoder(b []byte) error { _, _, err := hearth.DecodeCreateRequest(b); return err }
func convDecoder(b []byte) error   { _, _, err := hearth.DecodeCreateConversationRequest(b); return err }
func itemsDecoder(b []byte) error  { _, _, err := hearth.DecodeConversationItemsRequest(b); return err }
func updateDecoder(b []byte) error {
	_, _, err := hearth.DecodeConversationUpdateRequest(b)
	return err
}
