package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama"
	"hearth/engine/ollama/testenv"
	"hearth/mcp/mcptest"
	"hearth/scriptmodel"
)

// The test binary is also the search server the web search tests start over stdio.
func TestMain(m *testing.M) {
	mcptest.ServeIfAsked()
	testenv.Main(m)
}

// newHearth serves hearth's handler over the shared embedded runtime.
func newHearth(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t)}))
	t.Cleanup(srv.Close)
	return srv
}

func postJSON(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestPassthroughGenerate drives a script model through hearth's /api passthrough and
// checks the exact text and token counts the runtime reports.
func TestPassthroughGenerate(t *testing.T) {
	srv := newHearth(t)
	m := testenv.Model(t, scriptmodel.PlainModel)
	// Raw prompt ending in the entry token, which selects the script.
	prompt := "<|user|>hi" + scriptmodel.EntryAssistant
	// "<|user|>hi" is eight bytes plus two, one token each (the model has no merges),
	// then the entry token: counted by hand, so the model's own counter is checked too.
	const wantPromptTokens = 8 + 2 + 1
	if got := m.CountTokens(prompt); got != wantPromptTokens {
		t.Fatalf("CountTokens(%q) = %d, want %d", prompt, got, wantPromptTokens)
	}

	for _, stream := range []bool{false, true} {
		resp := postJSON(t, srv.URL+"/api/generate", api.GenerateRequest{
			Model: scriptmodel.PlainModel, Prompt: prompt, Raw: true, Stream: &stream,
			Options: map[string]any{"temperature": 0},
		})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream=%v: status %d", stream, resp.StatusCode)
		}
		var text strings.Builder
		var final api.GenerateResponse
		sc := bufio.NewScanner(resp.Body)
		chunks := 0
		for sc.Scan() {
			var r api.GenerateResponse
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("stream=%v: %v in %q", stream, err, sc.Text())
			}
			text.WriteString(r.Response)
			chunks++
			if r.Done {
				final = r
			}
		}
		if got, want := text.String(), m.Text(scriptmodel.EntryAssistant); got != want {
			t.Errorf("stream=%v: text %q, want %q", stream, got, want)
		}
		if !final.Done || final.DoneReason != "stop" {
			t.Errorf("stream=%v: done=%v reason=%q, want done with stop", stream, final.Done, final.DoneReason)
		}
		if got, want := final.EvalCount, m.EvalCount(scriptmodel.EntryAssistant); got != want {
			t.Errorf("stream=%v: eval_count %d, want %d (one per script piece, and EOS)", stream, got, want)
		}
		if final.PromptEvalCount != wantPromptTokens {
			t.Errorf("stream=%v: prompt_eval_count %d, want %d", stream, final.PromptEvalCount, wantPromptTokens)
		}
		if stream && chunks < 2 {
			t.Errorf("streamed generation came in %d chunk(s); passthrough must not buffer", chunks)
		}
	}
}

