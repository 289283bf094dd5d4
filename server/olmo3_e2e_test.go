package server_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// Olmo 3's renderer (model/renderers/olmo3.go in Ollama v0.24.0) ends every prompt with
// "<|im_start|>assistant\n", after the user's turn and after a tool result's
// environment turn alike; the script model tells them by what comes before: its entry
// tokens are the end of the question ("?") and of the tool result ("C", of "21C"),
// each with that ending. Its calls are Python calls between <function_calls> and
// </function_calls>.
const (
	olmo3TurnEntry   = "?<|im_end|>\n<|im_start|>assistant\n"
	olmo3AnswerEntry = "C<|im_end|>\n<|im_start|>assistant\n"
	// A value with a space: the script model emits a piece per word, so the call's
	// arguments stream in more than one delta.
	olmo3CallText   = `Let me check.<function_calls>get_weather(city="Paris, France")</function_calls>`
	olmo3AnswerText = "It is sunny in Paris, 21 degrees."
)

// TestOlmo3RendererE2E: a model on the runtime's olmo3 renderer gets hearth's olmo3
// format: its text and Python call become exact items, streamed or not; tool_choice
// none ends the output at the opener; a forced call (required, named) is made at once
// (the format has no reasoning) and written as keyword arguments; the tool loop's
// answer after the result is a message.
func TestOlmo3RendererE2E(t *testing.T) {
	const model = "hearth-script-olmo3:latest"
	spec := scriptmodel.Spec{
		Renderer: "olmo3", Parser: "olmo3",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: olmo3TurnEntry, Text: olmo3CallText},
			{Entry: olmo3AnswerEntry, Text: olmo3AnswerText},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec); err != nil {
		t.Fatal(err)
	}
	srv := newHearthWithDB(t)
	common := `"input":"Weather in Paris?","temperature":0,` + toolsJSON
	text := item{Type: "message", Status: "completed", Text: "Let me check."}
	call := item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris, France"}`}

	first := createJSON(t, srv, reqBody(model, false, common))
	sameItems(t, "auto", first.Output, []item{text, call})

	events, streamed := createSSE(t, srv, reqBody(model, true, common))
	sameItems(t, "auto, streamed", streamed.Output, []item{text, call})
	checkDeltasMatch(t, "auto, streamed", events, streamed)

	none := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"none"`))
	sameItems(t, "none", none.Output, []item{text})

	// Forced calls: the engine writes "<function_calls>" at once; the name under an
	// enum for "required" (the ranking picks "get_time"), one EOS after "get_time(",
	// the retry's arguments as JSON under get_time's schema, written as
	// timezone="")</function_calls>, then one EOS.
	nameTokens := len(`"get_time"`) + 1
	argsTokens := len(forcedTime) + 1
	forced := item{Type: "function_call", Status: "completed", Name: "get_time", Arguments: forcedTime}
	required := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"required"`))
	sameItems(t, "required", required.Output, []item{forced})
	if got, want := required.Usage.OutputTokens, nameTokens+1+nameTokens+argsTokens+1; got != want {
		t.Errorf("required: output_tokens %d, want %d", got, want)
	}
	events, named := createSSE(t, srv, reqBody(model, true, common+`,"tool_choice":{"type":"function","name":"get_time"}`))
	sameItems(t, "named, streamed", named.Output, []item{forced})
	checkDeltasMatch(t, "named, streamed", events, named)
	if got, want := named.Usage.OutputTokens, 1+argsTokens+1; got != want {
		t.Errorf("named: output_tokens %d, want %d", got, want)
	}

	callID := first.Output[len(first.Output)-1].CallID
	answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+toolsJSON+
		`,"input":[{"type":"function_call_output","call_id":"`+callID+`","output":"sunny, 21C"}]`))
	sameItems(t, "after the tool result", answer.Output, []item{{Type: "message", Status: "completed", Text: olmo3AnswerText}})
}

// LFM2's renderer (model/renderers/lfm2.go in Ollama v0.24.0) ends every prompt with
// "<|im_start|>assistant\n" too; a tool result is a tool turn wrapped in
// <|tool_response_start|> and <|tool_response_end|>. Its calls are a list of Python
// calls between <|tool_call_start|> and <|tool_call_end|>. The format reads <think>
// reasoning, so a required call is forced after the model's first token, not at once.
const (
	lfm2TurnEntry   = "?<|im_end|>\n<|im_start|>assistant\n"
	lfm2AnswerEntry = "<|tool_response_end|><|im_end|>\n<|im_start|>assistant\n"
	lfm2CallText    = `Let me check.<|tool_call_start|>[get_weather(city="Paris, France")]<|tool_call_end|>`
	lfm2AnswerText  = "It is sunny in Paris, 21 degrees."
)

