package tracing

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// clearOTelEnv unsets the standard variables for the test, so the machine's own
// settings do not decide it.
func clearOTelEnv(t *testing.T) {
	for _, v := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(v, "")
	}
}

// TestEnabled: off by default; --otlp-endpoint and OTEL_EXPORTER_OTLP_ENDPOINT are base
// URLs (traces go to /v1/traces under them), OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is the
// traces URL itself; the SDK's switches turn tracing off; a URL that is not OTLP/HTTP
// is an error that says what to give.
func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		env      map[string]string
		on       bool
		where    string
		err      string
	}{
		{name: "nothing set"},
		{name: "flag", endpoint: "http://127.0.0.1:4318", on: true, where: "http://127.0.0.1:4318/v1/traces"},
		{name: "flag with a slash", endpoint: "http://collector:4318/", on: true, where: "http://collector:4318/v1/traces"},
		{name: "flag with a path", endpoint: "https://gw.example/otlp", on: true, where: "https://gw.example/otlp/v1/traces"},
		{name: "flag without a scheme", endpoint: "127.0.0.1:4318", err: "want http://HOST:PORT"},
		{name: "base variable", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, on: true, where: "http://c:4318/v1/traces"},
		{name: "traces variable", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://other:4318"},
			on: true, where: "http://c:4318/custom"},
		{name: "flag over variables", endpoint: "http://a:4318", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/x"},
			on: true, where: "http://a:4318/v1/traces"},
		{name: "SDK disabled", endpoint: "http://a:4318", env: map[string]string{"OTEL_SDK_DISABLED": "true"}},
		{name: "exporter none", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTelEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			on, where, err := Enabled(Config{Endpoint: tc.endpoint})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || on != tc.on || where != tc.where {
				t.Fatalf("on %v, where %q, error %v; want %v, %q", on, where, err, tc.on, tc.where)
			}
		})
	}
}

// TestNewRefusesGRPC: hearth exports over HTTP only, and a collector configured for
// gRPC is refused at start with the fix rather than failing every export.
func TestNewRefusesGRPC(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	p, err := New(context.Background(), Config{Endpoint: "http://127.0.0.1:4317"})
	if err == nil || !strings.Contains(err.Error(), "4318") {
		t.Fatalf("provider %v, error %v; want an error that names the HTTP port", p, err)
	}
}

// TestOffCostsNothing: with no provider, New returns nil, Start hands back the same
// context and a span that does nothing, and a span's whole life allocates nothing.
func TestOffCostsNothing(t *testing.T) {
	clearOTelEnv(t)
	p, err := New(context.Background(), Config{})
	if p != nil || err != nil {
		t.Fatalf("New with nothing configured: %v, %v", p, err)
	}
	ctx := context.Background()
	got, span := Start(ctx, "x")
	if got != ctx || span.Recording() {
		t.Fatal("Start without a provider made a span")
	}
	failure := errors.New("x")
	allocs := testing.AllocsPerRun(1000, func() {
		c, s := Start(ctx, "hearth.phase")
		s.Str("k", "v")
		s.Int("n", 1)
		s.Fail(failure)
		s.End()
		_ = Recording(c)
		_ = Current(c)
	})
	if allocs != 0 {
		t.Fatalf("a span with tracing off allocates %v times", allocs)
	}
}

// TestExport: spans go over OTLP/HTTP (protobuf) to the endpoint's /v1/traces; a
// request's span joins the trace of the client's traceparent, and spans under it
// (Start) are in the same trace, while a context outside any request gets none.
func TestExport(t *testing.T) {
	clearOTelEnv(t)
	var mu sync.Mutex
	var got []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	ctx := context.Background()
	p, err := New(ctx, Config{Endpoint: collector.URL + "/prefix", Version: "test"})
	if err != nil || p == nil {
		t.Fatalf("New: %v, %v", p, err)
	}
	defer p.Shutdown(ctx)
	if _, s := Start(ctx, "outside"); s.Recording() {
		t.Fatal("a span started outside any request")
	}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	h := http.Header{}
	h.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	rctx, req := p.StartRequest(ctx, h, "POST")
	if req.TraceID() != traceID {
		t.Fatalf("request span in trace %s, want the client's %s", req.TraceID(), traceID)
	}
	cctx, child := Start(rctx, "chat m")
	if !child.Recording() || child.TraceID() != traceID || Current(cctx).TraceID() != traceID {
		t.Fatal("the child span is not in the request's trace")
	}
	child.Int(GenAIInputTokens, 3)
	child.End()
	req.End()
	if err := p.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "POST /prefix/v1/traces application/x-protobuf" {
		t.Fatalf("collector got %q", got)
	}
}

// TestUnsampledParent: a client's traceparent that says not sampled (flags 00) is
// honoured: hearth records nothing of the request.
func TestUnsampledParent(t *testing.T) {
	clearOTelEnv(t)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer collector.Close()
	ctx := context.Background()
	p, err := New(ctx, Config{Endpoint: collector.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown(ctx)
	h := http.Header{}
	h.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")
	rctx, req := p.StartRequest(ctx, h, "POST")
	if req.Recording() || Recording(rctx) {
		t.Fatal("an unsampled request was recorded")
	}
}
