package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
	"hearth/toolsearch"
)

// withAliases serves the test's hearth with model aliases (settings as --model-alias
// takes them), on an engine over the test runtime as hearth serve builds it: with the
// tool_search kind, which Claude Code's deferred tools use.
func withAliases(t *testing.T, settings ...string) func(*wire.Config) {
	t.Helper()
	var list []engine.Alias
	for _, s := range settings {
		a, err := engine.ParseAlias(s)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, a)
	}
	aliases, err := engine.NewAliases(list)
	if err != nil {
		t.Fatal(err)
	}
	return func(cfg *wire.Config) {
		cfg.Engine = engine.New(cfg.Runtime.Seam(), engine.DefaultFormats(), nil)
		cfg.Engine.Aliases = aliases
		cfg.Engine.RegisterHosted(toolsearch.NewKind(nil))
	}
}

// newAliasedHearth serves hearth over the test runtime with a fresh database and the
// aliases of settings.
func newAliasedHearth(t *testing.T, settings ...string) *httptest.Server {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := wire.Config{Runtime: testenv.Runtime(t), Database: db}
	withAliases(t, settings...)(&cfg)
	srv := httptest.NewServer(wire.New(cfg))
	t.Cleanup(srv.Close)
	return srv
}

// TestModelAliasE2E: a request names a model by an agent's own name; an alias
// (--model-alias) serves it with a script model. The response is the script model's,
// exactly, reports the model that ran, and is stored under it; streamed, every event
// names that model. An exact alias is listed in /v1/models; a name no alias or model
// has is a 404 that says how to add an alias.
func TestModelAliasE2E(t *testing.T) {
	plain := testenv.Model(t, scriptmodel.PlainModel)
	srv := newAliasedHearth(t, "claude-*="+scriptmodel.PlainModel, "gpt-4o="+scriptmodel.PlainModel)
	want := plain.Text(scriptmodel.EntryAssistant)

	for _, name := range []string{"claude-sonnet-4-5", "claude-haiku-4-5-20251001", "GPT-4o"} {
		r := createJSON(t, srv, `{"model":"`+name+`","input":"hi"}`)
		if got := respText(r); got != want {
			t.Errorf("%s: output %q, want the script model's %q", name, got, want)
		}
		if r.Model != scriptmodel.PlainModel {
			t.Errorf("%s: response model %q, want the model that ran, %q", name, r.Model, scriptmodel.PlainModel)
		}
		if got, want := r.Usage.OutputTokens, plain.EvalCount(scriptmodel.EntryAssistant); got != want {
			t.Errorf("%s: output_tokens %d, want %d", name, got, want)
		}
		var stored map[string]any
		getJSON(t, srv.URL+"/v1/responses/"+r.ID, http.StatusOK, &stored)
		if stored["model"] != scriptmodel.PlainModel {
			t.Errorf("%s: stored response model %v, want %q", name, stored["model"], scriptmodel.PlainModel)
		}
	}

	events, final := createSSE(t, srv, `{"model":"claude-opus-4-1","stream":true,"input":"hi"}`)
	if respText(final) != want || final.Model != scriptmodel.PlainModel {
		t.Errorf("streamed: %q from %q, want %q from %q", respText(final), final.Model, want, scriptmodel.PlainModel)
	}
	for _, e := range events {
		if r, ok := e["response"].(map[string]any); ok && r["model"] != scriptmodel.PlainModel {
			t.Errorf("event %v names model %v", e["type"], r["model"])
		}
	}

	// The exact alias is a model a client can pick; the glob is not a name.
	var list map[string]any
	getJSON(t, srv.URL+"/v1/models", http.StatusOK, &list)
	var ids []string
	for _, m := range list["data"].([]any) {
		ids = append(ids, m.(map[string]any)["id"].(string))
	}
	if !strings.Contains(" "+strings.Join(ids, " ")+" ", " gpt-4o ") {
		t.Errorf("/v1/models lists %v, want the alias gpt-4o among them", ids)
	}
	for _, id := range ids {
		if strings.Contains(id, "*") {
			t.Errorf("/v1/models lists the glob %q", id)
		}
	}
	var m map[string]any
	if getJSON(t, srv.URL+"/v1/models/gpt-4o", http.StatusOK, &m); m["id"] != "gpt-4o" {
		t.Errorf("GET /v1/models/gpt-4o = %v", m)
	}

	// A name nothing serves: the error says how to serve it.
	resp, body := post(t, srv.URL+"/v1/responses", `{"model":"gemini-2.5-pro","input":"hi"}`)
	var e struct{ Error *hearth.Error }
	if err := json.Unmarshal(body, &e.Error); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNotFound || e.Error.Code != hearth.CodeModelNotFound || e.Error.Param != "model" {
		t.Fatalf("unknown model: %d %s", resp.StatusCode, body)
	}
	wantMsg := "The model 'gemini-2.5-pro' does not exist or is not available." + lookedFor(t, "gemini-2.5-pro") + " To serve it under that name, alias it to a model hearth has: " +
		"hearth serve --model-alias 'gemini-2.5-pro=MODEL' (or a pattern, 'gemini-*=MODEL'); see docs/clients.md."
	if e.Error.Message != wantMsg {
		t.Errorf("unknown model message\n got %q\nwant %q", e.Error.Message, wantMsg)
	}
}

// TestModelAliasMissingTargetE2E: an alias whose model the runtime does not have says
// so, naming the alias to fix.
func TestModelAliasMissingTargetE2E(t *testing.T) {
	srv := newAliasedHearth(t, "claude-*=hearth-no-such-model:1b")
	resp, body := post(t, srv.URL+"/v1/responses", `{"model":"claude-sonnet-4-5","input":"hi"}`)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "the model alias 'claude-*=hearth-no-such-model:1b' serves requests with it") {
		t.Errorf("alias to a missing model: %d %s", resp.StatusCode, body)
	}
}

// respText is the text of a response's messages.
func respText(r *hearth.Response) string {
	var s strings.Builder
	for _, it := range r.Output {
		if it.Type == hearth.ItemMessage {
			s.WriteString(it.Text())
		}
	}
	return s.String()
}
