package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary is also the MCP server the tests start over stdio: with
// HEARTH_MCP_TEST_SERVER=1 it serves testServer on stdin/stdout instead of testing.
func TestMain(m *testing.M) {
	if os.Getenv("HEARTH_MCP_TEST_SERVER") == "1" {
		if err := testServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type sleepArgs struct {
	Seconds float64 `json:"seconds"`
}

type sizeArgs struct {
	Bytes int `json:"bytes"`
}

// testServer has tools that report the serving process, sleep, write a lot, and fail.
func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "hearth-test", Version: "1"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(s, &sdk.Tool{Name: "pid", Description: "The server's process id."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return text(strconv.Itoa(os.Getpid())), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "sleep", Description: "Sleeps."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a sleepArgs) (*sdk.CallToolResult, any, error) {
			select {
			case <-time.After(time.Duration(a.Seconds * float64(time.Second))):
				return text("slept"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	sdk.AddTool(s, &sdk.Tool{Name: "big", Description: "Writes bytes."},
		func(_ context.Context, _ *sdk.CallToolRequest, a sizeArgs) (*sdk.CallToolResult, any, error) {
			return text(strings.Repeat("é", a.Bytes/2)), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Reports an error."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "it broke"}}}, nil, nil
		})
	return s
}

// stdioServer is the test binary as a configured stdio server.
func stdioServer(t *testing.T) Server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Label: "test", Command: exe, Env: map[string]string{"HEARTH_MCP_TEST_SERVER": "1"}}
}

func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func call(t *testing.T, m *Manager, label, tool, args string) (Result, error) {
	t.Helper()
	return m.CallTool(context.Background(), Ref{Label: label}, tool, json.RawMessage(args))
}

// TestStdioServerLifecycle: a stdio server starts on first use, is reused, starts again
// after it died, and stops when the Manager closes.
func TestStdioServerLifecycle(t *testing.T) {
	m := newManager(t, Options{Servers: []Server{stdioServer(t)}})
	tools, err := m.ListTools(context.Background(), Ref{Label: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		if !json.Valid(tool.InputSchema) {
			t.Errorf("tool %s: input schema %s", tool.Name, tool.InputSchema)
		}
	}
	if strings.Join(names, ",") != "big,fail,pid,sleep" {
		t.Errorf("tools %q", names)
	}
	pidOf := func() int {
		res, err := call(t, m, "test", "pid", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(res.Output)
		if err != nil {
			t.Fatalf("pid output %q", res.Output)
		}
		return pid
	}
	first := pidOf()
	if again := pidOf(); again != first {
		t.Fatalf("a second call ran in process %d, the first in %d: the server was not reused", again, first)
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The session notices the exit; the next use starts the server again.
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := call(t, m, "test", "pid", `{}`)
		if err == nil {
			if pid, _ := strconv.Atoi(res.Output); pid == first || pid == 0 {
				t.Fatalf("output %q after the server was killed", res.Output)
			}
			break
		}
		// A call in the moment between the kill and the session's end fails (a call
		// is never repeated: it may have had effects); the one after it restarts.
		if time.Now().After(deadline) {
			t.Fatalf("no call succeeded after the server was killed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	second := pidOf()
	if err := m.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for syscall.Kill(second, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("server process %d still runs after Close", second)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCallLimits: the time limit, the caller's cancellation, the output cap and a
// tool's own error.
func TestCallLimits(t *testing.T) {
	srv := stdioServer(t)
	srv.Timeout = 300 * time.Millisecond
	m := newManager(t, Options{Servers: []Server{srv}, OutputCap: 100})

	start := time.Now()
	_, err := call(t, m, "test", "sleep", `{"seconds": 30}`)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") || time.Since(start) > 5*time.Second {
		t.Errorf("a call past the time limit: %v after %s", err, time.Since(start))
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start = time.Now()
	_, err = m.CallTool(ctx, Ref{Label: "test"}, "sleep", json.RawMessage(`{"seconds": 0.25}`))
	if !errors.Is(err, context.Canceled) || time.Since(start) > 200*time.Millisecond {
		t.Errorf("a cancelled call: %v after %s, want context.Canceled at once", err, time.Since(start))
	}

	res, err := call(t, m, "test", "big", `{"bytes": 1000}`)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("é", 50) + "\n[hearth cut this output: 100 of 1000 bytes shown]"
	if res.Output != want {
		t.Errorf("capped output %q, want %q", res.Output, want)
	}

	res, err = call(t, m, "test", "fail", `{}`)
	if err != nil || !res.IsError || res.Output != "it broke" {
		t.Errorf("a tool's error: %+v, %v", res, err)
	}
}

// TestStreamableHTTP: a server on streamable HTTP, with the configured headers sent,
// and the operator's allowed_tools applied.
func TestStreamableHTTP(t *testing.T) {
	var gotHeader string
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		gotHeader = r.Header.Get("X-Token")
		return testServer()
	}, nil)
	ts := httptest.NewServer(h)
	defer ts.Close()
	m := newManager(t, Options{Servers: []Server{{Label: "web", URL: ts.URL, Headers: map[string]string{"X-Token": "s3cret"}, AllowedTools: []string{"pid", "fail"}}}})
	tools, err := m.ListTools(context.Background(), Ref{Label: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || tools[0].Name != "fail" || tools[1].Name != "pid" {
		t.Errorf("tools %+v, want fail and pid only", tools)
	}
	res, err := call(t, m, "web", "pid", `{}`)
	if err != nil || res.Output != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid over HTTP: %+v, %v", res, err)
	}
	if gotHeader != "s3cret" {
		t.Errorf("X-Token header %q", gotHeader)
	}
	if _, err := call(t, m, "web", "sleep", `{"seconds": 0}`); err == nil {
		t.Error("a tool outside allowed_tools ran")
	}

	// A request may name the server by URL when a pattern names its (loopback) host.
	byURL := newManager(t, Options{AllowURL: []string{ts.URL + "/*"}})
	named := Ref{Label: "mine", URL: ts.URL + "/mcp", Headers: map[string]string{"X-Token": "from-request"}}
	if tools, err := byURL.ListTools(context.Background(), named); err != nil || len(tools) != 4 {
		t.Errorf("a request-named server: %d tools, %v", len(tools), err)
	}
	if res, err := byURL.CallTool(context.Background(), named, "pid", json.RawMessage(`{}`)); err != nil || res.Output != strconv.Itoa(os.Getpid()) {
		t.Errorf("a request-named server's call: %+v, %v", res, err)
	}
	if gotHeader != "from-request" {
		t.Errorf("the request's headers: X-Token %q", gotHeader)
	}
}

// TestServerURLPolicy: a request's server_url needs an operator pattern, and a loopback
// or private host one that names it without a wildcard; no request reaches a command.
func TestServerURLPolicy(t *testing.T) {
	m := newManager(t, Options{Servers: []Server{stdioServer(t)},
		AllowURL: []string{"https://*.example.com/*", "http://127.0.0.1:8931/*", "http://*"}})
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://mcp.example.com/mcp", true},
		{"https://example.org/mcp", false},
		{"http://127.0.0.1:8931/mcp", true},
		{"http://127.0.0.1:8932/mcp", false}, // matches http://* only: a wildcard host
		{"http://localhost:8931/mcp", false},
		{"http://10.0.0.5/mcp", false},
		{"http://public.example.net/mcp", true},
		{"file:///bin/sh", false},
	} {
		_, err := m.conn(Ref{Label: "x", URL: tc.url})
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrServerRefused)) {
			t.Errorf("%s: %v, want allowed %v", tc.url, err, tc.ok)
		}
	}
	limited := newManager(t, Options{Servers: []Server{{Label: "a", URL: "http://127.0.0.1:1/mcp", Keys: []string{"alice"}}, {Label: "b", URL: "http://127.0.0.1:1/mcp"}}})
	if !limited.KeyAllowed("a", "alice") || limited.KeyAllowed("a", "bob") || !limited.KeyAllowed("b", "bob") {
		t.Error("KeyAllowed")
	}
	none := newManager(t, Options{})
	if _, err := none.conn(Ref{Label: "x", URL: "https://mcp.example.com/mcp"}); !errors.Is(err, ErrServerRefused) {
		t.Errorf("no patterns: %v", err)
	}
	if _, err := none.conn(Ref{Label: "test"}); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("unknown label: %v", err)
	}
}

// A request cannot run a process: even a URL server named like a configured stdio
// server is a URL server.
func TestURLNeverStartsAProcess(t *testing.T) {
	m := newManager(t, Options{Servers: []Server{stdioServer(t)}, AllowURL: []string{"http://127.0.0.1:1/*"}})
	c, err := m.conn(Ref{Label: "test", URL: "http://127.0.0.1:1/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if c.cfg.Command != "" {
		t.Fatalf("a request's URL server has command %q", c.cfg.Command)
	}
}

// TestRequestURLAddressChecked: a server_url's host is checked again where the
// connection is made, so a name that resolves to a loopback or private address (DNS
// rebinding) is refused unless a pattern named that host, and a request-named server
// may not redirect.
func TestRequestURLAddressChecked(t *testing.T) {
	hits, redirected := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path == "/elsewhere" {
			redirected++
		}
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	if _, err := requestClient(nil, false).Get(srv.URL); !errors.Is(err, ErrServerRefused) {
		t.Errorf("a loopback address reached by a request's URL: %v", err)
	}
	if hits != 0 {
		t.Fatalf("the server was reached %d times", hits)
	}
	resp, err := requestClient(nil, true).Get(srv.URL)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a loopback host a pattern named: %v", err)
	}
	resp.Body.Close()
	if _, err := requestClient(nil, true).Get(srv.URL + "/redirect"); !errors.Is(err, ErrServerRefused) {
		t.Errorf("a redirect followed: %v", err)
	}

	// Through the manager: a request-named server reached through requestClient (a
	// loopback host named by a pattern, which redirects), the configured one not.
	m := newManager(t, Options{AllowURL: []string{srv.URL + "/*"}})
	s := Ref{Label: "x", URL: srv.URL + "/redirect"}
	if _, err := m.ListTools(context.Background(), s); !errors.Is(err, ErrServerRefused) {
		t.Errorf("a request-named server that redirects: %v", err)
	}
	if redirected != 0 {
		t.Errorf("a redirect was followed %d times", redirected)
	}
	c, err := m.conn(Ref{Label: "y", URL: "https://mcp.example.com/mcp"})
	if err == nil || c != nil {
		t.Errorf("a URL no pattern allows: %v", err)
	}
}
