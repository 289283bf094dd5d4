package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/filesearch"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// fileSearchHearth is hearth with a database and the file_search kind over its own
// vector stores, as cmd/hearth wires it.
func fileSearchHearth(t *testing.T, cfg wire.Config) (*httptest.Server, *engine.Engine, *sqlite.DB) {
	t.Helper()
	eng := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	cfg.Engine = eng
	srv, h, db := lanHearth(t, cfg)
	eng.RegisterHosted(filesearch.NewKind(h.VectorStores, nil))
	return srv, eng, db
}

// fsDocs are the documents of the file search tests: the handbook answers the
// script model's query; the release notes share none of its words.
var fsDocs = map[string]string{
	"handbook.md": "# Handbook\n\nNew hires get 20 days of leave in their first year.\n",
	"kettle.md":   "# Release notes\n\nThe kettle ships on Tuesday.\n",
}

// fsStore uploads fsDocs as key, makes a vector store of them with the script
// embedding model and waits for their ingestion; it returns the store's id and the
// files' ids by name.
func fsStore(t *testing.T, srv *httptest.Server, key string) (string, map[string]string) {
	t.Helper()
	testenv.Embedder(t)
	ids := map[string]string{}
	for _, name := range []string{"handbook.md", "kettle.md"} {
		ids[name] = uploadFile(t, srv, key, name, "assistants", []byte(fsDocs[name])).ID
	}
	var vs hearth.VectorStore
	convDo(t, srv, key, "POST", "/v1/vector_stores", fmt.Sprintf(`{"name":"docs","file_ids":[%q,%q],"hearth":{"embedding_model":%q}}`,
		ids["handbook.md"], ids["kettle.md"], scriptmodel.EmbedModel), &vs)
	vs = waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, key, "GET", "/v1/vector_stores/"+vs.ID, "", &v)
		return v
	})
	if vs.FileCounts.Completed != 2 {
		t.Fatalf("store %+v", vs)
	}
	return vs.ID, ids
}

// fsSearched is what /v1/vector_stores/{id}/search answers for the script model's
// query: the results a file_search_call reports, as JSON, and as the model reads them.
func fsSearched(t *testing.T, srv *httptest.Server, key, store string, max int) (string, []filesearch.FileSearchResult) {
	t.Helper()
	var page hearth.VectorStoreSearchPage
	convDo(t, srv, key, "POST", "/v1/vector_stores/"+store+"/search", fmt.Sprintf(`{"query":%q,"max_num_results":%d}`, scriptmodel.FileSearchQuery, max), &page)
	var found []filesearch.FileSearchResult
	for _, d := range page.Data {
		found = append(found, filesearch.FileSearchResult{FileID: d.FileID, Filename: d.Filename, Score: d.Score, Text: d.Content[0].Text, Attributes: d.Attributes})
	}
	b, _ := json.Marshal(found)
	return string(b), found
}

const (
	fsAsk     = `"input":"How many days of leave do new hires get?"`
	fsInclude = `"include":["file_search_call.results"]`
	fsArgs    = `{"query":"` + scriptmodel.FileSearchQuery + `"}`
)

func fsTool(store string) string {
	return `"tools":[{"type":"file_search","vector_store_ids":["` + store + `"],"max_num_results":2}]`
}

// wantFileSearchOutput is the response's output: the search (its results when
// included) and the answer citing the handbook just after its name.
func wantFileSearchOutput(results, handbook string) string {
	res := ""
	if results != "" {
		res = `,"results":` + results
	}
	ans := scriptmodel.FileSearchAnswerText
	index := strings.Index(ans, "handbook.md") + len("handbook.md")
	return `[{"type":"file_search_call","id":"ID0","status":"completed","queries":["` + scriptmodel.FileSearchQuery + `"]` + res + `},` +
		`{"type":"message","id":"ID1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"` + ans + `",` +
		`"annotations":[{"type":"file_citation","file_id":"` + handbook + `","filename":"handbook.md","index":` + fmt.Sprint(index) + `}],"logprobs":[]}],"phase":"final_answer"}]`
}

