package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
)

// newHearthWithDB serves hearth over the shared runtime with a fresh database.
func newHearthWithDB(t *testing.T) *httptest.Server {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db}))
	t.Cleanup(srv.Close)
	return srv
}

func post(t *testing.T, url string, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// createJSON posts a non-streaming request and returns the validated response.
func createJSON(t *testing.T, srv *httptest.Server, body string) *hearth.Response {
	t.Helper()
	resp, b := post(t, srv.URL+"/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var raw any
	json.Unmarshal(b, &raw)
	schematest.Validate(t, "ResponseResource", raw)
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// createSSE posts a streaming request, validates every event and the lifecycle, and
// returns the events and the terminal event's response.
func createSSE(t *testing.T, srv *httptest.Server, body string) ([]map[string]any, *hearth.Response) {
	t.Helper()
	return createSSEWith(t, srv, body, schematest.ValidateEvents)
}

// createSSEWith is createSSE with the events validated by validate (the schema plus
// OpenAI's definitions of custom tools or MCP items, for streams that have them).
func createSSEWith(t *testing.T, srv *httptest.Server, body string, validate func(testing.TB, []map[string]any)) ([]map[string]any, *hearth.Response) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	events, err := schematest.ReadSSE(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	validate(t, events)
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Fatalf("lifecycle: %v", err)
	}
	last := events[len(events)-1]
	b, _ := json.Marshal(last["response"])
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return events, &r
}

// item is the comparable summary of an output item.
type item struct {
	Type, Status, Text, Name, Arguments string
}

func summarize(items []hearth.Item) []item {
	var out []item
	for _, it := range items {
		s := item{Type: it.Type, Status: it.Status, Name: it.Name, Arguments: it.Arguments}
		switch it.Type {
		case hearth.ItemMessage:
			s.Text = it.Text(hearth.PartOutputText)
		case hearth.ItemReasoning:
			s.Text = it.Text(hearth.PartReasoningText)
		}
		out = append(out, s)
	}
	return out
}

func sameItems(t *testing.T, label string, got []hearth.Item, want []item) {
	t.Helper()
	g, _ := json.MarshalIndent(summarize(got), "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	if !bytes.Equal(g, w) {
		t.Errorf("%s: output items\n got %s\nwant %s", label, g, w)
	}
}

func reqBody(model string, stream bool, extra string) string {
	s := `{"model":"` + model + `","stream":` + strconv.FormatBool(stream)
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

var toolsJSON = `"tools":[
 {"type":"function","name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
 {"type":"function","name":"get_time","description":"Local time","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}]`

func TestResponsesE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	think := testenv.Model(t, scriptmodel.ReasoningModel)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer

	cases := []struct {
		name       string
		model      string
		extra      string
		want       []item
		wantOutput int
	}{
		{"plain text", scriptmodel.PlainModel, `"input":"hi"`,
			[]item{{Type: "message", Status: "completed", Text: plain.Text(a)}}, plain.EvalCount(a)},
		{"reasoning then text", scriptmodel.ReasoningModel, `"input":"hello"`,
			[]item{
				{Type: "reasoning", Status: "completed", Text: "The user says hello. A short greeting back is right."},
				{Type: "message", Status: "completed", Text: "Hello! I thought about it first."},
			}, think.EvalCount(a)},
		{"two parallel tool calls", scriptmodel.ToolsModel, `"input":"weather and time in Paris?",` + toolsJSON,
			[]item{
				{Type: "reasoning", Status: "completed", Text: "I need the weather and the local time."},
				{Type: "function_call", Status: "completed", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{Type: "function_call", Status: "completed", Name: "get_time", Arguments: `{"timezone":"Europe/Paris"}`},
			}, tools.EvalCount(a)},
		{"answer after tool results", scriptmodel.ToolsModel, `"input":[
			{"role":"user","content":"weather and time in Paris?"},
			{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
			{"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{\"timezone\":\"Europe/Paris\"}"},
			{"type":"function_call_output","call_id":"call_1","output":"sunny"},
			{"type":"function_call_output","call_id":"call_2","output":"12:00"}],` + toolsJSON,
			[]item{{Type: "message", Status: "completed", Text: tools.Text(ans)}}, tools.EvalCount(ans)},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			label := tc.name + map[bool]string{false: " (json)", true: " (sse)"}[stream]
			var r *hearth.Response
			var events []map[string]any
			if stream {
				events, r = createSSE(t, srv, reqBody(tc.model, true, tc.extra))
			} else {
				r = createJSON(t, srv, reqBody(tc.model, false, tc.extra))
			}
			if r.Status != hearth.StatusCompleted || r.Usage == nil {
				t.Fatalf("%s: status %s usage %v error %+v", label, r.Status, r.Usage, r.Error)
			}
			sameItems(t, label, r.Output, tc.want)
			if r.Usage.OutputTokens != tc.wantOutput {
				t.Errorf("%s: output_tokens %d, want %d", label, r.Usage.OutputTokens, tc.wantOutput)
			}
			if r.Usage.InputTokens <= 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
				t.Errorf("%s: usage %+v", label, *r.Usage)
			}
			if stream {
				checkDeltasMatch(t, label, events, r)
			}
		}
	}
}

// checkDeltasMatch: what the deltas streamed adds up to the final items, and the deltas
// came in several pieces (streamed as generated, not in one lump at the end).
func checkDeltasMatch(t *testing.T, label string, events []map[string]any, r *hearth.Response) {
	t.Helper()
	deltas := map[string]*strings.Builder{}
	count := map[string]int{}
	for _, e := range events {
		typ, _ := e["type"].(string)
		if !strings.HasSuffix(typ, ".delta") {
			continue
		}
		id, _ := e["item_id"].(string)
		if deltas[id] == nil {
			deltas[id] = &strings.Builder{}
		}
		d, _ := e["delta"].(string)
		deltas[id].WriteString(d)
		count[id]++
	}
	for _, it := range r.Output {
		want := it.Arguments
		switch it.Type {
		case hearth.ItemMessage:
			want = it.Text(hearth.PartOutputText)
		case hearth.ItemReasoning:
			want = it.Text(hearth.PartReasoningText)
		}
		if deltas[it.ID] == nil || deltas[it.ID].String() != want {
			t.Errorf("%s: deltas of %s add up to %q, want %q", label, it.ID, deltas[it.ID], want)
		}
		if count[it.ID] < 2 {
			t.Errorf("%s: item %s came in %d delta(s); expected it streamed", label, it.ID, count[it.ID])
		}
	}
}

func TestResponsesChainE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	first := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false, `"input":"weather and time in Paris?",`+toolsJSON))
	var outputs []string
	for _, it := range first.Output {
		if it.Type == hearth.ItemFunctionCall {
			outputs = append(outputs, `{"type":"function_call_output","call_id":"`+it.CallID+`","output":"ok"}`)
		}
	}
	if len(outputs) != 2 {
		t.Fatalf("first turn made %d calls, want 2", len(outputs))
	}
	second := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false,
		`"previous_response_id":"`+first.ID+`","input":[`+strings.Join(outputs, ",")+`],`+toolsJSON))
	sameItems(t, "second turn", second.Output, []item{{Type: "message", Status: "completed", Text: tools.Text(scriptmodel.EntryAnswer)}})
	if second.PreviousResponseID == nil || *second.PreviousResponseID != first.ID {
		t.Errorf("previous_response_id echo = %v", second.PreviousResponseID)
	}
	// The second prompt holds the whole first turn: more input tokens than the first.
	if second.Usage.InputTokens <= first.Usage.InputTokens {
		t.Errorf("second turn input_tokens %d not above first turn's %d", second.Usage.InputTokens, first.Usage.InputTokens)
	}
}

