package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"hearth/cmd/hearth/wire"
	"hearth/internal/tracing"
)

// BenchmarkResponseOverheadTraced is BenchmarkResponseOverhead with tracing on:
// every request's spans (the request, the response, queue wait, prompt render,
// prefill, decode, the store's writes) exported over OTLP/HTTP to a local collector
// that takes them and drops them. Side by side with BenchmarkResponseOverhead it is
// what tracing costs a response:
//
//	go test ./server -run '^$' -bench 'ResponseOverhead(Traced)?$' -benchtime 200x
func BenchmarkResponseOverheadTraced(b *testing.B) {
	benchmarkResponseOverhead(b, func(tb testing.TB) http.Handler {
		collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
		}))
		tb.Cleanup(collector.Close)
		ctx := context.Background()
		tp, err := tracing.New(ctx, tracing.Config{Endpoint: collector.URL, Version: "bench"})
		if err != nil || tp == nil {
			tb.Fatalf("tracing: %v, %v", tp, err)
		}
		tb.Cleanup(func() { tp.Shutdown(ctx) })
		return hearthOverFake(tb, fakeRuntime{}, wire.Config{Tracing: tp})
	})
}
