package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/spf13/cobra"

	"hearth/engine"
	"hearth/engine/ollama"
)

// DefaultHost is where client commands look for a running hearth.
const DefaultHost = "http://127.0.0.1:8080"

// clientOptions are the flags of commands that talk to a running hearth: they reach
// the runtime through hearth's /api passthrough, so they start nothing heavy themselves.
type clientOptions struct {
	host   string
	apiKey string
}

func (o *clientOptions) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.host, "host", DefaultHost, "URL of the running hearth")
	cmd.Flags().StringVar(&o.apiKey, "api-key", "", "API key to send, when hearth requires one (the first, if several)")
}

// bearer adds the API key to requests that do not carry their own Authorization.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.key != "" && r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.next.RoundTrip(r)
}

// hearthClient is an Ollama API client for the runtime behind a running hearth.
type hearthClient struct {
	base *url.URL
	http *http.Client
	api  *api.Client
}

func (o *clientOptions) client() (*hearthClient, error) {
	u, err := parseHost(o.host)
	if err != nil {
		return nil, err
	}
	key, _, _ := strings.Cut(o.apiKey, ",")
	hc := &http.Client{Transport: bearer{key: strings.TrimSpace(key), next: http.DefaultTransport}}
	return &hearthClient{base: u, http: hc, api: api.NewClient(u, hc)}, nil
}

// explain turns a failure to reach hearth into advice.
func (c *hearthClient) explain(err error) error {
	var ne *net.OpError
	var ue *url.Error
	var ae api.AuthorizationError
	var se api.StatusError
	switch {
	case errors.As(err, &ne) || (errors.As(err, &ue) && !ue.Timeout()):
		return fmt.Errorf("no hearth answers at %s (%v): start one with `hearth serve`, or point --host (HEARTH_HOST) at it", c.base, err)
	case errors.As(err, &ae) && ae.StatusCode == http.StatusUnauthorized,
		errors.As(err, &se) && se.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("hearth at %s requires an API key: pass --api-key (or HEARTH_API_KEY)", c.base)
	}
	return err
}

// health fetches /healthz.
func (c *hearthClient) health(ctx context.Context) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", c.base.JoinPath("/healthz").String(), nil)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, c.explain(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// modelSeam is the engine's runtime seam over the runtime behind hearth's /api
// passthrough. When hearth runs the embedded runtime alone (its /healthz says so) the
// seam also judges each model's architecture as that runtime would, so the commands show
// a model it cannot run. An external runtime judges its own models, and with several
// runtimes a model may live on one that can run it: no judgement then.
func (c *hearthClient) modelSeam(ctx context.Context) engine.Runtime {
	var health struct {
		Runtime struct {
			Embedded bool `json:"embedded"`
		} `json:"runtime"`
		Runtimes []struct {
			Embedded bool `json:"embedded"`
		} `json:"runtimes"`
	}
	if _, body, err := c.health(ctx); err == nil && json.Unmarshal(body, &health) == nil &&
		health.Runtime.Embedded && len(health.Runtimes) <= 1 {
		return ollama.EmbeddedSeam(c.api)
	}
	return ollama.Seam(c.api)
}

// parseHost reads --host as users write it: a URL, host:port or a bare host (port
// 8080, hearth's default).
func parseHost(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("--host %q: want a URL such as %s", raw, DefaultHost)
	}
	if u.Port() == "" {
		port := "8080"
		if u.Scheme == "https" {
			port = "443"
		}
		u.Host = net.JoinHostPort(u.Hostname(), port)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}
