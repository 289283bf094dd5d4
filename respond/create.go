package respond

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"hearth"
	"hearth/engine"
	"hearth/internal/tracing"
	"hearth/storage"
)

// Create makes one response: the prologue (prepare: every request problem is still
// an error returned, before any event), admission and the stored record (start), then
// the run, whose events go to sink. The JSON, SSE, background and WebSocket paths are
// this one path; they differ in the sink and the request's flags:
//
//   - sink nil, not background: a JSON reply. The response is stored whole when it
//     ends (its client learns the id with the finished response, so no reader needs
//     the in-flight row); Outcome.Response is the final response, and the error of
//     storing it is returned.
//   - sink nil, background: the response runs without the client, which is answered
//     at once with the queued response (Outcome.Response) and polls or cancels by id.
//   - a sink (an SSE stream, a WebSocket lane): the events stream, the terminal ones
//     once the response is stored; a background stream outlives its client (a
//     disconnect stops the stream, not the response). A response whose store failed
//     was sent response.failed, and is returned failed.
func (s *Service) Create(ctx context.Context, in *Request, sink Sink) (Outcome, error) {
	ctx, span := startResponseSpan(ctx, in.Body)
	out, async, err := s.create(ctx, in, sink, span)
	if !async {
		endResponseSpan(span, err)
	}
	return out, err
}

// create is Create within the response's span, which it ends itself (async) when
// the response goes on in the background after it returns.
func (s *Service) create(ctx context.Context, in *Request, sink Sink, span tracing.Span) (Outcome, bool, error) {
	req := in.Body
	p, err := s.prepare(ctx, in, false)
	if err != nil {
		return Outcome{}, false, err
	}
	defer p.close()
	ctx = p.ctx
	r, resp, retry, err := s.start(ctx, in, p, sink == nil && !req.Background)
	if err != nil {
		return Outcome{Retry: retry}, false, err
	}
	out := Outcome{Runtime: r.adm.Runtime()}
	switch {
	case sink == nil && req.Background:
		out.Response = resp.Clone()
		// The journal starts as a background stream's does, so a client that
		// streams it later (GET ?stream=true) sees response.queued too.
		b := r.builder(resp, nil, true)
		bg := tracing.Carry(s.background(resp.ID), ctx)
		go func() {
			r.execute(bg, b, nil)
			endResponseSpan(span, nil)
		}()
		return out, true, nil
	case sink != nil:
		runCtx := ctx
		if req.Background {
			runCtx = tracing.Carry(s.background(resp.ID), ctx)
		}
		if o, ok := sink.(Opener); ok {
			runCtx = o.Open(runCtx, out.Runtime, req.Background)
		}
		// Waiting for a slot: the client sees response.queued, then
		// response.in_progress once the generation starts.
		final, storeErr := r.execute(runCtx, r.builder(resp, sink, req.Background || r.adm.Queued()), sink)
		if storeErr != nil {
			// The client was sent response.failed: the response is not one to continue.
			final = failedCopy(final, notStoredMessage(storeErr))
		}
		out.Response, out.Runtime = final, r.adm.Runtime()
		if in.KeepChain && final.Status != hearth.StatusFailed {
			out.Chain = nextLocalChain(p, r, final)
		}
		return out, false, nil
	}
	final, storeErr := r.execute(ctx, r.builder(resp, nil, false), nil)
	out.Response, out.JSON, out.Runtime = final, r.finalJSON, r.adm.Runtime()
	return out, false, storeErr
}

