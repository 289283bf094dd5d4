package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
	"hearth/toolsearch"
)

// newToolSearchHearth is hearth with a database and the tool_search kind registered,
// as the wiring registers it.
func newToolSearchHearth(t *testing.T) (*httptest.Server, *engine.Engine) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	eng.RegisterHosted(toolsearch.NewKind(nil))
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Engine: eng, Database: db}))
	t.Cleanup(srv.Close)
	return srv, eng
}

// The deferred tools of the tests: get_weather and get_time wait for a search,
// read_file is shown from the start.
const (
	tsWeather  = `{"type":"function","name":"get_weather","description":"Get the current weather of a city.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}`
	tsTime     = `{"type":"function","name":"get_time","description":"Local time in a timezone.","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}`
	tsReadFile = `{"type":"function","name":"read_file","description":"Read a file of the workspace.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}`
	tsAsk      = `"input":"What is the weather in Paris?"`
	tsArgs     = `{"query":"weather of a city"}`
	tsLoaded   = "Loaded: get_weather. They can be called now."
)

func deferred(tool string) string {
	return strings.Replace(tool, `{"type":"function",`, `{"type":"function","defer_loading":true,`, 1)
}

func tsTools(search string) string {
	return `"tools":[` + search + `,` + deferred(tsWeather) + `,` + deferred(tsTime) + `,` + tsReadFile + `]`
}

// tsDescription is the search function's description for tsTools.
const tsDescription = "Search the deferred tools, whose names and descriptions are listed below, and load the ones that match the query: you can call them after the search. Searchable:" +
	"\n- get_weather: Get the current weather of a city.\n- get_time: Local time in a timezone."

// tsFunction is the search function as the model is offered it, as a plain function
// tool.
func tsFunction() string {
	return `{"type":"function","name":"tool_search","description":` + jsonString(tsDescription) + `,"parameters":` + string(toolsearch.Parameters) + `,"strict":true}`
}

// nextStepTokens is what the get_weather turn of ToolSearchModel counts: its script's
// tokens and EOS (EvalCount) less one. The first script took the one-token closer
// "</tool_call>", so this script's closer is two tokens ("</tool_cal", "l>"), and the
// call, generated under the grammar of the tools offered, ends there on the runtime's
// stop string rather than on the script's EOS.
func nextStepTokens(m *scriptmodel.Model) int { return m.EvalCount(scriptmodel.EntryNextStep) - 1 }

// normalized is the response's output as JSON with its items' ids and call ids named
// by their index, for exact comparison; JSON inside (tool parameters) is written with
// its keys sorted, as a stream's events carry it after a round trip.
func normalized(t *testing.T, out []hearth.Item) string {
	t.Helper()
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	json.Unmarshal(b, &v)
	b, _ = json.Marshal(v)
	s := string(b)
	for i, it := range out {
		s = strings.ReplaceAll(s, it.ID, fmt.Sprintf("ID%d", i))
		if it.CallID != "" {
			s = strings.ReplaceAll(s, it.CallID, fmt.Sprintf("CALL%d", i))
		}
	}
	return s
}

