package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/engine"
	"hearth/storage"
)

// stored loads a response the caller owns; a missing or foreign id is a 404.
func (s *Server) stored(c *gin.Context) (*storage.Response, bool) {
	id := c.Param("id")
	if s.db == nil {
		s.writeError(c, hearth.ResponseNotFound(id))
		return nil, false
	}
	rec, err := s.db.GetResponse(c.Request.Context(), owner(c), id)
	if errors.Is(err, storage.ErrNotFound) {
		s.writeError(c, hearth.ResponseNotFound(id))
		return nil, false
	}
	if err != nil {
		s.writeError(c, fmt.Errorf("load response %s: %w", id, err))
		return nil, false
	}
	return rec, true
}

// getResponse serves GET /v1/responses/{id}; with ?stream=true it streams the
// response's events as they were sent, with their sequence numbers: those after
// starting_after (all of them without it), live while the response runs in this
// process (journal.go), from its stored journal once it has finished.
func (s *Server) getResponse(c *gin.Context) {
	after := -1
	if v, ok := c.GetQuery("starting_after"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.writeError(c, hearth.InvalidRequest("starting_after", "invalid_value",
				"starting_after must be a non-negative integer: the sequence number of the last event the client has."))
			return
		}
		after = n
	}
	rec, ok := s.stored(c)
	if !ok {
		return
	}
	if stream, _ := strconv.ParseBool(c.Query("stream")); !stream {
		c.Data(http.StatusOK, "application/json", rec.Body)
		return
	}
	var sse *sseWriter
	for {
		if j := s.liveJournal(rec.ID); j != nil {
			if sse == nil {
				sse = newSSEWriter(c.Writer, s.heartbeat, clientDialect(c))
			}
			if j.follow(c.Request.Context(), after, func(e storage.Event) { sse.Stored(e.Type, e.Data) }) {
				sse.Done()
			}
			return
		}
		if !rec.Status.InFlight() {
			break
		}
		// In flight without a journal here: another process runs it (or it has just
		// finished here). Follow its journal in the store until it ends.
		if sse == nil {
			sse = newSSEWriter(c.Writer, s.heartbeat, clientDialect(c))
			defer sse.Close()
			// It may follow for long: a client that stops reading must not hold it.
			sse.bound(c.Request.Context(), s.writeTimeout, false)
		}
		if after, rec, ok = s.followStored(c.Request.Context(), owner(c), sse, rec, after); !ok {
			return
		}
	}
	var resp hearth.Response
	if err := json.Unmarshal(rec.Body, &resp); err != nil {
		s.writeError(c, fmt.Errorf("stored response %s: %w", rec.ID, err))
		return
	}
	events, last, err := s.db.Journal(c.Request.Context(), rec.ID, after)
	if err != nil {
		if sse == nil {
			s.writeError(c, err)
		}
		return
	}
	if sse == nil {
		sse = newSSEWriter(c.Writer, s.heartbeat, clientDialect(c))
		defer sse.Close()
	}
	sse.bound(c.Request.Context(), s.writeTimeout, false)
	defer sse.Done()
	if last == nil {
		// Stored before journals existed, or its journal was pruned: the events are
		// made again from the stored response, numbered as a live stream is.
		replay(&resp, s.hostedKinds(), func(e hearth.Event) {
			if e.SequenceNumber > after {
				sse.Event(e)
			}
		})
		return
	}
	for _, e := range events {
		sse.Stored(e.Type, e.Data)
	}
	if !isTerminal(last.Type) {
		// Cut short (hearth stopped between writes, or the final write failed): end
		// it as the stored response ended.
		for _, e := range terminalEvents(&resp, last.Seq+1) {
			if e.SequenceNumber > after {
				sse.Event(e)
			}
		}
	}
}

// replay emits the events of a finished response through a Builder, so a replayed
// stream has exactly the shape of a live one (each item's text as one delta) and ends
// with the stored output, ids included. The items of hosted tool kinds are the kinds'
// to report (engine.HostedReemitter).
func replay(resp *hearth.Response, kinds []engine.HostedKind, emit func(hearth.Event)) {
	skeleton := resp.Clone()
	skeleton.Output, skeleton.Usage, skeleton.Error, skeleton.IncompleteDetails, skeleton.CompletedAt = nil, nil, nil, nil, nil
	skeleton.Status = hearth.StatusInProgress
	b := hearth.NewBuilder(skeleton, emit)
	b.Start()
	for _, it := range resp.Output {
		if k, ok := hostedKindOf(kinds, it.Type); ok {
			if r, ok := k.(engine.HostedReemitter); ok {
				r.Reemit(b, it)
				continue
			}
		}
		// The stored ids, not new ones: a client that resumes from a replay answers
		// its calls by call_id.
		if b.StartItemFrom(it) != nil {
			continue
		}
		switch it.Type {
		case hearth.ItemReasoning:
			b.ReasoningDelta(it.Text(hearth.PartReasoningText))
			if it.EncryptedContent != "" {
				b.SetEncryptedContent(it.EncryptedContent)
			}
		case hearth.ItemMessage:
			for _, p := range it.Content {
				if p.Type == hearth.PartRefusal {
					b.RefusalDelta(p.Refusal)
				} else {
					b.TextDelta(p.Text)
				}
			}
		case hearth.ItemFunctionCall:
			b.ArgumentsDelta(it.Arguments)
		case hearth.ItemCustomToolCall:
			b.ArgumentsDelta(it.Input)
		}
		status := it.Status
		if status != hearth.StatusIncomplete {
			status = hearth.StatusCompleted
		}
		b.EndItem(status)
	}
	usage := hearth.Usage{}
	if resp.Usage != nil {
		usage = *resp.Usage
	}
	switch resp.Status {
	case hearth.StatusCompleted:
		b.Complete(usage)
	case hearth.StatusIncomplete:
		reason := ""
		if resp.IncompleteDetails != nil {
			reason = resp.IncompleteDetails.Reason
		}
		b.Incomplete(reason, usage)
	default:
		msg := "The response did not complete (" + resp.Status + ")."
		code := hearth.CodeServerError
		if resp.Error != nil {
			msg, code = resp.Error.Message, resp.Error.Code
		}
		b.Fail(&hearth.Error{Status: 500, Type: hearth.ErrTypeServer, Code: code, Message: msg}, &usage)
	}
}