// start turns a prepared request into a run: the response and its id, a place in
// admission (a slot now, or the queue; a refusal is a 429 whose Retry-After value is
// returned), and the stored record (queued or in progress). Every response starts
// here, once prepared (prologue.go); the run takes over the prepared conversation turn
// and chain. whole keeps the record back until the response ends, to be stored with
// its end in one transaction (one commit and fsync instead of two): only for a
// response whose id nobody learns before it ends.
func (s *Service) start(ctx context.Context, in *Request, p *prepared, whole bool) (r *run, resp *hearth.Response, retry string, err error) {
	req, who := p.req, in.Owner
	defer func() {
		if err == nil {
			// The run appends the response to its conversation and releases it.
			r.conv = p.turn.handOff()
		}
	}()
	resp = hearth.NewResponse(hearth.NewID(hearth.PrefixResponse), req, time.Now())
	assignInputIDs(req.Input)
	store := req.StoreEnabled() && s.db != nil
	if req.Background && !store {
		return nil, nil, "", hearth.InvalidRequest("background", "invalid_value",
			"Background responses must be stored: background requires store to be true.")
	}
	// Admission last, once the request is known to be good: 429 beyond the queue bound
	// or the key's rate limit; otherwise a slot now, or a place in the queue.
	adm, retry, err := s.admitter.Admit(ctx, in.Meta, req, resp.ID, p.place)
	if err != nil {
		return nil, nil, retry, err
	}
	r = &run{s: s, job: p.job, req: req, store: store, adm: adm, meta: in.Meta, who: who, chain: &p.chain}
	if !store {
		return r, resp, "", nil
	}
	// Registered before the response is stored: whoever finds the stored response
	// in flight finds its live journal. A response stored whole writes its journal
	// with it.
	r.j = s.openJournal(resp.ID, !whole)
	if whole {
		rec := newStoredResponse(who, req, resp) // the end brings the body
		r.whole, r.input = &rec, rec.Input
		return r, resp, "", nil
	}
	rec := newStoredResponse(who, req, resp)
	r.input = rec.Input
	if req.Background || adm.Queued() {
		rec.Status = storage.StatusQueued
		resp.Status = hearth.StatusQueued
	}
	rec.Body, _ = resp.MarshalJSON()
	span := storeSpan(ctx, "create_response")
	err = s.db.CreateResponse(ctx, rec)
	span.Fail(err)
	span.End()
	if err != nil {
		adm.Done()
		r.j.end()
		return nil, nil, "", fmt.Errorf("store new response: %w", err)
	}
	return r, resp, "", nil
}

// run carries one response from generation to storage.
type run struct {
	s     *Service
	job   *engine.Job
	req   *hearth.CreateResponseRequest
	store bool
	// held are the terminal events, sent only once the response is stored, so a
	// client that saw a response finish can always retrieve it.
	held []hearth.Event
	// adm is the response's place in admission.
	adm Admission
	// meta is the request's record; firstToken when its first output came.
	meta       *Meta
	firstToken time.Time
	// j is the response's event journal (journal.go); nil when it is not stored.
	j *journal
	// heldEnc are the held events encoded, once for the journal and the client.
	heldEnc []storage.Event
	// encBuf is reused to encode the events of a response that has no journal.
	encBuf []byte
	// kind names what runs in the log line when it is not a response: "compaction".
	kind string
	// conv is the response's conversation (conversations.go), nil when it has none.
	conv *conversationTurn
	// who owns the response.
	who string
	// whole is the response's record when it is stored whole at its end (start).
	whole *storage.NewResponse
	// input is the response's input as stored.
	input []storage.Item
	// chain is what the response read of the chain it continues; nil where it is
	// not kept (hotChains).
	chain *chainRead
	// finalJSON is the final response as stored, once it is (Response.MarshalJSON).
	finalJSON []byte
	// kept is the response's chain as kept for its next turn (keep); nil when it
	// was not.
	kept *hotChain
}

// builder is the builder of a started response whose events leave through sink (nil:
// the journal alone). queued announces the response as queued first: it waits for a
// slot, or runs in the background.
func (r *run) builder(resp *hearth.Response, sink Sink, queued bool) *hearth.Builder {
	b := hearth.NewBuilder(resp, r.observe(r.emitTo(sink)))
	if queued {
		b.Queue()
	}
	return b
}

// emitTo is where a response's events go, whatever the path: the journal, then sink
// (nil for a JSON or background response). The terminal events are held until the
// response is stored.
func (r *run) emitTo(sink Sink) func(hearth.Event) {
	return func(e hearth.Event) {
		switch e.Type {
		case hearth.EventResponseCompleted, hearth.EventResponseIncomplete, hearth.EventResponseFailed, hearth.EventError:
			r.held = append(r.held, e)
		default:
			r.send(sink, e)
		}
	}
}

