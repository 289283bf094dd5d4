package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestRuntimeWithoutLlamaServerE2E: Ollama 0.30 and later run models in a llama-server
// they look for beside their executable. One that has none (its binary alone) still
// lists models, and fails every generation with a reason; hearth passes the reason on at
// once: a 500 server_error for a JSON request, error then response.failed for a streamed
// one, and the response stored as failed. Run with HEARTH_TEST_OLLAMA naming such a
// release (docs/testing.md).
func TestRuntimeWithoutLlamaServerE2E(t *testing.T) {
	if !testenv.RunsLlamaServer(t) {
		t.Skipf("needs %s=external with %s naming an Ollama %s or later", testenv.RuntimeEnv, testenv.OllamaBinEnv, testenv.LlamaServerSince)
	}
	bare := testenv.StartServerAlone(t)
	srv, _ := servePool(t, wire.Config{}, bare.Runtime)
	// The runtime refuses at once; the bound is for a loaded machine, not a timeout to wait out.
	const bound = 10 * time.Second
	const reason = "llama-server binary not found"

	resp, b := get(t, srv.URL+"/v1/models")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/v1/models: %d %s", resp.StatusCode, b)
	}
	if !strings.Contains(string(b), scriptmodel.PlainModel) {
		t.Errorf("/v1/models lacks %s: %s", scriptmodel.PlainModel, b)
	}

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/responses", strings.NewReader(reqBody(scriptmodel.PlainModel, false, `"input":"hi"`)))
	req.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("JSON request: %v\n%s", err, bare.Log())
	}
	var apiErr struct {
		Error struct{ Type, Code, Message string }
	}
	err = json.NewDecoder(r.Body).Decode(&apiErr)
	r.Body.Close()
	if err != nil || r.StatusCode != http.StatusInternalServerError || apiErr.Error.Type != "server_error" || !strings.Contains(apiErr.Error.Message, reason) {
		t.Errorf("JSON request: %d %+v (%v); want a 500 server_error saying %q", r.StatusCode, apiErr.Error, err, reason)
	}

	// Streamed, with a tool choice hearth enforces: the same reason, as the stream's end.
	start := time.Now()
	events, failed := createSSE(t, srv, reqBody(scriptmodel.ToolsModel, true, `"input":"weather?",`+toolsJSON+`,"tool_choice":"required"`))
	if took := time.Since(start); took > bound {
		t.Errorf("the stream took %v to fail", took)
	}
	n := len(events)
	if n < 2 || events[n-2]["type"] != "error" || events[n-1]["type"] != "response.failed" {
		t.Fatalf("stream ended with %v, %v; want error then response.failed", events[n-2]["type"], events[n-1]["type"])
	}
	if failed.Status != hearth.StatusFailed || failed.Error == nil || !strings.Contains(failed.Error.Message, reason) {
		t.Errorf("response.failed carries %s %+v; want failed saying %q", failed.Status, failed.Error, reason)
	}
	if stored := getStored(t, srv, failed.ID); stored.Status != hearth.StatusFailed || stored.Error == nil {
		t.Errorf("stored response: %s %+v; want failed with the error", stored.Status, stored.Error)
	}
}
