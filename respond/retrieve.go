package respond

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"hearth"
	"hearth/engine"
	"hearth/storage"
)

// Get loads a response the caller owns; a missing or foreign id is a 404.
func (s *Service) Get(ctx context.Context, owner, id string) (*storage.Response, error) {
	if s.db == nil {
		return nil, hearth.ResponseNotFound(id)
	}
	rec, err := s.db.GetResponse(ctx, owner, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, hearth.ResponseNotFound(id)
	}
	if err != nil {
		return nil, fmt.Errorf("load response %s: %w", id, err)
	}
	return rec, nil
}

// Replayer is where a replayed stream's events go (an SSE stream): Stored takes an
// event read back from a journal (JSON in hearth's names), Event one made again.
type Replayer interface {
	Sink
	EncodedSink
	// Begin starts the stream before its first event (a request error before that is
	// answered as JSON); follow: it may last, so its writes get a deadline. It may be
	// called more than once.
	Begin(follow bool)
}

// Replay streams the events of response rec (Get) as they were sent, with their
// sequence numbers: those after sequence number after (all of them with -1), live
// while the response runs in this process (journal.go), followed in the store while
// another process runs it, from its stored journal once it has finished (made again
// from the stored response when it has none). The error returned is one to answer the
// request with: none comes once the stream has opened, but for a stored response
// that does not decode.
func (s *Service) Replay(ctx context.Context, owner string, rec *storage.Response, after int, out Replayer) error {
	opened := false
	for {
		if j := s.liveJournal(rec.ID); j != nil {
			out.Begin(false)
			if j.follow(ctx, after, func(e storage.Event) { out.Stored(e.Type, e.Data) }) {
				out.Done()
			}
			return nil
		}
		if !rec.Status.InFlight() {
			break
		}
		// In flight without a journal here: another process runs it (or it has just
		// finished here). Follow its journal in the store until it ends; it may
		// follow for long: a client that stops reading must not hold it.
		out.Begin(true)
		opened = true
		var ok bool
		if after, rec, ok = s.followStored(ctx, owner, out, rec, after); !ok {
			return nil
		}
	}
	var resp hearth.Response
	if err := json.Unmarshal(rec.Body, &resp); err != nil {
		return fmt.Errorf("stored response %s: %w", rec.ID, err)
	}
	events, last, err := s.db.Journal(ctx, rec.ID, after)
	if err != nil {
		if !opened {
			return err
		}
		return nil
	}
	out.Begin(true)
	defer out.Done()
	if last == nil {
		// Stored before journals existed, or its journal was pruned: the events are
		// made again from the stored response, numbered as a live stream is.
		replay(&resp, s.HostedKinds(), func(e hearth.Event) {
			if e.SequenceNumber > after {
				out.Event(e)
			}
		})
		return nil
	}
	for _, e := range events {
		out.Stored(e.Type, e.Data)
	}
	if !isTerminal(last.Type) {
		// Cut short (hearth stopped between writes, or the final write failed): end
		// it as the stored response ended.
		for _, e := range terminalEvents(&resp, last.Seq+1) {
			if e.SequenceNumber > after {
				out.Event(e)
			}
		}
	}
	return nil
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

// Delete deletes a response the caller owns, and stops it where it runs here.
func (s *Service) Delete(ctx context.Context, owner, id string) error {
	if s.db == nil {
		return hearth.ResponseNotFound(id)
	}
	err := s.db.DeleteResponse(ctx, owner, id)
	if errors.Is(err, storage.ErrNotFound) {
		return hearth.ResponseNotFound(id)
	}
	if err != nil {
		return fmt.Errorf("delete response %s: %w", id, err)
	}
	s.cancelJob(id)
	return nil
}

// InputItems lists the input items of response id (Get first) with OpenAI's paging:
// after (an item id), limit, order.
func (s *Service) InputItems(ctx context.Context, owner, id, after string, limit int, order storage.Order) ([]storage.Item, bool, error) {
	items, more, err := s.db.ListInputItems(ctx, owner, id, after, limit, order)
	if errors.Is(err, storage.ErrInvalidCursor) {
		return nil, false, hearth.InvalidRequest("after", "invalid_value", "after is not an input item of this response.")
	}
	if err != nil {
		return nil, false, fmt.Errorf("list input items of %s: %w", id, err)
	}
	return items, more, nil
}

// Cancel cancels a background response the caller owns (only those can be cancelled,
// OpenAI's rule; cancelling a cancelled one returns it again) and returns it as stored
// then, with what it made before it stopped.
func (s *Service) Cancel(ctx context.Context, owner, id string) (*storage.Response, error) {
	rec, err := s.Get(ctx, owner, id)
	if err != nil {
		return nil, err
	}
	if !rec.Background {
		return nil, hearth.InvalidRequest("response_id", "invalid_value", "Only responses created with background=true can be cancelled.")
	}
	// Whoever runs it stores what it made once it hears of the cancel (changes.go).
	wake, stop := s.changes.waitJournal(rec.ID)
	defer stop()
	_, err = s.db.Cancel(ctx, owner, rec.ID)
	if errors.Is(err, storage.ErrFinished) {
		return nil, hearth.InvalidRequest("response_id", "invalid_value",
			fmt.Sprintf("Cannot cancel a response that has already finished (%s).", rec.Status))
	}
	if err != nil {
		return nil, fmt.Errorf("cancel %s: %w", rec.ID, err)
	}
	if s.cancelJob(rec.ID) {
		// Wait briefly for the job to store its partial output, so the answer shows it.
		deadline := time.Now().Add(cancelSettle)
		for time.Now().Before(deadline) && s.isRunning(rec.ID) {
			time.Sleep(20 * time.Millisecond)
		}
	} else if rec.Status.InFlight() {
		// Another process runs it: it hears of the cancel from the store.
		s.awaitCancelled(ctx, rec.ID, wake)
	}
	return s.Get(ctx, owner, id)
}

func (s *Service) isRunning(id string) bool {
	s.jobs.mu.Lock()
	defer s.jobs.mu.Unlock()
	_, ok := s.jobs.running[id]
	return ok
}

func hostedKindOf(kinds []engine.HostedKind, itemType string) (engine.HostedKind, bool) {
	for _, k := range kinds {
		if k.Owns(itemType) {
			return k, true
		}
	}
	return nil, false
}

// HostedKindOf is the engine's hosted tool kind that owns items of itemType.
func (s *Service) HostedKindOf(itemType string) (engine.HostedKind, bool) {
	return hostedKindOf(s.HostedKinds(), itemType)
}
