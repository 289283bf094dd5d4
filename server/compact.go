package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/engine"
)

// HeaderCompactionFallback is "true" on a /v1/responses/compact answer whose model
// wrote no summary, so that its compaction item carries the conversation's latest
// items instead (engine.FallbackSummary).
const HeaderCompactionFallback = "x-hearth-compaction-fallback"

// compactResponse serves POST /v1/responses/compact: decode and validate as a create
// request, run the prologue (prepare: the chain behind previous_response_id, item
// references, placement, and the summarising generation; every request problem is
// still a 4xx then), wait for a slot of the model
// like any response, generate, and answer with the compacted window. Nothing is stored:
// the window belongs to the client, which sends it as input from then on.
func (s *Server) compactResponse(c *gin.Context) {
	req, ok := s.readRequest(c, hearth.DecodeCompactRequest)
	if !ok {
		return
	}
	// The prologue of every response (prologue.go), for a summarising generation.
	p, err := s.prepare(c.Request.Context(), intake{meta: meta(c), who: owner(c), epoch: epochOf(c), compaction: true}, req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	defer p.close()
	ctx := p.ctx
	id := hearth.NewID(hearth.PrefixResponse)
	adm, err := s.admit(ctx, c, req, id, p.place)
	if err != nil {
		s.writeError(c, err)
		return
	}
	r := &run{s: s, req: req, adm: adm, kind: "compaction"}
	out, err := r.compact(ctx, id, p.compaction)
	c.Header(HeaderRuntime, adm.runtime())
	if err != nil {
		s.writeError(c, err)
		return
	}
	if p.compaction.Fallback {
		// The model wrote no summary: the item carries the latest items instead
		// (engine.FallbackSummary), and the client may want to know.
		c.Header(HeaderCompactionFallback, "true")
	}
	c.JSON(http.StatusOK, out)
}

// compact runs a prepared compaction as execute runs a response: wait for a slot of
// the model, generate, free the slot, and report it (metrics and the log line) like
// any response, tokens to the key included. Its answer is one object and nothing is
// stored (the window belongs to the client), so there are no events to journal.
func (r *run) compact(ctx context.Context, id string, cp *engine.Compaction) (*hearth.CompactResponse, error) {
	defer r.adm.done()
	created := time.Now()
	summary := &hearth.Response{ID: id, Object: "response", Model: r.req.Model, Status: hearth.StatusCompleted}
	if err := r.adm.wait(ctx); err != nil {
		// The client left, or the request timed out, while queued.
		summary.Status = hearth.StatusIncomplete
		r.report(summary)
		return nil, ctxError(ctx)
	}
	cp.Observe = r.observe(nil)
	output, usage, err := cp.Run(ctx)
	r.adm.done()
	if usage.TotalTokens == 0 {
		usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	}
	summary.Usage = &usage
	if err != nil {
		summary.Status = hearth.StatusFailed
		if ctx.Err() != nil {
			err = ctxError(ctx)
			summary.Status = hearth.StatusIncomplete
		} else if he := apiError(r.adm.meta.log, err); he != nil {
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
	if errors.Is(context.Cause(ctx), errRequestTimeout) {
		return &hearth.Error{Status: http.StatusGatewayTimeout, Type: hearth.ErrTypeServer, Code: IncompleteRequestTimeout,
			Message: "The compaction did not finish within the server's request timeout."}
	}
	return &hearth.Error{Status: 499, Type: hearth.ErrTypeInvalidRequest, Code: "client_disconnected",
		Message: "The client closed the request before the compaction finished."}
}
