package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// Qwen 3.5's renderer (model/renderers/qwen35.go in Ollama v0.24.0) ends every prompt
// with the assistant's turn and then, when thinking, "<think>\n", and when not,
// "<think>\n\n</think>\n\n". A script model rendered by it therefore needs those
// two endings as its entry tokens; a tool result does not change the ending, so the
// tool loop's second turn is asked with reasoning off.
const (
	qwen35ThinkingEntry = "<think>\n"
	qwen35AnswerEntry   = "</think>\n\n"
	qwen35CallText      = "The user wants the weather in Paris.\n</think>\n\nLet me check.\n\n" +
		"<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"
	qwen35AnswerText = "It is sunny in Paris, 21 degrees."
)

// TestQwen35RendererE2E: a model the runtime renders with its qwen3.5 renderer (no
// template) gets hearth's qwen3.5 format: its XML call and its reasoning, which the
// prompt opened, become exact items, streamed or not; tool_choice none ends the output
// at the call's opener; a forced call (required, named, allowed_tools, a strict tool)
// is made, in a few constrained phases; the tool loop's answer after the result is a
// message (xmlFamilyLoop).
func TestQwen35RendererE2E(t *testing.T) {
	xmlFamilyLoop(t, "hearth-script-qwen35:latest", scriptmodel.Spec{
		Renderer: "qwen3.5", Parser: "qwen3.5",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: qwen35ThinkingEntry, Text: qwen35CallText},
			{Entry: qwen35AnswerEntry, Text: qwen35AnswerText},
		},
	}, qwen35ThinkingEntry, qwen35AnswerEntry, false)
}

// TestUnknownRendererE2E: a model on a renderer hearth has no format for (olmo3-think's,
// in v0.24.0: it shows no tools) is refused tools with a 400 that names it and its
// renderer, and still answers without tools, in the default format (whose <think> the
// renderer opens).
func TestUnknownRendererE2E(t *testing.T) {
	const (
		model = "hearth-script-olmo3think:latest"
		// olmo3-think's renderer ends the prompt with the assistant's turn and <think>.
		entry = "<|im_start|>assistant\n<think>"
		text  = "Plain text from a model on a renderer hearth has no format for."
	)
	spec := scriptmodel.Spec{Renderer: "olmo3-think", Parser: "olmo3-think", Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{{Entry: entry, Text: "Thinking.</think>" + text}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec); err != nil {
		t.Fatal(err)
	}
	srv := newHearthWithDB(t)
	resp, b := post(t, srv.URL+"/v1/responses", reqBody(model, false, `"input":"hi",`+toolsJSON))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `\"`+model+`\"`) ||
		!strings.Contains(string(b), `renderer \"olmo3-think\"`) || !strings.Contains(string(b), `"model_tool_format_unknown"`) {
		t.Fatalf("with tools: %d %s", resp.StatusCode, b)
	}
	plain := createJSON(t, srv, reqBody(model, false, `"input":"hi","temperature":0`))
	sameItems(t, "without tools", plain.Output, []item{
		{Type: "reasoning", Status: "completed", Text: "Thinking."},
		{Type: "message", Status: "completed", Text: text}})
}
