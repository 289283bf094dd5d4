// Package mcp runs MCP (Model Context Protocol) servers as hearth's hosted tools,
// over the official Go SDK: servers the operator configured (a command hearth starts
// and talks to over stdio, or a streamable HTTP URL) and, when the operator allows
// URL patterns, servers a request names by URL. The Manager runs the servers
// (Servers); Kind (kind.go) is MCP as one of the engine's hosted tool kinds over them.
//
// A stdio server starts on first use, is reused by every response, is started again
// when it died, and stops when the Manager closes. A request can never make hearth
// start a process: only configured servers have commands.
package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"hearth/internal/urlpolicy"
)

// Server is one configured MCP server.
type Server struct {
	// Label is how requests name it (server_label).
	Label string
	// Command and Args start a stdio server; Env is added to hearth's environment.
	Command string
	Args    []string
	Env     map[string]string
	// URL is a streamable HTTP server; Headers go with every request to it.
	URL     string
	Headers map[string]string
	// AllowedTools limits the tools any request may see; nil allows all.
	AllowedTools []string
	// Timeout bounds one tool call; 0 is DefaultTimeout.
	Timeout time.Duration
	// Keys are the names of the API keys that may use the server; nil allows every
	// key (and callers without one, when hearth requires none).
	Keys []string
}

// Defaults of the limits.
const (
	DefaultTimeout   = 60 * time.Second
	DefaultOutputCap = 64 << 10
	// listTimeout bounds starting a server and listing its tools.
	listTimeout = 30 * time.Second
	// maxDynamic bounds the sessions to servers requests name by URL.
	maxDynamic = 64
)

// Options configure a Manager.
type Options struct {
	Servers []Server
	// AllowURL are the URL patterns a request may name as server_url ("*" matches
	// any run of characters). A loopback or private address matches only a
	// pattern that names its host without a wildcard.
	AllowURL []string
	// OutputCap bounds a tool's output in bytes; 0 is DefaultOutputCap.
	OutputCap int
	Log       *slog.Logger
}

// Manager holds the sessions to the MCP servers.
type Manager struct {
	opts    Options
	log     *slog.Logger
	allow   *urlpolicy.Policy
	servers map[string]*conn

	mu      sync.Mutex
	dynamic map[string]*conn // request-named URLs, by URL and headers
	closed  bool

	calls    *prometheus.CounterVec
	callTime *prometheus.HistogramVec
}

// Collectors are the Manager's Prometheus series, for the server's registry: calls
// by server, tool and outcome (ok, tool_error, error, timeout), and their duration.
func (m *Manager) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.calls, m.callTime}
}

// New returns a Manager of the configured servers; nothing starts before a request
// uses a server.
func New(opts Options) (*Manager, error) {
	m := &Manager{opts: opts, log: opts.Log, servers: map[string]*conn{}, dynamic: map[string]*conn{},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hearth_mcp_calls_total", Help: "MCP tool calls hearth ran, by server label, tool and outcome (ok, tool_error, error, timeout).",
		}, []string{"server", "tool", "outcome"}),
		callTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hearth_mcp_call_duration_seconds", Help: "Time of MCP tool calls, by server label and tool.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"server", "tool"}),
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.opts.OutputCap <= 0 {
		m.opts.OutputCap = DefaultOutputCap
	}
	for _, s := range opts.Servers {
		if err := s.check(); err != nil {
			return nil, err
		}
		if _, dup := m.servers[s.Label]; dup {
			return nil, fmt.Errorf("mcp: server %q configured twice", s.Label)
		}
		m.servers[s.Label] = &conn{cfg: s, log: m.log}
	}
	policy, err := urlpolicy.New("--mcp-allow-url", opts.AllowURL)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	m.allow = policy
	return m, nil
}

