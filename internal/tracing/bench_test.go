package tracing

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkSpan is what one span hearth starts costs: off (no provider: the path every
// request takes by default) and on (exported in batches to a local collector that
// drops them), a child of a request's span, with three attributes.
//
//	go test ./internal/tracing -run '^$' -bench Span -benchmem
func BenchmarkSpan(b *testing.B) {
	span := func(b *testing.B, ctx context.Context) {
		b.ReportAllocs()
		for b.Loop() {
			_, s := Start(ctx, "hearth.prefill")
			s.Str(GenAIRequestModel, "qwen3:8b")
			s.Int(GenAIInputTokens, 1234)
			s.Bool("hearth.constrained", false)
			s.End()
		}
	}
	b.Run("off", func(b *testing.B) { span(b, context.Background()) })
	b.Run("on", func(b *testing.B) {
		collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
		}))
		defer collector.Close()
		ctx := context.Background()
		p, err := New(ctx, Config{Endpoint: collector.URL})
		if err != nil || p == nil {
			b.Fatal(p, err)
		}
		defer p.Shutdown(ctx)
		rctx, req := p.StartRequest(ctx, http.Header{}, "POST")
		defer req.End()
		span(b, rctx)
	})
}