// send puts one event in the journal and on sink.
func (r *run) send(sink Sink, e hearth.Event) {
	enc, encoded := sink.(EncodedSink)
	if r.j == nil {
		switch {
		case encoded:
			// Nothing keeps the bytes once the client has them: one buffer serves
			// every event of the response, so a token costs no allocation here.
			var typ string
			typ, r.encBuf = appendEventJSON(r.encBuf[:0], e)
			enc.Stored(typ, r.encBuf)
		case sink != nil:
			sink.Event(e)
		}
		return
	}
	r.sendEncoded(sink, e, encodeEvent(e))
}

// sendEncoded is send with the event already encoded.
func (r *run) sendEncoded(sink Sink, e hearth.Event, stored storage.Event) {
	r.j.append(stored)
	switch enc, encoded := sink.(EncodedSink); {
	case encoded:
		enc.Stored(stored.Type, stored.Data)
	case sink != nil:
		sink.Event(e)
	}
}

// finish sends the held terminal events, ends the response's events on sink and ends
// the journal. It is apart from execute so EventPath (FuzzWebSocketFrame) can drive a response's
// whole path to the client (emitTo, then finish) over a real connection without a
// runtime.
func (r *run) finish(sink Sink) {
	for i, e := range r.held {
		if len(r.heldEnc) == len(r.held) {
			r.sendEncoded(sink, e, r.heldEnc[i])
		} else {
			r.send(sink, e)
		}
	}
	if sink != nil {
		sink.Done()
	}
	r.j.end()
}

// execute generates the response, stores the result and, when streaming, sends the
// terminal events and ends the stream. It returns the final response and the error of
// storing it, if any.
func (r *run) execute(ctx context.Context, b *hearth.Builder, sink Sink) (*hearth.Response, error) {
	s := r.s
	id := b.Response().ID
	defer s.release(id)
	defer r.adm.Done()
	defer r.conv.release()
	if err := r.waitTraced(ctx); err != nil {
		// The request left the queue before it ran: its client went away, it was
		// cancelled or timed out, or hearth is stopping.
		b.Incomplete(engine.IncompleteClientDisconnected, hearth.Usage{})
	} else {
		if r.store && r.whole == nil && (r.req.Background || r.adm.Queued()) {
			if err := s.db.UpdateStatus(ctx, id, storage.StatusInProgress); err != nil {
				s.log.Warn("mark queued response in progress", "id", id, "error", err)
			}
		}
		if err := r.job.Run(ctx, b); err != nil {
			s.log.Warn("response ended early", "id", id, "model", logModel(r.req.Model), "error", err)
		}
		r.adm.Done() // the next generation may start while this one is stored
	}
	final := b.Response()
	switch {
	case s.cancelled(id):
		final.Status, final.IncompleteDetails = hearth.StatusCancelled, nil
	case r.req.Background && s.jobs.root.Err() != nil:
		final.Status, final.IncompleteDetails = hearth.StatusFailed, nil
		final.Error = &hearth.ResponseError{Code: hearth.CodeServerError, Message: "hearth stopped before this response finished"}
	}
	r.settle(ctx, final)
	if err := r.conv.appendResponse(ctx, r.req.Input, final); err != nil {
		// The client must not see a turn finish that its conversation lacks.
		s.log.Error("append response to its conversation", "id", id, "error", err)
		const msg = "The response could not be added to its conversation."
		*final = *failedCopy(final, msg)
		r.held = failedTerminal(r.held, final, msg)
	}
	var storeErr error
	var f storage.Final
	if r.store {
		// The client may be gone; the record must still be finished.
		storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		f = storedFinal(final)
		f.Runtime = r.adm.Runtime()
		// The journal's last events go with the final state, in one transaction.
		r.heldEnc = make([]storage.Event, len(r.held))
		for i, e := range r.held {
			if e.Response == final && len(f.Body) > 0 {
				// The final response is encoded once, for storage, this event and
				// the JSON reply.
				r.heldEnc[i] = storage.Event{Seq: e.SequenceNumber, Type: e.Type,
					Data: hearth.AppendResponseEvent(make([]byte, 0, len(f.Body)+96), e.Type, e.SequenceNumber, f.Body)}
				continue
			}
			r.heldEnc[i] = encodeEvent(e)
		}
		f.Events, f.EndJournal = r.j.settle(r.heldEnc), true
		f.SavedPrompt = r.savedPrompt
		if r.chain != nil {
			f.Distance, f.Depth = r.chain.distance, r.chain.depth
		}
		var span tracing.Span
		if r.whole != nil {
			span = storeSpan(ctx, "store_response")
			storeErr = s.db.StoreResponse(storeCtx, *r.whole, f)
		} else {
			span = storeSpan(ctx, "complete_response")
			storeErr = s.db.CompleteResponse(storeCtx, id, f)
		}
		span.Fail(storeErr)
		span.End()
		cancel()
		if storeErr != nil {
			s.log.Error("store finished response", "id", id, "error", storeErr)
			storeErr = fmt.Errorf("store finished response: %w", storeErr)
			r.held = failedTerminal(r.held, final, notStoredMessage(storeErr))
			r.heldEnc = nil
			if r.whole == nil {
				// The client is told the response failed; the row must say so too
				// once the database takes writes again, or a poller would wait
				// forever. (A response stored whole has no row to settle.)
				go s.settleLater(id, failedCopy(final, notStoredMessage(storeErr)))
			}
		}
	}
	if r.store && storeErr == nil {
		r.keep(final, f)
		r.finalJSON = f.Body
	}
	r.traceFinal(ctx, final)
	r.finish(sink)
	r.report(final)
	if final.Status != hearth.StatusFailed {
		s.admitter.Served(r.who, r.req.PromptCacheKey, r.adm.Runtime())
	}
	return final, storeErr
}

