package server_test

import (
	"testing"

	"hearth/scriptmodel"
)

// Cohere's template (models.json's cohere, for the cohere renderer) ends every prompt
// with the chatbot's turn and, thinking on (its default), <|START_THINKING|>; the user's
// turn ends with its text, a tool result's with <|END_TOOL_RESULT|>, which tells the
// script model's two entry tokens apart. Its calls
// are a JSON array between <|START_ACTION|> and <|END_ACTION|>; its text is wrapped in
// <|START_TEXT|> and <|END_TEXT|>.
const (
	cohereTurn        = "<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>"
	cohereTurnEntry   = "?" + cohereTurn
	cohereAnswerEntry = "]<|END_TOOL_RESULT|>" + cohereTurn
	cohereCallText    = "The user wants the weather in Paris.<|END_THINKING|><|START_ACTION|>[" +
		`{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>`
	cohereAnswerText = "The result is in.<|END_THINKING|><|START_TEXT|>It is sunny in Paris, 21 degrees.<|END_TEXT|>"
)

// TestCohereRendererE2E: a model on the cohere renderer gets hearth's cohere format: its
// reasoning (which the prompt opened) and its action become exact items, streamed or
// not; tool_choice none ends the output at the action's opener; a forced call
// (required, named) is generated under the JSON array's grammar where the reasoning
// ends; the tool loop's answer after the result is reasoning and a message.
func TestCohereRendererE2E(t *testing.T) {
	const model = "hearth-script-cohere:latest"
	spec := scriptmodel.Spec{
		Renderer: "cohere", Parser: "cohere",
		Stop: []string{"<|END_OF_TURN_TOKEN|>"},
		Scripts: []scriptmodel.Script{
			{Entry: cohereTurnEntry, Text: cohereCallText},
			{Entry: cohereAnswerEntry, Text: cohereAnswerText},
		},
	}
	built, srv := familyServer(t, model, spec)
	common, reasoning := weatherRequest, weatherReasoning
	call := item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris"}`}

	first := createJSON(t, srv, reqBody(model, false, common))
	sameItems(t, "auto", first.Output, []item{reasoning, call})

	events, streamed := createSSE(t, srv, reqBody(model, true, common))
	sameItems(t, "auto, streamed", streamed.Output, []item{reasoning, call})
	checkDeltasMatch(t, "auto, streamed", events, streamed)

	none := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"none"`))
	sameItems(t, "none", none.Output, []item{reasoning})

	// Forced calls: the reasoning runs to <|END_THINKING|>, where the engine writes
	// <|START_ACTION|> and the call is generated under the array's grammar (the
	// script's successor is masked: the ranking picks get_time, 't' before 'w', and
	// the empty timezone), one byte token a character, then EOS; after the closer
	// the engine writes, one more EOS.
	throughReasoning := piecesThrough(t, built.Pieces(cohereTurnEntry), "<|END_THINKING|>")
	callTokens := len(`[{"tool_name":"get_time","parameters":{"timezone":""}}]`) + 1
	forced := item{Type: "function_call", Status: "completed", Name: "get_time", Arguments: forcedTime}
	required := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"required"`))
	sameItems(t, "required", required.Output, []item{reasoning, forced})
	if got, want := required.Usage.OutputTokens, throughReasoning+callTokens+1; got != want {
		t.Errorf("required: output_tokens %d, want %d", got, want)
	}
	events, named := createSSE(t, srv, reqBody(model, true, common+`,"tool_choice":{"type":"function","name":"get_time"}`))
	sameItems(t, "named, streamed", named.Output, []item{reasoning, forced})
	checkDeltasMatch(t, "named, streamed", events, named)
	if got, want := named.Usage.OutputTokens, throughReasoning+callTokens+1; got != want {
		t.Errorf("named: output_tokens %d, want %d", got, want)
	}

	callID := first.Output[len(first.Output)-1].CallID
	answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+toolsJSON+
		`,"input":[{"type":"function_call_output","call_id":"`+callID+`","output":"sunny, 21C"}]`))
	sameItems(t, "after the tool result", answer.Output, []item{
		{Type: "reasoning", Status: "completed", Text: "The result is in."},
		{Type: "message", Status: "completed", Text: "It is sunny in Paris, 21 degrees."}})
}

// Glimmer's renderer (Ollama v0.32.15 model/renderers/glimmer.go) ends every prompt
// with "<|start|>assistant", the header of the model's next message, whose recipient the
// model writes; the user's turn ends with "?<|eot|>", a tool result with
// "</tool_output><|eot|>". Reasoning is a message to=self, a call a message to the
// function whose body is an ATEM block.
const (
	glimmerTurnEntry   = "?<|eot|><|start|>assistant"
	glimmerAnswerEntry = "</tool_output><|eot|><|start|>assistant"
	glimmerCallText    = " to=self<|message|>The user wants the weather in Paris.<|eom|>" +
		"<|start|>assistant to=get_weather<|message|><atem:function_calls>\n<atem:invoke name=\"get_weather\">\n" +
		"<atem:parameter name=\"city\">Paris, France</atem:parameter>\n</atem:invoke>\n</atem:function_calls>"
	glimmerAnswerText = " to=user<|message|>It is sunny in Paris, 21 degrees."
)

// TestGlimmerRendererE2E: a model on the glimmer renderer gets hearth's glimmer format:
// its self message and its ATEM call become exact items, streamed or not; tool_choice
// none ends the output at the block's opener; a forced call (required, named) is made
// where the self message ends, its header and block written by the engine; the tool
// loop's answer after the result is a message.
func TestGlimmerRendererE2E(t *testing.T) {
	const model = "hearth-script-glimmer:latest"
	spec := scriptmodel.Spec{
		Renderer: "glimmer", Parser: "glimmer",
		Stop: []string{"<|eot|>"},
		Scripts: []scriptmodel.Script{
			{Entry: glimmerTurnEntry, Text: glimmerCallText},
			{Entry: glimmerAnswerEntry, Text: glimmerAnswerText},
		},
	}
	built, srv := familyServer(t, model, spec)
	common, reasoning := weatherRequest, weatherReasoning
	call := item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris, France"}`}

	first := createJSON(t, srv, reqBody(model, false, common))
	sameItems(t, "auto", first.Output, []item{reasoning, call})

	events, streamed := createSSE(t, srv, reqBody(model, true, common))
	sameItems(t, "auto, streamed", streamed.Output, []item{reasoning, call})
	checkDeltasMatch(t, "auto, streamed", events, streamed)

	none := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"none"`))
	sameItems(t, "none", none.Output, []item{reasoning})

	// Forced calls: the self message runs to its <|eom|>, where the engine opens the
	// call's message, "<|start|>assistant to=", the name under an enum for "required"
	// (the ranking picks "get_time"), then the name's message and block opener; the
	// script writes nothing after that (one EOS), so the call is taken back and
	// generated again, its arguments as JSON under get_time's schema, which the engine
	// writes as the block's parameters and closers; then one EOS.
	throughReasoning := piecesThrough(t, built.Pieces(glimmerTurnEntry), "<|eom|>")
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
	answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+toolsJSON+
		`,"input":[{"type":"function_call_output","call_id":"`+callID+`","output":"sunny, 21C"}]`))
	sameItems(t, "after the tool result", answer.Output, []item{{Type: "message", Status: "completed", Text: "It is sunny in Paris, 21 degrees."}})
}
