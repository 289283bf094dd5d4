package chatcompletions

import (
	"errors"
	"testing"

	"hearth"
)

// TestChatParam: the fields of the hearth request a chat request became are named as
// the client wrote them, input items by the message (or call) they came from.
func TestChatParam(t *testing.T) {
	paths := []string{"messages[0]", "messages[1].reasoning_content", "messages[1]", "messages[1].tool_calls[0]", "messages[2]"}
	for in, want := range map[string]string{
		"input":                         "messages",
		"input[0].content[1].image_url": "messages[0].content[1].image_url.url",
		"input[2].content[0].text":      "messages[1].content[0].text",
		"input[3].arguments":            "messages[1].tool_calls[0].function.arguments",
		"input[3].call_id":              "messages[1].tool_calls[0].id",
		"input[4].output":               "messages[2].content",
		"input[4].call_id":              "messages[2].tool_call_id",
		"input[9]":                      "messages",
		"text.format.schema":            "response_format.json_schema.schema",
		"text.format":                   "response_format",
		"tools[1].parameters":           "tools[1].function.parameters",
		"tools[1].type":                 "tools[1].type",
		"tool_choice.name":              "tool_choice.function.name",
		"tool_choice.tools[0]":          "tool_choice.allowed_tools.tools[0]",
		"max_output_tokens":             "max_completion_tokens",
		"reasoning.effort":              "reasoning_effort",
		"temperature":                   "temperature",
	} {
		if got := chatParam(in, paths); got != want {
			t.Errorf("chatParam(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDecodeChatNamesMessages: an input item the hearth decoder refuses is named by
// the message it came from, in the param and the message.
func TestDecodeChatNamesMessages(t *testing.T) {
	_, err := decodeChat([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x"}}]}]}`))
	var he *hearth.Error
	if !errors.As(err, &he) || he.Status != 400 || he.Param != "messages[1].content[0].image_url.url" {
		t.Fatalf("error %#v, want a 400 naming messages[1].content[0].image_url.url", err)
	}
}