// keep leaves the chain of a response just stored in s.hot for its next turn: the
// chain it read, then its input and output decoded from the JSON stored (f), so the
// next turn sees the items a load would give; with its job's build when that is of
// the chain alone. Only a settled chain is kept (chainRead.settled): one with a
// response still running or cancelled changes as that response ends.
func (r *run) keep(final *hearth.Response, f storage.Final) {
	ch := r.chain
	if ch == nil || !ch.settled || !storage.Status(final.Status).Settled() {
		return
	}
	items := make([]hearth.Item, 0, len(r.input)+len(f.Output))
	weight := 0
	for _, stored := range [][]storage.Item{r.input, f.Output} {
		for _, it := range stored {
			d, err := r.s.items.decode(it.JSON)
			if err != nil {
				return // a load would say what is wrong
			}
			items = append(items, d)
			weight += len(it.JSON)
		}
	}
	var memo *engine.Memo
	if !ch.noMemo && r.job != nil {
		memo = r.job.Memo()
	}
	distance := ch.distance
	if distance >= storage.CheckpointInterval(ch.depth) {
		distance = 0 // it became its chain's checkpoint
	}
	r.kept = r.s.hot.put(final.ID, r.who, ch.epoch, ch.hot, ch.items, items, weight, memo, distance, ch.depth)
}

// savedPrompt is the response's prompt for its chain's checkpoint (storage.Final).
func (r *run) savedPrompt() []byte {
	if r.job == nil {
		return nil
	}
	p, ok := r.job.SavedPrompt()
	if !ok {
		return nil
	}
	return p.MarshalBinary()
}

// failedCopy is final marked failed with msg, as the client was told.
func failedCopy(final *hearth.Response, msg string) *hearth.Response {
	f := final.Clone()
	f.Status, f.IncompleteDetails = hearth.StatusFailed, nil
	f.Error = &hearth.ResponseError{Code: hearth.CodeServerError, Message: msg}
	return f
}

// settleRetries bound how long settleLater keeps trying; after that the next start's
// recovery marks the row failed.
const (
	settleEvery    = time.Second
	settleAttempts = 600
)

// settleLater retries storing the final state of a response whose first write failed
// (a full disk, a read-only file), until it succeeds, the server shuts down, or the
// attempts run out.
func (s *Service) settleLater(id string, final *hearth.Response) {
	for range settleAttempts {
		select {
		case <-s.jobs.root.Done():
			return
		case <-time.After(settleEvery):
		}
		ctx, cancel := context.WithTimeout(s.jobs.root, 30*time.Second)
		f := storedFinal(final)
		// The journal keeps what was written of it; a replay ends it from this state.
		f.EndJournal = true
		err := s.db.CompleteResponse(ctx, id, f)
		cancel()
		if err == nil {
			s.log.Info("stored the failed state of a response after an earlier write failed", "id", id)
			return
		}
	}
	s.log.Error("gave up storing the final state of a response; the next start marks it failed", "id", id)
}

