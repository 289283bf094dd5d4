package toolgrammar

import (
	"encoding/json"
	"testing"
)

// TestStartInReasoningAfter: without the rendered prompt, whether the output starts in
// reasoning follows what models.json says of the template: only when thinking was
// asked for; PromptOpens after any last message but an assistant message (continued);
// PromptOpensAfter after the roles it names, the assistant's included; MayOmitOpen
// whenever thinking was asked for, as StartInReasoning has it.
func TestStartInReasoningAfter(t *testing.T) {
	format := func(reasoning string) *Format {
		f := &Format{ID: "x"}
		if reasoning != "" {
			f.Reasoning = &ReasoningDelims{}
			if err := json.Unmarshal([]byte(reasoning), f.Reasoning); err != nil {
				t.Fatal(err)
			}
		}
		return f
	}
	cases := []struct {
		reasoning string
		role      string
		think     bool
		want      bool
	}{
		{``, "user", true, false},
		{`{"open":"<think>","close":"</think>"}`, "user", true, false},
		{`{"open":"<think>","close":"</think>","prompt_opens":true}`, "user", true, true},
		{`{"open":"<think>","close":"</think>","prompt_opens":true}`, "tool", true, true},
		{`{"open":"<think>","close":"</think>","prompt_opens":true}`, "user", false, false},
		{`{"open":"<think>","close":"</think>","prompt_opens":true}`, "assistant", true, false},
		{`{"open":"<think>","close":"</think>","prompt_opens":true,"prompt_opens_after":["assistant"]}`, "assistant", true, true},
		{`{"open":"<|channel>thought","close":"<channel|>","prompt_opens_after":["tool"]}`, "tool", true, true},
		{`{"open":"<|channel>thought","close":"<channel|>","prompt_opens_after":["tool"]}`, "user", true, false},
		{`{"open":"<|channel>thought","close":"<channel|>","prompt_opens_after":["tool"]}`, "tool", false, false},
		{`{"open":"<think>","close":"</think>","may_omit_open":true}`, "assistant", true, true},
		{`{"open":"<think>","close":"</think>","may_omit_open":true}`, "user", false, false},
	}
	for _, c := range cases {
		if got := format(c.reasoning).StartInReasoningAfter(c.role, c.think); got != c.want {
			t.Errorf("%s after %s, thinking %v: %v, want %v", c.reasoning, c.role, c.think, got, c.want)
		}
	}
	var none *Format
	if none.StartInReasoningAfter("user", true) {
		t.Error("nil format starts in reasoning")
	}
}

// TestChatParsersNeedNames: a chat_parsers entry without a name is an error of the
// models.json file, not a parser registered under "".
func TestChatParsersNeedNames(t *testing.T) {
	_, err := LoadFormats([]byte(`{"formats":[{"id":"x","tools":{"kind":"json_object","open":["<c>"],"close":"</c>"},"chat_parsers":[{"thinking":true}]}]}`))
	if err == nil {
		t.Fatal("no error")
	}
}
