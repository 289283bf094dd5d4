package engine

import (
	"context"
	"errors"
	"time"

	"hearth"
	"hearth/internal/tracing"
)

// tracedRuntime reports each generation of a traced request as two spans: the
// prefill (the request sent until the first token came: the model's load when it was
// not loaded, the prompt's evaluation) and the decode (the first token to the last).
// They are measured from outside, so they hold what the client waits for; the
// runtime's own measures of the same are attributes.
type tracedRuntime struct{ Runtime }

// traced wraps rt when this process traces; off, rt itself runs, at no cost.
func traced(rt Runtime) Runtime {
	if !tracing.On() {
		return rt
	}
	return tracedRuntime{rt}
}

func (t tracedRuntime) Generate(ctx context.Context, req *GenerateRequest, fn func(Chunk) error) error {
	if !tracing.Recording(ctx) {
		return t.Runtime.Generate(ctx, req, fn)
	}
	start := time.Now()
	var first time.Time
	var last Chunk
	chunks := 0
	err := t.Runtime.Generate(ctx, req, func(c Chunk) error {
		if c.Text != "" {
			if chunks == 0 {
				first = time.Now()
			}
			chunks++
		}
		if c.Done {
			last = c
		}
		return fn(c)
	})
	end := time.Now()
	if chunks == 0 {
		first = end
	}
	_, pre := tracing.StartAt(ctx, "hearth.prefill", start)
	pre.Str(tracing.GenAIRequestModel, req.Model)
	pre.Int("hearth.prompt.bytes", len(req.Prompt))
	pre.Bool("hearth.constrained", len(req.Format) > 0)
	if last.Done {
		pre.Int(tracing.GenAIInputTokens, last.PromptEvalCount)
		pre.Float("hearth.runtime.load_duration_s", last.LoadDuration.Seconds())
		pre.Float("hearth.runtime.prompt_eval_duration_s", last.PromptEvalDuration.Seconds())
	}
	if chunks == 0 {
		pre.Fail(err)
	}
	pre.EndAt(first)
	if chunks == 0 {
		return err
	}
	_, dec := tracing.StartAt(ctx, "hearth.decode", first)
	dec.Float(tracing.GenAITimeToFirstToken, first.Sub(start).Seconds())
	out := chunks
	if last.Done {
		out = last.EvalCount
		dec.Str("hearth.done_reason", last.DoneReason)
		dec.Float("hearth.runtime.eval_duration_s", last.EvalDuration.Seconds())
	}
	dec.Int(tracing.GenAIOutputTokens, out)
	if !errors.Is(err, errStopPhase) && !errors.Is(err, errStopSequence) {
		// Those are the engine's own stops at a decision point or a stop string.
		dec.Fail(err)
	}
	dec.EndAt(end)
	return err
}

// toolSpan is the span of one hosted tool call, and where its item is in the output.
type toolSpan struct {
	span tracing.Span
	item int
}

// startToolSpan starts the span of the hosted call whose item is open in b, named as
// the GenAI semantic conventions name a tool's execution.
func startToolSpan(ctx context.Context, b *hearth.Builder) (context.Context, toolSpan) {
	if !tracing.Recording(ctx) {
		return ctx, toolSpan{}
	}
	out := b.Response().Output
	if len(out) == 0 {
		return ctx, toolSpan{}
	}
	it := &out[len(out)-1]
	name := it.Name
	if name == "" {
		name = it.Type // file_search and web_search calls name no function
	}
	ctx, span := tracing.Start(ctx, "execute_tool "+name)
	span.Str(tracing.GenAIOperation, "execute_tool")
	span.Str(tracing.GenAIToolName, name)
	span.Str(tracing.GenAIToolType, "extension") // run by hearth, not by the client
	span.Str(tracing.GenAIToolCallID, it.ID)
	span.Str("hearth.item.type", it.Type)
	return ctx, toolSpan{span: span, item: len(out) - 1}
}

// endToolSpan ends a hosted call's span with its item's status: a call that failed
// is the model's to read, and the span's failure.
func endToolSpan(t toolSpan, b *hearth.Builder, ran bool, err error) {
	if !t.span.Recording() {
		return
	}
	t.span.Bool("hearth.tool.ran", ran)
	if out := b.Response().Output; t.item < len(out) {
		status := out[t.item].Status
		t.span.Str("hearth.item.status", status)
		if status == hearth.StatusFailed {
			t.span.FailWith("the tool call failed")
		}
	}
	t.span.Fail(err)
	t.span.End()
}