// chainRead is what a turn read of the chain it continues.
type chainRead struct {
	items []hearth.Item
	// saved is the prompt saved with the chain's checkpoint when the checkpoint was
	// read from the database (the first continuation after a restart), for the
	// renderer to splice onto (engine.SavedPrompt).
	saved *engine.SavedPrompt
	// epoch is storage's chain count taken before reading (hotChains).
	epoch uint64
	// hot is the kept chain items came from, nil when they were loaded; settled: every
	// response of the chain had finished for good, so the turn may keep its own.
	hot     *hotChain
	settled bool
	// local: the items are a WebSocket connection's own (LocalChain), which it
	// appends to in place.
	local bool
	// memo is what the chain's previous turn built (engine.Memo), from its hot chain
	// or the connection's state; nil when none was kept.
	memo *engine.Memo
	// noMemo: the turn's build is not of its chain alone, so it keeps none.
	noMemo bool
	// distance is the new response's links up to the chain's nearest checkpoint or
	// root, depth from its root (storage.Final); 0 when not known.
	distance, depth int
}

// chainHistory loads the items behind previous_response_id: every response of the
// chain's input then output, oldest first. Instructions are not inherited (OpenAI's
// rule). The chain comes from s.hot when its last response finished in this process;
// else from local, a WebSocket connection's latest response, when previousID names it
// (a chain storage may not have: store: false); else the items of its checkpoint come
// decoded from s.contexts (after the first continuation that reads it) and the links
// after it from storage. With resume, a load also returns the prompt saved with the
// checkpoint. The caller must not change the items (the caches share them), only the
// slice. epoch is the chain epoch read with the request's key, nil when none was.
func (s *Service) chainHistory(ctx context.Context, owner, previousID string, local *LocalChain, epoch *uint64, resume bool) (chainRead, error) {
	var ch chainRead
	if s.db != nil {
		if epoch == nil {
			e := s.db.ChainEpoch()
			epoch = &e
		}
		ch = chainRead{epoch: *epoch, settled: true, depth: 1}
		if previousID == "" {
			return ch, nil
		}
		if c, ok := s.hot.get(owner, previousID, ch.epoch); ok {
			ch.items, ch.hot, ch.memo, ch.distance, ch.depth = c.history(), c, c.memo, c.distance+1, c.depth+1
			return ch, nil
		}
	}
	if previousID != "" && local != nil && local.id == previousID {
		// Not kept for the next turn (settled false): the connection keeps it, and
		// hot chains hold only what a load would give. Its distance and depth are
		// not known: storage finds them if the response is stored.
		return chainRead{items: local.history(), local: true, memo: local.memo, epoch: ch.epoch}, nil
	}
	if s.db == nil {
		if previousID != "" {
			return chainRead{}, hearth.PreviousResponseNotFound(previousID)
		}
		return chainRead{}, nil
	}
	var kept checkpointItems
	chain, err := s.db.LoadChainTail(ctx, owner, previousID, func(stamp string) bool {
		var ok bool
		kept, ok = s.contexts.Get(stamp)
		return ok
	})
	if errors.Is(err, storage.ErrNotFound) {
		return chainRead{}, hearth.PreviousResponseNotFound(previousID)
	}
	if err != nil {
		return chainRead{}, fmt.Errorf("load chain of %s: %w", previousID, err)
	}
	base := chain.Base
	if base == nil || !base.Omitted {
		kept = checkpointItems{settled: true}
	}
	ch.settled = kept.settled
	for _, l := range chain.Links {
		ch.settled = ch.settled && l.Status.Settled()
	}
	ch.distance = len(chain.Links) // up to the root
	ch.depth = kept.depth + len(chain.Links) + 1
	if base != nil {
		ch.distance = 1 // the links after the checkpoint, and the new one
		if !base.Omitted {
			for i, l := range chain.Links {
				if l.ID == base.ID {
					ch.distance += len(chain.Links) - i - 1
				}
			}
		} else {
			ch.distance += len(chain.Links)
		}
	}
	items := make([]hearth.Item, len(kept.items), len(kept.items)+len(chain.Items))
	copy(items, kept.items)
	weight := 0
	for i, it := range chain.Items {
		d, err := s.items.decode(it.JSON)
		if err != nil {
			return chainRead{}, fmt.Errorf("stored item %s of chain %s: %w", it.ID, previousID, err)
		}
		items = append(items, d)
		if base != nil && i < base.Items {
			weight += len(it.JSON)
		}
	}
	ch.items = items
	if base != nil && base.Stamp != "" && !base.Omitted {
		// The checkpoint's links are the chain's first, up to base.ID.
		settled, depth := true, 0
		for _, l := range chain.Links {
			settled = settled && l.Status.Settled()
			depth++
			if l.ID == base.ID {
				break
			}
		}
		s.contexts.Put(base.Stamp, checkpointItems{slices.Clone(items[:base.Items]), settled, depth}, weight)
		if resume {
			// Only a help: without it the prompt is rendered whole.
			if rec, err := s.db.CheckpointPrompt(ctx, base.ID, base.Stamp); err == nil {
				if p, ok := engine.ParseSavedPrompt(rec); ok {
					ch.saved = &p
				}
			}
		}
	}
	return ch, nil
}

