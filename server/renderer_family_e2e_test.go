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
// at the call's opener; a forced call (required, named) is made, in a few constrained
// phases; the tool loop's answer after the result is a message.
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
	built, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec)
	if err != nil {
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

	// Forced calls. The reasoning runs to its end, where the call is forced: the
	// engine writes "<tool_call>\n<function=" and, for "required", the name is
	// generated under an enum of both tools (the script's successor is masked: the
	// ranking picks "get_time", 't' before 'w'); a named call's name is written.
	// After "get_time>\n" the script has no parameters to write (it ends its turn:
	// one EOS), so the call is taken back and generated again, its parameters now
	// as JSON under get_time's schema (the ranking closes the string at once),
	// which the engine writes as XML. After the call's closer the script ends
	// (one EOS). A model that does not fit stays bounded: one retry, then the
	// response fails.
	throughReasoning := piecesThrough(t, built.Pieces(qwen35ThinkingEntry), "</think>")
	nameTokens := len(`"get_time"`) + 1
	argsTokens := len(forcedTime) + 1
	forced := item{Type: "function_call", Status: "completed", Name: "get_time", Arguments: forcedTime}
	required := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"required"`))
	sameItems(t, "required", required.Output, []item{reasoning, forced})
	if got, want := required.Usage.OutputTokens, throughReasoning+nameTokens+1+nameTokens+argsTokens+1; got != want {
		t.Errorf("required: output_tokens %d, want %d", got, want)
	}
	events, named := createSSE(t, srv, reqBody(model, true, common+`,"tool_choice":{"type":"function","name":"get_time"}`))
	sameItems(t, "named, streamed", named.Output, []item{reasoning, forced})
	checkDeltasMatch(t, "named, streamed", events, named)
	if got, want := named.Usage.OutputTokens, throughReasoning+1+argsTokens+1; got != want {
		t.Errorf("named: output_tokens %d, want %d", got, want)
	}

	callID := first.Output[len(first.Output)-1].CallID
	answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+
		`"reasoning":{"effort":"none"},`+toolsJSON+
		`,"input":[{"type":"function_call_output","call_id":"`+callID+`","output":"sunny, 21C"}]`))
	sameItems(t, "after the tool result", answer.Output, []item{{Type: "message", Status: "completed", Text: qwen35AnswerText}})
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
