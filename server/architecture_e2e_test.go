package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

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