func TestResponsesErrorsE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	cases := []struct {
		name, body  string
		status      int
		code, param string
	}{
		{"malformed JSON", `{"model":`, 400, "", ""},
		{"wrong type", `{"model":"` + scriptmodel.PlainModel + `","input":"hi","max_output_tokens":"many"}`, 400, "", "max_output_tokens"},
		{"budget below minimum", `{"model":"` + scriptmodel.PlainModel + `","input":"hi","max_output_tokens":3}`, 400, "integer_below_min_value", "max_output_tokens"},
		{"unknown model", `{"model":"no-such-model:latest","input":"hi"}`, 404, "model_not_found", "model"},
		{"unknown previous response", `{"model":"` + scriptmodel.PlainModel + `","input":"hi","previous_response_id":"resp_nope"}`, 404, "previous_response_not_found", "previous_response_id"},
		{"image to a model without vision", `{"model":"` + scriptmodel.PlainModel + `","input":[{"role":"user","content":[{"type":"input_image","image_url":"` + testImage{2, 2, scriptmodel.Red, false}.dataURL(t) + `"}]}]}`, 400, "", "input"},
	}
	for _, tc := range cases {
		resp, b := post(t, srv.URL+"/v1/responses", tc.body)
		var env struct {
			Error struct {
				Message, Type string
				Code, Param   *string
			}
		}
		if err := json.Unmarshal(b, &env); err != nil || env.Error.Message == "" || env.Error.Type == "" {
			t.Errorf("%s: body %s is not an error envelope", tc.name, b)
			continue
		}
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d (%s)", tc.name, resp.StatusCode, tc.status, b)
		}
		if tc.code != "" && (env.Error.Code == nil || *env.Error.Code != tc.code) {
			t.Errorf("%s: code %v, want %s", tc.name, env.Error.Code, tc.code)
		}
		if tc.param != "" && (env.Error.Param == nil || *env.Error.Param != tc.param) {
			t.Errorf("%s: param %v, want %s (%s)", tc.name, env.Error.Param, tc.param, b)
		}
	}

	// Unknown fields are served and named.
	resp, b := post(t, srv.URL+"/v1/responses", `{"model":"`+scriptmodel.PlainModel+`","input":"hi","client_metadata":{"a":"b"},"tools":[{"type":"web_search"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("unknown fields: %d %s", resp.StatusCode, b)
	}
	if h := resp.Header.Get("x-hearth-ignored"); !strings.Contains(h, "client_metadata") || !strings.Contains(h, "web_search") {
		t.Errorf("x-hearth-ignored = %q", h)
	}
}

// TestRuntimeFailureMidStreamE2E kills the model runner while a response streams: the
// stream must end with error, response.failed and [DONE], and the next request works.
func TestRuntimeFailureMidStreamE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	// The bench variant decodes at a real model's pace, so the kill lands mid-stream.
	_, long := testenv.BenchModel(t, scriptmodel.LongModel)
	createJSON(t, srv, reqBody(long, false, `"input":"warm up","max_output_tokens":16`))
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json",
		strings.NewReader(reqBody(long, true, `"input":"tell me a story"`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Kill the runner once the first text delta arrives.
	pr, pw := io.Pipe()
	go func() {
		var buf bytes.Buffer
		tee := io.TeeReader(resp.Body, pw)
		chunk := make([]byte, 256)
		killed := false
		for {
			n, err := tee.Read(chunk)
			buf.Write(chunk[:n])
			if !killed && strings.Contains(buf.String(), "response.output_text.delta") {
				testenv.KillRunners()
				killed = true
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	events, err := schematest.ReadSSE(pr)
	if err != nil {
		t.Fatal(err)
	}
	schematest.ValidateEvents(t, events)
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Fatalf("lifecycle: %v", err)
	}
	n := len(events)
	if n < 2 || events[n-2]["type"] != "error" || events[n-1]["type"] != "response.failed" {
		t.Fatalf("stream ended with %v, %v; want error then response.failed", events[n-2]["type"], events[n-1]["type"])
	}
	// The runtime reloads the model for the next request.
	r := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"hi again"`))
	if r.Status != hearth.StatusCompleted {
		t.Errorf("request after the failure: %s", r.Status)
	}
}
