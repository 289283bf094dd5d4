package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// piecesThrough is the number of tokens the script writes up to and including the
// token that completes the first occurrence of marker.
func piecesThrough(t *testing.T, pieces []string, marker string) int {
	t.Helper()
	var sb strings.Builder
	for i, p := range pieces {
		sb.WriteString(p)
		if strings.Contains(sb.String(), marker) {
			return i + 1
		}
	}
	t.Fatalf("script never writes %q", marker)
	return 0
}

// forcedTime is the call the grammar produces for get_time from the script models:
// when the script's own next token is masked, the best allowed token by the models'
// preference ranking wins, so the timezone string closes at once.
const forcedTime = `{"timezone":""}`

// forcedTimeTokens is what that constrained continuation costs: one byte token per
// character of {"name":"get_time","arguments":{"timezone":""}}, then EOS. The free
// phase after the engine writes the closer ends with one more EOS.
const forcedTimeTokens = len(`{"name":"get_time","arguments":{"timezone":""}}`) + 1

func TestToolChoiceE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	a := scriptmodel.EntryAssistant
	pieces := tools.Pieces(a)
	reasoning := item{Type: "reasoning", Status: "completed", Text: "I need the weather and the local time."}
	throughOpener := piecesThrough(t, pieces, "<tool_call>")
	throughReasoning := piecesThrough(t, pieces, "</think>")
	// The engine stops the runtime as soon as the call is complete: the token that
	// closes its JSON, before the closer tag.
	throughFirstCall := piecesThrough(t, pieces, `"Paris"}}`)
	// temperature 0: under a grammar the script's successor is often masked and
	// the choice among the ranked fallbacks must not be sampled.
	common := `"input":"weather and time in Paris?","temperature":0,` + toolsJSON

	// Each constrained case costs a few seconds of script-model decoding on a small
	// CPU; the stream is checked where the stopping and restarting show most.
	cases := []struct {
		name   string
		model  string
		choice string
		want   []item
		output int
		sse    bool
	}{
		{
			// The script calls get_weather first; only get_time may be called. The
			// engine stops at the opener and continues under the get_time grammar;
			// after the closer the script ends.
			"allowed_tools excludes the script's call", scriptmodel.ToolsModel,
			`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}`,
			[]item{reasoning, {Type: "function_call", Status: "completed", Name: "get_time", Arguments: forcedTime}},
			throughOpener + forcedTimeTokens + 1, true,
		},
		{
			// The opener ends the output cleanly: no call, no markup.
			"none", scriptmodel.ToolsModel, `"tool_choice":"none"`,
			[]item{reasoning},
			throughOpener, true,
		},
		{
			// The plain script answers in text. Its first token is taken back and the
			// engine writes the opener; of the two tools the grammar allows, the
			// ranking picks get_time ('t' before 'w').
			"required on a text answer", scriptmodel.PlainModel, `"tool_choice":"required"`,
			[]item{{Type: "function_call", Status: "completed", Name: "get_time", Arguments: forcedTime}},
			1 + forcedTimeTokens + 1, true,
		},
		{
			// Reasoning runs to its end, then the named call is written.
			"named function", scriptmodel.ToolsModel, `"tool_choice":{"type":"function","name":"get_time"}`,
			[]item{reasoning, {Type: "function_call", Status: "completed", Name: "get_time", Arguments: forcedTime}},
			throughReasoning + forcedTimeTokens + 1, false,
		},
		{
			// The script writes two calls; the first passes (valid, allowed) and the
			// output ends after it.
			"parallel_tool_calls false", scriptmodel.ToolsModel, `"parallel_tool_calls":false`,
			[]item{reasoning, {Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
			throughFirstCall, false,
		},
		{
			"max_tool_calls 1", scriptmodel.ToolsModel, `"max_tool_calls":1`,
			[]item{reasoning, {Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
			throughFirstCall, false,
		},
	}
	schemas := toolSchemas(t)
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			if stream && !tc.sse {
				continue
			}
			label := tc.name + map[bool]string{false: " (json)", true: " (sse)"}[stream]
			body := reqBody(tc.model, stream, common+","+tc.choice)
			var r *hearth.Response
			if stream {
				var events []map[string]any
				events, r = createSSE(t, srv, body)
				checkDeltasMatch(t, label, events, r)
			} else {
				r = createJSON(t, srv, body)
			}
			if r.Status != hearth.StatusCompleted || r.Usage == nil {
				t.Fatalf("%s: status %s usage %v error %+v", label, r.Status, r.Usage, r.Error)
			}
			sameItems(t, label, r.Output, tc.want)
			if r.Usage.OutputTokens != tc.output {
				t.Errorf("%s: output_tokens %d, want %d", label, r.Usage.OutputTokens, tc.output)
			}
			if r.Usage.InputTokens <= 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
				t.Errorf("%s: usage %+v", label, *r.Usage)
			}
			for _, it := range r.Output {
				if it.Type == hearth.ItemMessage && strings.Contains(it.Text(hearth.PartOutputText), "<tool_call>") {
					t.Errorf("%s: call markup leaked into text: %q", label, it.Text(hearth.PartOutputText))
				}
				if it.Type != hearth.ItemFunctionCall {
					continue
				}
				var args any
				if err := json.Unmarshal([]byte(it.Arguments), &args); err != nil {
					t.Fatalf("%s: arguments %q: %v", label, it.Arguments, err)
				}
				if err := schemas[it.Name].Validate(args); err != nil {
					t.Errorf("%s: arguments of %s %s do not match its schema: %v", label, it.Name, it.Arguments, err)
				}
			}
		}
	}
}

