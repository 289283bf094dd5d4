package respond

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hearth"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// TestJournalFollowers: readers that join a running journal at any moment, from any
// sequence number, get every later event once and in order, while the run appends
// and the batch writer stores; the stored journal then holds every event once. (The
// control flow alone, without a runtime: the e2e tests cover the real paths.)
func TestJournalFollowers(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const id = "resp_follow"
	if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: storage.OwnerOf(""), Model: "m",
		Status: storage.StatusInProgress, Request: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	s := &Service{db: db, log: slog.New(slog.DiscardHandler), jobs: newJobs()}
	j := s.openJournal(id, true)
	const total = 400
	var wg sync.WaitGroup
	got := make([][]int, 8)
	for r := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(r) * 15 * time.Millisecond)
			after := r*40 - 1
			if !j.follow(ctx, after, func(e storage.Event) { got[r] = append(got[r], e.Seq) }) {
				t.Error("follow ended before the journal")
			}
			for i, seq := range got[r] {
				if seq != after+1+i {
					t.Errorf("reader %d (after %d): event %d is %d", r, after, i, seq)
					return
				}
			}
			if len(got[r]) != total-after-1 {
				t.Errorf("reader %d (after %d): %d events, want %d", r, after, len(got[r]), total-after-1)
			}
		}()
	}
	for i := range total - 1 {
		j.append(encodeEvent(hearth.Event{Type: hearth.EventOutputTextDelta, SequenceNumber: i, Delta: fmt.Sprint(i)}))
		if i%50 == 0 {
			time.Sleep(journalFlushEvery / 4) // let batch writes happen mid-run
		}
	}
	final := j.settle([]storage.Event{encodeEvent(hearth.Event{Type: hearth.EventResponseCompleted, SequenceNumber: total - 1,
		Response: &hearth.Response{ID: id, Status: hearth.StatusCompleted}})})
	if err := db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: []byte(`{}`),
		Events: final, EndJournal: true}); err != nil {
		t.Fatal(err)
	}
	j.append(final[len(final)-1])
	j.end()
	wg.Wait()
	if s.liveJournal(id) != nil {
		t.Error("an ended journal is still live")
	}
	stored, last, err := db.Journal(ctx, id, -1)
	if err != nil || last == nil || last.Seq != total-1 || len(stored) != total {
		t.Fatalf("stored journal: %d events, last %+v, %v", len(stored), last, err)
	}
	for i, e := range stored {
		if e.Seq != i {
			t.Fatalf("stored event %d has sequence number %d", i, e.Seq)
		}
	}
}
