package hearth

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestEventAppendJSON: AppendJSON writes exactly what json.Marshal writes, on the fast
// path (the delta events) and off it, for text that needs escaping too.
func TestEventAppendJSON(t *testing.T) {
	texts := []string{"", " word", "héllo 世界", "a \"quote\"", `back\slash`, "new\nline", "<b>&amp;</b>",
		"\u2028", "bad \xff utf8", "tab\t", "\x00", "emoji 🙂"}
	types := []string{EventOutputTextDelta, EventRefusalDelta, EventReasoningDelta, EventReasoningSummaryTextDelta,
		EventFunctionCallArgumentsDelta, EventCustomToolCallInputDelta, EventOutputTextDone}
	for _, typ := range types {
		for _, text := range texts {
			e := Event{Type: typ, SequenceNumber: 12345, ItemID: "msg_abc", OutputIndex: 2, ContentIndex: 1,
				SummaryIndex: 3, Delta: text, Text: text}
			want, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.AppendJSON([]byte("prefix"))
			if err != nil || !bytes.Equal(got, append([]byte("prefix"), want...)) {
				t.Errorf("%s %q:\n got %s (%v)\nwant prefix%s", typ, text, got, err, want)
			}
		}
	}
	e := Event{Type: EventOutputTextDelta, ItemID: "msg_1", Delta: "x", Logprobs: []LogProb{{Token: "x", Logprob: -0.5}}}
	want, _ := json.Marshal(e)
	if got, _ := e.AppendJSON(nil); !bytes.Equal(got, want) {
		t.Errorf("with logprobs: %s, want %s", got, want)
	}
}

// Off the fast path AppendJSON calls MarshalJSON without json.Marshal's compacting
// pass: the bytes must be the same for events that carry whole items and responses,
// with text to escape, raw JSON written loosely and tool schemas (a hosted kind's
// items: the kind's package tests them too).
func TestEventAppendJSONWholeResponse(t *testing.T) {
	items := []Item{
		{Type: ItemMessage, ID: "msg_1", Status: StatusCompleted, Role: RoleAssistant,
			Content: []ContentPart{{Type: PartOutputText, Text: "<b>&amp;</b> \u2028 \"q\"\n"}}},
		{Type: ItemFunctionCall, ID: "fc_1", CallID: "call_1", Name: "f", Arguments: `{"a": "<x>"}`, Status: StatusCompleted},
	}
	resp := &Response{ID: "resp_1", Object: "response", Status: StatusCompleted, Model: "m<1>", Output: items,
		Tools: []Tool{{Type: ToolFunction, Name: "f", Parameters: json.RawMessage("{\n\"type\": \"object\"}")}}}
	events := []Event{
		{Type: EventResponseCompleted, SequenceNumber: 9, Response: resp},
		{Type: EventResponseCreated, Response: resp},
	}
	for i := range items {
		events = append(events, Event{Type: EventOutputItemDone, OutputIndex: i, Item: &items[i]})
	}
	for _, e := range events {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.AppendJSON(nil); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s (%v)\nwant %s", e.Type, got, err, want)
		}
	}
}

// FuzzEventAppendJSON: any delta text encodes as json.Marshal encodes it.
func FuzzEventAppendJSON(f *testing.F) {
	f.Add(" word", "msg_1", 3)
	f.Add("\u2029<\xfe", "rs_\"", -1)
	f.Fuzz(func(t *testing.T, text, id string, n int) {
		for _, typ := range []string{EventOutputTextDelta, EventReasoningSummaryTextDelta, EventFunctionCallArgumentsDelta} {
			e := Event{Type: typ, SequenceNumber: n, ItemID: id, OutputIndex: n, ContentIndex: n, SummaryIndex: n, Delta: text}
			want, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := e.AppendJSON(nil); !bytes.Equal(got, want) {
				t.Fatalf("%s %q: %s, want %s", typ, text, got, want)
			}
		}
	})
}

func BenchmarkEventAppendJSON(b *testing.B) {
	e := Event{Type: EventOutputTextDelta, SequenceNumber: 1234, ItemID: "msg_0123456789abcdef", OutputIndex: 1, Delta: " word"}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = e.AppendJSON(buf[:0])
	}
}
