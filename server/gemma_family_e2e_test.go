package server_test

import (
	"context"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// Gemma 4's template (models.json's gemma4, rendered for the gemma4 renderer and its
// sizes) ends a prompt with the model's turn, "<|turn>model\n", thinking or not. Tool
// results it writes into the calling turn, right after the calls, as
// <|tool_response>response:NAME{value:...}<tool_response|>, and the model goes on in
// the same turn: a thinking prompt (a model with the thinking capability thinks unless
// told not to) then opens the thought channel, "<|channel>thought\n", so the answer
// starts in reasoning; without thinking the prompt ends at "<tool_response|>". Those
// are the script's entry tokens. Its call is
// Gemma's bare-key syntax with <|"|> string quotes.
const (
	gemma4TurnEntry   = "<|turn>model\n"
	gemma4AnswerEntry = "<tool_response|>"
	// gemma4ThoughtEntry is the last token of "<|channel>thought\n" (the script's
	// tokens are matched longest first, so "<|channel>" is another).
	gemma4ThoughtEntry = "thought\n"
	gemma4CallText     = "<|channel>thought\nThe user wants the weather in Paris.\n<channel|>Let me check." +
		`<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>`
	gemma4AnswerText        = "It is sunny in Paris, 21 degrees."
	gemma4ThoughtAnswerText = "The tool says sunny.\n<channel|>" + gemma4AnswerText
)

// TestGemma4RendererE2E: a model the runtime renders with its gemma4 renderer gets
// hearth's gemma4 format: its reasoning, text and call become exact items, streamed or
// not; tool_choice none ends the output at the call's opener; a forced call (required,
// named) is made in constrained phases and written in Gemma's syntax; the tool loop's
// answer after the result (shown by the renderer as a tool response) is a message.
func TestGemma4RendererE2E(t *testing.T) {
	const model = "hearth-script-gemma4:latest"
	spec := scriptmodel.Spec{
		Renderer: "gemma4", Parser: "gemma4",
		Stop: []string{"<turn|>", "<|tool_response>"},
		Scripts: []scriptmodel.Script{
			{Entry: gemma4TurnEntry, Text: gemma4CallText},
			{Entry: gemma4AnswerEntry, Text: gemma4AnswerText},
			{Entry: gemma4ThoughtEntry, Text: gemma4ThoughtAnswerText},
		},
	}
	built, srv := familyServer(t, model, spec)
	common, reasoning := weatherRequest, weatherReasoning
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
	// engine writes "<|tool_call>call:" and, for "required", the name is generated
	// under an enum of both tools (the ranking picks "get_time", 't' before 'w'); a
	// named call's name is written. After "get_time{" the script has no arguments to
	// write (one EOS), so the call is taken back and generated again, its arguments
	// now as JSON under get_time's schema (the ranking closes the string at once),
	// which the engine writes in Gemma's syntax, timezone:<|"|><|"|>}<tool_call|>.
	// After the call's closer the script ends (one EOS).
	throughReasoning := piecesThrough(t, built.Pieces(gemma4TurnEntry), "<channel|>")
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
	result := `,"input":[{"type":"function_call_output","call_id":"` + callID + `","output":"sunny, 21C"}]`
	answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+toolsJSON+result))
	sameItems(t, "after the tool result", answer.Output, []item{
		{Type: "reasoning", Status: "completed", Text: "The tool says sunny."},
		{Type: "message", Status: "completed", Text: gemma4AnswerText}})
	quiet := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,"reasoning":{"effort":"none"},`+toolsJSON+result))
	sameItems(t, "after the tool result, not thinking", quiet.Output, []item{{Type: "message", Status: "completed", Text: gemma4AnswerText}})
}

// FunctionGemma's renderer (model/renderers/functiongemma.go in Ollama v0.24.0) ends a
// prompt with "<start_of_turn>model\n"; tool results follow the calls in the same
// turn, each as response:NAME{<escape>...<escape>}<end_function_response>, and no new
// turn is opened after them. Its call is Gemma's syntax with <escape> string quotes;
// it does not reason.
const (
	functionGemmaTurnEntry   = "<start_of_turn>model\n"
	functionGemmaAnswerEntry = "<end_function_response>"
	functionGemmaCallText    = "Let me check.<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>"
	functionGemmaAnswerText  = "It is sunny in Paris, 21 degrees."
)

// TestFunctionGemmaRendererE2E: the same as TestGemma4RendererE2E for a model on the
// runtime's functiongemma renderer. A model that does not reason has a required call
// forced at once, before it writes anything.
func TestFunctionGemmaRendererE2E(t *testing.T) {
	const model = "hearth-script-functiongemma:latest"
	spec := scriptmodel.Spec{
		Renderer: "functiongemma", Parser: "functiongemma",
		Stop: []string{"<end_of_turn>", "<start_function_response>"},
		Scripts: []scriptmodel.Script{
			{Entry: functionGemmaTurnEntry, Text: functionGemmaCallText},
			{Entry: functionGemmaAnswerEntry, Text: functionGemmaAnswerText},
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
	call := item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris"}`}

	first := createJSON(t, srv, reqBody(model, false, common))
	sameItems(t, "auto", first.Output, []item{text, call})

	events, streamed := createSSE(t, srv, reqBody(model, true, common))
	sameItems(t, "auto, streamed", streamed.Output, []item{text, call})
	checkDeltasMatch(t, "auto, streamed", events, streamed)

	none := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"none"`))
	sameItems(t, "none", none.Output, []item{text})

	// Forced calls: the format has no reasoning, so the engine writes
	// "<start_function_call>call:" at once; then as in TestGemma4RendererE2E (the name under
	// an enum for "required", one EOS after "get_time{", the retry's arguments as
	// JSON written as timezone:<escape><escape>}<end_function_call>, one EOS).
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
	sameItems(t, "after the tool result", answer.Output, []item{{Type: "message", Status: "completed", Text: functionGemmaAnswerText}})
}
