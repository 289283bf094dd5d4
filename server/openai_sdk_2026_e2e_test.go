package server_test

import (
	"encoding/json"
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
	"hearth/internal/seal"
	"hearth/mcp"
	"hearth/mcp/mcptest"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
	"hearth/toolsearch"
	"hearth/websearch"
)

// api2026Hearth is one hearth for every 2026 shape the npm client is tried on: a
// database, a sealing key (compaction items are sealed), tool_search registered, and
// web search through the test search server (mcp/mcptest over stdio) as
// `[hosted.web_search] mcp = "search"` wires it.
func api2026Hearth(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlite.Open(filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	key, _, err := seal.LoadOrCreate(filepath.Join(dir, seal.FileName))
	if err != nil {
		t.Fatal(err)
	}
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
	eng.RegisterHosted(toolsearch.NewKind(nil))
	for _, typ := range websearch.WebSearchToolTypes {
		eng.RegisterHosted(websearch.NewKind(typ, bound, websearch.Config{}, nil))
	}
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Engine: eng, Database: db, Seal: key}))
	t.Cleanup(srv.Close)
	return srv
}

// sdkReference is one request as api2026.mjs sends it through the client, and what
// hearth answered to the same request over plain HTTP: the response as JSON and the
// events of the same request streamed. The script compares what the client gives it
// with these (ids set aside), so no value of the models is written in it.
type sdkReference struct {
	Params   json.RawMessage  `json:"params"`
	Response json.RawMessage  `json:"response"`
	Events   []map[string]any `json:"events,omitempty"`
}

// reference posts body (a request without "stream") over plain HTTP, as JSON and, when
// streamed is set, as SSE (events validated by validate), and returns both with body.
func reference(t *testing.T, srv *httptest.Server, body string, streamed bool, validate func(testing.TB, []map[string]any)) (sdkReference, *hearth.Response) {
	t.Helper()
	resp, b := post(t, srv.URL+"/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: status %d: %s", body, resp.StatusCode, b)
	}
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != hearth.StatusCompleted {
		t.Fatalf("%s: status %s, error %+v", body, r.Status, r.Error)
	}
	ref := sdkReference{Params: json.RawMessage(body), Response: b}
	if streamed {
		withStream := strings.Replace(body, "{", `{"stream":true,`, 1)
		ref.Events, _ = createSSEWith(t, srv, withStream, validate)
	}
	return ref, &r
}

// TestOpenAISDK2026E2E runs testdata/openai-sdk/api2026.mjs: the official openai npm
// package (the pinned version) sends the 2026 shapes to one hearth with script models,
// through responses.create and responses.stream, and checks that what it gets back is
// what hearth answers over plain HTTP: output_text logprobs (and those of the deltas)
// with top_logprobs and include; tool_search with deferred functions, hosted and
// client-executed (the client's tool_search_output sent back); server-side
// compaction with context_management, and the turn after it; web_search backed by the
// test MCP search server, its web_search_call and url_citation; then the logprobs
// and web_search requests on two lanes (stream_id) of one socket of the client's
// Responses WebSocket mode (its ResponsesWS, over the `ws` package). First, tsc checks
// api2026.types.ts: the package's types accept those requests and type what the
// script reads back. It needs Node.js and npm, as TestOpenAISDKE2E does.
func TestOpenAISDK2026E2E(t *testing.T) {
	ctx, node, dir := nodeProject(t, sdkDir)
	srv := api2026Hearth(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	testenv.Model(t, scriptmodel.ToolSearchModel)
	testenv.Model(t, scriptmodel.WebSearchModel)
	expect := map[string]any{}

	// Logprobs: the reference carries exactly the script's tokens, as
	// TestLogprobsE2E checks them; the client must see the same.
	ask := `"include":["message.output_text.logprobs"],"top_logprobs":3,"temperature":0,`
	lp, r := reference(t, srv, `{"model":"`+scriptmodel.PlainModel+`",`+ask+`"input":"hi"}`, true, schematest.ValidateEvents)
	pieces := plain.Pieces(scriptmodel.EntryAssistant)
	checkLogprobs(t, "reference json", plain, pieces, outputText(t, r).Logprobs, 3)
	checkLogprobs(t, "reference deltas", plain, pieces, deltaLogprobs(t, "reference", lp.Events), 3)
	expect["logprobs"] = lp

	// tool_search, hosted: the search and its output, then the call of the tool it
	// loaded. Client-executed: the call alone, then the client's output in the next
	// turn loads get_weather.
	hosted, _ := reference(t, srv, `{"model":"`+scriptmodel.ToolSearchModel+`",`+tsAsk+","+tsTools(`{"type":"tool_search"}`)+`}`, true, schematest.ToolSearch.ValidateEvents)
	expect["toolSearch"] = hosted
	clientTools := tsTools(`{"type":"tool_search","execution":"client"}`)
	client, cr := reference(t, srv, `{"model":"`+scriptmodel.ToolSearchModel+`",`+tsAsk+","+clientTools+`}`, false, nil)
	output := `{"type":"tool_search_output","call_id":"` + cr.Output[0].CallID + `","execution":"client","tools":[` + tsWeather + `]}`
	clientNext, _ := reference(t, srv, `{"model":"`+scriptmodel.ToolSearchModel+`","previous_response_id":"`+cr.ID+`","input":[`+output+`],`+clientTools+`}`, false, nil)
	expect["toolSearchClient"] = map[string]any{"call": client, "next": clientNext, "loaded": json.RawMessage(tsWeather)}

	// Compaction: a first turn under the threshold, a second over it (compaction,
	// then the answer), a third from the compaction item.
	filler := strings.Repeat("lorem ", 100) // a script model's token is about a byte
	cm := compactAt(1000)
	first, r1 := reference(t, srv, `{"model":"`+scriptmodel.PlainModel+`","input":`+jsonString("one "+filler)+`,`+cm+`}`, false, nil)
	second, r2 := reference(t, srv, `{"model":"`+scriptmodel.PlainModel+`","input":`+jsonString("two "+filler)+`,"previous_response_id":"`+r1.ID+`",`+cm+`}`, true, schematest.ValidateEvents)
	if len(r2.Output) != 2 || r2.Output[0].Type != hearth.ItemCompaction {
		t.Fatalf("the reference's second turn did not compact: %s", normalized(t, r2.Output))
	}
	third, _ := reference(t, srv, `{"model":"`+scriptmodel.PlainModel+`","input":"three","previous_response_id":"`+r2.ID+`",`+cm+`}`, false, nil)
	expect["compaction"] = map[string]any{"first": first, "second": second, "third": third}

	// web_search through the MCP search server, with the sources.
	web, _ := reference(t, srv, `{"model":"`+scriptmodel.WebSearchModel+`",`+wsAsk+","+wsTool+","+wsInclude+`}`, true, schematest.WebSearch.ValidateEvents)
	expect["webSearch"] = web

	path := filepath.Join(t.TempDir(), "expect.json")
	if err := os.WriteFile(path, []byte(mustJSON(t, expect)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The package's types must accept the requests and type the fields the script
	// reads (tsc over api2026.types.ts, as tsconfig.json names it).
	runNode(ctx, t, node, dir, "node_modules/typescript/bin/tsc")
	runNode(ctx, t, node, dir, "api2026.mjs",
		"OPENAI_BASE_URL="+srv.URL+"/v1",
		"OPENAI_API_KEY=unused",
		"HEARTH_2026_EXPECT="+path,
	)
}
