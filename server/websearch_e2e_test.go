package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/mcp"
	"hearth/mcp/mcptest"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
	"hearth/websearch"
)

// newSearchHearth is hearth with a database, the test search server (mcp/mcptest,
// over stdio: the test binary itself) as MCP server "search", and web search through
// its tool named tool. keys limits the server to those API keys (nil: every key);
// apiKeys are hearth's.
func newSearchHearth(t *testing.T, tool string, keys, apiKeys []string, servers ...mcp.Server) (*httptest.Server, *engine.Engine) {
	t.Helper()
	search, err := mcptest.StdioServer("search")
	if err != nil {
		t.Fatal(err)
	}
	search.Keys = keys
	mgr, err := mcp.New(mcp.Options{Servers: append([]mcp.Server{search}, servers...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	eng.RegisterHosted(mcp.NewKind(mgr, nil))
	label := "search"
	if len(servers) > 0 {
		label = servers[0].Label
	}
	bound, err := mgr.Bind(label, tool)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range websearch.WebSearchToolTypes {
		eng.RegisterHosted(websearch.NewKind(typ, bound, websearch.Config{}, nil))
	}
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Engine: eng, Database: db, APIKeys: apiKeys}))
	t.Cleanup(srv.Close)
	return srv, eng
}

const (
	wsAsk     = `"input":"What is hearth?"`
	wsTool    = `"tools":[{"type":"web_search","external_web_access":true}]`
	wsInclude = `"include":["web_search_call.action.sources"]`
	wsQuery   = "hearth local server"
	wsArgs    = `{"query":"hearth local server"}`
)

// wsResults is what the model reads of the search for wsQuery: the corpus's two
// hearth pages, the one with all three words first.
func wsResults() string {
	c := mcptest.Corpus
	return fmt.Sprintf("[1] %s\n%s\n%s\n\n[2] %s\n%s\n%s", c[0].Title, c[0].URL, c[0].Text, c[1].Title, c[1].URL, c[1].Text)
}

