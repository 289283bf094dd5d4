package postgres

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"hearth/storage"
	"hearth/storage/postgres/pgtest"
	. "hearth/storage/storetest"
)

// The benchmarks of storage/sqlite's bench_test.go, on PostgreSQL, for comparing the
// two stores: run both with
//
//	go test ./storage/sqlite ./storage/postgres -run '^$' -bench 'LoadChain1000$|LoadChainTail1000|ContinueChain1000|InsertResponse10Items|LookupItems3' -benchmem
//
// cpu-ns/op is hearth's own CPU time (the test process: the driver, decoding,
// assembly); the server's CPU is not in it. The test cluster runs with fsync off, so
// writes measure the round trips and the server's work, not a disk (SQLite's
// benchmarks wait for an fsync per commit).

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func openBenchDB(b *testing.B) *DB {
	db, err := OpenWith(context.Background(), pgtest.NewDatabase(b), Options{Replica: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

var alice = storage.OwnerOf("sk-alice")

// analyze gathers the planner's statistics, as autovacuum does on a database in use: a
// table just filled has none, and the planner then guesses.
func analyze(b *testing.B, db *DB) {
	if _, err := db.pool.Exec(context.Background(), `ANALYZE`); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkLoadChain1000(b *testing.B)     { benchmarkLoadChain(b, 32) }
func BenchmarkLoadChain1000Walk(b *testing.B) { benchmarkLoadChain(b, 1<<30) }
func BenchmarkLoadChainTail1000(b *testing.B) { benchmarkLoadChain(b, -32) }

func benchmarkLoadChain(b *testing.B, every int) {
	tail := every < 0
	every = max(every, -every)
	defer storage.SetCheckpointEvery(every)()
	const turns = 1000
	db := openBenchDB(b)
	prev := ""
	for i := range turns {
		id := fmt.Sprintf("resp_%04d", i)
		Turn(b, db, alice, id, prev, []storage.Item{UserMessage(id+"_u", Text(190, id))},
			[]storage.Item{Reasoning(id+"_r", Text(190, id)), AssistantMessage(id+"_a", Text(180, id))})
		prev = id
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	analyze(b, db)
	runtime.GC()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		if tail {
			c, err := db.LoadChainTail(ctx, alice, prev, func(string) bool { return true })
			if err != nil {
				b.Fatal(err)
			}
			if c.Base == nil || !c.Base.Omitted || len(c.Links) != (turns-1)%every {
				b.Fatalf("base %+v, %d links after it", c.Base, len(c.Links))
			}
			continue
		}
		c, err := db.LoadChain(ctx, alice, prev)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Items) != 3*turns || len(c.Links) != turns {
			b.Fatalf("%d items, %d links", len(c.Items), len(c.Links))
		}
	}
}

func BenchmarkInsertResponse10Items(b *testing.B) {
	db := openBenchDB(b)
	ctx := context.Background()
	input := []storage.Item{UserMessage("msg_u0", Text(200, "u")), UserMessage("msg_u1", Text(200, "u"))}
	output := make([]storage.Item, 8)
	for k := range output {
		output[k] = AssistantMessage(fmt.Sprintf("msg_a%d", k), Text(200, "a"))
	}
	req, i := Request("qwen3:8b", ""), 0
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		id := fmt.Sprintf("resp_%d", i)
		i++
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: alice, Model: "qwen3:8b", Status: storage.StatusInProgress,
			Request: req, Body: Body(id, "in_progress"), Input: input}); err != nil {
			b.Fatal(err)
		}
		if err := db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: Body(id, "completed"),
			Usage: storage.Usage{InputTokens: 500, OutputTokens: 200}, Output: output}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkContinueChain1000(b *testing.B) {
	db := openBenchDB(b)
	prev := ""
	item := func(id string) storage.Item { return AssistantMessage(id, Text(180, id)) }
	for i := range 1000 {
		id := fmt.Sprintf("resp_%05d", i)
		Turn(b, db, alice, id, prev, []storage.Item{item(id + "_u")}, []storage.Item{item(id + "_r"), item(id + "_a")})
		prev = id
	}
	analyze(b, db)
	runtime.GC()
	b.ResetTimer()
	defer reportCPU(b)()
	i := 1000
	for b.Loop() {
		id := fmt.Sprintf("resp_%05d", i)
		Turn(b, db, alice, id, prev, []storage.Item{item(id + "_u")}, []storage.Item{item(id + "_r"), item(id + "_a")})
		prev = id
		i++
	}
}

func BenchmarkLookupItems3(b *testing.B) {
	db := openBenchDB(b)
	prev := ""
	for i := range 1000 {
		id := fmt.Sprintf("resp_%04d", i)
		Turn(b, db, alice, id, prev, []storage.Item{UserMessage(id+"_u", Text(190, id))},
			[]storage.Item{Reasoning(id+"_r", Text(190, id)), AssistantMessage(id+"_a", Text(180, id))})
		prev = id
	}
	ids := []string{"resp_0999_r", "resp_0500_a", "resp_0001_u"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	analyze(b, db)
	runtime.GC()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		got, err := db.LookupItems(ctx, alice, ids)
		if err != nil || len(got) != len(ids) {
			b.Fatalf("%d items, %v", len(got), err)
		}
	}
}

// BenchmarkChainEpoch is the round trip every continuation pays to read the shared
// ChainEpoch.
func BenchmarkChainEpoch(b *testing.B) {
	db := openBenchDB(b)
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		db.ChainEpoch()
	}
}