func (s *Server) deleteResponse(c *gin.Context) {
	id := c.Param("id")
	if s.db == nil {
		s.writeError(c, hearth.ResponseNotFound(id))
		return
	}
	err := s.db.DeleteResponse(c.Request.Context(), owner(c), id)
	if errors.Is(err, storage.ErrNotFound) {
		s.writeError(c, hearth.ResponseNotFound(id))
		return
	}
	if err != nil {
		s.writeError(c, fmt.Errorf("delete response %s: %w", id, err))
		return
	}
	s.cancelJob(id)
	c.JSON(http.StatusOK, gin.H{"id": id, "object": "response", "deleted": true})
}

// listInputItems serves GET /v1/responses/{id}/input_items with OpenAI's paging:
// after (an item id), limit (1-100, default 20), order (asc or desc, default desc).
func (s *Server) listInputItems(c *gin.Context) {
	rec, ok := s.stored(c)
	if !ok {
		return
	}
	limit := storage.DefaultListLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > storage.MaxListLimit {
			s.writeError(c, hearth.InvalidRequest("limit", "invalid_value",
				fmt.Sprintf("limit must be an integer from 1 to %d.", storage.MaxListLimit)))
			return
		}
		limit = n
	}
	order := storage.Desc
	switch v := c.Query("order"); v {
	case "", "desc":
	case "asc":
		order = storage.Asc
	default:
		s.writeError(c, hearth.InvalidRequest("order", "invalid_value", "order must be 'asc' or 'desc'."))
		return
	}
	items, more, err := s.db.ListInputItems(c.Request.Context(), owner(c), rec.ID, c.Query("after"), limit, order)
	if errors.Is(err, storage.ErrInvalidCursor) {
		s.writeError(c, hearth.InvalidRequest("after", "invalid_value", "after is not an input item of this response."))
		return
	}
	if err != nil {
		s.writeError(c, fmt.Errorf("list input items of %s: %w", rec.ID, err))
		return
	}
	data := make([]json.RawMessage, len(items))
	var first, last any
	for i, it := range items {
		data[i] = it.JSON
	}
	if len(items) > 0 {
		first, last = items[0].ID, items[len(items)-1].ID
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": more})
}

// cancelResponse serves POST /v1/responses/{id}/cancel. Only background responses can
// be cancelled (OpenAI's rule); cancelling a cancelled one returns it again.
func (s *Server) cancelResponse(c *gin.Context) {
	rec, ok := s.stored(c)
	if !ok {
		return
	}
	if !rec.Background {
		s.writeError(c, hearth.InvalidRequest("response_id", "invalid_value", "Only responses created with background=true can be cancelled."))
		return
	}
	// Whoever runs it stores what it made once it hears of the cancel (changes.go).
	wake, stop := s.changes.waitJournal(rec.ID)
	defer stop()
	_, err := s.db.Cancel(c.Request.Context(), owner(c), rec.ID)
	if errors.Is(err, storage.ErrFinished) {
		s.writeError(c, hearth.InvalidRequest("response_id", "invalid_value",
			fmt.Sprintf("Cannot cancel a response that has already finished (%s).", rec.Status)))
		return
	}
	if err != nil {
		s.writeError(c, fmt.Errorf("cancel %s: %w", rec.ID, err))
		return
	}
	if s.cancelJob(rec.ID) {
		// Wait briefly for the job to store its partial output, so the answer shows it.
		deadline := time.Now().Add(cancelSettle)
		for time.Now().Before(deadline) && s.isRunning(rec.ID) {
			time.Sleep(20 * time.Millisecond)
		}
	} else if rec.Status.InFlight() {
		// Another process runs it: it hears of the cancel from the store.
		s.awaitCancelled(c.Request.Context(), rec.ID, wake)
	}
	rec, ok = s.stored(c)
	if !ok {
		return
	}
	c.Data(http.StatusOK, "application/json", rec.Body)
}

func (s *Server) isRunning(id string) bool {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	_, ok := s.jobs.running[id]
	return ok
}

// hostedKinds are the engine's hosted tool kinds.
func (s *Server) hostedKinds() []engine.HostedKind {
	if s.engine == nil {
		return nil
	}
	return s.engine.HostedKinds()
}

func hostedKindOf(kinds []engine.HostedKind, itemType string) (engine.HostedKind, bool) {
	for _, k := range kinds {
		if k.Owns(itemType) {
			return k, true
		}
	}
	return nil, false
}