func createWebSearchJSON(t *testing.T, srv *httptest.Server, body string) (*hearth.Response, json.RawMessage) {
	t.Helper()
	resp, b := post(t, srv.URL+"/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var raw any
	json.Unmarshal(b, &raw)
	schematest.WebSearch.Validate(t, "ResponseResource", raw)
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r, b
}

// outputJSON is the response's output as JSON with the ids of its items named by
// their index, for exact comparison.
func outputJSON(t *testing.T, r *hearth.Response) string {
	t.Helper()
	b, err := json.Marshal(r.Output)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for i, it := range r.Output {
		s = strings.ReplaceAll(s, it.ID, fmt.Sprintf("ID%d", i))
	}
	return s
}

func wantWebSearchOutput(sources bool) string {
	c := mcptest.Corpus
	src := ""
	if sources {
		src = `,"sources":[{"type":"url","url":"` + c[0].URL + `"},{"type":"url","url":"` + c[1].URL + `"}]`
	}
	return `[{"type":"web_search_call","id":"ID0","status":"completed","action":{"type":"search","query":"` + wsQuery + `"` + src + `}},` +
		`{"type":"message","id":"ID1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"` + scriptmodel.WebSearchAnswerText + `",` +
		`"annotations":[{"type":"url_citation","url":"` + c[0].URL + `","title":"` + c[0].Title + `","start_index":40,"end_index":76}],"logprobs":[]}],"phase":"final_answer"}]`
}

// TestWebSearchE2E: a request's web_search tool on a hearth whose search is the test
// MCP server's search tool: the script model calls web_search, hearth runs the search
// over stdio and feeds the results back, the model answers citing a result's URL.
// Exact items (the sources only when include asks), the event sequence (validated
// against OpenAI's shapes), the annotation, and the input tokens of both turns' prompts
// (each exactly the prompt of the same conversation with web_search as a function
// tool); then the stored response, its replay, a continuation and tool_choice.
func TestWebSearchE2E(t *testing.T) {
	srv, eng := newSearchHearth(t, "search", nil, nil)
	m := testenv.Model(t, scriptmodel.WebSearchModel)
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer
	model := scriptmodel.WebSearchModel

	events, r := createSSEWith(t, srv, reqBody(model, true, wsAsk+","+wsTool+","+wsInclude), schematest.WebSearch.ValidateEvents)
	if r.Status != hearth.StatusCompleted {
		t.Fatalf("status %s, error %+v", r.Status, r.Error)
	}
	if got, want := outputJSON(t, r), wantWebSearchOutput(true); got != want {
		t.Errorf("output\n got %s\nwant %s", got, want)
	}
	wantEvents := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.web_search_call.in_progress", "response.web_search_call.searching",
		"response.web_search_call.completed", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.annotation.added", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
	if got := eventTypes(events); strings.Join(got, " ") != strings.Join(wantEvents, " ") {
		t.Errorf("events\n%q\nwant\n%q", got, wantEvents)
	}
	for _, e := range events {
		if e["type"] == "response.output_text.annotation.added" {
			ann, _ := json.Marshal(e["annotation"])
			if want := `{"end_index":76,"start_index":40,"title":"hearth overview","type":"url_citation","url":"https://hearth.example/docs/overview"}`; string(ann) != want {
				t.Errorf("annotation.added carries %s, want %s", ann, want)
			}
		}
	}

	// Each turn's prompt is that of the same conversation with web_search as a
	// plain function tool, the search as its call and the results as its output.
	fn := `"tools":[{"type":"function","name":"web_search","description":` + jsonString(websearch.Description) + `,"parameters":` + string(websearch.Parameters) + `,"strict":true}]`
	plain := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	first := renderedPrompt(t, plain, reqBody(model, false, wsAsk+","+fn), nil)
	if got := renderedPrompt(t, eng, reqBody(model, false, wsAsk+","+wsTool), nil); got != first {
		t.Errorf("first prompt\n%q\nwant web_search as a function tool\n%q", got, first)
	}
	callID := r.Output[0].ID
	second := renderedPrompt(t, plain, reqBody(model, false, `"input":[{"role":"user","content":"What is hearth?"},`+
		`{"type":"function_call","call_id":"`+callID+`","name":"web_search","arguments":`+jsonString(wsArgs)+`},`+
		`{"type":"function_call_output","call_id":"`+callID+`","output":`+jsonString(wsResults())+`}],`+fn), nil)
	wantIn := m.CountTokens(first) + m.CountTokens(second)
	wantOut := m.EvalCount(a) + m.EvalCount(ans)
	if u := r.Usage; u.InputTokens != wantIn || u.OutputTokens != wantOut || u.TotalTokens != wantIn+wantOut {
		t.Errorf("usage %+v; want %d input tokens (%d + %d), %d output", u, wantIn, m.CountTokens(first), m.CountTokens(second), wantOut)
	}

	// Stored: GET returns it as it was; the replay reports the same events.
	resp, b := get(t, srv.URL+"/v1/responses/"+r.ID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %s", resp.StatusCode, b)
	}
	var stored hearth.Response
	json.Unmarshal(b, &stored)
	if got, want := outputJSON(t, &stored), outputJSON(t, r); got != want {
		t.Errorf("GET output\n got %s\nwant %s", got, want)
	}
	rr, err := http.Get(srv.URL + "/v1/responses/" + r.ID + "?stream=true")
	if err != nil {
		t.Fatal(err)
	}
	replay, err := schematest.ReadSSE(rr.Body)
	rr.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	schematest.WebSearch.ValidateEvents(t, replay)
	if err := schematest.CheckLifecycle(replay); err != nil {
		t.Errorf("replay lifecycle: %v", err)
	}
	if got := eventTypes(replay); strings.Join(got, " ") != strings.Join(wantEvents, " ") {
		t.Errorf("replay events\n%q\nwant\n%q", got, wantEvents)
	}

	// Without include, no sources; the answer is annotated all the same.
	plainJSON, _ := createWebSearchJSON(t, srv, reqBody(model, false, wsAsk+","+wsTool))
	if got, want := outputJSON(t, plainJSON), wantWebSearchOutput(false); got != want {
		t.Errorf("without include\n got %s\nwant %s", got, want)
	}

	// A continuation renders the chain's search and searches again.
	next, _ := createWebSearchJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+r.ID+`","input":"Once more, please.",`+wsTool+","+wsInclude))
	if got, want := outputJSON(t, next), wantWebSearchOutput(true); got != want {
		t.Errorf("continuation\n got %s\nwant %s", got, want)
	}

	// web_search_preview is the same tool; tool_choice forces the search (under its
	// grammar), and the same call comes out.
	forced, _ := createWebSearchJSON(t, srv, reqBody(model, false, wsAsk+`,"tools":[{"type":"web_search_preview"}],"tool_choice":{"type":"web_search_preview"}`))
	if got, want := outputJSON(t, forced), wantWebSearchOutput(false); got != want {
		t.Errorf("tool_choice\n got %s\nwant %s", got, want)
	}
	if got := forced.Usage.OutputTokens; got != wantOut {
		t.Errorf("tool_choice: output_tokens %d, want %d", got, wantOut)
	}
}