// canon is JSON text with its objects' keys sorted, as normalized writes it.
func canon(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// collapse is the event types with runs of one type (deltas) written once.
func collapse(types []string) string {
	var out []string
	for _, ty := range types {
		if len(out) == 0 || out[len(out)-1] != ty {
			out = append(out, ty)
		}
	}
	return strings.Join(out, " ")
}

func createToolSearchJSON(t *testing.T, srv *httptest.Server, body string) *hearth.Response {
	t.Helper()
	resp, b := post(t, srv.URL+"/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var raw any
	json.Unmarshal(b, &raw)
	schematest.ToolSearch.Validate(t, "ResponseResource", raw)
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// TestToolSearchE2E: hearth's own search. The script model calls tool_search; hearth
// searches the deferred tools and answers with a tool_search_call and a
// tool_search_output that loads get_weather; the model's next turn, in the same
// response, calls get_weather, which the client runs. Exact items, events (validated
// against OpenAI's shapes), and input tokens of both turns (each exactly the prompt
// of the same conversation with plain function tools: the deferred tools absent from
// the first, get_weather present in the second); then the stored chain: the client's
// function output with previous_response_id is answered with get_weather still
// loaded, and the stored response's replay reports the same events.
func TestToolSearchE2E(t *testing.T) {
	srv, eng := newToolSearchHearth(t)
	m := testenv.Model(t, scriptmodel.ToolSearchModel)
	model := scriptmodel.ToolSearchModel
	body := reqBody(model, true, tsAsk+","+tsTools(`{"type":"tool_search"}`))

	events, r := createSSEWith(t, srv, body, schematest.ToolSearch.ValidateEvents)
	if r.Status != hearth.StatusCompleted {
		t.Fatalf("status %s, error %+v", r.Status, r.Error)
	}
	wantOut := `[{"type":"tool_search_call","id":"ID0","call_id":"CALL0","execution":"server","status":"completed","arguments":` + tsArgs + `},` +
		`{"type":"tool_search_output","id":"ID1","call_id":"CALL0","execution":"server","status":"completed","tools":[` +
		`{"description":"Get the current weather of a city.","name":"get_weather","parameters":{"additionalProperties":false,"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"},"strict":null,"type":"function"}]},` +
		`{"type":"function_call","id":"ID2","call_id":"CALL2","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"}]`
	if got := normalized(t, r.Output); got != canon(wantOut) {
		t.Errorf("output\n got %s\nwant %s", got, wantOut)
	}
	if r.Output[0].CallID != r.Output[1].CallID {
		t.Errorf("the output answers call %q, the call is %q", r.Output[1].CallID, r.Output[0].CallID)
	}
	wantEvents := "response.created response.in_progress " +
		"response.output_item.added response.output_item.done " +
		"response.output_item.added response.output_item.done " +
		"response.output_item.added response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done " +
		"response.completed"
	if got := collapse(eventTypes(events)); got != wantEvents {
		t.Errorf("events\n%s\nwant\n%s", got, wantEvents)
	}

	// The first turn's prompt has read_file and the search, not the deferred tools;
	// the second has get_weather too, the search as a call and its output.
	plain := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	first := renderedPrompt(t, plain, reqBody(model, false, tsAsk+`,"tools":[`+tsReadFile+`,`+tsFunction()+`]`), nil)
	if got := renderedPrompt(t, eng, reqBody(model, false, tsAsk+","+tsTools(`{"type":"tool_search"}`)), nil); got != first {
		t.Errorf("first prompt\n%q\nwant the deferred tools left out\n%q", got, first)
	}
	if strings.Contains(first, "get_time") == false || strings.Contains(first, `"city"`) {
		t.Errorf("the first prompt should name the deferred tools (in the search's description) and hold none of their schemas:\n%s", first)
	}
	callID := r.Output[0].CallID
	searched := `{"role":"user","content":"What is the weather in Paris?"},` +
		`{"type":"function_call","call_id":"` + callID + `","name":"tool_search","arguments":` + jsonString(tsArgs) + `},` +
		`{"type":"function_call_output","call_id":"` + callID + `","output":` + jsonString(tsLoaded) + `}`
	loadedTools := `"tools":[` + tsWeather + `,` + tsReadFile + `,` + tsFunction() + `]`
	second := renderedPrompt(t, plain, reqBody(model, false, `"input":[`+searched+`],`+loadedTools), nil)
	wantIn := m.CountTokens(first) + m.CountTokens(second)
	wantOutTokens := m.EvalCount(scriptmodel.EntryAssistant) + nextStepTokens(m)
	if u := r.Usage; u.InputTokens != wantIn || u.OutputTokens != wantOutTokens {
		t.Errorf("usage %+v; want %d input tokens (%d + %d), %d output", u, wantIn, m.CountTokens(first), m.CountTokens(second), wantOutTokens)
	}

	// The same over JSON.
	j := createToolSearchJSON(t, srv, reqBody(model, false, tsAsk+","+tsTools(`{"type":"tool_search"}`)))
	if got := normalized(t, j.Output); got != canon(wantOut) {
		t.Errorf("JSON output\n got %s\nwant %s", got, wantOut)
	}

	// tool_choice naming the deferred get_weather: the model must search first (the
	// choice allows the search until get_weather is loaded), then calls it.
	forced := createToolSearchJSON(t, srv, reqBody(model, false, tsAsk+","+tsTools(`{"type":"tool_search"}`)+`,"tool_choice":{"type":"function","name":"get_weather"}`))
	if got := normalized(t, forced.Output); got != canon(wantOut) {
		t.Errorf("tool_choice get_weather\n got %s\nwant %s", got, wantOut)
	}

	// A choice stands after the search it needed: with get_time described so that
	// the search loads it too, tool_choice get_time is met by a call of get_time in
	// the next turn (generated under its grammar), not by the get_weather the model
	// would call left to itself.
	cityTime := deferred(strings.Replace(tsTime, "Local time in a timezone.", "Local time in a city.", 1))
	both := createToolSearchJSON(t, srv, reqBody(model, false, tsAsk+`,"tools":[{"type":"tool_search"},`+deferred(tsWeather)+`,`+cityTime+`],"tool_choice":{"type":"function","name":"get_time"}`))
	if o := both.Output; len(o) != 3 || o[0].Type != toolsearch.ItemToolSearchCall || len(toolsearch.Of(o[1]).LoadedTools) != 2 ||
		o[2].Type != hearth.ItemFunctionCall || o[2].Name != "get_time" {
		t.Errorf("tool_choice get_time after a search that loads it: output %s", normalized(t, o))
	}

	// The chain: the client answers get_weather; the stored tool_search_output keeps
	// get_weather loaded, and the model answers.
	fcID := r.Output[2].CallID
	next := createToolSearchJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+r.ID+`","input":[{"type":"function_call_output","call_id":"`+fcID+`","output":"Sunny, 21 C"}],`+tsTools(`{"type":"tool_search"}`)))
	if len(next.Output) != 1 || next.Output[0].Text(hearth.PartOutputText) != scriptmodel.ToolSearchAnswerText {
		t.Fatalf("continuation output %s", normalized(t, next.Output))
	}
	third := renderedPrompt(t, plain, reqBody(model, false, `"input":[`+searched+`,`+
		`{"type":"function_call","call_id":"`+fcID+`","name":"get_weather","arguments":"{\"city\": \"Paris\"}"},`+
		`{"type":"function_call_output","call_id":"`+fcID+`","output":"Sunny, 21 C"}],`+loadedTools), nil)
	if got, want := next.Usage.InputTokens, m.CountTokens(third); got != want {
		t.Errorf("continuation input tokens %d, want %d (get_weather still loaded)", got, want)
	}

	// The stored response's replay reports the items as they were streamed.
	rr, err := http.Get(srv.URL + "/v1/responses/" + r.ID + "?stream=true")
	if err != nil {
		t.Fatal(err)
	}
	replay, err := schematest.ReadSSE(rr.Body)
	rr.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	schematest.ToolSearch.ValidateEvents(t, replay)
	if err := schematest.CheckLifecycle(replay); err != nil {
		t.Errorf("replay lifecycle: %v", err)
	}
	if got := collapse(eventTypes(replay)); got != wantEvents {
		t.Errorf("replay events\n%s\nwant\n%s", got, wantEvents)
	}
}

// TestToolSearchClientE2E: execution "client". The model's search is a
// tool_search_call for the client and the response ends there; the client's
// tool_search_output in the next request's input loads get_weather, which the model
// then calls: with previous_response_id, and stateless with the whole history.
func TestToolSearchClientE2E(t *testing.T) {
	srv, _ := newToolSearchHearth(t)
	m := testenv.Model(t, scriptmodel.ToolSearchModel)
	model := scriptmodel.ToolSearchModel
	tools := tsTools(`{"type":"tool_search","execution":"client"}`)

	events, r := createSSEWith(t, srv, reqBody(model, true, tsAsk+","+tools), schematest.ToolSearch.ValidateEvents)
	want := `[{"type":"tool_search_call","id":"ID0","call_id":"CALL0","execution":"client","status":"completed","arguments":` + tsArgs + `}]`
	if got := normalized(t, r.Output); r.Status != hearth.StatusCompleted || got != canon(want) {
		t.Fatalf("status %s, output\n got %s\nwant %s", r.Status, got, want)
	}
	wantEvents := "response.created response.in_progress response.output_item.added response.output_item.done response.completed"
	if got := collapse(eventTypes(events)); got != wantEvents {
		t.Errorf("events\n%s\nwant\n%s", got, wantEvents)
	}
	if got, want := r.Usage.OutputTokens, m.EvalCount(scriptmodel.EntryAssistant); got != want {
		t.Errorf("output tokens %d, want %d", got, want)
	}

	callID := r.Output[0].CallID
	output := `{"type":"tool_search_output","call_id":"` + callID + `","execution":"client","tools":[` + tsWeather + `]}`
	wantCall := `[{"type":"function_call","id":"ID0","call_id":"CALL0","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"}]`
	chained := createToolSearchJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+r.ID+`","input":[`+output+`],`+tools))
	if got := normalized(t, chained.Output); got != canon(wantCall) {
		t.Errorf("with previous_response_id\n got %s\nwant %s", got, wantCall)
	}
	if got, want := chained.Usage.OutputTokens, nextStepTokens(m); got != want {
		t.Errorf("with previous_response_id: output tokens %d, want %d", got, want)
	}
	call, _ := json.Marshal(r.Output[0])
	stateless := createToolSearchJSON(t, srv, reqBody(model, false, `"store":false,"input":[{"role":"user","content":"What is the weather in Paris?"},`+string(call)+`,`+output+`],`+tools))
	if got := normalized(t, stateless.Output); got != canon(wantCall) {
		t.Errorf("stateless\n got %s\nwant %s", got, wantCall)
	}
	if chained.Usage.InputTokens != stateless.Usage.InputTokens {
		t.Errorf("input tokens: chained %d, stateless %d: the same conversation", chained.Usage.InputTokens, stateless.Usage.InputTokens)
	}
	// The client may load a tool the request does not have: its definition is the
	// client's.
	noWeather := `"tools":[{"type":"tool_search","execution":"client"},` + deferred(tsTime) + `,` + tsReadFile + `]`
	history := `"store":false,"input":[{"role":"user","content":"What is the weather in Paris?"},` + string(call) + `,`
	own := createToolSearchJSON(t, srv, reqBody(model, false, history+output+`],`+noWeather))
	if got := normalized(t, own.Output); got != canon(wantCall) {
		t.Errorf("a tool of the client's own\n got %s\nwant %s", got, wantCall)
	}
	// A tool that was not loaded cannot be called: the call is generated under the
	// grammar of the tools offered (tool_search is strict), so the model's
	// get_weather, which the grammar refuses, becomes a call of one of those (which
	// one, the runtime's sampling among tokens the script does not rank decides).
	other := strings.Replace(output, `"get_weather"`, `"get_weather_v2"`, 1)
	refused := createToolSearchJSON(t, srv, reqBody(model, false, history+other+`],`+tools))
	if len(refused.Output) != 1 {
		t.Fatalf("a call of a tool not loaded: output %s", normalized(t, refused.Output))
	}
	switch it := refused.Output[0]; {
	case it.Type == toolsearch.ItemToolSearchCall:
	case it.Type == hearth.ItemFunctionCall && (it.Name == "read_file" || it.Name == "get_weather_v2"):
	default:
		t.Errorf("a call of a tool not loaded came out as %s", normalized(t, refused.Output))
	}
}

