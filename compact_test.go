package hearth

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDecodeCompactRequest(t *testing.T) {
	req, ignored, err := DecodeCompactRequest([]byte(`{"model":"m","input":"hi","instructions":"be brief",
		"tools":[{"type":"function","name":"f"},{"type":"web_search"}],"tool_choice":"auto","stream":true,
		"store":false,"include":["reasoning.encrypted_content"],"parallel_tool_calls":true,"reasoning":{"effort":"low"},
		"prompt_cache_key":"thread-1","client_metadata":{"a":"b"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.Model != "m" || req.Instructions != "be brief" || len(req.Input) != 1 || req.Reasoning.Effort != "low" {
		t.Errorf("decoded %+v", req)
	}
	want := "client_metadata, include, parallel_tool_calls, store, stream, tool_choice, tools"
	if got := strings.Join(ignored, ", "); got != want {
		t.Errorf("ignored %q, want %q", got, want)
	}

	for body, param := range map[string]string{
		`{"input":"hi"}`:                     "model",
		`{"model":""}`:                       "model",
		`{"model":"m","input":[{"role":1}]}`: "input[0].role",
		`[]`:                                 "",
	} {
		_, _, err := DecodeCompactRequest([]byte(body))
		var he *Error
		if !errors.As(err, &he) || he.Status != 400 || he.Param != param {
			t.Errorf("%s: %v; want a 400 naming %q", body, err, param)
		}
	}
}

// TestBuilderSealsReasoning: Seal gives a reasoning item its encrypted_content before
// output_item.done, however the item ends.
func TestBuilderSealsReasoning(t *testing.T) {
	ends := map[string]func(b *Builder){
		"EndItem":    func(b *Builder) { b.EndItem(StatusCompleted) },
		"TextDelta":  func(b *Builder) { b.TextDelta("answer") },
		"Call":       func(b *Builder) { b.StartFunctionCall("f", "") },
		"Complete":   func(b *Builder) { b.Complete(Usage{}) },
		"Incomplete": func(b *Builder) { b.Incomplete(IncompleteMaxOutputTokens, Usage{}) },
	}
	for name, end := range ends {
		var done *Item
		b := NewBuilder(NewResponse("resp_1", nil, time.Unix(0, 0)), func(e Event) {
			if e.Type == EventOutputItemDone && e.Item.Type == ItemReasoning {
				done = e.Item
			}
		})
		b.Seal = func(it Item) string { return "sealed:" + it.Text(PartReasoningText) }
		b.ReasoningDelta("thinking")
		end(b)
		if done == nil || done.EncryptedContent != "sealed:thinking" || b.Response().Output[0].EncryptedContent != "sealed:thinking" {
			t.Errorf("%s: output_item.done %+v, final %+v", name, done, b.Response().Output[0])
		}
	}
}
