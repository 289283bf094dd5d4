package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/engine"
	"hearth/storage"
)

// readRequest reads a create-shaped body, decodes it with decode and applies the
// limits. On failure it has answered with the error and returns false.
func (s *Server) readRequest(c *gin.Context, decode func([]byte) (*hearth.CreateResponseRequest, []string, error)) (*hearth.CreateResponseRequest, bool) {
	body, err := readBody(c.Request.Body)
	if err != nil {
		s.writeError(c, err)
		return nil, false
	}
	req, ignored, err := decode(body)
	if err != nil {
		s.writeError(c, err)
		return nil, false
	}
	if err := s.accept(c, req); err != nil {
		s.writeError(c, err)
		return nil, false
	}
	if len(ignored) > 0 {
		// Clients add fields faster than servers learn them; say what was not used
		// rather than failing or pretending.
		c.Header("x-hearth-ignored", strings.Join(ignored, ", "))
		s.log.Warn("ignored request fields", "fields", ignored, "model", req.Model)
	}
	return req, true
}

// createResponse serves POST /v1/responses: decode and validate, load the chain behind
// previous_response_id, prepare the generation (every request problem is still an HTTP
// error then), store the response as in progress, generate, store the result, and only
// then send the terminal event.
func (s *Server) createResponse(c *gin.Context) {
	req, ok := s.readRequest(c, hearth.DecodeCreateRequest)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	who := owner(c)

	history, err := s.history(ctx, who, req.PreviousResponseID)
	if err != nil {
		s.writeError(c, err)
		return
	}
	turn, err := s.beginConversationTurn(ctx, who, req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	defer turn.abandon()
	history = append(history, turn.history()...)
	job, err := s.engine.Prepare(ctx, req, history)
	if err != nil {
		s.writeError(c, err)
		return
	}

	r, resp, retry, err := s.start(ctx, meta(c), who, req, job)
	if retry != "" {
		c.Header("Retry-After", retry)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	r.conv = turn.handOff()
	adm := r.adm
	switch {
	case req.Background && !req.Stream:
		// The response runs without the client: it answers at once with the queued
		// response, and the client polls or cancels by id.
		queued := resp.Clone()
		go r.execute(s.background(resp.ID), hearth.NewBuilder(resp, r.observe(nil)), nil)
		c.JSON(http.StatusOK, queued)
	case req.Stream:
		sse := newSSEWriter(c.Writer, s.heartbeat, clientDialect(c))
		runCtx := ctx
		if req.Background {
			// A background stream outlives its client: a disconnect stops the
			// stream, not the response.
			runCtx = s.background(resp.ID)
		}
		b := hearth.NewBuilder(resp, r.observe(r.emitTo(sse)))
		if req.Background || adm.queued {
			// Waiting for a slot: the client sees response.queued, then
			// response.in_progress once the generation starts.
			b.Queue()
		}
		r.execute(runCtx, b, sse)
	default:
		b := hearth.NewBuilder(resp, r.observe(nil))
		final, storeErr := r.execute(ctx, b, nil)
		if storeErr != nil {
			s.writeError(c, storeErr)
			return
		}
		if final.Status == hearth.StatusFailed && final.Error != nil {
			s.writeError(c, &hearth.Error{Status: http.StatusInternalServerError, Type: hearth.ErrTypeServer,
				Code: final.Error.Code, Message: final.Error.Message})
			return
		}
		c.JSON(http.StatusOK, final)
	}
}

// start turns a prepared request into a run: the response and its id, a place in
// admission (a slot now, or the queue; a refusal is a 429 whose Retry-After value is
// returned), and the stored record (queued or in progress). HTTP and WebSocket creates
// share it.
func (s *Server) start(ctx context.Context, m *reqMeta, who string, req *hearth.CreateResponseRequest, job *engine.Job) (*run, *hearth.Response, string, error) {
	resp := hearth.NewResponse(hearth.NewID(hearth.PrefixResponse), req, time.Now())
	assignInputIDs(req.Input)
	store := req.StoreEnabled() && s.db != nil
	if req.Background && !store {
		return nil, nil, "", hearth.InvalidRequest("background", "invalid_value",
			"Background responses must be stored: background requires store to be true.")
	}
	// Admission last, once the request is known to be good: 429 beyond the queue bound
	// or the key's rate limit; otherwise a slot now, or a place in the queue.
	adm, retry, err := s.admitAs(m, req, resp.ID)
	if err != nil {
		return nil, nil, retry, err
	}
	if store {
		rec := newStoredResponse(who, req, resp)
		if req.Background || adm.queued {
			rec.Status = storage.StatusQueued
			resp.Status = hearth.StatusQueued
			rec.Body, _ = json.Marshal(resp)
		}
		if err := s.db.CreateResponse(ctx, rec); err != nil {
			adm.done()
			return nil, nil, "", fmt.Errorf("store new response: %w", err)
		}
	}
	return &run{s: s, job: job, req: req, store: store, adm: adm}, resp, "", nil
}

// run carries one response from generation to storage.
type run struct {
	s     *Server
	job   *engine.Job
	req   *hearth.CreateResponseRequest
	store bool
	// held are the terminal events, sent only once the response is stored, so a
	// client that saw a response finish can always retrieve it.
	held []hearth.Event
	// adm is the response's place in admission (admit.go).
	adm *admitted
	// conv is the response's conversation (conversations.go), nil when it has none.
	conv *conversationTurn
}

// eventSink is where a streamed response's events go: an SSE stream (sse.go) or a
// WebSocket connection (socket.go). The run, storage and budget logic is the same for
// both; only the framing differs.
type eventSink interface {
	Event(hearth.Event)
	// Done ends one response's events: SSE sends data: [DONE]; a socket stays open
	// for the connection's next response.
	Done()
}

func (r *run) emitTo(sink eventSink) func(hearth.Event) {
	return func(e hearth.Event) {
		switch e.Type {
		case hearth.EventResponseCompleted, hearth.EventResponseIncomplete, hearth.EventResponseFailed, hearth.EventError:
			r.held = append(r.held, e)
		default:
			sink.Event(e)
		}
	}
}

// finish sends the held terminal events and ends the response's events on sink. It is
// apart from execute so FuzzWebSocketFrame can drive a response's whole path to the
// client (emitTo, then finish) over a real connection without a runtime.
func (r *run) finish(sink eventSink) {
	for _, e := range r.held {
		sink.Event(e)
	}
	sink.Done()
}

// execute generates the response, stores the result and, when streaming, sends the
// terminal events and ends the stream. It returns the final response and the error of
// storing it, if any.
func (r *run) execute(ctx context.Context, b *hearth.Builder, sink eventSink) (*hearth.Response, error) {
	s := r.s
	id := b.Response().ID
	defer s.release(id)
	defer r.adm.done()
	defer r.conv.release()
	if err := r.adm.wait(ctx); err != nil {
		// The request left the queue before it ran: its client went away, it was
		// cancelled or timed out, or hearth is stopping.
		b.Incomplete(engine.IncompleteClientDisconnected, hearth.Usage{})
	} else {
		if r.store && (r.req.Background || r.adm.queued) {
			if err := s.db.UpdateStatus(ctx, id, storage.StatusInProgress); err != nil {
				s.log.Warn("mark queued response in progress", "id", id, "error", err)
			}
		}
		if err := r.job.Run(ctx, b); err != nil {
			s.log.Warn("response ended early", "id", id, "model", r.req.Model, "error", err)
		}
		r.adm.done() // the next generation may start while this one is stored
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
	if r.store {
		// The client may be gone; the record must still be finished.
		storeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		storeErr = s.db.CompleteResponse(storeCtx, id, storedFinal(final))
		cancel()
		if storeErr != nil {
			s.log.Error("store finished response", "id", id, "error", storeErr)
			storeErr = fmt.Errorf("store finished response: %w", storeErr)
			r.held = failedTerminal(r.held, final, "The response could not be stored.")
			// The client is told the response failed; the row must say so too once
			// the database takes writes again, or a poller would wait forever.
			go s.settleLater(id, failedCopy(final, "The response could not be stored."))
		}
	}
	if sink != nil {
		r.finish(sink)
	}
	r.report(final)
	return final, storeErr
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
func (s *Server) settleLater(id string, final *hearth.Response) {
	for range settleAttempts {
		select {
		case <-s.jobs.root.Done():
			return
		case <-time.After(settleEvery):
		}
		ctx, cancel := context.WithTimeout(s.jobs.root, 30*time.Second)
		err := s.db.CompleteResponse(ctx, id, storedFinal(final))
		cancel()
		if err == nil {
			s.log.Info("stored the failed state of a response after an earlier write failed", "id", id)
			return
		}
	}
	s.log.Error("gave up storing the final state of a response; the next start marks it failed", "id", id)
}

// readBody reads a request body bounded by http.MaxBytesReader; too large is a 413,
// anything else unreadable a 400.
func readBody(r io.Reader) ([]byte, error) {
	body, err := io.ReadAll(r)
	if err == nil {
		return body, nil
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, &hearth.Error{Status: http.StatusRequestEntityTooLarge, Type: hearth.ErrTypeInvalidRequest,
			Code: "request_too_large", Message: fmt.Sprintf("The request body exceeds %d bytes.", tooLarge.Limit)}
	}
	return nil, hearth.InvalidRequest("", "invalid_body", "Could not read the request body: "+err.Error())
}

// history loads the items behind previous_response_id: every response of the chain's
// input then output, oldest first. Instructions are not inherited (OpenAI's rule).
func (s *Server) history(ctx context.Context, owner, previousID string) ([]hearth.Item, error) {
	if previousID == "" {
		return nil, nil
	}
	if s.db == nil {
		return nil, hearth.PreviousResponseNotFound(previousID)
	}
	chain, err := s.db.LoadChain(ctx, owner, previousID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, hearth.PreviousResponseNotFound(previousID)
	}
	if err != nil {
		return nil, fmt.Errorf("load chain of %s: %w", previousID, err)
	}
	items := make([]hearth.Item, len(chain.Items))
	for i, it := range chain.Items {
		if items[i], err = s.items.decode(it.JSON); err != nil {
			return nil, fmt.Errorf("stored item %s of chain %s: %w", it.ID, previousID, err)
		}
	}
	return items, nil
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
		prefix := hearth.PrefixMessage
		switch items[i].Type {
		case hearth.ItemFunctionCall:
			prefix = hearth.PrefixFunctionCall
		case hearth.ItemFunctionCallOutput, hearth.ItemCustomToolCallOutput:
			prefix = hearth.PrefixFunctionOutput
		case hearth.ItemReasoning:
			prefix = hearth.PrefixReasoning
		case hearth.ItemCustomToolCall:
			prefix = hearth.PrefixCustomToolCall
		}
		items[i].ID = hearth.NewID(prefix)
	}
}

func newStoredResponse(owner string, req *hearth.CreateResponseRequest, resp *hearth.Response) storage.NewResponse {
	reqJSON, _ := json.Marshal(req)
	body, _ := json.Marshal(resp)
	return storage.NewResponse{
		ID: resp.ID, Owner: owner, Model: req.Model, Status: storage.StatusInProgress,
		Background: req.Background, PreviousResponseID: req.PreviousResponseID,
		Request: reqJSON, Body: body, Input: storedItems(req.Input),
		CreatedAt: time.Unix(resp.CreatedAt, 0),
	}
}

func storedFinal(r *hearth.Response) storage.Final {
	body, _ := json.Marshal(r)
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
		b, _ := json.Marshal(it)
		out[i] = storage.Item{ID: it.ID, Type: it.Type, JSON: b}
	}
	return out
}