// TestLFM2RendererE2E: as TestOlmo3RendererE2E, on the runtime's lfm2 renderer.
func TestLFM2RendererE2E(t *testing.T) {
	const model = "hearth-script-lfm2:latest"
	spec := scriptmodel.Spec{
		Renderer: "lfm2", Parser: "lfm2",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: lfm2TurnEntry, Text: lfm2CallText},
			{Entry: lfm2AnswerEntry, Text: lfm2AnswerText},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec); err != nil {
		t.Fatal(err)
	}
	srv := newHearthWithDB(t)
	common := `"input":"Weather in Paris?","temperature":0,` + toolsJSON
	text := item{Type: "message", Status: "completed", Text: "Let me check."}
	call := item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris, France"}`}

	first := createJSON(t, srv, reqBody(model, false, common))
	sameItems(t, "auto", first.Output, []item{text, call})

	events, streamed := createSSE(t, srv, reqBody(model, true, common))
	sameItems(t, "auto, streamed", streamed.Output, []item{text, call})
	checkDeltasMatch(t, "auto, streamed", events, streamed)

	none := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"none"`))
	sameItems(t, "none", none.Output, []item{text})

	// Forced calls: the model's first token (text) is taken back and the engine
	// writes "<|tool_call_start|>["; then as for olmo3, the retry's arguments written
	// as timezone="")]<|tool_call_end|>.
	nameTokens := len(`"get_time"`) + 1
	argsTokens := len(forcedTime) + 1
	forced := item{Type: "function_call", Status: "completed", Name: "get_time", Arguments: forcedTime}
	required := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"required"`))
	sameItems(t, "required", required.Output, []item{forced})
	if got, want := required.Usage.OutputTokens, 1+nameTokens+1+nameTokens+argsTokens+1; got != want {
		t.Errorf("required: output_tokens %d, want %d", got, want)
	}
	events, named := createSSE(t, srv, reqBody(model, true, common+`,"tool_choice":{"type":"function","name":"get_time"}`))
	sameItems(t, "named, streamed", named.Output, []item{forced})
	checkDeltasMatch(t, "named, streamed", events, named)
	if got, want := named.Usage.OutputTokens, 1+1+argsTokens+1; got != want {
		t.Errorf("named: output_tokens %d, want %d", got, want)
	}

	callID := first.Output[len(first.Output)-1].CallID
	answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+toolsJSON+
		`,"input":[{"type":"function_call_output","call_id":"`+callID+`","output":"sunny, 21C"}]`))
	sameItems(t, "after the tool result", answer.Output, []item{{Type: "message", Status: "completed", Text: lfm2AnswerText}})
	t.Run("bare call", func(t *testing.T) { lfm2BareCall(t, srv) })
}

// lfm2BareCallText is an LFM2 answer that is nothing but its call, without
// <|tool_call_start|> and <|tool_call_end|>, as LFM2 models sometimes write one.
const lfm2BareCallText = `[get_weather(city="Paris, France")]`

