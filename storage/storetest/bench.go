package storetest

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"hearth/storage"
)

// Bench is the store benchmarks every implementation runs, so that the numbers of two
// stores compare: each store's bench_test.go names them (BenchmarkLoadChain1000 and the
// rest) and calls the method of the same name, for example
//
//	func BenchmarkLoadChain1000(b *testing.B) { bench.LoadChain1000(b) }
//
// Open opens an empty store for b and closes it when b ends. Settle, when set, runs
// after the setup and before the timing, for what a database in use would have done by
// then (PostgreSQL's ANALYZE).
type Bench struct {
	Open   func(b *testing.B) storage.Store
	Settle func(b *testing.B, st storage.Store)
}

// benchOwner owns the benchmarks' responses.
var benchOwner = storage.OwnerOf("sk-alice")

// cpuTime is the CPU time (user + system) the process has used. The benchmarks report
// it per op beside ns/op: on a shared machine wall time per op swings with whatever
// else runs, while CPU time per op measures the code (of this process only: a
// database server's own CPU is not in it).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU starts measuring; the returned function reports cpu-ns/op.
func ReportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

func (x Bench) settle(b *testing.B, st storage.Store) {
	if x.Settle != nil {
		x.Settle(b, st)
	}
	runtime.GC() // the setup's garbage is not the timed loop's to collect
}

// benchChain stores a chain of turns responses resp_0000, resp_0001, ..., each with an
// input message and an output of reasoning and a message (about 300 bytes of JSON
// each), and returns the last response's id and the items' JSON bytes.
func benchChain(b *testing.B, st storage.Store, turns int) (last string, size int) {
	for i := range turns {
		id := fmt.Sprintf("resp_%04d", i)
		in := []storage.Item{UserMessage(id+"_u", Text(190, id))}
		out := []storage.Item{Reasoning(id+"_r", Text(190, id)), AssistantMessage(id+"_a", Text(180, id))}
		for _, it := range append(in, out...) {
			size += len(it.JSON)
		}
		Turn(b, st, benchOwner, id, last, in, out)
		last = id
	}
	return last, size
}

// LoadChain1000 loads the context behind the last response of a 1,000-turn chain:
// 1,000 links, each with 1 input and 2 output items of about 300 bytes of JSON. The
// chain grew through the API, so the walk stops at its newest checkpoint.
func (x Bench) LoadChain1000(b *testing.B) { x.loadChain(b, 32) }

// LoadChain1000Walk loads the same chain without checkpoints: all 1,000 links walked,
// as for a branch taken above the newest checkpoint.
func (x Bench) LoadChain1000Walk(b *testing.B) { x.loadChain(b, 1<<30) }

// LoadChainTail1000 loads the same chain for a caller that holds its checkpoint
// decoded (LoadChainTail): only the links after the checkpoint are read.
func (x Bench) LoadChainTail1000(b *testing.B) { x.loadChain(b, -32) }

// loadChain loads a 1,000-turn chain with a checkpoint every |every| turns, through
// LoadChainTail with the checkpoint held when every is negative.
func (x Bench) loadChain(b *testing.B, every int) {
	tail := every < 0
	every = max(every, -every)
	defer storage.SetCheckpointEvery(every)()
	const turns = 1000
	db := x.Open(b)
	prev, size := benchChain(b, db, turns)
	b.ReportMetric(float64(size)/(3*turns), "B/item")

	// A request context, as the server passes: cancellable, which makes a driver
	// watch it while stepping.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x.settle(b, db)
	b.ResetTimer()
	defer ReportCPU(b)()
	for b.Loop() {
		if tail {
			c, err := db.LoadChainTail(ctx, benchOwner, prev, func(string) bool { return true })
			if err != nil {
				b.Fatal(err)
			}
			if c.Base == nil || !c.Base.Omitted || len(c.Links) != (turns-1)%every {
				b.Fatalf("base %+v, %d links after it", c.Base, len(c.Links))
			}
			continue
		}
		c, err := db.LoadChain(ctx, benchOwner, prev)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Items) != 3*turns || len(c.Links) != turns {
			b.Fatalf("%d items, %d links", len(c.Items), len(c.Links))
		}
	}
}

// InsertResponse10Items stores one response the way the server does: created with 2
// input items, then completed with 8 output items (10 items, ~300 bytes each), two
// transactions. Where each commit waits for an fsync, the number mostly measures the
// disk.
func (x Bench) InsertResponse10Items(b *testing.B) {
	db := x.Open(b)
	ctx := context.Background()
	input := []storage.Item{UserMessage("msg_u0", Text(200, "u")), UserMessage("msg_u1", Text(200, "u"))}
	output := make([]storage.Item, 8)
	for k := range output {
		output[k] = AssistantMessage(fmt.Sprintf("msg_a%d", k), Text(200, "a"))
	}
	req, i := Request("qwen3:8b", ""), 0
	b.ResetTimer()
	defer ReportCPU(b)()
	for b.Loop() {
		id := fmt.Sprintf("resp_%d", i)
		i++
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: benchOwner, Model: "qwen3:8b", Status: storage.StatusInProgress,
			Request: req, Body: Body(id, "in_progress"), Input: input}); err != nil {
			b.Fatal(err)
		}
		if err := db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: Body(id, "completed"),
			Usage: storage.Usage{InputTokens: 500, OutputTokens: 200}, Output: output}); err != nil {
			b.Fatal(err)
		}
	}
}

// ContinueChain1000 stores one more turn (created, then completed with two output
// items) at the tip of a 1,000-turn chain: what materialising the context costs a
// write, as the chain's whole context is copied into the new tip's row.
func (x Bench) ContinueChain1000(b *testing.B) {
	db := x.Open(b)
	prev := ""
	item := func(id string) storage.Item { return AssistantMessage(id, Text(180, id)) }
	for i := range 1000 {
		id := fmt.Sprintf("resp_%05d", i)
		Turn(b, db, benchOwner, id, prev, []storage.Item{item(id + "_u")}, []storage.Item{item(id + "_r"), item(id + "_a")})
		prev = id
	}
	x.settle(b, db)
	b.ResetTimer()
	defer ReportCPU(b)()
	i := 1000
	for b.Loop() {
		id := fmt.Sprintf("resp_%05d", i)
		Turn(b, db, benchOwner, id, prev, []storage.Item{item(id + "_u")}, []storage.Item{item(id + "_r"), item(id + "_a")})
		prev = id
		i++
	}
}

// LookupItems3 resolves three item references (what the AI SDK sends per step of a
// tool loop: reasoning, a message, a call) among the 3,000 items of 1,000 stored
// turns, as the server does for item_reference input items.
func (x Bench) LookupItems3(b *testing.B) {
	db := x.Open(b)
	benchChain(b, db, 1000)
	ids := []string{"resp_0999_r", "resp_0500_a", "resp_0001_u"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	x.settle(b, db)
	b.ResetTimer()
	defer ReportCPU(b)()
	for b.Loop() {
		got, err := db.LookupItems(ctx, benchOwner, ids)
		if err != nil || len(got) != len(ids) {
			b.Fatalf("%d items, %v", len(got), err)
		}
	}
}