// TestPassthroughCatalog checks what ollama clients ask first: the version and the model
// list, and that /v1/models and /healthz agree with the runtime.
func TestPassthroughCatalog(t *testing.T) {
	srv := newHearth(t)
	getJSON := func(path string, v any) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode
	}
	var version struct{ Version string }
	want := ollama.RuntimeVersion
	if testenv.External() && os.Getenv(testenv.OllamaBinEnv) != "" {
		// Another Ollama than the module's: the version it says of itself.
		want = testenv.RuntimeVersion(t)
	}
	if getJSON("/api/version", &version); version.Version != want {
		t.Errorf("/api/version = %q, want the runtime's %s", version.Version, want)
	}
	var tags api.ListResponse
	getJSON("/api/tags", &tags)
	var names []string
	for _, m := range tags.Models {
		// Other tests of the package may have created bench variants by now.
		if !strings.Contains(m.Name, "-bench:") {
			names = append(names, m.Name)
		}
	}
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	getJSON("/v1/models", &models)
	var ids []string
	for _, m := range models.Data {
		if !strings.Contains(m.ID, "-bench:") {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(names)
	slices.Sort(ids)
	if strings.Join(names, ",") != strings.Join(ids, ",") {
		t.Errorf("/api/tags %v and /v1/models %v should list the same models", names, ids)
	}
	for name := range scriptmodel.Catalog() {
		if !slices.Contains(ids, name) {
			t.Errorf("/v1/models %v lacks catalogue model %s", ids, name)
		}
	}
	var health struct {
		Status  string
		Runtime struct{ OK bool }
	}
	if code := getJSON("/healthz", &health); code != http.StatusOK || health.Status != "ok" || !health.Runtime.OK {
		t.Errorf("/healthz = %d %+v", code, health)
	}
	var missing struct {
		Error struct{ Code, Param string }
	}
	if code := getJSON("/v1/models/no-such-model", &missing); code != http.StatusNotFound || missing.Error.Code != "model_not_found" {
		t.Errorf("/v1/models/no-such-model = %d %+v", code, missing)
	}
}

// TestPassthroughStreamIsWhole pulls from an unreachable registry (a closed loopback
// port) many times through hearth. The runtime streams "pulling manifest" at once and
// then the error; every response must carry both. Without full duplex, Go's server
// closed the request body when the first line went out while the proxy was still
// reading it, the proxy lost the runtime connection, and about one pull in 200 ended
// cleanly after the first line, which Ollama's client reports as success.
func TestPassthroughStreamIsWhole(t *testing.T) {
	srv := newHearth(t)
	testenv.Runtime(t)
	for i := range 1000 {
		resp, err := http.Post(srv.URL+"/api/pull", "application/json",
			strings.NewReader(`{"model":"127.0.0.1:9/hearth/no-such-model"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Contains(body, []byte(`"pulling manifest"`)) || !bytes.Contains(body, []byte(`"error"`)) {
			t.Fatalf("pull %d through hearth: %v\n%s", i, err, body)
		}
	}
}

// TestPassthroughRefusesBadFormats: a `format` schema the runtime cannot turn into a
// grammar is a 400 naming it on Ollama's routes and the OpenAI-compatible one, before it
// reaches the runtime (one whose repetition minimum exceeds its maximum makes a runner
// allocate until it is killed); a good schema and "json" still pass through.
func TestPassthroughRefusesBadFormats(t *testing.T) {
	srv := newHearth(t)
	testenv.Model(t, scriptmodel.PlainModel)
	bad := map[string]any{"type": "string", "minLength": 5, "maxLength": 2}
	cases := []struct {
		path  string
		body  map[string]any
		param string
	}{
		{"/api/generate", map[string]any{"model": scriptmodel.PlainModel, "prompt": "hi", "stream": false, "format": bad}, "format"},
		{"/api/chat", map[string]any{"model": scriptmodel.PlainModel, "stream": false, "format": bad,
			"messages": []map[string]string{{"role": "user", "content": "hi"}}}, "format"},
		{"/v1/chat/completions", map[string]any{"model": scriptmodel.PlainModel,
			"messages":        []map[string]string{{"role": "user", "content": "hi"}},
			"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": bad}}},
			"response_format.json_schema.schema"},
	}
	for _, tc := range cases {
		resp := postJSON(t, srv.URL+tc.path, tc.body)
		var e struct {
			Error struct {
				Param, Code string
			} `json:"error"`
		}
		json.NewDecoder(resp.Body).Decode(&e)
		if resp.StatusCode != http.StatusBadRequest || e.Error.Param != tc.param || e.Error.Code != "invalid_json_schema" {
			t.Errorf("%s with a bad schema: %s %+v, want 400 naming %s", tc.path, resp.Status, e.Error, tc.param)
		}
	}
	// "json" is no schema, and a schema the grammar takes runs: the script's text is no
	// JSON, so the grammar decides what comes out, but the runtime answers.
	for _, format := range []any{"json", map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}} {
		resp := postJSON(t, srv.URL+"/api/generate", map[string]any{"model": scriptmodel.PlainModel,
			"prompt": "<|user|>hi" + scriptmodel.EntryAssistant, "raw": true, "stream": false, "format": format,
			"options": map[string]any{"num_predict": 4}})
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("format %v: %s %s, want 200", format, resp.Status, b)
		}
	}
}

// TestEmbeddedRuntimeWithoutCloud: Ollama forwards any model named "<name>:cloud" to
// ollama.com with the host's identity; the embedded runtime runs with the cloud off,
// so such a name, through the passthrough or /v1/responses, is refused here and
// reaches no other host.
func TestEmbeddedRuntimeWithoutCloud(t *testing.T) {
	testenv.SkipIfExternal(t, "checks the embedded runtime's configuration")
	srv := newHearth(t)
	const cloudModel = "hearth-absent:cloud"
	for _, c := range []struct{ path, body string }{
		{"/api/show", `{"model":"` + cloudModel + `"}`},
		{"/api/chat", `{"model":"` + cloudModel + `","messages":[{"role":"user","content":"hi"}],"stream":false}`},
		{"/api/generate", `{"model":"` + cloudModel + `","prompt":"hi","stream":false}`},
	} {
		resp, err := http.Post(srv.URL+c.path, "application/json", strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "cloud is disabled") {
			t.Errorf("%s %s: %d %s; want 403, the cloud is disabled", c.path, cloudModel, resp.StatusCode, b)
		}
	}
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"`+cloudModel+`","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"model_not_found"`) {
		t.Errorf("/v1/responses %s: %d %s; want 404 model_not_found", cloudModel, resp.StatusCode, b)
	}
}