func createFileSearchJSON(t *testing.T, srv *httptest.Server, body string) *hearth.Response {
	t.Helper()
	resp, b := post(t, srv.URL+"/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ig := resp.Header.Get("x-hearth-ignored"); ig != "" {
		t.Errorf("x-hearth-ignored: %q", ig)
	}
	var raw any
	json.Unmarshal(b, &raw)
	schematest.FileSearch.Validate(t, "ResponseResource", raw)
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// promptOf is the prompt eng renders for body, as the caller without a key.
func promptOf(t *testing.T, eng *engine.Engine, body string) string {
	t.Helper()
	req, _, err := hearth.DecodeCreateRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	j, err := eng.Prepare(context.Background(), req, nil, engine.Inputs{Caller: storage.OwnerOf("")})
	if err != nil {
		t.Fatal(err)
	}
	return j.Prompt
}

// TestFileSearchE2E: a request's file_search tool over a vector store of uploaded
// files: the script model calls file_search, hearth searches the store with the
// script embedding model and feeds the results back, the model answers naming the
// handbook, which becomes a file_citation. Exact items (the results, only when
// include asks, equal to what the store's search API answers), the event sequence
// (validated against OpenAI's shapes), the input tokens of both turns' prompts (each
// exactly the prompt of the same conversation with file_search as a function tool);
// then the stored response, its replay, a continuation that replays the search,
// a conversation, tool_choice and allowed_tools forcing the search.
func TestFileSearchE2E(t *testing.T) {
	srv, eng, db := fileSearchHearth(t, wire.Config{})
	store, ids := fsStore(t, srv, "")
	results, found := fsSearched(t, srv, "", store, 2)
	if len(found) != 2 || found[0].Filename != "handbook.md" || found[0].Score <= found[1].Score {
		t.Fatalf("the store's search for the query: %s", results)
	}
	m := testenv.Model(t, scriptmodel.FileSearchModel)
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer
	model := scriptmodel.FileSearchModel
	tool := fsTool(store)

	events, r := createSSEWith(t, srv, reqBody(model, true, fsAsk+","+tool+","+fsInclude), schematest.FileSearch.ValidateEvents)
	if r.Status != hearth.StatusCompleted {
		t.Fatalf("status %s, error %+v", r.Status, r.Error)
	}
	want := wantFileSearchOutput(results, ids["handbook.md"])
	if got := outputJSON(t, r); got != want {
		t.Errorf("output\n got %s\nwant %s", got, want)
	}
	wantEvents := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.file_search_call.in_progress", "response.file_search_call.searching",
		"response.file_search_call.completed", "response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.annotation.added", "response.output_text.done",
		"response.content_part.done", "response.output_item.done", "response.completed"}
	if got := eventTypes(events); strings.Join(got, " ") != strings.Join(wantEvents, " ") {
		t.Errorf("events\n%q\nwant\n%q", got, wantEvents)
	}
	for _, e := range events {
		if e["type"] == "response.output_text.annotation.added" {
			got, _ := json.Marshal(e["annotation"])
			if w := fmt.Sprintf(`{"file_id":%q,"filename":"handbook.md","index":%d,"type":"file_citation"}`, ids["handbook.md"], r.Output[1].Content[0].Annotations[0].Index); string(got) != w {
				t.Errorf("annotation.added carries %s, want %s", got, w)
			}
		}
	}

	// Each turn's prompt is that of the same conversation with file_search as a
	// plain function tool, the search as its call and the results as its output.
	fn := `"tools":[{"type":"function","name":"file_search","description":` + jsonString(filesearch.Description) + `,"parameters":` + string(filesearch.Parameters) + `,"strict":true}]`
	plain := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	first := promptOf(t, plain, reqBody(model, false, fsAsk+","+fn))
	if got := promptOf(t, eng, reqBody(model, false, fsAsk+","+tool)); got != first {
		t.Errorf("first prompt\n%q\nwant file_search as a function tool\n%q", got, first)
	}
	callID := r.Output[0].ID
	second := promptOf(t, plain, reqBody(model, false, `"input":[{"role":"user","content":"How many days of leave do new hires get?"},`+
		`{"type":"function_call","call_id":"`+callID+`","name":"file_search","arguments":`+jsonString(fsArgs)+`},`+
		`{"type":"function_call_output","call_id":"`+callID+`","output":`+jsonString(filesearch.Render(found))+`}],`+fn))
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
	if got := outputJSON(t, &stored); got != want {
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
	schematest.FileSearch.ValidateEvents(t, replay)
	if err := schematest.CheckLifecycle(replay); err != nil {
		t.Errorf("replay lifecycle: %v", err)
	}
	if got := eventTypes(replay); strings.Join(got, " ") != strings.Join(wantEvents, " ") {
		t.Errorf("replay events\n%q\nwant\n%q", got, wantEvents)
	}

	// Without include, no results; the answer is cited all the same.
	bare := createFileSearchJSON(t, srv, reqBody(model, false, fsAsk+","+tool))
	if got, want := outputJSON(t, bare), wantFileSearchOutput("", ids["handbook.md"]); got != want {
		t.Errorf("without include\n got %s\nwant %s", got, want)
	}

	// A continuation replays the chain's search as its call and results: its first
	// prompt is the conversation so far with the search as a function call and
	// output, then the model searches again.
	next := createFileSearchJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+r.ID+`","input":"Once more, please.",`+tool+","+fsInclude))
	if got := outputJSON(t, next); got != want {
		t.Errorf("continuation\n got %s\nwant %s", got, want)
	}
	searched := func(id string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"file_search","arguments":` + jsonString(fsArgs) + `},` +
			`{"type":"function_call_output","call_id":"` + id + `","output":` + jsonString(filesearch.Render(found)) + `}`
	}
	chain := `{"role":"user","content":"How many days of leave do new hires get?"},` + searched(callID) + `,` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + jsonString(scriptmodel.FileSearchAnswerText) + `}]},` +
		`{"role":"user","content":"Once more, please."}`
	chainFirst := promptOf(t, plain, reqBody(model, false, `"input":[`+chain+`],`+fn))
	chainSecond := promptOf(t, plain, reqBody(model, false, `"input":[`+chain+`,`+searched(next.Output[0].ID)+`],`+fn))
	if got, want := next.Usage.InputTokens, m.CountTokens(chainFirst)+m.CountTokens(chainSecond); got != want {
		t.Errorf("continuation: %d input tokens, want %d (the chain's search replayed as its call and results)", got, want)
	}

	// A second hearth over the same database (a restart, another replica: no chain
	// kept in memory) replays the stored search the same way.
	eng2 := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	h2 := wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db, Engine: eng2})
	eng2.RegisterHosted(filesearch.NewKind(h2.VectorStores, nil))
	srv2 := httptest.NewServer(h2)
	t.Cleanup(srv2.Close)
	cold := createFileSearchJSON(t, srv2, reqBody(model, false, `"previous_response_id":"`+r.ID+`","input":"Once more, please.",`+tool+","+fsInclude))
	coldSecond := promptOf(t, plain, reqBody(model, false, `"input":[`+chain+`,`+searched(cold.Output[0].ID)+`],`+fn))
	if got := outputJSON(t, cold); got != want {
		t.Errorf("continuation on a second hearth\n got %s\nwant %s", got, want)
	}
	if got, want := cold.Usage.InputTokens, m.CountTokens(chainFirst)+m.CountTokens(coldSecond); got != want {
		t.Errorf("continuation on a second hearth: %d input tokens, want %d", got, want)
	}

	// A continuation of a response that did not include the results: its model reads
	// that they were not kept (what a restarted hearth or another replica would show).
	bareNext := createFileSearchJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+bare.ID+`","input":"Once more, please.",`+tool))
	notKept := func(id string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"file_search","arguments":` + jsonString(fsArgs) + `},` +
			`{"type":"function_call_output","call_id":"` + id + `","output":` + jsonString("(The results of this search are not kept: the request did not include file_search_call.results. Search again to read them.)") + `}`
	}
	bareChain := `{"role":"user","content":"How many days of leave do new hires get?"},` + notKept(bare.Output[0].ID) + `,` +
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + jsonString(scriptmodel.FileSearchAnswerText) + `}]},` +
		`{"role":"user","content":"Once more, please."}`
	bareFirst := promptOf(t, plain, reqBody(model, false, `"input":[`+bareChain+`],`+fn))
	bareSecond := promptOf(t, plain, reqBody(model, false, `"input":[`+bareChain+`,`+searched(bareNext.Output[0].ID)+`],`+fn))
	if got, want := bareNext.Usage.InputTokens, m.CountTokens(bareFirst)+m.CountTokens(bareSecond); got != want {
		t.Errorf("continuation without include: %d input tokens, want %d (the results not kept)", got, want)
	}

	// A conversation keeps the search among its items and replays it next turn.
	var conv struct {
		ID string `json:"id"`
	}
	convDo(t, srv, "", "POST", "/v1/conversations", `{}`, &conv)
	for turn := range 2 {
		c := createFileSearchJSON(t, srv, reqBody(model, false, fsAsk+","+tool+","+fsInclude+`,"conversation":"`+conv.ID+`"`))
		if got := outputJSON(t, c); got != want {
			t.Errorf("conversation turn %d\n got %s\nwant %s", turn, got, want)
		}
	}
	var convItems struct {
		Data []json.RawMessage `json:"data"`
	}
	convDo(t, srv, "", "GET", "/v1/conversations/"+conv.ID+"/items?order=asc&include[]=file_search_call.results", "", &convItems)
	if len(convItems.Data) != 6 || !strings.Contains(string(convItems.Data[1]), `"type":"file_search_call"`) ||
		!strings.Contains(string(convItems.Data[1]), `"results":`+results) {
		t.Errorf("conversation items: %s", convItems.Data)
	}

	// tool_choice forces the search (under its grammar), as do allowed_tools that
	// name it, and the same call comes out.
	for _, choice := range []string{`{"type":"file_search"}`, `{"type":"allowed_tools","mode":"required","tools":[{"type":"file_search"}]}`, `"required"`} {
		forced := createFileSearchJSON(t, srv, reqBody(model, false, fsAsk+","+tool+`,"tool_choice":`+choice))
		if got, want := outputJSON(t, forced), wantFileSearchOutput("", ids["handbook.md"]); got != want {
			t.Errorf("tool_choice %s\n got %s\nwant %s", choice, got, want)
		}
		if got := forced.Usage.OutputTokens; got != wantOut {
			t.Errorf("tool_choice %s: output_tokens %d, want %d", choice, got, wantOut)
		}
	}
}

// TestFileSearchRequestErrorsE2E: the tool's stores are the caller's: another key's
// store and an unknown id are 404s naming the id's place in the tool; a bad filter,
// two file_search tools and a bad field are 400s naming the field; a forced search on
// a hearth without the kind is a 400, and there the tool is reported ignored.
func TestFileSearchRequestErrorsE2E(t *testing.T) {
	srv, _, db := fileSearchHearth(t, wire.Config{})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	_, bob, _ := db.CreateKey(ctx, "bob")
	store, _ := fsStore(t, srv, alice)
	model := scriptmodel.FileSearchModel
	body := func(extra string) string { return reqBody(model, false, fsAsk+","+extra) }

	for _, tc := range []struct {
		name, key, body string
		status          int
		code, param     string
	}{
		{"another key's store", bob, body(fsTool(store)), 404, "vector_store_not_found", "tools[0].vector_store_ids[0]"},
		{"unknown store", alice, body(`"tools":[{"type":"file_search","vector_store_ids":["` + store + `","vs_nope"]}]`), 404, "vector_store_not_found", "tools[0].vector_store_ids[1]"},
		{"bad filter", alice, body(`"tools":[{"type":"file_search","vector_store_ids":["` + store + `"],"filters":{"type":"near","key":"a","value":1}}]`), 400, "invalid_value", "tools[0].filters.type"},
		{"two tools", alice, body(`"tools":[{"type":"file_search","vector_store_ids":["` + store + `"]},{"type":"file_search","vector_store_ids":["` + store + `"]}]`), 400, "invalid_value", "tools[1].type"},
		{"no stores", alice, body(`"tools":[{"type":"file_search","vector_store_ids":[]}]`), 400, "empty_array", "tools[0].vector_store_ids"},
		{"max_num_results", alice, body(`"tools":[{"type":"file_search","vector_store_ids":["` + store + `"],"max_num_results":51}]`), 400, "integer_above_max_value", "tools[0].max_num_results"},
	} {
		code, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", tc.key, tc.body)
		gotCode, gotParam := errCode(b)
		if code != tc.status || gotCode != tc.code || gotParam != tc.param {
			t.Errorf("%s: %d %s, want %d %s on %s", tc.name, code, b, tc.status, tc.code, tc.param)
		}
	}

	// The owner searches; the answer cites the handbook.
	code, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", alice, body(fsTool(store)))
	if code != http.StatusOK || !strings.Contains(string(b), `"type":"file_citation"`) {
		t.Errorf("the owner's search: %d %s", code, b)
	}

	// A hearth without the kind ignores the tool and refuses to force it.
	plain := newHearth(t)
	resp, b := post(t, plain.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, false, fsAsk+","+fsTool("vs_1")))
	if resp.StatusCode != http.StatusOK || resp.Header.Get("x-hearth-ignored") != "tools[0]?(file_search)" {
		t.Errorf("without the kind: %d, x-hearth-ignored %q: %s", resp.StatusCode, resp.Header.Get("x-hearth-ignored"), b)
	}
	resp, b = post(t, plain.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, false, fsAsk+","+fsTool("vs_1")+`,"tool_choice":{"type":"file_search"}`))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"param":"tool_choice"`) {
		t.Errorf("forced without the kind: %d %s", resp.StatusCode, b)
	}
}

