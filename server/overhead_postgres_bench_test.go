package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/server"
	"hearth/storage/postgres"
	"hearth/storage/postgres/pgtest"
)

// BenchmarkResponseOverheadPostgres is BenchmarkResponseOverhead with the responses
// stored in PostgreSQL (a cluster of the benchmark's own on loopback, started by
// pgtest, fsync off) instead of SQLite: hearth's own time per response on either store,
// run side by side with
//
//	go test ./server -run '^$' -bench 'ResponseOverhead(Postgres)?$' -benchtime 200x
func BenchmarkResponseOverheadPostgres(b *testing.B) {
	c := pgtest.Own(b)
	benchmarkResponseOverhead(b, func(tb testing.TB) http.Handler {
		u, err := c.CreateDatabase(context.Background())
		if err != nil {
			tb.Fatal(err)
		}
		db, err := postgres.Open(context.Background(), u)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		target, err := ollama.Connect("127.0.0.1:1")
		if err != nil {
			tb.Fatal(err)
		}
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		return server.New(server.Config{
			Runtime: target, Engine: engine.New(ollama.Seam(fakeRuntime{}), engine.DefaultFormats(), log),
			Database: db, Logger: log,
		})
	})
}
