package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/server"
)

// TestStoredMetadataBoundsE2E: metadata and attributes are bounded wherever hearth
// stores them as OpenAI bounds them (16 keys, keys of 64 characters, values of 512),
// with a 400 naming the field: a vector store's metadata at creation and update, and
// a vector store file's attributes. Unbounded, one request could store and echo
// megabytes, and every list of stores would carry them.
func TestStoredMetadataBoundsE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	testenv.Embedder(t)
	var many []string
	for i := range 17 {
		many = append(many, fmt.Sprintf(`"k%d":"v"`, i))
	}
	tooMany := "{" + strings.Join(many, ",") + "}"
	longKey := strings.Repeat("k", 65)
	longValue := strings.Repeat("v", 513)
	bad := []struct {
		name, metadata, code, param string
	}{
		{"17 keys", tooMany, hearth.CodeObjectAboveMaxProperties, "metadata"},
		{"a 65-character key", `{"` + longKey + `":"v"}`, hearth.CodeStringAboveMaxLength, "metadata." + longKey},
		{"a 513-character value", `{"k":"` + longValue + `"}`, hearth.CodeStringAboveMaxLength, "metadata.k"},
		{"a number", `{"k":1}`, hearth.CodeInvalidType, "metadata.k"},
	}
	model := `"hearth":{"embedding_model":"` + scriptmodel.EmbedModel + `"}`
	for _, tc := range bad {
		convRefused(t, srv, "", "POST", "/v1/vector_stores", `{"name":"a","metadata":`+tc.metadata+`,`+model+`}`,
			http.StatusBadRequest, tc.code, tc.param)
	}
	// The bounds themselves are allowed.
	var at []string
	for i := range 16 {
		at = append(at, fmt.Sprintf(`"%s%02d":"%s"`, strings.Repeat("k", 62), i, longValue[:512]))
	}
	var vs hearth.VectorStore
	convDo(t, srv, "", "POST", "/v1/vector_stores", `{"name":"a","metadata":{`+strings.Join(at, ",")+`},`+model+`}`, &vs)
	if len(vs.Metadata) != 16 {
		t.Fatalf("metadata at the bounds: %d keys", len(vs.Metadata))
	}
	for _, tc := range bad {
		convRefused(t, srv, "", "POST", "/v1/vector_stores/"+vs.ID, `{"metadata":`+tc.metadata+`}`, http.StatusBadRequest, tc.code, tc.param)
	}
	var got hearth.VectorStore
	convDo(t, srv, "", "GET", "/v1/vector_stores/"+vs.ID, "", &got)
	if len(got.Metadata) != 16 {
		t.Errorf("a refused update changed the metadata: %d keys", len(got.Metadata))
	}
	var cleared hearth.VectorStore
	convDo(t, srv, "", "POST", "/v1/vector_stores/"+vs.ID, `{"metadata":null}`, &cleared)
	if len(cleared.Metadata) != 0 {
		t.Errorf("metadata null: %d keys", len(cleared.Metadata))
	}

	// A file's attributes: the same bounds, values strings, numbers or booleans.
	file := uploadFile(t, srv, "", "a.txt", "assistants", []byte("The kettle ships on Tuesday.\n")).ID
	attrs := []struct{ attributes, code, param string }{
		{strings.Replace(tooMany, `"v"`, `true`, 1), hearth.CodeObjectAboveMaxProperties, "attributes"},
		{`{"` + longKey + `":1}`, hearth.CodeStringAboveMaxLength, "attributes." + longKey},
		{`{"k":"` + longValue + `"}`, hearth.CodeStringAboveMaxLength, "attributes.k"},
		{`{"k":{"nested":1}}`, hearth.CodeInvalidType, "attributes.k"},
	}
	for _, tc := range attrs {
		convRefused(t, srv, "", "POST", "/v1/vector_stores/"+vs.ID+"/files", `{"file_id":"`+file+`","attributes":`+tc.attributes+`}`,
			http.StatusBadRequest, tc.code, tc.param)
	}
	convDo(t, srv, "", "POST", "/v1/vector_stores/"+vs.ID+"/files", `{"file_id":"`+file+`","attributes":{"team":"ops","year":2026,"open":true}}`, nil)
	for _, tc := range attrs {
		convRefused(t, srv, "", "POST", "/v1/vector_stores/"+vs.ID+"/files/"+file, `{"attributes":`+tc.attributes+`}`,
			http.StatusBadRequest, tc.code, tc.param)
	}
}

