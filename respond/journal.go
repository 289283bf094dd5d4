package respond

import (
	"context"
	"sort"
	"sync"
	"time"

	"hearth"
	"hearth/storage"
)

// journalFlushEvery is how often a running response's new events are written to its
// stored journal. Live readers never wait on it (they read the journal in memory);
// it bounds what a crash loses. One transaction (one fsync) per interval and response,
// not per token; a response shorter than this writes its whole journal with its final
// state, in the transaction that stores it anyway.
const journalFlushEvery = 500 * time.Millisecond

// journalWriteTimeout bounds one batch write: a stuck database must not hold a batch
// (and the memory behind it) forever; the next interval tries again.
const journalWriteTimeout = 30 * time.Second

// journal is the event journal of one stored response while it runs: every event in
// sequence order, encoded once (the same bytes go to an SSE client), kept in memory
// so that a client resuming the stream (GET ?stream=true&starting_after=N) follows
// the live run from any event without a gap, and written to storage in batches so it
// outlives the run and hearth. All the response paths (JSON, SSE, background,
// WebSocket) write theirs through the run (run.emitTo), the terminal events once the
// response is stored.
type journal struct {
	s  *Service
	id string

	mu      sync.Mutex
	events  []storage.Event
	flushed int // events[:flushed] are in storage
	ended   bool
	// wake is closed by the next append or the end; nil while nobody waits.
	wake chan struct{}

	// flushMu orders the batch writes and settle; a timer, not a goroutine, runs
	// them, so a response shorter than journalFlushEvery costs none.
	flushMu sync.Mutex
	timer   *time.Timer
	settled bool
	warned  bool
}

// openJournal registers the live journal of response id, before the response is
// stored: a reader that finds the stored response in flight then finds its journal.
// batches says whether events are written while the response runs; a response
// stored whole at its end (run.whole) has no row to write them under until then.
func (s *Service) openJournal(id string, batches bool) *journal {
	j := &journal{s: s, id: id}
	s.jobs.mu.Lock()
	s.jobs.journals[id] = j
	s.jobs.mu.Unlock()
	if batches {
		j.timer = time.AfterFunc(journalFlushEvery, j.tick)
	}
	return j
}

// liveJournal returns the journal of a response running in this process, or nil.
func (s *Service) liveJournal(id string) *journal {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	return s.jobs.journals[id]
}

// append adds an encoded event and wakes the readers following the run.
func (j *journal) append(e storage.Event) {
	if j == nil {
		return
	}
	j.mu.Lock()
	j.events = append(j.events, e)
	w := j.wake
	j.wake = nil
	j.mu.Unlock()
	if w != nil {
		close(w)
	}
}

// tick writes the events not yet stored, as one batch, and sets the next tick.
func (j *journal) tick() {
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	if j.settled {
		return
	}
	j.flush()
	j.timer.Reset(journalFlushEvery)
}

// flush writes the events not yet stored as one batch; flushMu is held.
func (j *journal) flush() {
	j.mu.Lock()
	batch := j.events[j.flushed:len(j.events):len(j.events)]
	j.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), journalWriteTimeout)
	err := j.s.db.AppendEvents(ctx, j.id, batch, false)
	cancel()
	if err != nil {
		// The response goes on; its final write carries what is missing.
		if !j.warned {
			j.s.log.Warn("write event journal", "id", j.id, "error", err)
			j.warned = true
		}
		return
	}
	j.mu.Lock()
	j.flushed += len(batch)
	j.mu.Unlock()
}

// settle stops the batch writes and returns what the final write of the response
// must add to its journal: the events not yet stored, then the terminal ones (held
// until the response is stored).
func (j *journal) settle(held []storage.Event) []storage.Event {
	j.stopTicks()
	j.mu.Lock()
	rest := j.events[j.flushed:len(j.events):len(j.events)]
	j.mu.Unlock()
	return append(rest, held...)
}

func (j *journal) stopTicks() {
	j.flushMu.Lock()
	j.settled = true
	if j.timer != nil {
		j.timer.Stop()
	}
	j.flushMu.Unlock()
}

// end marks the journal complete and forgets it: from now on readers find the whole
// journal in storage (the response was stored with it) or, if that write failed,
// what storage has.
func (j *journal) end() {
	if j == nil {
		return
	}
	j.stopTicks() // when settle did not run: the response was not stored
	j.s.jobs.mu.Lock()
	delete(j.s.jobs.journals, j.id)
	j.s.jobs.mu.Unlock()
	j.mu.Lock()
	j.ended = true
	w := j.wake
	j.wake = nil
	j.mu.Unlock()
	if w != nil {
		close(w)
	}
}

