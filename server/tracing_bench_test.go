package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/internal/tracing"
	"hearth/storage/sqlite"
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
		db, err := sqlite.Open(filepath.Join(tb.TempDir(), "hearth.db"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		target, err := ollama.Connect("127.0.0.1:1")
		if err != nil {
			tb.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		return wire.New(wire.Config{
			Runtime: target, Engine: engine.New(ollama.Seam(fakeRuntime{}), engine.DefaultFormats(), log),
			Database: db, Logger: log, Tracing: tp,
		})
	})
}
