package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hearth/storage"
)

func testConcurrentWriters(t *testing.T, open Opener) {
	const goroutines, perGoroutine = 32, 50
	db := open(t)
	ctx := context.Background()
	start := time.Now()

	var wg sync.WaitGroup
	errs := make(chan error, goroutines*2)
	done := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			prev := ""
			for i := range perGoroutine {
				id := fmt.Sprintf("resp_g%02d_%02d", g, i)
				err := db.CreateResponse(ctx, storage.NewResponse{
					ID: id, Owner: storage.OwnerOf(fmt.Sprint("key", g%4)), Model: "m", Status: storage.StatusInProgress,
					PreviousResponseID: prev, Request: Request("m", ""),
					Input: []storage.Item{UserMessage(id+"_u0", Text(300, id)), UserMessage(id+"_u1", Text(100, id))},
				})
				if err == nil {
					err = db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: Body(id, "completed"), Output: []storage.Item{
						Reasoning(id+"_r", Text(300, id)), FunctionCall(id+"_fc", "f", `{}`), AssistantMessage(id+"_a", Text(300, id))}})
				}
				if err != nil {
					errs <- err
					return
				}
				prev = id
			}
		})
	}
	// Readers load chains while the writers run, and they must never see a response
	// without its items. They pause between loads like request handlers do; readers
	// spinning on 2 cores starve the writer goroutines of CPU (10x slower with SQLite's
	// cgo), which says more about the test machine than about the store.
	var readers sync.WaitGroup
	var loads atomic.Int64
	for r := range 4 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				time.Sleep(time.Millisecond)
				g := (r*8 + i) % goroutines
				loads.Add(1)
				c, err := db.LoadChain(ctx, storage.OwnerOf(fmt.Sprint("key", g%4)), fmt.Sprintf("resp_g%02d_%02d", g, i%perGoroutine))
				if err != nil {
					continue // not written yet
				}
				for _, l := range c.Links {
					if l.Status == storage.StatusCompleted && len(l.Output) != 3 || len(l.Input) != 2 {
						errs <- fmt.Errorf("reader saw link %s %s with %d/%d items", l.ID, l.Status, len(l.Input), len(l.Output))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)

	// Every response is stored, completed, with its items: each chain holds them all.
	responses := 0
	for g := range goroutines {
		c, err := db.LoadChain(ctx, storage.OwnerOf(fmt.Sprint("key", g%4)), fmt.Sprintf("resp_g%02d_%02d", g, perGoroutine-1))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Links) != perGoroutine || len(c.Items) != perGoroutine*5 {
			t.Fatalf("chain %d: %d links, %d items", g, len(c.Links), len(c.Items))
		}
		for i, l := range c.Links {
			if want := fmt.Sprintf("resp_g%02d_%02d", g, i); l.ID != want || l.Status != storage.StatusCompleted || len(l.Input) != 2 || len(l.Output) != 3 {
				t.Fatalf("chain %d link %d = %s %s with %d/%d items, want %s completed with 2/3", g, i, l.ID, l.Status, len(l.Input), len(l.Output), want)
			}
			responses++
		}
	}
	t.Logf("%d responses from %d goroutines in %v, %d chain loads meanwhile", responses, goroutines, elapsed, loads.Load())
}
