package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
)

// patchGrammar is a Lark grammar of a patch envelope that scriptmodel.CustomToolInput
// follows. It is regular, so hearth constrains the input with it.
const patchGrammar = `start: "*** Begin Patch" LF op+ "*** End Patch" LF?
op: "*** Add File: " path LF ("+" /[^\n]*/ LF)+
  | "*** Delete File: " path LF
path: /[^\n]+/
%import common.LF
`

// customTool is the JSON of a custom tool named scriptmodel.CustomToolName with format.
func customTool(format string) string {
	t := `{"type":"custom","name":"` + scriptmodel.CustomToolName + `","description":"Edit files with a patch."`
	if format != "" {
		t += `,"format":` + format
	}
	return t + `}`
}

func grammarFormat(syntax, definition string) string {
	d, _ := json.Marshal(definition)
	return `{"type":"grammar","syntax":"` + syntax + `","definition":` + string(d) + `}`
}

// createCustomSSE is createSSE for streams with custom tool calls: the events are
// validated against the schema plus OpenAI's definitions of custom tools.
func createCustomSSE(t *testing.T, srv *httptest.Server, body string) ([]map[string]any, *hearth.Response) {
	t.Helper()
	return createSSEWith(t, srv, body, schematest.CustomTools.ValidateEvents)
}

