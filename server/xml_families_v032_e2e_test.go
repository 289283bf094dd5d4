package server_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// The families whose renderers Ollama added after v0.24.0 and whose calls are XML:
// Qwen 3.8 and Ornith (Qwen 3.5's prompt and calls), Nemotron 3.5 Nano (Nemotron 3
// Nano's) and Poolside v1 (Laguna's pairs), rendered from their models.json templates.
// The embedded runtime renders them with the same registered templates, and a model on
// Ornith's, Nemotron 3.5's or Poolside's parser is a thinking model, as its format's
// reasoning says. Laguna and Nemotron 3 Nano, whose renderers v0.24.0 has too, are here
// rendered from their templates as well.

// familyServer creates spec as the script model named model on the tests' runtime and
// serves hearth over it: where each family's tool loop starts.
func familyServer(t *testing.T, model string, spec scriptmodel.Spec) (*scriptmodel.Model, *httptest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	built, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec)
	if err != nil {
		t.Fatal(err)
	}
	return built, newHearthWithDB(t)
}

// The family tool loops' request (the weather in Paris, with the two tools) and the
// reasoning each family's script writes for it.
var (
	weatherRequest   = `"input":"Weather in Paris?","temperature":0,` + toolsJSON
	weatherReasoning = item{Type: "reasoning", Status: "completed", Text: "The user wants the weather in Paris."}
)

// xmlFamilyLoop is the tool loop of a script model on a renderer whose calls are XML:
// auto (JSON and streamed), none, required, named, allowed_tools and a strict tool,
// with exact items and output tokens, then the answer after the tool result.
// thinkingEntry is what the renderer ends a thinking prompt with, answerEntry
// what it ends a prompt with when reasoning is off (the tool result's turn asks
// reasoning.effort none); the thinking script writes reasoning up to "</think>", "Let
// me check." and a get_weather call for Paris. nameIsPiece says that the script
// writes get_weather's name as a token of its own (Laguna's pairs put nothing around
// the name), which changes what "required" makes, see there.
func xmlFamilyLoop(t *testing.T, model string, spec scriptmodel.Spec, thinkingEntry, answerEntry string, nameIsPiece bool) {
	t.Helper()
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
	// engine writes the family's opener (Qwen's "<tool_call>\n<function=") and, for
	// "required", the name is generated under an enum of both tools (the script's
	// successor is masked: the ranking picks "get_time", 't' before 'w'); a named
	// call's name is written. After the name the script has no parameters to write
	// (it ends its turn: one EOS), so the call is taken back and generated again, its
	// parameters now as JSON under get_time's schema (the ranking closes the string at
	// once), which the engine writes in the family's XML. After the call's closer the
	// script ends (one EOS). A model that does not fit stays bounded: one retry, then
	// the response fails.
	throughReasoning := piecesThrough(t, built.Pieces(thinkingEntry), "</think>")
	nameTokens := len(`"get_time"`) + 1
	argsTokens := len(forcedTime) + 1
	forced := item{Type: "function_call", Status: "completed", Name: "get_time", Arguments: forcedTime}
	forcedRequired, requiredNameTokens, requiredArgsTokens := forced, nameTokens, argsTokens
	if nameIsPiece {
		// The script's next token after the opener is its name, "get_weather", one
		// token, which the name's JSON string admits after its quote: the model keeps
		// its own tool (as the runtime picks it over get_time's first letter, equally
		// ranked there), in three tokens and EOS. Its retried parameters are
		// {"city":""}, with "city" one token of the script: eight tokens and EOS.
		forcedRequired = item{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":""}`}
		requiredNameTokens, requiredArgsTokens = 3+1, 8+1
	}
	required := createJSON(t, srv, reqBody(model, false, common+`,"tool_choice":"required"`))
	sameItems(t, "required", required.Output, []item{reasoning, forcedRequired})
	if got, want := required.Usage.OutputTokens, throughReasoning+requiredNameTokens+1+requiredNameTokens+requiredArgsTokens+1; got != want {
		t.Errorf("required: output_tokens %d, want %d", got, want)
	}
	events, named := createSSE(t, srv, reqBody(model, true, common+`,"tool_choice":{"type":"function","name":"get_time"}`))
	sameItems(t, "named, streamed", named.Output, []item{reasoning, forced})
	checkDeltasMatch(t, "named, streamed", events, named)
	if got, want := named.Usage.OutputTokens, throughReasoning+1+argsTokens+1; got != want {
		t.Errorf("named: output_tokens %d, want %d", got, want)
	}
	allowed := createJSON(t, srv, reqBody(model, false, common+
		`,"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"get_time"}]}`))
	sameItems(t, "allowed_tools", allowed.Output, []item{reasoning, forced})

	// strict: with a strict tool offered, the call the model opens is generated under
	// the grammar from its opener on: the name under an enum of the tools (as for
	// "required" above), the parameters as JSON under that tool's schema, written in
	// the family's XML.
	strictTools := strings.Replace(toolsJSON, `"name":"get_weather",`, `"name":"get_weather","strict":true,`, 1)
	strict := createJSON(t, srv, reqBody(model, false, `"input":"Weather in Paris?","temperature":0,`+strictTools))
	sameItems(t, "strict", strict.Output, []item{reasoning, text, forcedRequired})

	callID := first.Output[len(first.Output)-1].CallID
	answer := createJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+first.ID+`","temperature":0,`+
		`"reasoning":{"effort":"none"},`+toolsJSON+
		`,"input":[{"type":"function_call_output","call_id":"`+callID+`","output":"sunny, 21C"}]`))
	sameItems(t, "after the tool result", answer.Output, []item{{Type: "message", Status: "completed", Text: qwen35AnswerText}})
}