// TestToolSearchRefusedE2E: what tool search cannot do is a 400 naming the field.
func TestToolSearchRefusedE2E(t *testing.T) {
	srv, _ := newToolSearchHearth(t)
	for _, c := range []struct{ tools, param string }{
		{`[{"type":"tool_search"},` + tsReadFile + `]`, "tools[0]"},
		{`[{"type":"tool_search","query":"x"},` + deferred(tsWeather) + `]`, "tools[0].query"},
		{`[{"type":"tool_search"},{"type":"namespace","name":"crm","description":"CRM","defer_loading":true,"tools":[` + deferred(tsWeather) + `]}]`, "tools[1].defer_loading"},
	} {
		resp, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.ToolSearchModel, false, tsAsk+`,"tools":`+c.tools))
		var e struct {
			Error struct{ Param string }
		}
		json.Unmarshal(b, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Error.Param != c.param {
			t.Errorf("%s: %d %s, want a 400 at %s", c.tools, resp.StatusCode, b, c.param)
		}
	}
}

// TestToolSearchCodexPromptE2E measures what deferring saves on Codex CLI's request
// (testdata/codex_request.json, its tools as sent): the first prompt as Codex sends it,
// and with every tool but exec_command deferred (the functions of its multi_agent_v1
// namespace included) behind a tool_search tool, in the Codex script model's tokens
// and in bytes. The numbers are in docs/api-2026.md:
//
//	go test -count=1 -v -run TestToolSearchCodexPromptE2E ./server
func TestToolSearchCodexPromptE2E(t *testing.T) {
	_, eng := newToolSearchHearth(t)
	m := testenv.Model(t, scriptmodel.CodexModel)
	raw, err := os.ReadFile("../testdata/codex_request.json")
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	body["model"], body["stream"] = scriptmodel.CodexModel, false
	prompt := func(body map[string]any) string {
		b, _ := json.Marshal(body)
		return renderedPrompt(t, eng, string(b), nil)
	}
	sent := prompt(body)

	tools := body["tools"].([]any)
	deferredCount := 0
	for _, t := range tools {
		tool := t.(map[string]any)
		switch tool["type"] {
		case "function":
			if tool["name"] != "exec_command" {
				tool["defer_loading"] = true
				deferredCount++
			}
		case "namespace":
			for _, c := range tool["tools"].([]any) {
				c.(map[string]any)["defer_loading"] = true
				deferredCount++
			}
		}
	}
	body["tools"] = append(tools, map[string]any{"type": "tool_search"})
	searched := prompt(body)

	before, after := m.CountTokens(sent), m.CountTokens(searched)
	t.Logf("Codex's first prompt: %d tokens (%d bytes) as sent; %d tokens (%d bytes) with %d tools deferred behind tool_search: %d tokens (%.0f%%) saved",
		before, len(sent), after, len(searched), deferredCount, before-after, 100*float64(before-after)/float64(before))
	// exec_command stays; of the namespace the model sees its name and description in
	// the search's, none of its functions' schemas.
	if !strings.Contains(sent, "agent_type") || strings.Contains(searched, "agent_type") ||
		!strings.Contains(searched, `"exec_command"`) || !strings.Contains(searched, "multi_agent_v1 (namespace): Spawn and coordinate sub-agents.") {
		t.Errorf("the deferred prompt should keep exec_command, list the namespace and leave the deferred schemas out:\n%s", searched)
	}
	if after >= before {
		t.Errorf("deferring saved nothing: %d tokens before, %d after", before, after)
	}
}
