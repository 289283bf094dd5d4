// Package tracing is hearth's seam to OpenTelemetry traces: the only importer of the
// OpenTelemetry SDK and API. The rest of hearth starts spans with Start and sets their
// attributes through Span, in plain Go types.
//
// Tracing is off unless an OTLP endpoint is configured (New). Off, nothing is exported
// and Start costs one atomic load: no span, no allocation. On, the server starts one
// span per request (Provider.StartRequest, which honours the client's W3C traceparent
// header) and every span below it is a child of the span in the context, so code deep
// in the engine needs no tracer of its own: a context without a recording span gets no
// spans, which also keeps work outside a request (ingestion, pruning) out of traces.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// scope is the instrumentation scope of hearth's spans.
const scope = "hearth"

// Attribute names of the OpenTelemetry GenAI semantic conventions that hearth's spans
// carry, so that a tracing backend's GenAI views read them.
const (
	GenAIOperation       = "gen_ai.operation.name"
	GenAIProvider        = "gen_ai.provider.name"
	GenAIRequestModel    = "gen_ai.request.model"
	GenAIRequestMaxToks  = "gen_ai.request.max_tokens"
	GenAIRequestTemp     = "gen_ai.request.temperature"
	GenAIRequestTopP     = "gen_ai.request.top_p"
	GenAIResponseID      = "gen_ai.response.id"
	GenAIResponseModel   = "gen_ai.response.model"
	GenAIFinishReasons   = "gen_ai.response.finish_reasons"
	GenAIConversationID  = "gen_ai.conversation.id"
	GenAIInputTokens     = "gen_ai.usage.input_tokens"
	GenAIOutputTokens    = "gen_ai.usage.output_tokens"
	GenAICachedTokens    = "gen_ai.usage.cache_read.input_tokens"
	GenAIReasoningTokens = "gen_ai.usage.reasoning.output_tokens"
	GenAIToolName        = "gen_ai.tool.name"
	GenAIToolType        = "gen_ai.tool.type"
	GenAIToolCallID      = "gen_ai.tool.call.id"
	// GenAITimeToFirstToken is the semantic conventions' name of the server's time to
	// first token (a metric there), in seconds.
	GenAITimeToFirstToken = "gen_ai.server.time_to_first_token"
)

// active counts the providers exporting in this process: while none is, Start returns
// at once.
var active atomic.Int32

// Config says where spans go.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL of a collector (http://host:4318), as
	// OTEL_EXPORTER_OTLP_ENDPOINT means it: traces go to its /v1/traces. Empty: the
	// standard variables decide (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then
	// OTEL_EXPORTER_OTLP_ENDPOINT); with neither set, tracing is off.
	Endpoint string
	// Version is hearth's version, the service.version of the spans' resource.
	Version string
	// Logger hears export failures (at most one line a minute).
	Logger *slog.Logger
}

// Provider exports hearth's spans over OTLP/HTTP. A nil *Provider is tracing off: its
// methods do nothing.
type Provider struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// Where is the endpoint spans are sent to, for the start's log line.
	Where string
}

// Enabled reports whether cfg (and the environment) turn tracing on, and the traces
// URL spans go to. The SDK's own switches turn it off: OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none.
func Enabled(cfg Config) (on bool, where string, err error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false, "", nil
	}
	if cfg.Endpoint != "" {
		u, err := tracesURL(cfg.Endpoint)
		if err != nil {
			return false, "", err
		}
		return true, u, nil
	}
	if v := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		return true, v, nil
	}
	if v := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		u, err := tracesURL(v)
		if err != nil {
			return false, "", fmt.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT: %w", err)
		}
		return true, u, nil
	}
	return false, "", nil
}

// tracesURL is the traces URL of an OTLP/HTTP base URL: its path with /v1/traces
// appended, as the OTLP exporter specification appends it to
// OTEL_EXPORTER_OTLP_ENDPOINT.
func tracesURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%q is not an OTLP/HTTP URL: want http://HOST:PORT or https://HOST:PORT (a collector's OTLP/HTTP port, 4318 by default)", base)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	return u.String(), nil
}

// New starts exporting spans when cfg or the standard OTEL_EXPORTER_OTLP_* variables
// name an endpoint; otherwise it returns nil (tracing off) and no error. The SDK reads
// the other standard variables itself: OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _COMPRESSION and _CERTIFICATE, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER and OTEL_BSP_*. hearth exports over HTTP (protobuf) only: an
// OTEL_EXPORTER_OTLP_PROTOCOL of grpc is an error that says so.
func New(ctx context.Context, cfg Config) (*Provider, error) {
	on, where, err := Enabled(cfg)
	if err != nil || !on {
		return nil, err
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := os.Getenv(v); p != "" {
			if p != "http/protobuf" {
				return nil, fmt.Errorf("%s=%s: hearth exports traces over OTLP/HTTP (http/protobuf) only; point it at the collector's HTTP port (4318 by default) and unset %s", v, p, v)
			}
			break
		}
	}
	var opts []otlptracehttp.Option
	if cfg.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(where))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "hearth"), attribute.String("service.version", cfg.Version)),
		// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the defaults above.
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	setErrorLog(cfg.Logger)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	active.Add(1)
	return &Provider{tp: tp, tracer: tp.Tracer(scope, trace.WithInstrumentationVersion(cfg.Version)),
		prop: propagation.TraceContext{}, Where: where}, nil
}

// Shutdown exports the spans still held and stops exporting.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	active.Add(-1)
	return p.tp.Shutdown(ctx)
}

// ForceFlush exports the spans ended so far.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if p == nil {
		return nil
	}
	return p.tp.ForceFlush(ctx)
}

