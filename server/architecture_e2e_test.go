package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestUnknownArchitectureE2E: a model whose GGUF architecture neither of the embedded
// runtime's engines knows is refused with a 400 naming the architecture and what to
// do, before the runtime tries to load it (which would fail with a bare 500).
// Over an external runtime the model is that server's business: its own error
// passes through, as for any model it cannot load.
func TestUnknownArchitectureE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "the external server decides what it can run")
	const model = "hearth-script-unknown-arch:latest"
	spec := scriptmodel.Spec{Architecture: "hearthtestarch", Template: "{{ .Prompt }}<|go|>",
		Scripts: []scriptmodel.Script{{Entry: "<|go|>", Text: "Never written."}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, spec); err != nil {
		t.Fatal(err)
	}
	srv := newHearthWithDB(t)
	const want = `{"error":{"message":"The model \"` + model + `\" has the architecture \"hearthtestarch\", which the embedded runtime (Ollama 0.24.0) cannot run; ` +
		`serve it from an Ollama that can (hearth serve --runtime URL).","type":"invalid_request_error","param":"model","code":"model_architecture_unsupported"}}`
	for _, stream := range []bool{false, true} {
		resp, b := post(t, srv.URL+"/v1/responses", reqBody(model, stream, `"input":"hi"`))
		if resp.StatusCode != http.StatusBadRequest || string(b) != want {
			t.Errorf("stream %v: %d %s\nwant 400 %s", stream, resp.StatusCode, b, want)
		}
	}
	// Embeddings load the model too (a generation model embeds its last token).
	resp, b := post(t, srv.URL+"/v1/embeddings", `{"model":"`+model+`","input":"hi"}`)
	if resp.StatusCode != http.StatusBadRequest || string(b) != want {
		t.Errorf("embeddings: %d %s\nwant 400 %s", resp.StatusCode, b, want)
	}
}

// TestUnsupportedArchitectureMovesInPoolE2E: with the embedded runtime and an external
// `ollama serve` behind one hearth, a model whose architecture the embedded runtime
// cannot run goes to the external runtime instead of being refused: the request is
// the external server's business there. Both runtimes here are the same Ollama
// release, so the external one fails to load this made-up architecture too, and its
// own error (not hearth's 400) is what shows the request went there; with an external
// runtime of a newer release that knows the architecture, it would run.
func TestUnsupportedArchitectureMovesInPoolE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "the first runtime must be the embedded one")
	const model = "hearth-script-unknown-arch-pool:latest"
	spec := scriptmodel.Spec{Architecture: "hearthtestarch", Template: "{{ .Prompt }}<|go|>",
		Scripts: []scriptmodel.Script{{Entry: "<|go|>", Text: "Never written."}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	embedded := testenv.Runtime(t)
	if _, err := scriptmodel.Create(ctx, embedded.Client, model, spec); err != nil {
		t.Fatal(err)
	}
	external := testenv.StartServer(t)
	srv, _ := servePool(t, wire.Config{}, embedded, external.Runtime)

	for _, path := range []string{"/v1/responses", "/v1/embeddings"} {
		body := reqBody(model, false, `"input":"hi"`)
		if path == "/v1/embeddings" {
			body = `{"model":"` + model + `","input":"hi"}`
		}
		resp, b := post(t, srv.URL+path, body)
		if resp.StatusCode == http.StatusOK || strings.Contains(string(b), "model_architecture_unsupported") {
			t.Fatalf("%s: %d %s\nwant the external runtime's own load failure, not the embedded runtime's refusal", path, resp.StatusCode, b)
		}
		if !strings.Contains(string(b), "unable to load model: sha256-") {
			t.Errorf("%s: %d %s\nwant the external server's error (unable to load model)", path, resp.StatusCode, b)
		}
		if strings.Contains(string(b), "/blobs/") {
			t.Errorf("%s: %s\nshows the runtime host's directories to the client", path, b)
		}
		t.Logf("%s: %d %s", path, resp.StatusCode, b)
	}
}