// TestQwen38RendererE2E: a model on Qwen 3.8's renderer, which names qwen3.5's parser,
// gets the qwen3.8 format (the renderer decides): Qwen 3.5's endings and calls. Qwen
// 3.8 renders every assistant turn's think block and a reasoning-effort line in the
// system turn, neither of which changes the prompt's ending.
func TestQwen38RendererE2E(t *testing.T) {
	xmlFamilyLoop(t, "hearth-script-qwen38:latest", scriptmodel.Spec{
		Renderer: "qwen3.8", Parser: "qwen3.5",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: qwen35ThinkingEntry, Text: qwen35CallText},
			{Entry: qwen35AnswerEntry, Text: qwen35AnswerText},
		},
	}, qwen35ThinkingEntry, qwen35AnswerEntry, false)
}

// TestOrnithRendererE2E: a model on the ornith renderer and parser (Qwen 3.5's, every
// assistant turn's think block rendered) gets the ornith format.
func TestOrnithRendererE2E(t *testing.T) {
	xmlFamilyLoop(t, "hearth-script-ornith:latest", scriptmodel.Spec{
		Renderer: "ornith", Parser: "ornith",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: qwen35ThinkingEntry, Text: qwen35CallText},
			{Entry: qwen35AnswerEntry, Text: qwen35AnswerText},
		},
	}, qwen35ThinkingEntry, qwen35AnswerEntry, false)
}

// Nemotron 3.5 Nano's renderer ends a thinking prompt with "<think>\n" and one without
// reasoning with "<think></think>"; it writes reasoning without a newline before
// </think>, as its model does.
const (
	nemotron35ThinkingEntry = "<think>\n"
	nemotron35AnswerEntry   = "<think></think>"
	nemotron35CallText      = "The user wants the weather in Paris.</think>Let me check.\n" +
		"<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n"
)

// TestNemotron35RendererE2E: a model on the nemotron-3.5-nano renderer and parser gets
// the nemotron-3.5-nano format.
func TestNemotron35RendererE2E(t *testing.T) {
	xmlFamilyLoop(t, "hearth-script-nemotron35:latest", scriptmodel.Spec{
		Renderer: "nemotron-3.5-nano", Parser: "nemotron-3.5-nano",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: nemotron35ThinkingEntry, Text: nemotron35CallText},
			{Entry: nemotron35AnswerEntry, Text: qwen35AnswerText},
		},
	}, nemotron35ThinkingEntry, nemotron35AnswerEntry, false)
}

// Poolside v1's renderer (Ollama's LagunaV8Renderer) ends a prompt with the
// assistant's block and "<think>" when thinking, "</think>" when not; calls are
// Laguna's pairs, written without newlines.
const (
	poolsideThinkingEntry = "<assistant><think>"
	poolsideAnswerEntry   = "<assistant></think>"
	poolsideCallText      = "The user wants the weather in Paris.</think>Let me check." +
		"<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
)

// TestPoolsideV1RendererE2E: a model on the poolside-v1 renderer and parser gets the
// poolside-v1 format, and reasons when not told otherwise (a thinking model).
func TestPoolsideV1RendererE2E(t *testing.T) {
	xmlFamilyLoop(t, "hearth-script-poolside:latest", scriptmodel.Spec{
		Renderer: "poolside-v1", Parser: "poolside-v1",
		Stop: []string{"</assistant>", "<user>"},
		Scripts: []scriptmodel.Script{
			{Entry: poolsideThinkingEntry, Text: poolsideCallText},
			{Entry: poolsideAnswerEntry, Text: qwen35AnswerText},
		},
	}, poolsideThinkingEntry, poolsideAnswerEntry, true)
}

