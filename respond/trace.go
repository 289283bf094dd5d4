package respond

import (
	"context"
	"errors"

	"hearth"
	"hearth/internal/tracing"
)

// The spans of a response, when its request is traced (internal/tracing): one span for
// the response, named as the GenAI semantic conventions name an inference ("chat
// MODEL"), with the chain's load, the wait for a slot, the engine's spans (prompt
// render, prefill, decode, constrained phases, hosted tool calls) and the store's
// writes under it.

// startResponseSpan starts the response's span with what the request asks.
func startResponseSpan(ctx context.Context, req *hearth.CreateResponseRequest) (context.Context, tracing.Span) {
	ctx, span := tracing.Start(ctx, "chat "+LogModel(req.Model))
	if !span.Recording() {
		return ctx, span
	}
	span.Str(tracing.GenAIOperation, "chat")
	span.Str(tracing.GenAIProvider, "hearth")
	span.Str(tracing.GenAIRequestModel, LogModel(req.Model))
	if req.MaxOutputTokens != nil {
		span.Int(tracing.GenAIRequestMaxToks, *req.MaxOutputTokens)
	}
	if req.Temperature != nil {
		span.Float(tracing.GenAIRequestTemp, *req.Temperature)
	}
	if req.TopP != nil {
		span.Float(tracing.GenAIRequestTopP, *req.TopP)
	}
	if req.Conversation != nil && req.Conversation.ID != "" {
		span.Str(tracing.GenAIConversationID, req.Conversation.ID)
	}
	if req.PreviousResponseID != "" {
		span.Str("hearth.previous_response_id", req.PreviousResponseID)
	}
	span.Bool("hearth.stream", req.Stream)
	span.Bool("hearth.background", req.Background)
	return ctx, span
}

// endResponseSpan ends the response's span; err is a request the core refused or
// could not start.
func endResponseSpan(span tracing.Span, err error) {
	if err != nil {
		var he *hearth.Error
		if errors.As(err, &he) {
			span.Str("error.type", he.Code)
		}
		span.Fail(err)
	}
	span.End()
}

// traceFinal puts what a finished response reports on its span (ctx's): its id, the
// model that ran (after aliases), its usage, its end and its time to first token.
func (r *run) traceFinal(ctx context.Context, final *hearth.Response) {
	span := tracing.Current(ctx)
	if !span.Recording() {
		return
	}
	span.SetName("chat " + LogModel(r.req.Model))
	span.Str(tracing.GenAIResponseID, final.ID)
	span.Str(tracing.GenAIResponseModel, LogModel(r.req.Model))
	span.Str("hearth.response.status", final.Status)
	span.Strs(tracing.GenAIFinishReasons, []string{finishReason(final)})
	if rt := r.adm.Runtime(); rt != "" {
		span.Str("hearth.runtime", rt)
	}
	if u := final.Usage; u != nil {
		span.Int(tracing.GenAIInputTokens, u.InputTokens)
		span.Int(tracing.GenAIOutputTokens, u.OutputTokens)
		span.Int(tracing.GenAICachedTokens, u.InputTokensDetails.CachedTokens)
		span.Int(tracing.GenAIReasoningTokens, u.OutputTokensDetails.ReasoningTokens)
	}
	if !r.firstToken.IsZero() {
		span.Float(tracing.GenAITimeToFirstToken, r.firstToken.Sub(r.meta.Start).Seconds())
		span.Event("first token", r.firstToken)
	}
	if final.Status == hearth.StatusFailed && final.Error != nil {
		span.Str("error.type", final.Error.Code)
		span.FailWith(final.Error.Message)
	}
}

// finishReason is a response's end in the words of gen_ai.response.finish_reasons.
func finishReason(r *hearth.Response) string {
	switch r.Status {
	case hearth.StatusCompleted:
		for _, it := range r.Output {
			if it.Type == hearth.ItemFunctionCall || it.Type == hearth.ItemCustomToolCall {
				return "tool_calls"
			}
		}
		return "stop"
	case hearth.StatusIncomplete:
		if d := r.IncompleteDetails; d != nil {
			if d.Reason == hearth.IncompleteMaxOutputTokens {
				return "length"
			}
			return d.Reason
		}
		return "incomplete"
	case hearth.StatusFailed:
		return "error"
	}
	return r.Status
}

// waitTraced waits for the response's slot (Admission.Wait) in a span of its own.
func (r *run) waitTraced(ctx context.Context) error {
	_, span := tracing.Start(ctx, "hearth.queue.wait")
	err := r.adm.Wait(ctx)
	if span.Recording() {
		span.Bool("hearth.queued", r.adm.Queued())
		span.Str("hearth.runtime", r.adm.Runtime())
		span.Fail(err)
		span.End()
	}
	return err
}

// storeSpan starts the span of one write of the response to the store.
func storeSpan(ctx context.Context, op string) tracing.Span {
	_, span := tracing.Start(ctx, "hearth.store.write "+op)
	span.Str("db.operation.name", op)
	return span
}

// loadChain is chainHistory in a span of its own when the request continues a chain:
// where the chain came from (kept hot in memory, the WebSocket connection's own, or
// loaded from the store) and how long it is.
func (s *Service) loadChain(ctx context.Context, in *Request, compaction bool) (chainRead, error) {
	prev := in.Body.PreviousResponseID
	if prev == "" || !tracing.Recording(ctx) {
		return s.chainHistory(ctx, in.Owner, prev, in.Local, in.Epoch, !compaction)
	}
	ctx, span := tracing.Start(ctx, "hearth.chain.load")
	ch, err := s.chainHistory(ctx, in.Owner, prev, in.Local, in.Epoch, !compaction)
	span.Str("hearth.previous_response_id", prev)
	switch {
	case err != nil:
	case ch.hot != nil:
		span.Str("hearth.chain.source", "memory")
	case ch.local:
		span.Str("hearth.chain.source", "connection")
	default:
		span.Str("hearth.chain.source", "store")
	}
	span.Int("hearth.chain.items", len(ch.items))
	span.Int("hearth.chain.depth", ch.depth)
	span.Fail(err)
	span.End()
	return ch, err
}
