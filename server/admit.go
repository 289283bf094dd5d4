package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/engine"
	"hearth/engine/pool"
	"hearth/internal/admission"
)

// errRequestTimeout is the cause of a request context ended by --request-timeout.
var errRequestTimeout = errors.New("request timeout")

// admitted is a request's place in admission and what is measured of it.
type admitted struct {
	s      *Server
	ticket *admission.Ticket
	// queued: the request had to wait when it arrived, so it was announced (and
	// stored) as queued.
	queued bool
	meta   *reqMeta
	model  string
	// placement is the runtime the response runs on (placement.go).
	placement *engine.Placement

	firstToken time.Time
	waitDone   bool
}

// admitAs asks admission for a slot of the request's model on the runtime its
// placement names (place; a zero placement: placed here). A refusal is a 429 whose
// Retry-After value it returns (queue full, or the key over its rate limit): the HTTP
// caller sets the header, a WebSocket error message carries it.
func (s *Server) admitAs(ctx context.Context, m *reqMeta, req *hearth.CreateResponseRequest, responseID string, at pool.Placed) (*admitted, string, error) {
	m.responseID = responseID
	if at.Placement == nil {
		at = s.place(ctx, "", req, "")
	}
	t, retry, err := s.enterAs(m, req.Model, at.Placement.Runtime())
	// Entered (or refused): admission counts it now, or not at all.
	at.Release()
	if err != nil {
		return nil, retry, err
	}
	return &admitted{s: s, ticket: t, queued: !t.Admitted(), meta: m, model: s.models.label(req.Model), placement: at.Placement}, "", nil
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
		m := &reqMeta{start: time.Now(), key: ingestionFairness, fairness: ingestionFairness, model: model, log: s.log}
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

// admit is admitAs for an HTTP request: a refusal's Retry-After goes in the header.
func (s *Server) admit(ctx context.Context, c *gin.Context, req *hearth.CreateResponseRequest, responseID string, at pool.Placed) (*admitted, error) {
	a, retry, err := s.admitAs(ctx, meta(c), req, responseID, at)
	if retry != "" {
		c.Header("Retry-After", retry)
	}
	return a, err
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
	fair := m.fairness
	if fair == "" {
		fair = m.key
	}
	t, err := s.admission.EnterOn(model, fair, runtime)
	var rej *admission.Rejected
	if errors.As(err, &rej) {
		s.metrics.rejected.WithLabelValues(s.models.label(model), rej.Reason).Inc()
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
	a.s.metrics.queueWait.WithLabelValues(a.model).Observe(a.ticket.Waited().Seconds())
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

// observe wraps a builder's emit so the first output is timed.
func (r *run) observe(next func(hearth.Event)) func(hearth.Event) {
	return func(e hearth.Event) {
		if a := r.adm; a != nil && a.firstToken.IsZero() {
			switch e.Type {
			case hearth.EventResponseCreated, hearth.EventResponseQueued, hearth.EventResponseInProgress,
				hearth.EventResponseCompleted, hearth.EventResponseIncomplete, hearth.EventResponseFailed, hearth.EventError:
			default:
				a.firstToken = time.Now()
				a.s.metrics.ttft.WithLabelValues(a.model, a.runtime()).Observe(a.firstToken.Sub(a.meta.start).Seconds())
				a.s.recent.FirstToken(a.model, a.firstToken.Sub(a.meta.start))
			}
		}
		if next != nil {
			next(e)
		}
	}
}

// settle adjusts the final response before it is stored: a response cut by
// --request-timeout says so instead of blaming the client.
func (r *run) settle(ctx context.Context, final *hearth.Response) {
	if final.Status != hearth.StatusIncomplete || !errors.Is(context.Cause(ctx), errRequestTimeout) {
		return
	}
	final.IncompleteDetails = &hearth.IncompleteDetails{Reason: IncompleteRequestTimeout}
	for i := range r.held {
		if r.held[i].Response != nil {
			r.held[i].Response = final.Clone()
		}
	}
}

// report counts and logs a finished response.
func (r *run) report(final *hearth.Response) {
	a := r.adm
	if a == nil {
		return
	}
	m := r.s.metrics
	key := a.meta.key
	rt := a.runtime()
	m.responses.WithLabelValues(a.model, final.Status, key, rt).Inc()
	attrs := []slog.Attr{
		slog.String("response_id", final.ID), slog.String("status", final.Status),
		slog.Duration("queue_wait", a.ticket.Waited()), slog.String("runtime", rt),
	}
	if r.kind != "" {
		attrs = append(attrs, slog.String("kind", r.kind))
	}
	if u := final.Usage; u != nil {
		m.tokensIn.WithLabelValues(a.model, key, rt).Add(float64(u.InputTokens))
		m.tokensOut.WithLabelValues(a.model, key, rt).Add(float64(u.OutputTokens))
		m.cached.WithLabelValues(a.model, key, rt).Add(float64(u.InputTokensDetails.CachedTokens))
		attrs = append(attrs, slog.Int("input_tokens", u.InputTokens), slog.Int("output_tokens", u.OutputTokens),
			slog.Int("cached_tokens", u.InputTokensDetails.CachedTokens))
		if !a.firstToken.IsZero() && u.OutputTokens > 1 {
			if d := time.Since(a.firstToken); d > 0 {
				m.tps.WithLabelValues(a.model, rt).Observe(float64(u.OutputTokens-1) / d.Seconds())
				r.s.recent.Speed(a.model, float64(u.OutputTokens-1)/d.Seconds())
			}
		}
	}
	if !a.firstToken.IsZero() {
		attrs = append(attrs, slog.Duration("ttft", a.firstToken.Sub(a.meta.start)))
	}
	if final.Status == hearth.StatusFailed && final.Error != nil {
		attrs = append(attrs, slog.String("error", final.Error.Message))
		if strings.HasPrefix(final.Error.Message, "The runtime failed") {
			r.s.runtimeFailed(final.Error.Message)
		}
	}
	if r.s.logContent {
		attrs = append(attrs, slog.String("input", jsonString(r.req.Input)), slog.String("output", outputText(final)))
	}
	a.meta.log.LogAttrs(context.Background(), slog.LevelInfo, "response", attrs...)
}

func outputText(r *hearth.Response) string {
	var s string
	for _, it := range r.Output {
		switch it.Type {
		case hearth.ItemMessage:
			s += it.Text(hearth.PartOutputText)
		case hearth.ItemFunctionCall:
			s += fmt.Sprintf("[call %s(%s)]", it.Name, it.Arguments)
		}
	}
	return s
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// retryAfter is a refusal's Retry-After header value: whole seconds, rounded up.
func retryAfter(rej *admission.Rejected) string {
	return strconv.Itoa(int((rej.RetryAfter + time.Second - 1) / time.Second))
}