// createCustomJSON is createJSON for responses with custom tool calls.
func createCustomJSON(t *testing.T, srv *httptest.Server, body string) *hearth.Response {
	t.Helper()
	resp, b := post(t, srv.URL+"/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	schematest.CustomTools.Validate(t, "ResponseResource", b)
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// onlyCustomCall fails unless r's output is exactly one completed call of the
// catalogue's custom tool with input, and returns it.
func onlyCustomCall(t *testing.T, label string, r *hearth.Response, input string) hearth.Item {
	t.Helper()
	if r.Status != hearth.StatusCompleted || len(r.Output) != 1 {
		t.Fatalf("%s: status %s, output %+v, error %+v", label, r.Status, r.Output, r.Error)
	}
	it := r.Output[0]
	if it.Type != hearth.ItemCustomToolCall || it.Status != hearth.StatusCompleted || it.Name != scriptmodel.CustomToolName ||
		it.Input != input || !strings.HasPrefix(it.ID, "ctc_") || !strings.HasPrefix(it.CallID, "call_") {
		t.Fatalf("%s: item %+v, want a completed custom_tool_call of %s with input %q", label, it, scriptmodel.CustomToolName, input)
	}
	return it
}

// customInputDeltas returns the input deltas of the stream's custom tool call.
func customInputDeltas(events []map[string]any) (deltas []string, done []string) {
	for _, e := range events {
		switch e["type"] {
		case hearth.EventCustomToolCallInputDelta:
			deltas = append(deltas, e["delta"].(string))
		case hearth.EventCustomToolCallInputDone:
			done = append(done, e["input"].(string))
		}
	}
	return deltas, done
}

// TestCustomToolE2E: a script model calls a custom tool through the real runtime. With
// a free-text format the call comes on the fast path, its input streamed as generated;
// with a regular Lark grammar or a regex the call is generated under the input's
// pattern, which the script's own call obeys, so the same call comes out. Then the
// tool's output goes back (chained, and as full stateless history) and the model
// answers.
func TestCustomToolE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m := testenv.Model(t, scriptmodel.CustomToolModel)
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer
	input := scriptmodel.CustomToolInput
	if got := m.Text(a); got != scriptmodel.CustomCall(scriptmodel.CustomToolName, input) {
		t.Fatalf("the script writes %q", got)
	}
	// Each format streams; two also answer JSON and go on to the second turn (each
	// request costs seconds of CPU prompt processing).
	formats := []struct {
		name, format string
		enforced     bool
		json         bool
	}{
		{"free text", "", false, true},
		{"text format", `{"type":"text"}`, false, false},
		{"lark grammar", grammarFormat("lark", patchGrammar), true, true},
		{"regex", grammarFormat("regex", `\*\*\* Begin Patch\n(\*\*\* Add File: [^\n]+\n(\+[^\n]*\n)+)+\*\*\* End Patch\n`), true, false},
	}
	for _, f := range formats {
		tools := `"tools":[` + customTool(f.format) + `]`
		first := `"input":"Add a file that says hello.",` + tools
		for _, stream := range []bool{true, false} {
			if !stream && !f.json {
				continue
			}
			label := f.name + map[bool]string{false: " (json)", true: " (sse)"}[stream]
			var r *hearth.Response
			if stream {
				var events []map[string]any
				events, r = createCustomSSE(t, srv, reqBody(scriptmodel.CustomToolModel, true, first))
				deltas, done := customInputDeltas(events)
				if strings.Join(deltas, "") != input || len(done) != 1 || done[0] != input {
					t.Errorf("%s: input deltas %q and done %q, want %q", label, deltas, done, input)
				}
				// Unconstrained, the input streams as the model writes it; enforced, the
				// call is held until it validates and then sent at once.
				if !f.enforced && len(deltas) < 5 {
					t.Errorf("%s: the input came in %d deltas; expected it streamed", label, len(deltas))
				}
			} else {
				r = createCustomJSON(t, srv, reqBody(scriptmodel.CustomToolModel, false, first))
			}
			call := onlyCustomCall(t, label, r, input)
			// Enforced, the phases cost what the free script costs: the opener (one
			// token), the call under the grammar (its pieces, then EOS where the
			// grammar masks the closer), and after the engine's closer, EOS.
			if r.Usage.OutputTokens != m.EvalCount(a) {
				t.Errorf("%s: output_tokens %d, want %d", label, r.Usage.OutputTokens, m.EvalCount(a))
			}

			if stream {
				continue
			}
			// The tool's output, chained with previous_response_id.
			output := `{"type":"custom_tool_call_output","call_id":"` + call.CallID + `","output":"Done: hello.txt added."}`
			second := createCustomJSON(t, srv, reqBody(scriptmodel.CustomToolModel, false,
				`"previous_response_id":"`+r.ID+`","input":[`+output+`],`+tools))
			sameItems(t, label+" answer", second.Output, []item{{Type: "message", Status: "completed", Text: m.Text(ans)}})
			if second.Usage.OutputTokens != m.EvalCount(ans) {
				t.Errorf("%s answer: output_tokens %d, want %d", label, second.Usage.OutputTokens, m.EvalCount(ans))
			}
		}
	}

	// Stateless (store: false), as Codex sends it: the whole history every turn, the
	// call as a custom_tool_call input item.
	tools := `"tools":[` + customTool(grammarFormat("lark", patchGrammar)) + `]`
	in, _ := json.Marshal(input)
	history := `"store":false,"input":[{"role":"user","content":"Add a file that says hello."},` +
		`{"type":"custom_tool_call","call_id":"call_7","name":"` + scriptmodel.CustomToolName + `","input":` + string(in) + `},` +
		`{"type":"custom_tool_call_output","call_id":"call_7","output":"Done: hello.txt added."}],` + tools
	events, r := createCustomSSE(t, srv, reqBody(scriptmodel.CustomToolModel, true, history))
	sameItems(t, "stateless answer", r.Output, []item{{Type: "message", Status: "completed", Text: m.Text(ans)}})
	checkDeltasMatch(t, "stateless answer", events, r)
}

// TestCustomToolStoredE2E: a stored custom tool call reads back as it was sent, replays
// as a stream with the custom tool events, and the output item of the next turn is
// listed among its input items.
func TestCustomToolStoredE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	tools := `"tools":[` + customTool("") + `]`
	r := createCustomJSON(t, srv, reqBody(scriptmodel.CustomToolModel, false, `"input":"Add a file.",`+tools))
	call := onlyCustomCall(t, "first turn", r, scriptmodel.CustomToolInput)

	resp, b := getURL(t, srv.URL+"/v1/responses/"+r.ID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %s", resp.StatusCode, b)
	}
	var got hearth.Response
	json.Unmarshal(b, &got)
	if len(got.Output) != 1 || !reflect.DeepEqual(got.Output[0], call) {
		t.Errorf("stored output %+v, want %+v", got.Output, call)
	}

	resp, err := http.Get(srv.URL + "/v1/responses/" + r.ID + "?stream=true")
	if err != nil {
		t.Fatal(err)
	}
	events, err := schematest.ReadSSE(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	schematest.CustomTools.ValidateEvents(t, events)
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Fatal(err)
	}
	if deltas, done := customInputDeltas(events); strings.Join(deltas, "") != call.Input || len(done) != 1 {
		t.Errorf("replayed input deltas %q, done %q", deltas, done)
	}

	out := `{"type":"custom_tool_call_output","call_id":"` + call.CallID + `","output":"ok"}`
	second := createCustomJSON(t, srv, reqBody(scriptmodel.CustomToolModel, false, `"previous_response_id":"`+r.ID+`","input":[`+out+`],`+tools))
	resp, b = getURL(t, srv.URL+"/v1/responses/"+second.ID+"/input_items")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("input_items: %d %s", resp.StatusCode, b)
	}
	var list struct {
		Data []json.RawMessage
	}
	json.Unmarshal(b, &list)
	if len(list.Data) != 1 {
		t.Fatalf("input items %s", b)
	}
	schematest.CustomTools.Validate(t, "ItemField", list.Data[0])
	var it hearth.Item
	json.Unmarshal(list.Data[0], &it)
	if it.Type != hearth.ItemCustomToolCallOutput || it.CallID != call.CallID || it.Output.Text != "ok" {
		t.Errorf("input item %s", list.Data[0])
	}
}

