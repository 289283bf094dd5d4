package sqlite

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"hearth/storage"
)

// cpuTime is the CPU time (user + system) the process has used. The benchmarks report
// it per op beside ns/op: on a shared 2-core machine wall time per op swings with
// whatever else runs, while CPU time per op measures the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU starts measuring; the returned function reports cpu-ns/op.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}

// Run with:
//
//	go test ./storage -run '^$' -bench . -benchmem

// BenchmarkLoadChain1000 loads the context behind the last response of a 1,000-turn
// chain: 1,000 links, each with 1 input and 2 output items of about 300 bytes of JSON.
// The chain grew through the API, so the walk stops at its newest checkpoint.
func BenchmarkLoadChain1000(b *testing.B) { benchmarkLoadChain(b, 32) }

// BenchmarkLoadChain1000Walk loads the same chain without checkpoints: all 1,000 links
// walked, as for a branch taken above the newest checkpoint.
func BenchmarkLoadChain1000Walk(b *testing.B) { benchmarkLoadChain(b, 1<<30) }

// BenchmarkLoadChainTail1000 loads the same chain for a caller that holds its
// checkpoint decoded (LoadChainTail): only the links after the checkpoint are read.
func BenchmarkLoadChainTail1000(b *testing.B) { benchmarkLoadChain(b, -32) }

// benchmarkLoadChain loads a 1,000-turn chain with a checkpoint every |every| turns,
// through LoadChainTail with the checkpoint held when every is negative.
func benchmarkLoadChain(b *testing.B, every int) {
	tail := every < 0
	every = max(every, -every)
	defer storage.SetCheckpointEvery(every)()
	const turns = 1000
	db := openTestDB(b)
	ctx := context.Background()
	prev, size := "", 0
	for i := range turns {
		id := fmt.Sprintf("resp_%04d", i)
		in := []storage.Item{userMessage(id+"_u", text(190, id))}
		out := []storage.Item{reasoning(id+"_r", text(190, id)), assistantMessage(id+"_a", text(180, id))}
		for _, it := range append(in, out...) {
			size += len(it.JSON)
		}
		turn(b, db, alice, id, prev, in, out)
		prev = id
	}
	b.ReportMetric(float64(size)/(3*turns), "B/item")

	// A request context, as the server passes: cancellable, which makes the driver
	// watch it while stepping.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runtime.GC() // the setup's garbage is not the load's to collect
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

// BenchmarkInsertResponse10Items stores one response the way the server does: created
// with 2 input items, then completed with 8 output items (10 items, ~300 bytes each),
// two transactions. With synchronous=FULL each commit waits for an fsync, so the number
// mostly measures the disk.
func BenchmarkInsertResponse10Items(b *testing.B) {
	db := openTestDB(b)
	ctx := context.Background()
	input := []storage.Item{userMessage("msg_u0", text(200, "u")), userMessage("msg_u1", text(200, "u"))}
	output := make([]storage.Item, 8)
	for k := range output {
		output[k] = assistantMessage(fmt.Sprintf("msg_a%d", k), text(200, "a"))
	}
	req, i := request("qwen3:8b", ""), 0
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		id := fmt.Sprintf("resp_%d", i)
		i++
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: alice, Model: "qwen3:8b", Status: storage.StatusInProgress,
			Request: req, Body: body(id, "in_progress"), Input: input}); err != nil {
			b.Fatal(err)
		}
		if err := db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: body(id, "completed"),
			Usage: storage.Usage{InputTokens: 500, OutputTokens: 200}, Output: output}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContinueChain1000 stores one more turn (created, then completed with two
// output items) at the tip of a 1,000-turn chain: what materialising the context costs
// a write, as the chain's whole context is copied into the new tip's row.
func BenchmarkContinueChain1000(b *testing.B) {
	db := openTestDB(b)
	prev := ""
	item := func(id string) storage.Item { return assistantMessage(id, text(180, id)) }
	for i := range 1000 {
		id := fmt.Sprintf("resp_%05d", i)
		turn(b, db, alice, id, prev, []storage.Item{item(id + "_u")}, []storage.Item{item(id + "_r"), item(id + "_a")})
		prev = id
	}
	runtime.GC()
	b.ResetTimer()
	defer reportCPU(b)()
	i := 1000
	for b.Loop() {
		id := fmt.Sprintf("resp_%05d", i)
		turn(b, db, alice, id, prev, []storage.Item{item(id + "_u")}, []storage.Item{item(id + "_r"), item(id + "_a")})
		prev = id
		i++
	}
}

// BenchmarkLookupItems3 resolves three item references (what the AI SDK sends per step
// of a tool loop: reasoning, a message, a call) among the 3,000 items of 1,000 stored
// turns, as the server does for item_reference input items.
func BenchmarkLookupItems3(b *testing.B) {
	db := openTestDB(b)
	prev := ""
	for i := range 1000 {
		id := fmt.Sprintf("resp_%04d", i)
		turn(b, db, alice, id, prev, []storage.Item{userMessage(id+"_u", text(190, id))},
			[]storage.Item{reasoning(id+"_r", text(190, id)), assistantMessage(id+"_a", text(180, id))})
		prev = id
	}
	ids := []string{"resp_0999_r", "resp_0500_a", "resp_0001_u"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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
