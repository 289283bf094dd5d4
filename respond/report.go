package respond

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"hearth"
)

// ErrRequestTimeout is the cause of a request context ended by --request-timeout: a
// response it cuts says so (IncompleteRequestTimeout) instead of blaming the client.
var ErrRequestTimeout = errors.New("request timeout")

// IncompleteRequestTimeout is the incomplete reason of a response --request-timeout cut.
const IncompleteRequestTimeout = "request_timeout"

// observe wraps a builder's emit so the first output is timed.
func (r *run) observe(next func(hearth.Event)) func(hearth.Event) {
	return func(e hearth.Event) {
		if r.adm != nil && r.firstToken.IsZero() {
			switch e.Type {
			case hearth.EventResponseCreated, hearth.EventResponseQueued, hearth.EventResponseInProgress,
				hearth.EventResponseCompleted, hearth.EventResponseIncomplete, hearth.EventResponseFailed, hearth.EventError:
			default:
				r.firstToken = time.Now()
				r.s.metrics.FirstToken(r.req.Model, r.adm.Runtime(), r.firstToken.Sub(r.meta.Start))
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
	if final.Status != hearth.StatusIncomplete || !errors.Is(context.Cause(ctx), ErrRequestTimeout) {
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
	rt := a.Runtime()
	attrs := []slog.Attr{
		slog.String("response_id", final.ID), slog.String("response_status", final.Status),
		slog.Duration("queue_wait", a.Waited()), slog.String("runtime", rt),
	}
	if r.kind != "" {
		attrs = append(attrs, slog.String("kind", r.kind))
	}
	tps := 0.0
	if u := final.Usage; u != nil {
		attrs = append(attrs, slog.Int("input_tokens", u.InputTokens), slog.Int("output_tokens", u.OutputTokens),
			slog.Int("cached_tokens", u.InputTokensDetails.CachedTokens))
		if !r.firstToken.IsZero() && u.OutputTokens > 1 {
			if d := time.Since(r.firstToken); d > 0 {
				tps = float64(u.OutputTokens-1) / d.Seconds()
			}
		}
	}
	r.s.metrics.Finished(r.req.Model, final.Status, r.meta.Key, rt, final.Usage, tps)
	if !r.firstToken.IsZero() {
		attrs = append(attrs, slog.Duration("ttft", r.firstToken.Sub(r.meta.Start)))
	}
	if final.Status == hearth.StatusFailed && final.Error != nil {
		attrs = append(attrs, slog.String("error", final.Error.Message))
		if strings.HasPrefix(final.Error.Message, "The runtime failed") {
			r.s.metrics.RuntimeFailed(final.Error.Message)
		}
	}
	if r.s.logContent {
		attrs = append(attrs, slog.String("input", jsonString(r.req.Input)), slog.String("output", outputText(final)))
	}
	if r.meta.Line.add(attrs) {
		return
	}
	r.meta.Log.LogAttrs(context.Background(), slog.LevelInfo, "response", attrs...)
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

// LogModel is a model name as logs and error context show it: a client may send a
// name of any length, a log line keeps its first 128 bytes (cut at a character).
func LogModel(name string) string {
	const n = 128
	if len(name) <= n {
		return name
	}
	i := n
	for i > 0 && (name[i]&0xC0) == 0x80 {
		i--
	}
	return name[:i] + "…"
}

func logModel(name string) string { return LogModel(name) }