// failedTerminal replaces the held terminal events with error + response.failed, for a
// response whose result could not be stored.
func failedTerminal(held []hearth.Event, final *hearth.Response, msg string) []hearth.Event {
	seq := 0
	if len(held) > 0 {
		seq = held[0].SequenceNumber
	}
	failed := final.Clone()
	failed.Status = hearth.StatusFailed
	failed.Error = &hearth.ResponseError{Code: hearth.CodeServerError, Message: msg}
	return []hearth.Event{
		{Type: hearth.EventError, SequenceNumber: seq, Error: hearth.ServerError(msg)},
		{Type: hearth.EventResponseFailed, SequenceNumber: seq + 1, Response: failed},
	}
}

// assignInputIDs gives input items without an id one, so that stored input items can be
// listed and paged by id.
func assignInputIDs(items []hearth.Item) {
	for i := range items {
		if items[i].ID != "" {
			continue
		}
		items[i].ID = hearth.NewID(hearth.InputIDPrefix(items[i].Type))
	}
}

func newStoredResponse(owner string, req *hearth.CreateResponseRequest, resp *hearth.Response) storage.NewResponse {
	reqJSON, _ := req.MarshalJSON() // json.Marshal's bytes, without its second pass
	return storage.NewResponse{
		ID: resp.ID, Owner: owner, Model: req.Model, Status: storage.StatusInProgress,
		Background: req.Background, PreviousResponseID: req.PreviousResponseID,
		Request: reqJSON, Input: storedItems(req.Input),
		CreatedAt: time.Unix(resp.CreatedAt, 0),
	}
}

func storedFinal(r *hearth.Response) storage.Final {
	// The response's own encoding, as json.Marshal gives it without its second pass.
	body, _ := r.MarshalJSON()
	f := storage.Final{Status: storage.Status(r.Status), Body: body, Output: storedItems(r.Output), CompletedAt: time.Now()}
	if r.Usage != nil {
		f.Usage = storage.Usage{
			InputTokens: int64(r.Usage.InputTokens), OutputTokens: int64(r.Usage.OutputTokens),
			CachedTokens:    int64(r.Usage.InputTokensDetails.CachedTokens),
			ReasoningTokens: int64(r.Usage.OutputTokensDetails.ReasoningTokens),
		}
	}
	if r.Error != nil {
		f.Error, _ = json.Marshal(r.Error)
	}
	return f
}

func storedItems(items []hearth.Item) []storage.Item {
	out := make([]storage.Item, len(items))
	for i, it := range items {
		// MarshalJSON's bytes are json.Marshal's, without its second pass over them.
		b, _ := it.MarshalJSON()
		out[i] = storage.Item{ID: it.ID, Type: it.Type, JSON: b}
	}
	return out
}