func (s Server) check() error {
	switch {
	case s.Label == "":
		return errors.New("mcp: a server needs a label")
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("mcp: server %q needs a command or a url", s.Label)
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("mcp: server %q has both a command and a url", s.Label)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("mcp: server %q: url %q is not an http(s) URL", s.Label, s.URL)
		}
	}
	return nil
}

// Labels lists the configured servers' labels.
func (m *Manager) Labels() []string {
	var out []string
	for _, s := range m.opts.Servers {
		out = append(out, s.Label)
	}
	return out
}

// KeyAllowed reports whether the API key named key may use the server label (a
// request-named URL is for every key the URL patterns admit).
func (m *Manager) KeyAllowed(label, key string) bool {
	c, ok := m.servers[label]
	return !ok || c.cfg.Keys == nil || slices.Contains(c.cfg.Keys, key)
}

// Close stops every server hearth started and ends every session.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	conns := make([]*conn, 0, len(m.servers)+len(m.dynamic))
	for _, c := range m.servers {
		conns = append(conns, c)
	}
	for _, c := range m.dynamic {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.close())
	}
	return errors.Join(errs...)
}

// conn returns the session holder of the server a request names.
func (m *Manager) conn(s Ref) (*conn, error) {
	if s.URL == "" {
		c, ok := m.servers[s.Label]
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrUnknownServer, s.Label)
		}
		return c, nil
	}
	if err := m.allowed(s.URL); err != nil {
		return nil, err
	}
	hb, _ := json.Marshal(s.Headers)
	key := s.URL + "\x00" + string(hb)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("mcp: closed")
	}
	c, ok := m.dynamic[key]
	if !ok {
		if len(m.dynamic) >= maxDynamic {
			// Requests choose these URLs: keep a bounded number of sessions.
			for k, old := range m.dynamic {
				go old.close()
				delete(m.dynamic, k)
				break
			}
		}
		u, _ := url.Parse(s.URL)
		c = &conn{cfg: Server{Label: s.Label, URL: s.URL, Headers: s.Headers}, log: m.log,
			// allowed passed it: a loopback or private host was named by a pattern.
			requestNamed: true, localAllowed: urlpolicy.IsLocal(u.Hostname())}
		m.dynamic[key] = c
	}
	return c, nil
}

// allowed checks a request's server_url against the operator's patterns
// (internal/urlpolicy, shared with input_file's file_url).
func (m *Manager) allowed(raw string) error {
	err := m.allow.Check(raw, "server_url")
	if errors.Is(err, urlpolicy.ErrNoneAllowed) {
		return fmt.Errorf("%w: hearth runs only the MCP servers its operator configured (--mcp), and allows no server_url (--mcp-allow-url)", ErrServerRefused)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrServerRefused, err)
	}
	return nil
}

// ListTools lists the server's tools: cached per server until its session ends or
// the server says its list changed.
func (m *Manager) ListTools(ctx context.Context, s Ref) ([]Tool, error) {
	c, err := m.conn(s)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	tools, err := c.tools(ctx)
	if err != nil {
		return nil, err
	}
	var out []Tool
	for _, t := range tools {
		if c.cfg.AllowedTools != nil && !slices.Contains(c.cfg.AllowedTools, t.Name) {
			continue
		}
		schema, _ := json.Marshal(t.InputSchema)
		var ann json.RawMessage
		if t.Annotations != nil {
			ann, _ = json.Marshal(t.Annotations)
		}
		out = append(out, Tool{Name: t.Name, Description: t.Description, InputSchema: schema, Annotations: ann})
	}
	return out, nil
}

