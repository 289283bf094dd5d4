package postgres

import (
	"context"
	"testing"

	"hearth/storage"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/storetest"
)

// The store benchmarks of storetest.Bench, as storage/sqlite runs them, on PostgreSQL,
// for comparing the two stores: run both with
//
//	go test ./storage/sqlite ./storage/postgres -run '^$' -bench 'LoadChain1000$|LoadChainTail1000|ContinueChain1000|InsertResponse10Items|LookupItems3' -benchmem
//
// cpu-ns/op is hearth's own CPU time (the test process: the driver, decoding,
// assembly); the server's CPU is not in it. The test cluster runs with fsync off, so
// writes measure the round trips and the server's work, not a disk (SQLite's
// benchmarks wait for an fsync per commit).

// bench opens a database of the benchmark's own on the test cluster, and gathers the
// planner's statistics before timing, as autovacuum does on a database in use: a table
// just filled has none, and the planner then guesses.
var bench = storetest.Bench{Open: func(b *testing.B) storage.Store { return openBenchDB(b) }, Settle: analyze}

func openBenchDB(b *testing.B) *DB {
	db, err := OpenWith(context.Background(), pgtest.NewDatabase(b), Options{Replica: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func analyze(b *testing.B, st storage.Store) {
	if _, err := st.(*DB).pool.Exec(context.Background(), `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkLoadChain1000(b *testing.B)         { bench.LoadChain1000(b) }
func BenchmarkLoadChain1000Walk(b *testing.B)     { bench.LoadChain1000Walk(b) }
func BenchmarkLoadChainTail1000(b *testing.B)     { bench.LoadChainTail1000(b) }
func BenchmarkInsertResponse10Items(b *testing.B) { bench.InsertResponse10Items(b) }
func BenchmarkContinueChain1000(b *testing.B)     { bench.ContinueChain1000(b) }
func BenchmarkLookupItems3(b *testing.B)          { bench.LookupItems3(b) }

// BenchmarkChainEpoch is the round trip every continuation pays to read the shared
// ChainEpoch.
func BenchmarkChainEpoch(b *testing.B) {
	db := openBenchDB(b)
	b.ResetTimer()
	defer storetest.ReportCPU(b)()
	for b.Loop() {
		db.ChainEpoch()
	}
}
