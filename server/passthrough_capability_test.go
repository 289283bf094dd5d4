package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/server"
)

// bareRuntime is a runtime with no API of its own to pass through: the method set every
// runtime has, and nothing more.
type bareRuntime struct{ label string }

func (r bareRuntime) Ready(context.Context) error                          { return nil }
func (r bareRuntime) Models(context.Context) ([]engine.ListedModel, error) { return nil, nil }
func (r bareRuntime) Loaded(context.Context) ([]engine.LoadedModel, error) { return nil, nil }
func (r bareRuntime) Label() string                                        { return r.label }
func (r bareRuntime) IsEmbedded() bool                                     { return false }
func (r bareRuntime) Seam() engine.Runtime                                 { return r }
func (r bareRuntime) CheckFormat(context.Context, []byte) error            { return nil }
func (r bareRuntime) Model(context.Context, string) (*engine.ModelInfo, error) {
	return nil, engine.ErrModelNotFound
}
func (r bareRuntime) Generate(context.Context, *engine.GenerateRequest, func(engine.Chunk) error) error {
	return engine.ErrModelNotFound
}

// passingRuntime is bareRuntime with its own API at target.
type passingRuntime struct {
	bareRuntime
	target *url.URL
}

func (r passingRuntime) PassthroughTarget() (*url.URL, http.RoundTripper) {
	return r.target, http.DefaultTransport
}

// TestPassthroughIsACapability: the server forwards a runtime's own API only when the
// runtime implements server.Passthrough; without it the routes are not served (a JSON
// 404), and the rest of the server does not care.
func TestPassthroughIsACapability(t *testing.T) {
	own := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"models":[{"name":"from-the-runtime"}]}`)
	}))
	defer own.Close()
	target, _ := url.Parse(own.URL)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name string
		rt   server.Runtime
		want int
		body string
	}{
		{"without", bareRuntime{"bare:1"}, http.StatusNotFound, `"code":"not_found"`},
		{"with", passingRuntime{bareRuntime{"passing:1"}, target}, http.StatusOK, "from-the-runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(wire.New(wire.Config{Runtime: tc.rt, Logger: quiet}))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/api/tags")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || !strings.Contains(string(b), tc.body) {
				t.Errorf("GET /api/tags: %d %s, want %d with %s", resp.StatusCode, b, tc.want, tc.body)
			}
			if resp, err := http.Get(srv.URL + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
				t.Errorf("GET /healthz: %v %v", resp, err)
			}
		})
	}
}