// lfm2BareCall: a model on the lfm2 renderer that answers with a bare call. The call
// is a function_call item as the marked one is, found at the end of the output: no text
// is streamed before it, its arguments come in one delta; the tool loop goes on from it.
// Where the request does not let the model call that tool (allowed_tools without it,
// tool_choice none) the answer is its text.
func lfm2BareCall(t *testing.T, srv *httptest.Server) {
	const model = "hearth-script-lfm2-bare:latest"
	spec := scriptmodel.Spec{
		Renderer: "lfm2", Parser: "lfm2",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: lfm2TurnEntry, Text: lfm2BareCallText},
			{Entry: lfm2AnswerEntry, Text: lfm2AnswerText},
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec)
	if err != nil {
		t.Fatal(err)
	}
	tokens := m.EvalCount(lfm2TurnEntry)
	common := `"input":"Weather in Paris?","temperature":0,` + toolsJSON
	call := item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris, France"}`}
	text := item{Type: "message", Status: "completed", Text: lfm2BareCallText}

	first := createJSON(t, srv, reqBody(model, false, common))
	sameItems(t, "auto", first.Output, []item{call})
	if first.Usage.OutputTokens != tokens {
		t.Errorf("auto: output_tokens %d, want %d", first.Usage.OutputTokens, tokens)
	}

	events, streamed := createSSE(t, srv, reqBody(model, true, common))
	sameItems(t, "auto, streamed", streamed.Output, []item{call})
	// The call is known only at the end: its arguments come in one delta, and no
	// text comes before them.
	var deltas []string
	for _, e := range events {
		typ, _ := e["type"].(string)
		if strings.HasPrefix(typ, "response.output_text") || strings.HasPrefix(typ, "response.content_part") {
			t.Errorf("auto, streamed: %s: the bare call was streamed as text", typ)
		}
		if d, ok := e["delta"].(string); ok && typ == "response.function_call_arguments.delta" {
			deltas = append(deltas, d)
		}
	}
	if len(deltas) != 1 || deltas[0] != call.Arguments {
		t.Errorf("auto, streamed: arguments deltas %q, want one of %s", deltas, call.Arguments)
	}
	if streamed.Usage.OutputTokens != tokens {
		t.Errorf("auto, streamed: output_tokens %d, want %d", streamed.Usage.OutputTokens, tokens)
	}

	for _, c := range []struct{ label, choice string }{
		{"allowed_tools without get_weather", `{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}`},
		{"none", `"none"`},
	} {
		r := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":`+c.choice))
		sameItems(t, c.label, r.Output, []item{text})
		if r.Usage.OutputTokens != tokens {
			t.Errorf("%s: output_tokens %d, want %d", c.label, r.Usage.OutputTokens, tokens)
		}
	}
	allowed := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_weather"}]}`))
	sameItems(t, "allowed_tools with get_weather", allowed.Output, []item{call})
	if allowed.Usage.OutputTokens != tokens {
		t.Errorf("allowed_tools with get_weather: output_tokens %d, want %d", allowed.Usage.OutputTokens, tokens)
	}

	answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+toolsJSON+
		`,"input":[{"type":"function_call_output","call_id":"`+first.Output[0].CallID+`","output":"sunny, 21C"}]`))
	sameItems(t, "after the tool result", answer.Output, []item{{Type: "message", Status: "completed", Text: lfm2AnswerText}})
}

// lfm2ThinkingCallText is an LFM2 thinking model's turn that reasons: it writes the
// <think> block itself (the lfm2-thinking renderer's prompt opens nothing).
const lfm2ThinkingCallText = "<think>The user wants the weather in Paris.</think>" + lfm2CallText

// TestLFM2ThinkingRendererE2E: a model on the lfm2-thinking renderer and parser (Ollama
// v0.32.15's, optional thinking) gets the lfm2-thinking format: a turn that starts with
// <think> is reasoning up to </think>, and a turn that does not is an answer, not
// reasoning (the model decides per turn whether to reason, thinking on or not). The
// reasoning of the calling turn is rendered back in its <think> block before the call,
// so the prompt after the tool result ends as the lfm2 one does.
func TestLFM2ThinkingRendererE2E(t *testing.T) {
	const model = "hearth-script-lfm2-thinking:latest"
	spec := scriptmodel.Spec{
		Renderer: "lfm2-thinking", Parser: "lfm2-thinking",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: lfm2TurnEntry, Text: lfm2ThinkingCallText},
			{Entry: lfm2AnswerEntry, Text: lfm2AnswerText},
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
	call := item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris, France"}`}

	first := createJSON(t, srv, reqBody(model, false, common))
	sameItems(t, "auto", first.Output, []item{reasoning, text, call})
	events, streamed := createSSE(t, srv, reqBody(model, true, common))
	sameItems(t, "auto, streamed", streamed.Output, []item{reasoning, text, call})
	checkDeltasMatch(t, "auto, streamed", events, streamed)

	callID := first.Output[len(first.Output)-1].CallID
	for _, effort := range []string{"", `"reasoning":{"effort":"high"},`} {
		answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+effort+toolsJSON+
			`,"input":[{"type":"function_call_output","call_id":"`+callID+`","output":"sunny, 21C"}]`))
		sameItems(t, "after the tool result "+effort, answer.Output, []item{{Type: "message", Status: "completed", Text: lfm2AnswerText}})
	}
}