// toolSchemas compiles the parameters of toolsJSON's tools.
func toolSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	var body struct {
		Tools []struct {
			Name       string
			Parameters json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte("{"+toolsJSON+"}"), &body); err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Schema{}
	for _, tool := range body.Tools {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(tool.Parameters)))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(tool.Name+".json", doc); err != nil {
			t.Fatal(err)
		}
		if out[tool.Name], err = c.Compile(tool.Name + ".json"); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestMaxOutputTokensE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	long := testenv.Model(t, scriptmodel.LongModel)
	pieces := long.Pieces(scriptmodel.EntryAssistant)
	const budget = 16
	want := []item{{Type: "message", Status: "incomplete", Text: strings.Join(pieces[:budget], "")}}
	for _, stream := range []bool{false, true} {
		label := map[bool]string{false: "json", true: "sse"}[stream]
		body := reqBody(scriptmodel.LongModel, stream, `"input":"tell me a story","max_output_tokens":16`)
		var r *hearth.Response
		if stream {
			events, resp := createSSE(t, srv, body)
			r = resp
			if typ := events[len(events)-1]["type"]; typ != "response.incomplete" {
				t.Errorf("%s: stream ends with %v, want response.incomplete", label, typ)
			}
			done := 0
			for _, e := range events {
				if e["type"] == "response.output_item.done" {
					done++
					if st := e["item"].(map[string]any)["status"]; st != "incomplete" {
						t.Errorf("%s: output_item.done status %v, want incomplete", label, st)
					}
				}
			}
			if done != 1 {
				t.Errorf("%s: %d output_item.done events, want 1", label, done)
			}
		} else {
			r = createJSON(t, srv, body)
		}
		if r.Status != hearth.StatusIncomplete || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" {
			t.Fatalf("%s: status %s, incomplete_details %+v", label, r.Status, r.IncompleteDetails)
		}
		sameItems(t, label, r.Output, want)
		if r.Usage == nil || r.Usage.OutputTokens != budget {
			t.Errorf("%s: usage %+v, want output_tokens %d", label, r.Usage, budget)
		}
	}
}