// TestFileSearchStoresE2E: a tool naming two stores searches both (each result once
// per store that holds it, best first, equal scores in the order the tool names the
// stores); a filter that keeps nothing finds nothing: the item completes with no
// results, the model reads "No results.", and its answer's file name cites nothing.
func TestFileSearchStoresE2E(t *testing.T) {
	srv, _, _ := fileSearchHearth(t, wire.Config{})
	store, ids := fsStore(t, srv, "")
	m := testenv.Model(t, scriptmodel.FileSearchModel)
	var kettles hearth.VectorStore
	convDo(t, srv, "", "POST", "/v1/vector_stores", fmt.Sprintf(`{"name":"kettles","file_ids":[%q],"hearth":{"embedding_model":%q}}`,
		ids["kettle.md"], scriptmodel.EmbedModel), &kettles)
	waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, "", "GET", "/v1/vector_stores/"+kettles.ID, "", &v)
		return v
	})
	model := scriptmodel.FileSearchModel

	both := createFileSearchJSON(t, srv, reqBody(model, false, fsAsk+","+fsInclude+
		`,"tools":[{"type":"file_search","vector_store_ids":["`+kettles.ID+`","`+store+`"],"max_num_results":3}]`))
	fs := filesearch.CallOf(both.Output[0])
	var got []string
	for _, r := range fs.Results {
		got = append(got, r.Filename+" "+r.FileID)
	}
	want := []string{"handbook.md " + ids["handbook.md"], "kettle.md " + ids["kettle.md"], "kettle.md " + ids["kettle.md"]}
	if strings.Join(got, ",") != strings.Join(want, ",") || fs.Results[1].Score != fs.Results[2].Score || fs.Results[0].Score <= fs.Results[1].Score {
		t.Errorf("two stores found %+v, want %v", fs.Results, want)
	}
	if a := both.Output[1].Content[0].Annotations; len(a) != 1 || a[0].FileID != ids["handbook.md"] {
		t.Errorf("two stores: annotations %+v", a)
	}

	none := createFileSearchJSON(t, srv, reqBody(model, false, fsAsk+","+fsInclude+
		`,"tools":[{"type":"file_search","vector_store_ids":["`+store+`"],"filters":{"type":"eq","key":"team","value":"nobody"}}]`))
	wantNone := `[{"type":"file_search_call","id":"ID0","status":"completed","queries":["` + scriptmodel.FileSearchQuery + `"],"results":[]},` +
		`{"type":"message","id":"ID1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"` + scriptmodel.FileSearchAnswerText + `",` +
		`"annotations":[],"logprobs":[]}],"phase":"final_answer"}]`
	if got := outputJSON(t, none); got != wantNone {
		t.Errorf("a filter that keeps nothing\n got %s\nwant %s", got, wantNone)
	}
	// What the model read: its second prompt ends with the call and "No results.".
	fn := `"tools":[{"type":"function","name":"file_search","description":` + jsonString(filesearch.Description) + `,"parameters":` + string(filesearch.Parameters) + `,"strict":true}]`
	plain := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	id := none.Output[0].ID
	first := promptOf(t, plain, reqBody(model, false, fsAsk+","+fn))
	second := promptOf(t, plain, reqBody(model, false, `"input":[{"role":"user","content":"How many days of leave do new hires get?"},`+
		`{"type":"function_call","call_id":"`+id+`","name":"file_search","arguments":`+jsonString(fsArgs)+`},`+
		`{"type":"function_call_output","call_id":"`+id+`","output":"No results."}],`+fn))
	if got, want := none.Usage.InputTokens, m.CountTokens(first)+m.CountTokens(second); got != want {
		t.Errorf("a filter that keeps nothing: %d input tokens, want %d (the model reads \"No results.\")", got, want)
	}
}
