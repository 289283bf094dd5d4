package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
)

// TestFilesWithoutDatabaseE2E: a server that keeps no database answers every route of
// the files and vector stores APIs with a 500 that says so, before reading the request.
func TestFilesWithoutDatabaseE2E(t *testing.T) {
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t)}))
	t.Cleanup(srv.Close)
	for _, r := range []struct{ method, path string }{
		{"POST", "/v1/files"},
		{"GET", "/v1/files"},
		{"GET", "/v1/files/file-1/content"},
		{"DELETE", "/v1/files/file-1"},
		{"POST", "/v1/vector_stores"},
		{"GET", "/v1/vector_stores"},
		{"POST", "/v1/vector_stores/vs_1"},
		{"POST", "/v1/vector_stores/vs_1/search"},
		{"GET", "/v1/vector_stores/vs_1/files"},
		{"GET", "/v1/vector_stores/vs_1/file_batches/vsfb_1/files"},
		{"POST", "/v1/vector_stores/vs_1/file_batches/vsfb_1/cancel"},
	} {
		req, _ := http.NewRequest(r.method, srv.URL+r.path, strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "keeps no database: files need one") {
			t.Errorf("%s %s: %d %s, want 500 saying the server keeps no database", r.method, r.path, resp.StatusCode, body)
		}
	}
}