// TestBudgetAcrossPhasesE2E: max_output_tokens counts the free phase and the
// constrained continuation together, and a call cut by it is the last item, incomplete.
func TestBudgetAcrossPhasesE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	throughOpener := piecesThrough(t, tools.Pieces(scriptmodel.EntryAssistant), "<tool_call>")
	// The budget ends 23 bytes into {"name":"get_time","arguments":...: the name is
	// complete, the arguments have not started.
	budget := throughOpener + len(`{"name":"get_time","arg`)
	r := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false, `"input":"weather and time in Paris?","temperature":0,`+toolsJSON+
		`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]},"max_output_tokens":`+itoa(budget)))
	if r.Status != hearth.StatusIncomplete || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" {
		t.Fatalf("status %s, incomplete_details %+v", r.Status, r.IncompleteDetails)
	}
	sameItems(t, "budget across phases", r.Output, []item{
		{Type: "reasoning", Status: "completed", Text: "I need the weather and the local time."},
		{Type: "function_call", Status: "incomplete", Name: "get_time"},
	})
	if r.Usage.OutputTokens != budget {
		t.Errorf("output_tokens %d, want %d", r.Usage.OutputTokens, budget)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestContextWindowE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	small := testenv.Model(t, scriptmodel.SmallContextModel)
	a := scriptmodel.EntryAssistant
	// Far more than 256 tokens: the script tokenizer spends one token per byte.
	longText := strings.Repeat("tell me more about this ", 20)
	older := `{"role":"user","content":"` + longText + `"},{"role":"assistant","content":"Sure."},`
	cases := []struct {
		name   string
		extra  string
		status int
	}{
		{"long last turn, truncation disabled", `"input":"` + longText + `"`, 400},
		{"long last turn, truncation auto", `"input":"` + longText + `","truncation":"auto"`, 400},
		{"long older turn, truncation disabled", `"input":[` + older + `{"role":"user","content":"hi"}]`, 400},
		{"long older turn, truncation auto", `"input":[` + older + `{"role":"user","content":"hi"}],"truncation":"auto"`, 200},
		{"short input, budget beyond the window", `"input":"hi","max_output_tokens":250`, 400},
		{"short input, budget within the window", `"input":"hi","max_output_tokens":100`, 200},
	}
	for _, tc := range cases {
		resp, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.SmallContextModel, false, tc.extra))
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, resp.StatusCode, tc.status, b)
			continue
		}
		if tc.status == http.StatusOK {
			var r hearth.Response
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			sameItems(t, tc.name, r.Output, []item{{Type: "message", Status: "completed", Text: small.Text(a)}})
			if r.Usage.InputTokens+small.EvalCount(a) > scriptmodel.SmallContext {
				t.Errorf("%s: %d input tokens do not leave room for the answer", tc.name, r.Usage.InputTokens)
			}
			continue
		}
		var env struct {
			Error struct {
				Code, Param, Message string
			}
		}
		json.Unmarshal(b, &env)
		if env.Error.Code != hearth.CodeContextLengthExceeded || env.Error.Param != "input" {
			t.Errorf("%s: error %+v, want context_length_exceeded on input", tc.name, env.Error)
		}
		// A last turn longer than the window is refused by the runtime, which must not
		// have cut it down to the window and counted that (its truncate flag is off).
		if strings.HasPrefix(tc.name, "long last turn") && !strings.Contains(env.Error.Message, fmt.Sprintf("more than %d tokens", scriptmodel.SmallContext)) {
			t.Errorf("%s: message %q should say the input is more than the window", tc.name, env.Error.Message)
		}
	}
}

// TestCachedTokensE2E: a request that repeats the previous prompt finds all of it but
// the last token in the KV cache; a different conversation finds only the shared start.
func TestCachedTokensE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	body := reqBody(scriptmodel.PlainModel, false, `"input":"cache me"`)
	first := createJSON(t, srv, body)
	second := createJSON(t, srv, body)
	if got, want := second.Usage.InputTokensDetails.CachedTokens, second.Usage.InputTokens-1; got != want {
		t.Errorf("repeated prompt: cached_tokens %d, want %d (first request: %+v)", got, want, first.Usage)
	}
	third := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"something else entirely"`))
	if c := third.Usage.InputTokensDetails.CachedTokens; c <= 0 || c >= third.Usage.InputTokens-1 {
		t.Errorf("different prompt: cached_tokens %d of %d input tokens; want only the shared start", c, third.Usage.InputTokens)
	}
}
