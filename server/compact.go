package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
)

// compactResponse serves POST /v1/responses/compact: decode and validate as a create
// request, load the chain behind previous_response_id, prepare the summarising
// generation (every request problem is still a 4xx then), wait for a slot of the model
// like any response, generate, and answer with the compacted window. Nothing is stored:
// the window belongs to the client, which sends it as input from then on.
func (s *Server) compactResponse(c *gin.Context) {
	req, ok := s.readRequest(c, hearth.DecodeCompactRequest)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	history, err := s.history(ctx, owner(c), req.PreviousResponseID)
	if err == nil {
		err = s.resolveReferences(ctx, owner(c), req.Input, nil)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	compaction, err := s.engine.PrepareCompaction(ctx, req, history)
	if err != nil {
		s.writeError(c, err)
		return
	}
	id := hearth.NewID(hearth.PrefixResponse)
	adm, err := s.admit(c, req, id)
	if err != nil {
		s.writeError(c, err)
		return
	}
	defer adm.done()
	if err := adm.wait(ctx); err != nil {
		// The client left, or the request timed out, while queued.
		s.writeError(c, ctxError(ctx))
		return
	}
	created := time.Now()
	output, usage, err := compaction.Run(ctx)
	adm.done()
	if err != nil {
		if ctx.Err() != nil {
			err = ctxError(ctx)
		}
		s.writeError(c, err)
		return
	}
	if usage.TotalTokens == 0 {
		usage.TotalTokens = usage.InputTokens + usage.OutputTokens
	}
	// The summary's tokens are the key's like any response's.
	m := meta(c)
	s.metrics.tokensIn.WithLabelValues(s.models.label(req.Model), m.key).Add(float64(usage.InputTokens))
	s.metrics.tokensOut.WithLabelValues(s.models.label(req.Model), m.key).Add(float64(usage.OutputTokens))
	s.metrics.cached.WithLabelValues(s.models.label(req.Model), m.key).Add(float64(usage.InputTokensDetails.CachedTokens))
	m.log.Info("compaction", "id", id, "kept_items", len(output)-1, "queue_wait", adm.ticket.Waited(),
		"input_tokens", usage.InputTokens, "output_tokens", usage.OutputTokens)
	c.JSON(http.StatusOK, hearth.CompactResponse{
		ID: id, Object: hearth.ObjectCompaction, CreatedAt: created.Unix(), Output: output, Usage: usage,
	})
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
