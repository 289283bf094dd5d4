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
// at the call's opener; the tool loop's answer after the result is a message. (Forced
// calls over the XML formats: engine's TestXMLFormatsEnforced.)
func TestQwen35RendererE2E(t *testing.T) {
	const model = "hearth-script-qwen35:latest"
	spec := scriptmodel.Spec{
		Renderer: "qwen3.5", Parser: "qwen3.5",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: qwen35ThinkingEntry, Text: qwen35CallText},
			{Entry: qwen35AnswerEntry, Text: qwen35AnswerText},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec); err != nil {
		t.Fatal(err)
	}
	srv := newHearthWithDB(t)
	common := `"input":"Weather in Paris?","temperature":0,` + toolsJSON
	reasoning := item{Type: "reasoning", Status: "completed", Text: "The user wants the weather in Paris."}
	text := item{Type: "message", Status: "completed", Text: "Let me check."}
	call := item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris"}`}

	first := createJSON(t, srv, reqBody(model, false, common))
	sameItems(t, "auto", first.Output, []item{reasoning, text, call})

	events, streamed := createSSE(t, srv, reqBody(model, true, common))
	sameItems(t, "auto, streamed", streamed.Output, []item{reasoning, text, call})
	checkDeltasMatch(t, "auto, streamed", events, streamed)

	none := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"none"`))
	sameItems(t, "none", none.Output, []item{reasoning, text})

	callID := first.Output[len(first.Output)-1].CallID
	answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+
		`"reasoning":{"effort":"none"},`+toolsJSON+
		`,"input":[{"type":"function_call_output","call_id":"`+callID+`","output":"sunny, 21C"}]`))
	sameItems(t, "after the tool result", answer.Output, []item{{Type: "message", Status: "completed", Text: qwen35AnswerText}})
}

// TestUnknownRendererE2E: a model on a renderer hearth has no format for (gemma4's, in
// v0.24.0) is refused tools with a 400 that names it and its renderer, and still
// answers without tools.
func TestUnknownRendererE2E(t *testing.T) {
	const (
		model = "hearth-script-gemma4:latest"
		// gemma4's renderer ends the prompt with the model's turn.
		entry = "<|turn>model\n"
		text  = "Plain text from a model on a renderer hearth has no format for."
	)
	spec := scriptmodel.Spec{Renderer: "gemma4", Parser: "gemma4", Stop: []string{"<turn|>"},
		Scripts: []scriptmodel.Script{{Entry: entry, Text: text}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec); err != nil {
		t.Fatal(err)
	}
	srv := newHearthWithDB(t)
	resp, b := post(t, srv.URL+"/v1/responses", reqBody(model, false, `"input":"hi",`+toolsJSON))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `\"`+model+`\"`) ||
		!strings.Contains(string(b), `renderer \"gemma4\"`) || !strings.Contains(string(b), `"model_tool_format_unknown"`) {
		t.Fatalf("with tools: %d %s", resp.StatusCode, b)
	}
	plain := createJSON(t, srv, reqBody(model, false, `"input":"hi","temperature":0`))
	sameItems(t, "without tools", plain.Output, []item{{Type: "message", Status: "completed", Text: text}})
}