// CallTool runs one tool within the server's time limit; its output is capped at
// OutputCap bytes, with a note saying how much was cut.
func (m *Manager) CallTool(ctx context.Context, s Ref, name string, arguments json.RawMessage) (Result, error) {
	c, err := m.conn(s)
	if err != nil {
		return Result{}, err
	}
	if c.cfg.AllowedTools != nil && !slices.Contains(c.cfg.AllowedTools, name) {
		return Result{}, fmt.Errorf("the operator does not allow tool %q of server %q", name, c.cfg.Label)
	}
	timeout := c.cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := c.call(ctx, name, arguments)
	outcome := "ok"
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		err = fmt.Errorf("the call of %s on %s did not finish within %s", name, c.cfg.Label, timeout)
		outcome = "timeout"
	case err != nil:
		outcome = "error"
	case res.IsError:
		outcome = "tool_error"
	}
	m.calls.WithLabelValues(c.cfg.Label, name, outcome).Inc()
	m.callTime.WithLabelValues(c.cfg.Label, name).Observe(time.Since(start).Seconds())
	if err != nil {
		return Result{}, err
	}
	return Result{Output: capOutput(resultText(res), m.opts.OutputCap), IsError: res.IsError}, nil
}

// resultText renders a tool's result as the text the model reads: its text content,
// and a line for each other piece of content; the structured result when there is
// no content.
func resultText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch v := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", v.Name, v.URI))
		case *sdk.EmbeddedResource:
			if v.Resource == nil {
				continue
			}
			if v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else {
				parts = append(parts, fmt.Sprintf("[resource %s, %d bytes]", v.Resource.URI, base64.StdEncoding.DecodedLen(len(v.Resource.Blob))))
			}
		default:
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	return strings.Join(parts, "\n")
}

// capOutput cuts s to at most max bytes (at a UTF-8 boundary) and says so.
func capOutput(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[hearth cut this output: %d of %d bytes shown]", cut, len(s))
}

// conn is one server's session, started on first use and again after it ended.
type conn struct {
	cfg Server
	log *slog.Logger
	// requestNamed: a request's server_url, reached through requestClient;
	// localAllowed: its host is a loopback or private address a pattern named.
	requestNamed, localAllowed bool

	mu      sync.Mutex
	session *sdk.ClientSession
	dead    chan struct{} // closed when session ended
	list    []*sdk.Tool   // cached tools of session
	closed  bool
	// stale: the server said its tool list changed; the next listing asks again.
	stale atomic.Bool
}

// session returns a live session, starting one when there is none or the last
// one ended (a stdio server that exited is started again).
func (c *conn) live(ctx context.Context) (*sdk.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("mcp: closed")
	}
	if c.session != nil {
		select {
		case <-c.dead:
			c.log.Warn("mcp server session ended; starting it again", "server", c.cfg.Label)
			c.session, c.list = nil, nil
		default:
			return c.session, nil
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "hearth", Version: "1"}, &sdk.ClientOptions{
		// Not under c.mu: the notification may come while live holds it.
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { c.stale.Store(true) },
	})
	var t sdk.Transport
	if c.cfg.Command != "" {
		cmd := exec.Command(c.cfg.Command, c.cfg.Args...)
		cmd.Env = os.Environ()
		for k, v := range c.cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		// The server's own log goes to hearth's stderr, where an operator looks.
		cmd.Stderr = os.Stderr
		t = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	} else {
		hc := &http.Client{Transport: headerTransport{headers: c.cfg.Headers, base: http.DefaultTransport}}
		if c.requestNamed {
			hc = requestClient(c.cfg.Headers, c.localAllowed)
		}
		t = &sdk.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: hc, DisableStandaloneSSE: true}
	}
	s, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to MCP server %s: %w", c.cfg.Label, err)
	}
	dead := make(chan struct{})
	go func() {
		s.Wait()
		close(dead)
	}()
	c.session, c.dead = s, dead
	c.log.Info("mcp server connected", "server", c.cfg.Label, "stdio", c.cfg.Command != "")
	return s, nil
}

// forget drops session after a call on it failed as a connection: the next use
// starts a new one.
func (c *conn) forget(s *sdk.ClientSession) {
	c.mu.Lock()
	if c.session == s {
		c.session, c.list = nil, nil
	}
	c.mu.Unlock()
	s.Close()
}