// TestRendererBOSOnceE2E: Cohere's template writes the model's BOS as text
// ({{ bos_token }}, the GGUF's <BOS_TOKEN>) first in every prompt. A model whose
// tokenizer also adds its BOS token (tokenizer.ggml.add_bos_token) is sent the prompt
// without that text, as Ollama's own chat does since v0.32, so it sees one BOS as the
// same model without the flag does: the two count the same input tokens. (Sent as
// rendered, the runtime's tokenizer adds a second: one more input token.)
func TestRendererBOSOnceE2E(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scripts := []scriptmodel.Script{
		{Entry: cohereTurnEntry, Text: cohereCallText},
		{Entry: cohereAnswerEntry, Text: cohereAnswerText},
	}
	inputTokens := map[bool]int{}
	srv := newHearthWithDB(t)
	for _, addBOS := range []bool{false, true} {
		model := "hearth-script-cohere-bos:latest"
		if addBOS {
			model = "hearth-script-cohere-addbos:latest"
		}
		spec := scriptmodel.Spec{Renderer: "cohere", Parser: "cohere", Stop: []string{"<|END_OF_TURN_TOKEN|>"},
			BOS: "<BOS_TOKEN>", AddBOS: addBOS, Scripts: scripts}
		if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec); err != nil {
			t.Fatal(err)
		}
		resp := createJSON(t, srv, reqBody(model, false, weatherRequest))
		sameItems(t, model, resp.Output, []item{weatherReasoning,
			{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris"}`}})
		inputTokens[addBOS] = resp.Usage.InputTokens
	}
	if inputTokens[true] != inputTokens[false] || inputTokens[false] == 0 {
		t.Errorf("input_tokens %d with the tokenizer adding BOS, %d without: want the same", inputTokens[true], inputTokens[false])
	}
}

// Laguna's renderer (Ollama v0.32.15's, which hearth takes over v0.24.0's: Laguna XS.2's
// own template) ends a prompt with a fresh assistant block that opens the reasoning
// when thinking and closes it when not; the system block asks for calls as <arg_key>
// pairs, one per line, which is how the script writes its call.
const (
	lagunaThinkingEntry = "<assistant>\n<think>"
	lagunaAnswerEntry   = "<assistant>\n</think>"
	lagunaCallText      = "\nThe user wants the weather in Paris.\n</think>\nLet me check.\n" +
		"<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
)

// TestLagunaRendererE2E: a model on the laguna renderer and parser gets the laguna
// format, and reasons when not told otherwise (a thinking model, so hearth asks for
// thinking, and the prompt opens it).
func TestLagunaRendererE2E(t *testing.T) {
	xmlFamilyLoop(t, "hearth-script-laguna:latest", scriptmodel.Spec{
		Renderer: "laguna", Parser: "laguna",
		Stop: []string{"</assistant>", "<user>"},
		Scripts: []scriptmodel.Script{
			{Entry: lagunaThinkingEntry, Text: lagunaCallText},
			{Entry: lagunaAnswerEntry, Text: qwen35AnswerText},
		},
	}, lagunaThinkingEntry, lagunaAnswerEntry, true)
}

// TestNemotron3NanoRendererE2E: a model on the nemotron-3-nano renderer (Ollama
// v0.32.15's, which hearth takes over v0.24.0's, whose prompts had blank lines the
// template lacks) and parser gets the nemotron-3-nano format; its prompts end as
// Nemotron 3.5 Nano's do.
func TestNemotron3NanoRendererE2E(t *testing.T) {
	xmlFamilyLoop(t, "hearth-script-nemotron3nano:latest", scriptmodel.Spec{
		Renderer: "nemotron-3-nano", Parser: "nemotron-3-nano",
		Stop: []string{"<|im_end|>"},
		Scripts: []scriptmodel.Script{
			{Entry: nemotron35ThinkingEntry, Text: nemotron35CallText},
			{Entry: nemotron35AnswerEntry, Text: qwen35AnswerText},
		},
	}, nemotron35ThinkingEntry, nemotron35AnswerEntry, false)
}

// TestEmbeddedChatReadsLagunaE2E: the embedded runtime's own chat (/api/chat through
// hearth's /api passthrough) renders a laguna model's prompt, which opens the reasoning
// when thinking, and reads the output with the laguna format (engine/ollama/chatparser),
// which starts in that reasoning: the thinking, the text and the call come apart as the
// Responses API reads them. (v0.24.0's parser, which does not start in reasoning, would
// return the reasoning and its </think> as content.)
func TestEmbeddedChatReadsLagunaE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "a stock ollama serve reads laguna output with its own parser; hearth registers v0.32.15's in its own process")
	const model = "hearth-script-laguna-chat:latest"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, scriptmodel.Spec{
		Renderer: "laguna", Parser: "laguna",
		Stop:    []string{"</assistant>", "<user>"},
		Scripts: []scriptmodel.Script{{Entry: lagunaThinkingEntry, Text: lagunaCallText}},
	}); err != nil {
		t.Fatal(err)
	}
	srv := newHearthWithDB(t)
	st, _, body := call(t, ctx, "POST", srv.URL+"/api/chat", "", `{"model":"`+model+`","stream":false,"think":true,`+
		`"options":{"temperature":0},"messages":[{"role":"user","content":"Weather in Paris?"}],`+
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]}`)
	if st != 200 {
		t.Fatalf("/api/chat: %d %s", st, body)
	}
	var reply struct {
		Message struct {
			Content, Thinking string
			ToolCalls         []struct {
				Function struct {
					Name      string
					Arguments map[string]any
				}
			} `json:"tool_calls"`
		}
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	m := reply.Message
	if m.Thinking != "The user wants the weather in Paris." || m.Content != "Let me check." ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Name != "get_weather" || m.ToolCalls[0].Function.Arguments["city"] != "Paris" {
		t.Errorf("/api/chat message: %s", body)
	}
}
