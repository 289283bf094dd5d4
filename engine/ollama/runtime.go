// Package ollama is hearth's seam to the Ollama runtime: a client for an Ollama server
// that either runs inside the hearth process (StartEmbedded) or is one the user already
// runs (Connect).
package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/envconfig"
)

// Runtime is a reachable Ollama server.
type Runtime struct {
	// URL is the runtime's base address, e.g. http://127.0.0.1:11434; for an embedded
	// runtime a name only its Transport can reach.
	URL *url.URL
	// Client speaks Ollama's HTTP API to URL.
	Client *api.Client
	// Embedded is true when the runtime runs inside this process.
	Embedded bool
	// ModelsDir is where the runtime keeps models, when known (always for an embedded
	// runtime; an external one does not say).
	ModelsDir string
	// GPUs are the devices an embedded runtime's GPU backend found when it started; none
	// on a CPU build, with the GPU disabled, or for an external runtime.
	GPUs []Device

	http *http.Client
	// stopped is closed when an embedded runtime's server has returned; err holds why.
	stopped chan struct{}
	err     error
}

// ParseURL accepts what users write for an Ollama address: a full URL, host:port, or a
// bare host, the way the ollama CLI reads OLLAMA_HOST.
func ParseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("empty runtime address")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("runtime address %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("runtime address %q: scheme must be http or https", raw)
	}
	if u.Port() == "" {
		switch {
		case u.Scheme == "https":
			u.Host += ":443"
		default:
			u.Host += ":11434"
		}
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}

// Connect returns a Runtime for an Ollama server the user runs at rawURL. It does not
// require the server to be up yet: Ready reports that.
func Connect(rawURL string) (*Runtime, error) {
	u, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	return newRuntime(u, http.DefaultTransport), nil
}

func newRuntime(u *url.URL, transport http.RoundTripper) *Runtime {
	// No overall timeout: generations stream for as long as they take; callers cancel
	// through their contexts.
	hc := &http.Client{Transport: transport}
	return &Runtime{URL: u, Client: api.NewClient(u, hc), http: hc}
}

// Transport is the HTTP transport that reaches the runtime at URL. An embedded runtime
// has no network address: requests to it must go through this transport (a reverse
// proxy, a benchmark's own client).
func (r *Runtime) Transport() http.RoundTripper { return r.http.Transport }

// Ready reports whether the runtime answers.
func (r *Runtime) Ready(ctx context.Context) error {
	if r.stopped != nil {
		select {
		case <-r.stopped:
			return fmt.Errorf("embedded runtime stopped: %w", r.err)
		default:
		}
	}
	return r.Client.Heartbeat(ctx)
}

// WaitReady polls Ready until it succeeds or ctx ends.
func (r *Runtime) WaitReady(ctx context.Context) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := r.Ready(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("runtime at %s not ready: %w", r.URL, err)
		case <-tick.C:
		}
	}
}

// UnloadAll asks the runtime to unload every loaded model, which stops their runner
// processes. hearth calls it on shutdown so an embedded runtime leaves no runners behind.
func (r *Runtime) UnloadAll(ctx context.Context) error {
	ps, err := r.Client.ListRunning(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range ps.Models {
		zero := api.Duration{Duration: 0}
		req := &api.GenerateRequest{Model: m.Name, KeepAlive: &zero}
		if err := r.Client.Generate(ctx, req, func(api.GenerateResponse) error { return nil }); err != nil {
			errs = append(errs, fmt.Errorf("unload %s: %w", m.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Slots is how many generations per model the runtime runs at once: OLLAMA_NUM_PARALLEL
// (default 1), which the embedded runtime reads from this process's environment and an
// external one is assumed to share (its own setting cannot be asked over the API).
func (r *Runtime) Slots() int {
	return max(int(envconfig.NumParallel()), 1)
}