func (c *conn) tools(ctx context.Context) ([]*sdk.Tool, error) {
	for attempt := 0; ; attempt++ {
		s, err := c.live(ctx)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.stale.Swap(false) {
			c.list = nil
		}
		list := c.list
		c.mu.Unlock()
		if list != nil {
			return list, nil
		}
		list = []*sdk.Tool{}
		for t, err := range s.Tools(ctx, nil) {
			if err != nil {
				list = nil
				if errors.Is(err, sdk.ErrConnectionClosed) && attempt == 0 && ctx.Err() == nil {
					c.forget(s)
					break // listing has no side effects: once more on a new session
				}
				return nil, fmt.Errorf("list tools of MCP server %s: %w", c.cfg.Label, err)
			}
			list = append(list, t)
		}
		if list == nil {
			continue
		}
		c.mu.Lock()
		if c.session == s {
			c.list = list
		}
		c.mu.Unlock()
		return list, nil
	}
}

func (c *conn) call(ctx context.Context, name string, args json.RawMessage) (*sdk.CallToolResult, error) {
	s, err := c.live(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		// A call is not repeated (it may have had effects), but a dead session is
		// not used again.
		if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, io.EOF) {
			c.forget(s)
			return nil, fmt.Errorf("the MCP server %s closed the connection during the call of %s (%w); it starts again on next use", c.cfg.Label, name, err)
		}
		return nil, fmt.Errorf("call %s on MCP server %s: %w", name, c.cfg.Label, err)
	}
	return res, nil
}

func (c *conn) close() error {
	c.mu.Lock()
	s := c.session
	c.session, c.closed = nil, true
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.Close()
}

// requestClient is the HTTP client of a server a request named by URL. allowed
// checked the host as written, but a name may resolve to a loopback or private address
// (or be rebound to one later) and a server may redirect anywhere: so the address is
// checked again on every connection, where it is made, redirects are not followed, and
// no proxy from the environment is used. A loopback or private address passes only when
// the URL's host is one that a --mcp-allow-url pattern named (localAllowed).
func requestClient(headers map[string]string, localAllowed bool) *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			if !localAllowed && urlpolicy.IsLocal(host) {
				return fmt.Errorf("%w: the server_url's host resolves to %s, a loopback or private address, which needs a --mcp-allow-url pattern naming that host", ErrServerRefused, host)
			}
			return nil
		}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = dialer.DialContext
	return &http.Client{
		Transport: headerTransport{headers: headers, base: tr},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return fmt.Errorf("%w: an MCP server named by a request may not redirect", ErrServerRefused)
		},
	}
}

// headerTransport adds the configured headers to every request to a server.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// BoundTool is one tool of a configured server, bound by the operator for another
// hosted kind to run (web search through a search server): the kind gives the
// arguments, never the server or the tool.
type BoundTool struct {
	m     *Manager
	label string
	name  string
}

// Bind returns the tool name of the server configured as label. The server is not
// started here: the first call starts it, as a request's first use does.
func (m *Manager) Bind(label, name string) (*BoundTool, error) {
	c, ok := m.servers[label]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownServer, label)
	}
	if c.cfg.AllowedTools != nil && !slices.Contains(c.cfg.AllowedTools, name) {
		return nil, fmt.Errorf("the operator does not allow tool %q of server %q (its allowed_tools)", name, label)
	}
	return &BoundTool{m: m, label: label, name: name}, nil
}

// Call runs the tool, with the server's time limit and output cap, counted in the
// server's metrics like any call.
func (t *BoundTool) Call(ctx context.Context, arguments json.RawMessage) (string, bool, error) {
	res, err := t.m.CallTool(ctx, Ref{Label: t.label}, t.name, arguments)
	return res.Output, res.IsError, err
}

// KeyAllowed reports whether the API key named key may use the tool's server.
func (t *BoundTool) KeyAllowed(key string) bool { return t.m.KeyAllowed(t.label, key) }