// TestWebSearchUnconfiguredE2E: on a hearth with no search configured, a web_search
// tool is ignored and said so (x-hearth-ignored), never shown to the model; a
// tool_choice that forces it is a 400.
func TestWebSearchUnconfiguredE2E(t *testing.T) {
	srv := newHearth(t)
	resp, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, false, wsAsk+","+wsTool))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	// The header keeps printable ASCII but blanks (boundIgnored).
	if got := resp.Header.Get("x-hearth-ignored"); got != "tools[0]?(web_search)" {
		t.Errorf("x-hearth-ignored = %q", got)
	}
	resp, b = post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, false, wsAsk+","+wsTool+`,"tool_choice":{"type":"web_search"}`))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"param":"tool_choice"`) {
		t.Errorf("forced unconfigured search: %d %s", resp.StatusCode, b)
	}

	// Configured, the tool (here its dated type) is not reported ignored, and searches.
	ws, _ := newSearchHearth(t, "search", nil, nil)
	resp, b = post(t, ws.URL+"/v1/responses", reqBody(scriptmodel.WebSearchModel, false, wsAsk+`,"tools":[{"type":"web_search_2025_08_26"}]`))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("x-hearth-ignored") != "" {
		t.Errorf("configured: %d, x-hearth-ignored %q: %s", resp.StatusCode, resp.Header.Get("x-hearth-ignored"), b)
	}
	var r hearth.Response
	json.Unmarshal(b, &r)
	if got, want := outputJSON(t, &r), wantWebSearchOutput(false); got != want {
		t.Errorf("dated type\n got %s\nwant %s", got, want)
	}
}

// TestWebSearchFaultsE2E: a search tool that reports an error, and a search server
// that cannot start, end the web_search_call failed (no completed event), and the
// model reads why and answers; the response completes.
func TestWebSearchFaultsE2E(t *testing.T) {
	broken, _ := newSearchHearth(t, "broken_search", nil, nil)
	down, _ := newSearchHearth(t, "search", nil, nil, mcp.Server{Label: "down", Command: filepath.Join(t.TempDir(), "no-such-server")})
	for name, srv := range map[string]*httptest.Server{"tool error": broken, "server down": down} {
		events, r := createSSEWith(t, srv, reqBody(scriptmodel.WebSearchModel, true, wsAsk+","+wsTool+","+wsInclude), schematest.WebSearch.ValidateEvents)
		if r.Status != hearth.StatusCompleted {
			t.Fatalf("%s: status %s, error %+v", name, r.Status, r.Error)
		}
		// No results: nothing to cite.
		want := `[{"type":"web_search_call","id":"ID0","status":"failed","action":{"type":"search","query":"` + wsQuery + `","sources":[]}},` +
			`{"type":"message","id":"ID1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"` + scriptmodel.WebSearchAnswerText + `","annotations":[],"logprobs":[]}],"phase":"final_answer"}]`
		if got := outputJSON(t, r); got != want {
			t.Errorf("%s: output\n got %s\nwant %s", name, got, want)
		}
		wantEvents := []string{"response.created", "response.in_progress",
			"response.output_item.added", "response.web_search_call.in_progress", "response.web_search_call.searching",
			"response.output_item.done",
			"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
			"response.content_part.done", "response.output_item.done", "response.completed"}
		if got := eventTypes(events); strings.Join(got, " ") != strings.Join(wantEvents, " ") {
			t.Errorf("%s: events\n%q\nwant\n%q", name, got, wantEvents)
		}
	}
}