func getURL(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestCustomToolConstraintE2E: the grammar is enforced by the runtime, and what it
// cannot enforce is checked.
func TestCustomToolConstraintE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m := testenv.Model(t, scriptmodel.CustomToolModel)
	a := scriptmodel.EntryAssistant

	// Forced with a regex its script breaks: after the opener the script's tokens are
	// masked and the model's ranked fallbacks fill in what the grammar allows: the tool's
	// name, then a digit ('0' ranks first among digits), then the closing quote (which
	// ranks above every digit). Unconstrained, the string would close at once.
	count := `{"type":"custom","name":"count","format":` + grammarFormat("regex", `[0-9]+`) + `}`
	body := `"input":"Count.","temperature":0,"tools":[` + customTool("") + `,` + count + `],"tool_choice":{"type":"custom","name":"count"}`
	r := createCustomJSON(t, srv, reqBody(scriptmodel.CustomToolModel, false, body))
	if r.Status != hearth.StatusCompleted || len(r.Output) != 1 || r.Output[0].Type != hearth.ItemCustomToolCall ||
		r.Output[0].Name != "count" || r.Output[0].Input != "0" {
		t.Fatalf("forced count: %s %+v %+v", r.Status, r.Output, r.Error)
	}
	// The opener the model wrote; under the grammar its next token ({"name":) passes,
	// then one byte per character of the rest of the call, and EOS; EOS after the closer.
	forced := `{"name":"count","arguments":{"input":"0"}}`
	if want := 1 + 1 + len(forced) - len(`{"name":`) + 1 + 1; r.Usage.OutputTokens != want {
		t.Errorf("forced count: output_tokens %d, want %d", r.Usage.OutputTokens, want)
	}

	// A recursive grammar cannot become a pattern: the input is generated freely and
	// checked. One the script's input matches passes...
	nested := "start: \"*** Begin Patch\" LF item* \"*** End Patch\" LF\nitem: LINE | \"(\" item* \")\"\nLINE: /[^()\\n]*/ LF\n%import common.LF\n"
	r = createCustomJSON(t, srv, reqBody(scriptmodel.CustomToolModel, false, `"input":"Add a file.","tools":[`+customTool(grammarFormat("lark", nested))+`]`))
	onlyCustomCall(t, "recursive grammar", r, scriptmodel.CustomToolInput)

	// ...one it does not match is generated once more, then fails the response, saying
	// where the input stops matching.
	parens := "start: \"(\" start \")\" | \"x\"\n"
	resp, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.CustomToolModel, false, `"input":"Add a file.","tools":[`+customTool(grammarFormat("lark", parens))+`]`))
	want := "the input of custom tool 'apply_patch' does not match its format: the input stops matching the Lark grammar at line 1, column 1 ('*')"
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(b), want) || !strings.Contains(string(b), `"code":"model_error"`) {
		t.Errorf("grammar violation: %d %s; want a model_error saying %q", resp.StatusCode, b, want)
	}
	events, failed := createCustomSSE(t, srv, reqBody(scriptmodel.CustomToolModel, true, `"input":"Add a file.","tools":[`+customTool(grammarFormat("lark", parens))+`]`))
	if failed.Status != hearth.StatusFailed || failed.Error == nil || !strings.Contains(failed.Error.Message, want) || len(failed.Output) != 0 {
		t.Errorf("grammar violation (sse): %s %+v %+v", failed.Status, failed.Error, failed.Output)
	}
	if deltas, _ := customInputDeltas(events); len(deltas) != 0 {
		t.Errorf("the rejected input reached the client: %q", deltas)
	}
	// The call was generated twice (free, then under the grammar), each up to the
	// token that closes its JSON.
	// The call's JSON is every piece but the opener, the closer and EOS.
	if want := 1 + 2*(m.EvalCount(a)-3); failed.Usage == nil || failed.Usage.OutputTokens != want {
		t.Errorf("usage %+v, want %d output tokens", failed.Usage, want)
	}
}

func TestCustomToolErrorsE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	cases := []struct {
		name, tools, param, msg string
	}{
		{"Lark that does not parse", customTool(grammarFormat("lark", "start: a\n")), "tools[0].format.definition", "line 1: a is not defined"},
		{"regex that does not parse", customTool(grammarFormat("regex", `[0-9`)), "tools[0].format.definition", "missing closing ]"},
		{"empty definition", customTool(`{"type":"grammar","syntax":"lark","definition":""}`), "tools[0].format.definition", "empty"},
		{"unknown syntax", customTool(`{"type":"grammar","syntax":"ebnf","definition":"x"}`), "tools[0].format.syntax", "ebnf"},
		{"format of unknown type", customTool(`{"type":"json"}`), "tools[0].format.type", "json"},
	}
	for _, tc := range cases {
		resp, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.CustomToolModel, false, `"input":"x","tools":[`+tc.tools+`]`))
		var env struct {
			Error struct{ Message, Type, Param, Code string }
		}
		json.Unmarshal(b, &env)
		if resp.StatusCode != http.StatusBadRequest || env.Error.Param != tc.param || env.Error.Type != "invalid_request_error" ||
			!strings.Contains(env.Error.Message, tc.msg) {
			t.Errorf("%s: %d %s; want a 400 on %s mentioning %q", tc.name, resp.StatusCode, b, tc.param, tc.msg)
		}
	}
}