// follow sends every event after sequence number after, then each new one as the
// run emits it, until the journal ends (true) or ctx does (false).
func (j *journal) follow(ctx context.Context, after int, send func(storage.Event)) bool {
	j.mu.Lock()
	next := sort.Search(len(j.events), func(i int) bool { return j.events[i].Seq > after })
	j.mu.Unlock()
	for {
		j.mu.Lock()
		batch := j.events[min(next, len(j.events)):len(j.events):len(j.events)]
		ended := j.ended
		var wake chan struct{}
		if len(batch) == 0 && !ended {
			if j.wake == nil {
				j.wake = make(chan struct{})
			}
			wake = j.wake
		}
		j.mu.Unlock()
		for _, e := range batch {
			// A reader may ask for events the run has not reached yet.
			if e.Seq > after {
				send(e)
			}
		}
		next += len(batch)
		switch {
		case len(batch) > 0:
		case ended:
			return true
		default:
			select {
			case <-wake:
			case <-ctx.Done():
				return false
			}
		}
	}
}

// encodeEvent is an event as journaled and sent to a client of hearth's own event
// names: encoded once for both.
func encodeEvent(e hearth.Event) storage.Event {
	typ, data := EventJSON(e)
	return storage.Event{Seq: e.SequenceNumber, Type: typ, Data: data}
}

// isTerminal reports whether an event ends a response's events.
func isTerminal(typ string) bool {
	switch typ {
	case hearth.EventResponseCompleted, hearth.EventResponseIncomplete, hearth.EventResponseFailed:
		return true
	}
	return false
}

// terminalEvents are the events that end a stored response, numbered from seq: what
// a journal cut short (a crash between batches, a final write that failed) ends with
// when it is replayed, so a resuming client always sees its response end.
func terminalEvents(resp *hearth.Response, seq int) []hearth.Event {
	switch resp.Status {
	case hearth.StatusCompleted:
		return []hearth.Event{{Type: hearth.EventResponseCompleted, SequenceNumber: seq, Response: resp}}
	case hearth.StatusIncomplete:
		return []hearth.Event{{Type: hearth.EventResponseIncomplete, SequenceNumber: seq, Response: resp}}
	}
	msg, code := "The response did not complete ("+resp.Status+").", hearth.CodeServerError
	if resp.Error != nil {
		msg, code = resp.Error.Message, resp.Error.Code
	}
	return []hearth.Event{
		{Type: hearth.EventError, SequenceNumber: seq, Error: &hearth.Error{Status: 500, Type: hearth.ErrTypeServer, Code: code, Message: msg}},
		{Type: hearth.EventResponseFailed, SequenceNumber: seq + 1, Response: resp},
	}
}

// DefaultJournalRetention is how long the journal of a finished response is kept.
const DefaultJournalRetention = 7 * 24 * time.Hour

// pruneEvery is how often PruneJournals looks for journals past their retention.
const pruneEvery = time.Hour

// PruneJournals deletes, once now and then every hour until ctx ends, the journals
// of responses that finished longer than retention ago (the responses stay, and
// replay from their stored state). Zero or less keeps journals as long as their
// responses.
func (s *Service) PruneJournals(ctx context.Context, retention time.Duration) {
	if s.db == nil || retention <= 0 {
		return
	}
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		n, err := s.db.PruneJournals(ctx, time.Now().Add(-retention))
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("prune event journals", "error", err)
		case n > 0:
			s.log.Info("pruned event journals", "journals", n, "retention", retention)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// EventJSON is an event's type and JSON in hearth's names, as journaled and sent.
func EventJSON(e hearth.Event) (string, []byte) {
	// Sized for a delta event, the one sent per token, so that it takes one allocation.
	return appendEventJSON(make([]byte, 0, 192+len(e.Delta)), e)
}

// appendEventJSON appends the event's JSON in hearth's names to dst and returns its
// type with it.
func appendEventJSON(dst []byte, e hearth.Event) (string, []byte) {
	data, err := e.AppendJSON(dst)
	if err != nil {
		// An event that cannot be marshalled is a bug; losing it would break the
		// client's state machine silently, so say so in the stream.
		data, _ = hearth.Event{Type: hearth.EventError, SequenceNumber: e.SequenceNumber,
			Error: hearth.ServerError("internal error encoding an event")}.AppendJSON(dst[:0])
		return hearth.EventError, data
	}
	return e.Type, data
}