// TestWebSearchKeyLimitsE2E: the search server's keys limit who may search: another
// key's request with a web_search tool is a 403 naming the tool.
func TestWebSearchKeyLimitsE2E(t *testing.T) {
	srv, _ := newSearchHearth(t, "search", []string{"config-1"}, []string{"key-one", "key-two"})
	body := reqBody(scriptmodel.WebSearchModel, false, wsAsk+","+wsTool)
	for key, want := range map[string]int{"key-one": http.StatusOK, "key-two": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: status %d %s, want %d", key, resp.StatusCode, b, want)
		}
		if want == http.StatusForbidden && !strings.Contains(string(b), `"param":"tools[0].type"`) {
			t.Errorf("%s: %s, want the error to name tools[0].type", key, b)
		}
	}
}

// TestCodexWebSearchE2E: Codex CLI (the pinned npm @openai/codex) on a hearth with a
// search configured: Codex sends its web_search tool as it does on every turn, the
// script model searches, hearth runs the search on the test MCP server inside the one
// response, and the model's answer, which Codex prints, cites the source it found;
// the stream has the web_search_call and the answer's url_citation. Needs Node.js and
// npm, as TestCodexCLIE2E does.
func TestCodexWebSearchE2E(t *testing.T) {
	search, err := mcptest.StdioServer("search")
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := mcp.New(mcp.Options{Servers: []mcp.Server{search}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	bound, err := mgr.Bind("search", "search")
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	eng.RegisterHosted(mcp.NewKind(mgr, nil))
	for _, typ := range websearch.WebSearchToolTypes {
		eng.RegisterHosted(websearch.NewKind(typ, bound, websearch.Config{}, nil))
	}
	run := runCodex(t, "hearth-script-web-search", false, "What is hearth? Search the web.",
		func(c *wire.Config) { c.Engine = eng })

	if got := strings.TrimSpace(run.stdout); got != scriptmodel.WebSearchAnswerText {
		t.Errorf("codex exec printed %q, want the model's answer %q", got, scriptmodel.WebSearchAnswerText)
	}
	if len(run.xs) != 1 {
		t.Fatalf("Codex made %d requests, want 1 (the search runs inside the response)", len(run.xs))
	}
	tr := readTurn(t, 0, run.xs[0])
	offered := false
	for _, tl := range tr.req.Tools {
		offered = offered || tl.Type == websearch.ToolWebSearch
	}
	if !offered {
		t.Fatalf("Codex sent no web_search tool")
	}
	out := tr.resp.Output
	if len(out) != 2 || out[0].Type != websearch.ItemWebSearchCall || out[0].Status != hearth.StatusCompleted ||
		websearch.ActionOf(out[0]) == nil || websearch.ActionOf(out[0]).Query != wsQuery || out[1].Type != hearth.ItemMessage {
		t.Fatalf("output %s, want a completed web_search_call for %q, then the answer", itemTypes(out), wsQuery)
	}
	want := []hearth.Annotation{{Type: "url_citation", URL: mcptest.Corpus[0].URL, Title: mcptest.Corpus[0].Title, StartIndex: 40, EndIndex: 76}}
	if got := out[1].Content[0].Annotations; len(got) != 1 || got[0] != want[0] {
		t.Errorf("annotations %+v, want %+v", got, want)
	}
}
