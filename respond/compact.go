package respond

import (
	"context"
	"errors"
	"net/http"
	"time"

	"hearth"
	"hearth/engine"
)

// Compacted is the answer of a compaction.
type Compacted struct {
	// Response is the compacted window; nil on error.
	Response *hearth.CompactResponse
	// Fallback: the model wrote no summary, so the compaction item carries the
	// conversation's latest items instead (engine.FallbackSummary).
	Fallback bool
	// Runtime is where it ran ("" when it was not admitted); Retry the Retry-After
	// value of an admission refusal.
	Runtime, Retry string
}

// Compact serves a compaction (POST /v1/responses/compact): the prologue of every
// response (prepare: the chain behind previous_response_id, item references,
// placement, and the summarising generation; every request problem is still an error
// returned then), a slot of the model like any response, the generation, and the
// compacted window. Nothing is stored: the window belongs to the client, which sends
// it as input from then on.
func (s *Service) Compact(ctx context.Context, in *Request) (Compacted, error) {
	req := in.Body
	p, err := s.prepare(ctx, in, true)
	if err != nil {
		return Compacted{}, err
	}
	defer p.close()
	ctx = p.ctx
	id := hearth.NewID(hearth.PrefixResponse)
	adm, retry, err := s.admitter.Admit(ctx, in.Meta, req, id, p.place)
	if err != nil {
		return Compacted{Retry: retry}, err
	}
	r := &run{s: s, req: req, adm: adm, meta: in.Meta, kind: "compaction"}
	out, err := r.compact(ctx, id, p.compaction)
	res := Compacted{Response: out, Runtime: adm.Runtime()}
	if err != nil {
		return res, err
	}
	res.Fallback = p.compaction.Fallback
	return res, nil
}

// compact runs a prepared compaction as execute runs a response: wait for a slot of
// the model, generate, free the slot, and report it (metrics and the log line) like
// any response, tokens to the key included. Its answer is one object and nothing is
// stored (the window belongs to the client), so there are no events to journal.
func (r *run) compact(ctx context.Context, id string, cp *engine.Compaction) (*hearth.CompactResponse, error) {
	defer r.adm.Done()
	created := time.Now()
	summary := &hearth.Response{ID: id, Object: "response", Model: r.req.Model, Status: hearth.StatusCompleted}
	if err := r.adm.Wait(ctx); err != nil {
		// The client left, or the request timed out, while queued.
		summary.Status = hearth.StatusIncomplete
		r.report(summary)
		return nil, ctxError(ctx)
	}
	cp.Observe = r.observe(nil)
	output, usage, err := cp.Run(ctx)
	r.adm.Done()
	if usage.TotalTokens == 0 {
		usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	}
	summary.Usage = &usage
	if err != nil {
		summary.Status = hearth.StatusFailed
		if ctx.Err() != nil {
			err = ctxError(ctx)
			summary.Status = hearth.StatusIncomplete
		} else if he := APIError(r.meta.Log, err); he != nil {
			err = he
			summary.Error = &hearth.ResponseError{Code: he.Code, Message: he.Message}
		}
		r.report(summary)
		return nil, err
	}
	summary.Output = output
	r.report(summary)
	return &hearth.CompactResponse{
		ID: id, Object: hearth.ObjectCompaction, CreatedAt: created.Unix(), Output: output, Usage: usage,
	}, nil
}

// ctxError is the error for a compaction whose request context ended: past
// --request-timeout a 504 that says so; otherwise the client went away and what is
// written no longer matters.
func ctxError(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), ErrRequestTimeout) {
		return &hearth.Error{Status: http.StatusGatewayTimeout, Type: hearth.ErrTypeServer, Code: IncompleteRequestTimeout,
			Message: "The compaction did not finish within the server's request timeout."}
	}
	return &hearth.Error{Status: 499, Type: hearth.ErrTypeInvalidRequest, Code: "client_disconnected",
		Message: "The client closed the request before the compaction finished."}
}