// TestCreateRefusesWhatItCannotAnswerE2E: a create hearth cannot answer as asked is a
// 400 naming the field, before anything runs or is stored: an unknown top-level
// parameter (a misspelt input), a request with nothing to answer, and a response asked
// of an embedding model. The fields OpenAI takes that hearth does not model are still
// taken and named.
func TestCreateRefusesWhatItCannotAnswerE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	testenv.Embedder(t)
	model := scriptmodel.PlainModel
	for _, tc := range []struct {
		name, body, code, param string
	}{
		{"inputs", `{"model":"` + model + `","inputs":"hi"}`, hearth.CodeUnknownParameter, "inputs"},
		{"max_tokens", `{"model":"` + model + `","input":"hi","max_tokens":20}`, hearth.CodeUnknownParameter, "max_tokens"},
		{"no input", `{"model":"` + model + `"}`, hearth.CodeMissingRequiredParameter, "input"},
		{"instructions alone", `{"model":"` + model + `","instructions":"Be brief.","store":true}`, hearth.CodeMissingRequiredParameter, "input"},
		{"a saved prompt", `{"model":"` + model + `","prompt":{"id":"pmpt_1"}}`, hearth.CodeMissingRequiredParameter, "input"},
		{"an embedding model", `{"model":"` + scriptmodel.EmbedModel + `","input":"hi"}`, engine.CodeModelNotGenerative, "model"},
		{"an embedding model, streamed", `{"model":"` + scriptmodel.EmbedModel + `","input":"hi","stream":true}`, engine.CodeModelNotGenerative, "model"},
	} {
		for _, path := range []string{"/v1/responses", "/v1/responses/compact"} {
			if path == "/v1/responses/compact" && tc.code == engine.CodeModelNotGenerative {
				tc.body = `{"model":"` + scriptmodel.EmbedModel + `","input":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`
			}
			code, _, b := call(t, nil, "POST", srv.URL+path, "", tc.body)
			gotCode, gotParam := errCode(b)
			if code != http.StatusBadRequest || gotCode != tc.code || gotParam != tc.param {
				t.Errorf("%s %s: %d %s, want 400 %s on %s", tc.name, path, code, b, tc.code, tc.param)
			}
		}
	}
	// What OpenAI takes and hearth does not model is accepted and named.
	code, hdr, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", `{"model":"`+model+`","input":"hi","client_metadata":{"a":"b"},"prompt_cache_key":"k","safety_identifier":"u","service_tier":"auto","user":"u","truncation":"auto","top_logprobs":0,"prompt_cache_retention":"24h","max_tool_calls":2,"parallel_tool_calls":true,"text":{"verbosity":"low"},"reasoning":{"effort":"low"},"store":false,"include":[],"background":false}`)
	if code != 200 || hdr.Get("x-hearth-ignored") != "client_metadata" {
		t.Errorf("OpenAI's fields: %d %q %s", code, hdr.Get("x-hearth-ignored"), b)
	}
}

// reasoningOnlyModel creates (in the test runtime) a script model that only reasons:
// asked for anything, it writes a thought and ends its turn without a word of text,
// as a reasoning model sometimes does when asked for a summary.
func reasoningOnlyModel(t *testing.T) string {
	t.Helper()
	const name = "hearth-script-think-only:latest"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec := scriptmodel.Spec{Template: scriptmodel.Template, Stop: scriptmodel.Stop, Scripts: []scriptmodel.Script{
		{Entry: scriptmodel.EntryAssistant, Text: "<think>A summary would be long. I will think about it instead.</think>"}}}
	if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, name, spec); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestCompactFallbackSummaryE2E: a model that writes no summary (only reasoning, or
// only a tool call it was not offered) does not fail a compaction: the compaction item
// carries engine.FallbackNote and the conversation's latest items, the answer says so
// (x-hearth-compaction-fallback), and the next turn goes on from it. Over
// /v1/responses/compact and over a WebSocket whose create compacts first.
func TestCompactFallbackSummaryE2E(t *testing.T) {
	srv, _, key, _ := sealedHearth(t, t.TempDir())
	window := `[{"role":"user","content":"Plan the kettle launch."},
		{"role":"assistant","content":"Launch on Tuesday, with the ops team on call."},
		{"role":"user","content":"And the price?"}]`
	for _, model := range []string{reasoningOnlyModel(t), scriptmodel.ToolsModel} {
		resp, b := post(t, srv.URL+"/v1/responses/compact", `{"model":"`+model+`","input":`+window+`}`)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(server.HeaderCompactionFallback) != "true" {
			t.Fatalf("%s: compact %d %q %s", model, resp.StatusCode, resp.Header.Get(server.HeaderCompactionFallback), b)
		}
		var r hearth.CompactResponse
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Output) != 2 || r.Output[0].Text() != "And the price?" {
			t.Fatalf("%s: compacted window %+v", model, r.Output)
		}
		want := engine.FallbackNote + "\n\nuser: Plan the kettle launch.\nassistant: Launch on Tuesday, with the ops team on call."
		if s := summaryOf(t, key, r.Output[1]); s != want {
			t.Errorf("%s: summary %q, want %q", model, s, want)
		}
		next := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"store":false,"input":`+mustJSON(t, r.Output)))
		if next.Status != hearth.StatusCompleted {
			t.Errorf("%s: turn after the fallback compaction: %s", model, next.Status)
		}
	}

	// A WebSocket create over its compact_threshold compacts first, with the same
	// fallback, and the response goes on.
	model := reasoningOnlyModel(t)
	long := strings.Repeat("lorem ", 200) // a script model's token is about a byte
	ws := dialWS(t, srv, nil)
	// An assistant message as a string is OpenAI's shorthand, outside the schema's
	// create event: the message is not checked against it.
	ws.send(wsCreate(model, `"store":false,"input":[{"role":"user","content":`+jsonString("one "+long)+`},
		{"role":"assistant","content":"Noted."},{"role":"user","content":"two"}],`+compactAt(1000)), false)
	tr := ws.turn()
	if tr.err != nil {
		t.Fatalf("socket create over the threshold: %+v", *tr.err)
	}
	r := tr.final
	if r.Status != hearth.StatusCompleted || len(r.Output) == 0 || r.Output[0].Type != hearth.ItemCompaction {
		t.Fatalf("socket create over the threshold: %s %+v", r.Status, r.Output)
	}
	if s := summaryOf(t, key, r.Output[0]); !strings.HasPrefix(s, engine.FallbackNote) || !strings.Contains(s, "assistant: Noted.") {
		t.Errorf("socket compaction summary %q", s)
	}
}