// StartRequest starts the span of an HTTP request hearth serves: a server span, the
// child of the client's span when its headers carry a W3C traceparent (so hearth's
// spans join the caller's trace), named by method until SetName gives it its route.
func (p *Provider) StartRequest(ctx context.Context, h http.Header, method string) (context.Context, Span) {
	if p == nil {
		return ctx, Span{}
	}
	ctx = p.prop.Extract(ctx, propagation.HeaderCarrier(h))
	ctx, s := p.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer))
	if !s.IsRecording() {
		// Not sampled (the client's traceparent says so, or the sampler): the
		// context still carries the trace for what hearth calls.
		return ctx, Span{}
	}
	return ctx, Span{s}
}

// On reports whether a provider exports spans in this process.
func On() bool { return active.Load() > 0 }

// Recording reports whether ctx carries a span that records: the spans Start would
// start under it are exported.
func Recording(ctx context.Context) bool {
	if active.Load() == 0 {
		return false
	}
	return trace.SpanFromContext(ctx).IsRecording()
}

// Start starts a span named name as a child of ctx's span, and returns the context
// that carries it. Without a recording span in ctx (tracing off, or outside a traced
// request) it returns ctx and a Span that does nothing.
func Start(ctx context.Context, name string) (context.Context, Span) {
	if active.Load() == 0 {
		return ctx, Span{}
	}
	return start(ctx, name)
}

// StartAt is Start for a span that began at t: a phase measured as it ran, reported
// once it ended.
func StartAt(ctx context.Context, name string, t time.Time) (context.Context, Span) {
	if active.Load() == 0 {
		return ctx, Span{}
	}
	return start(ctx, name, trace.WithTimestamp(t))
}

func start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, Span{}
	}
	ctx, s := parent.TracerProvider().Tracer(scope).Start(ctx, name, opts...)
	if !s.IsRecording() {
		return ctx, Span{}
	}
	return ctx, Span{s}
}

// Current is ctx's span, to set attributes on: a zero Span unless it records.
func Current(ctx context.Context) Span {
	if active.Load() == 0 {
		return Span{}
	}
	s := trace.SpanFromContext(ctx)
	if !s.IsRecording() {
		return Span{}
	}
	return Span{s}
}

// Carry returns dst carrying src's span: work that outlives its request (a background
// response) runs on a context of its own, and its spans stay in the request's trace.
func Carry(dst, src context.Context) context.Context {
	if active.Load() == 0 {
		return dst
	}
	s := trace.SpanFromContext(src)
	if !s.IsRecording() {
		return dst
	}
	return trace.ContextWithSpan(dst, s)
}

// Span is one span in hearth's terms. The zero Span (tracing off) does nothing.
type Span struct{ s trace.Span }

// Recording reports whether the span is exported; a caller checks it before computing
// an attribute that costs something.
func (s Span) Recording() bool { return s.s != nil }

// SetName renames the span (an HTTP span once its route is known, a response's span
// once its model is resolved).
func (s Span) SetName(name string) {
	if s.s != nil {
		s.s.SetName(name)
	}
}

// Str sets a string attribute.
func (s Span) Str(key, v string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.String(key, v))
	}
}

// Strs sets a string list attribute.
func (s Span) Strs(key string, v []string) {
	if s.s != nil {
		s.s.SetAttributes(attribute.StringSlice(key, v))
	}
}

// Int sets an integer attribute.
func (s Span) Int(key string, v int) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Int(key, v))
	}
}

// Float sets a floating-point attribute.
func (s Span) Float(key string, v float64) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Float64(key, v))
	}
}

// Bool sets a boolean attribute.
func (s Span) Bool(key string, v bool) {
	if s.s != nil {
		s.s.SetAttributes(attribute.Bool(key, v))
	}
}

// Event records a named moment of the span at t.
func (s Span) Event(name string, t time.Time) {
	if s.s != nil {
		s.s.AddEvent(name, trace.WithTimestamp(t))
	}
}

// Fail marks the span failed with err (nil: nothing).
func (s Span) Fail(err error) {
	if s.s != nil && err != nil {
		s.s.RecordError(err)
		s.s.SetStatus(codes.Error, err.Error())
	}
}

// FailWith marks the span failed with a message (a failed response's error).
func (s Span) FailWith(msg string) {
	if s.s != nil {
		s.s.SetStatus(codes.Error, msg)
	}
}

// End ends the span now.
func (s Span) End() {
	if s.s != nil {
		s.s.End()
	}
}

// EndAt ends the span at t.
func (s Span) EndAt(t time.Time) {
	if s.s != nil {
		s.s.End(trace.WithTimestamp(t))
	}
}

// TraceID is the span's trace id in hex, "" for a zero Span.
func (s Span) TraceID() string {
	if s.s == nil {
		return ""
	}
	return s.s.SpanContext().TraceID().String()
}

var errorLog struct {
	once sync.Once
	mu   sync.Mutex
	log  *slog.Logger
	last time.Time
}

// setErrorLog routes the SDK's errors (an export the collector refused or never
// answered) to log, one line a minute at most: a collector that is down must not
// flood hearth's log with a line per batch.
func setErrorLog(log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	errorLog.mu.Lock()
	errorLog.log = log
	errorLog.mu.Unlock()
	errorLog.once.Do(func() {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			errorLog.mu.Lock()
			defer errorLog.mu.Unlock()
			if time.Since(errorLog.last) < time.Minute {
				return
			}
			errorLog.last = time.Now()
			var why string
			if errors.Is(err, context.DeadlineExceeded) {
				why = " (the collector did not answer in time)"
			}
			errorLog.log.Warn("trace export failed"+why+"; spans are dropped until the collector takes them", "error", err)
		}))
	})
}
