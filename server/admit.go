package server

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/engine"
	"hearth/engine/pool"
	"hearth/internal/admission"
)

// admitted is a request's place in admission and what is measured of it.
type admitted struct {
	s      *Server
	ticket *admission.Ticket
	// queued: the request had to wait when it arrived, so it was announced (and
	// stored) as queued.
	queued bool
	model  string
	// placement is the runtime the response runs on (placement.go).
	placement *engine.Placement
}

// admitAs asks admission for a slot of the request's model on the runtime its
// placement names (place; a zero placement: placed here). A refusal is a 429 whose
// Retry-After value it returns (queue full, or the key over its rate limit): the HTTP
// caller sets the header, a WebSocket error message carries it.
func (s *Server) admitAs(ctx context.Context, m *reqMeta, req *hearth.CreateResponseRequest, responseID string, at pool.Placed) (*admitted, string, error) {
	m.ResponseID = responseID
	if at.Placement == nil {
		at = s.place(ctx, "", req, "")
	}
	t, retry, err := s.enterAs(m, req.Model, at.Placement.Runtime())
	// Entered (or refused): admission counts it now, or not at all.
	at.Release()
	if err != nil {
		return nil, retry, err
	}
	return &admitted{s: s, ticket: t, queued: !t.Admitted(), model: s.models.Label(req.Model), placement: at.Placement}, "", nil
}

// ingestionFairness is the identity vector store ingestion queues under in
// admission: one party among the keys, so a large ingest gets its fair share of an
// embedding model's slots and no more.
const ingestionFairness = "vector-store-ingestion"

// admitIngestion waits for a slot of model for one embedding call of vector store
// ingestion and returns the embedder to make the call with (the runtime it was placed
// on) and the slot's release. A refusal (a full queue, a rate limit) is waited out and
// tried again after its Retry-After, while ctx lasts: the file stays in_progress
// meanwhile.
func (s *Server) admitIngestion(ctx context.Context, model string) (engine.Embedder, func(), error) {
	req := &hearth.CreateResponseRequest{Model: model}
	for {
		m := &reqMeta{Start: time.Now(), Key: ingestionFairness, Fairness: ingestionFairness, Model: model, Log: s.log}
		adm, retry, err := s.admitAs(ctx, m, req, "", s.place(ctx, "", req, ""))
		if err == nil {
			if err := adm.wait(ctx); err != nil {
				adm.done()
				return nil, nil, err
			}
			return adm.embedder(), adm.done, nil
		}
		secs, perr := strconv.Atoi(retry)
		if perr != nil {
			return nil, nil, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(time.Duration(max(secs, 1)) * time.Second):
		}
	}
}

// enter queues the caller for a slot of model, fair across keys (or client addresses
// without auth). A refusal is a 429 with Retry-After, counted in the metrics.
func (s *Server) enter(c *gin.Context, m *reqMeta, model, runtime string) (*admission.Ticket, error) {
	t, retry, err := s.enterAs(m, model, runtime)
	if retry != "" {
		c.Header("Retry-After", retry)
	}
	return t, err
}

// enterAs is enter returning the Retry-After value of a refusal.
func (s *Server) enterAs(m *reqMeta, model, runtime string) (*admission.Ticket, string, error) {
	fair := m.Fairness
	if fair == "" {
		fair = m.Key
	}
	t, err := s.admission.EnterOn(model, fair, runtime)
	var rej *admission.Rejected
	if errors.As(err, &rej) {
		s.metrics.Rejected.WithLabelValues(s.models.Label(model), rej.Reason).Inc()
		return nil, retryAfter(rej), hearth.TooManyRequests(rej.Error())
	}
	return t, "", err
}

// wait blocks until the response may generate.
func (a *admitted) wait(ctx context.Context) error {
	if a == nil {
		return nil
	}
	err := a.ticket.Wait(ctx)
	a.s.metrics.QueueWait.WithLabelValues(a.model).Observe(a.ticket.Waited().Seconds())
	if rt := a.ticket.Runtime(); rt != a.placement.Runtime() {
		// Its runtime went down while it waited: admission moved it.
		a.placement.Move(rt)
	}
	return err
}

// runtime is the label of the runtime the response runs on ("" without admission).
func (a *admitted) runtime() string {
	if a == nil {
		return ""
	}
	return a.placement.Runtime()
}

// embedder is the runtimes' embedder on the runtime the request was placed on.
func (a *admitted) embedder() engine.Embedder {
	return a.s.pool.On(a.placement).(engine.Embedder)
}

// done frees the slot; safe to call more than once.
func (a *admitted) done() {
	if a != nil {
		a.ticket.Done()
	}
}

// Wait, Queued, Waited, Runtime and Done make admitted the core's
// respond.Admission.

func (a *admitted) Wait(ctx context.Context) error             { return a.wait(ctx) }
func (a *admitted) Queued() bool                               { return a.queued }
func (a *admitted) Waited() time.Duration                      { return a.ticket.Waited() }
func (a *admitted) Runtime() string                            { return a.runtime() }
func (a *admitted) Done()                                      { a.done() }

// retryAfter is a refusal's Retry-After header value: whole seconds, rounded up.
func retryAfter(rej *admission.Rejected) string {
	return strconv.Itoa(int((rej.RetryAfter + time.Second - 1) / time.Second))
}
