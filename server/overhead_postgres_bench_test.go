package server_test

import (
	"context"
	"net/http"
	"testing"

	"hearth/cmd/hearth/wire"
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
	benchmarkResponseOverheadOn(b, pgtest.Own(b))
}

// BenchmarkResponseOverheadPostgresDurable is BenchmarkResponseOverheadPostgres on a
// cluster with PostgreSQL's durable defaults (fsync, synchronous commit, full-page
// writes), so that every commit waits for the disk as SQLite's (synchronous=FULL) do:
// the fair race with BenchmarkResponseOverhead,
//
//	go test ./server -run '^$' -bench 'ResponseOverhead(PostgresDurable)?$' -benchtime 200x
func BenchmarkResponseOverheadPostgresDurable(b *testing.B) {
	benchmarkResponseOverheadOn(b, pgtest.OwnDurable(b))
}

func benchmarkResponseOverheadOn(b *testing.B, c *pgtest.Cluster) {
	var u string
	trips := &pgtest.RoundTrips{}
	benchmarkResponseOverhead(b, func(tb testing.TB) http.Handler {
		var h http.Handler
		h, u = newPostgresFakeServer(tb, c, trips)
		return h
	}, pgCounts(&u), countRoundTrips(trips))
}

// newPostgresFakeServer is hearth's handler over the fake runtime with its records in
// a new database on c, whose statements trips counts; it returns the database's URL.
func newPostgresFakeServer(tb testing.TB, c *pgtest.Cluster, trips *pgtest.RoundTrips) (http.Handler, string) {
	u, err := c.CreateDatabase(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	db, err := postgres.OpenWith(context.Background(), u, postgres.Options{Tracer: trips})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return hearthOverFake(tb, fakeRuntime{}, wire.Config{Database: db}), u
}

// countRoundTrips reports the round trips to PostgreSQL per response
// (round-trips/op; statements prepared on a connection's first use of them left out),
// and the time hearth waited for them: commit-ms/op for those that commit a write
// transaction (on a durable cluster, its WAL flush among it), other-ms/op for the
// rest (the key and epoch read, a chain's load, a write's checks). hearth-ms/op less
// both is hearth's own work.
func countRoundTrips(trips *pgtest.RoundTrips) func(*testing.B) func() {
	return func(b *testing.B) func() {
		n0 := trips.Total()
		c0, o0 := trips.Waited()
		return func() {
			c, o := trips.Waited()
			b.ReportMetric(float64(trips.Total()-n0)/float64(b.N), "round-trips/op")
			b.ReportMetric(float64((c-c0).Microseconds())/1000/float64(b.N), "commit-ms/op")
			b.ReportMetric(float64((o-o0).Microseconds())/1000/float64(b.N), "other-ms/op")
		}
	}
}

// pgCounts reports the write transactions per response in the database at *url
// (write-xacts/op: each takes a transaction id, so the next id counts them exactly,
// the reads in between taking none). On a durable cluster each one waits for a WAL
// flush at its commit, which is where a durable PostgreSQL's time goes.
func pgCounts(url *string) func(*testing.B) func() {
	read := func(b *testing.B) int64 {
		n, err := pgtest.QueryInt(context.Background(), *url, `SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint`)
		if err != nil {
			b.Fatal(err)
		}
		return n
	}
	return func(b *testing.B) func() {
		x0 := read(b)
		return func() {
			b.ReportMetric(float64(read(b)-x0)/float64(b.N), "write-xacts/op")
		}
	}
}
