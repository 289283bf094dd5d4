// Package jaegertest starts a real Jaeger v2 for tests, all in memory, receiving
// OTLP/HTTP on a free port, and reads traces back through its query API.
//
// The Jaeger binary is the Go tool that tools/jaeger/go.mod pins (its own module, so
// that Jaeger's dependencies do not move hearth's): $HEARTH_JAEGER when set (make
// test builds it into bin/jaeger and sets it), else built once per machine into the
// user cache directory. A test skips only when that build fails (no Go module proxy
// and no cached modules), saying how to get the binary.
package jaegertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"hearth/internal/gomodule"
)

// BinEnv names a Jaeger executable to run instead of building one; a path it names
// that cannot run fails the test rather than skipping it.
const BinEnv = "HEARTH_JAEGER"

// Jaeger is a running Jaeger.
type Jaeger struct {
	// OTLP is the base URL of its OTLP/HTTP receiver (traces go to OTLP+"/v1/traces").
	OTLP string
	// Query is the base URL of its query API and UI.
	Query string
	log   string
}

// config runs Jaeger v2 with nothing but the OTLP/HTTP receiver, the in-memory store
// and the query service, each on a loopback port of its own, and no telemetry of its
// own to serve. The exporter's queue is off: a span is in the store once its export
// returned, so a test reads what it sent without waiting.
const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
    queue:
      enabled: false
`

// Start starts a Jaeger for the test, stopped when it ends.
func Start(t testing.TB) *Jaeger {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	ports := freePorts(t, 3)
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, config, ports[0], ports[1], ports[2]), 0o644); err != nil {
		t.Fatal(err)
	}
	j := &Jaeger{
		Query: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
		OTLP:  fmt.Sprintf("http://127.0.0.1:%d", ports[2]),
		log:   filepath.Join(dir, "jaeger.log"),
	}
	logf, err := os.Create(j.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	// Ready when both ports answer: a bound on a start that never comes, not a
	// measure of how fast it comes.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			t.Fatalf("jaeger exited before it was ready (%v):\n%s", err, j.Log())
		default:
		}
		if answers(j.Query+"/api/services") && answers(j.OTLP+"/v1/traces") {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not answer within 2 minutes:\n%s", j.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// answers reports whether url answers HTTP at all (any status).
func answers(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return true
}

// Log is what Jaeger wrote so far, for a failure's message.
func (j *Jaeger) Log() string {
	b, _ := os.ReadFile(j.log)
	return string(b)
}

// Span is a span as Jaeger's query API (/api/traces/ID) returns it.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	// StartTime is in microseconds since the epoch, Duration in microseconds.
	StartTime int64 `json:"startTime"`
	Duration  int64 `json:"duration"`
	Tags      []struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
}

// Parent is the id of the span's parent ("" for a root).
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Tag is the value of the span's attribute key (a JSON number is a float64).
func (s Span) Tag(key string) (any, bool) {
	for _, t := range s.Tags {
		if t.Key == key {
			return t.Value, true
		}
	}
	return nil, false
}

// Trace is the trace's spans and the service name of each span's process, or an
// error when Jaeger has no such trace.
func (j *Jaeger) Trace(ctx context.Context, traceID string) ([]Span, map[string]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.Query+"/api/traces/"+traceID, nil)
	if err != nil {
		return nil, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET /api/traces/%s: %s: %s", traceID, resp.Status, body)
	}
	var out struct {
		Data []struct {
			Spans     []Span `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, nil, fmt.Errorf("GET /api/traces/%s: %w", traceID, err)
	}
	if len(out.Data) == 0 {
		return nil, nil, fmt.Errorf("GET /api/traces/%s: no trace", traceID)
	}
	services := map[string]string{}
	for id, p := range out.Data[0].Processes {
		services[id] = p.ServiceName
	}
	return out.Data[0].Spans, services, nil
}

// Binary is the Jaeger executable: $HEARTH_JAEGER, else the one built from
// tools/jaeger into the user cache directory (built now when missing). The test skips
// when it cannot be built.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(BinEnv); p != "" {
		abs, err := filepath.Abs(p)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			t.Fatalf("%s=%s: %v (make jaeger builds it)", BinEnv, p, err)
		}
		return abs
	}
	bin, err := build()
	if err != nil {
		t.Skipf("the jaeger tool (tools/jaeger/go.mod) could not be built, so this test cannot run: %v\n"+
			"make jaeger builds it into bin/jaeger (make test does, and sets %s); it needs the Go module proxy, or the modules in the cache, once", err, BinEnv)
	}
	return bin
}

// build builds the pinned Jaeger into the user cache directory, named by a hash of
// the tool module's go.sum and the Go release, so a new pin builds again.
func build() (string, error) {
	root, err := gomodule.Root()
	if err != nil {
		return "", err
	}
	tool := filepath.Join(root, "tools", "jaeger")
	sum, err := os.ReadFile(filepath.Join(tool, "go.sum"))
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(sum)
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "hearth")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "jaeger-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gomodule.GoTool(), "build", "-o", tmp, "github.com/jaegertracing/jaeger/cmd/jaeger")
	cmd.Dir = tool
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build github.com/jaegertracing/jaeger/cmd/jaeger: %w\n%s", err, tail(out))
	}
	return bin, os.Rename(tmp, bin)
}

// tail is the last lines of a command's output.
func tail(out []byte) string {
	text := strings.TrimSpace(string(out))
	last := strings.Split(text, "\n")
	return strings.Join(last[max(0, len(last)-10):], "\n")
}

// freePorts are n loopback ports free now.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
