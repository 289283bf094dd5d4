package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/ollama/ollama/api"

	"hearth"
	"hearth/toolgrammar"
)

// Job is one prepared response: the rendered prompt and generation request, checked
// before anything is sent to the client so that every problem with the request is still
// an HTTP error rather than a failed stream.
type Job struct {
	e     *Engine
	Model *Model
	req   *hearth.CreateResponseRequest
	// Prompt is the exact text sent to the runtime.
	Prompt string
	gen    api.GenerateRequest
	conv   *Conversation
	tools  []toolgrammar.Tool
	// startInReasoning: the prompt leaves the model inside reasoning.
	startInReasoning bool
}

// Prepare resolves the model, builds the conversation (history, then the request's own
// input), renders the prompt and the generation request.
func (e *Engine) Prepare(ctx context.Context, req *hearth.CreateResponseRequest, history []hearth.Item) (*Job, error) {
	m, err := e.Model(ctx, req.Model)
	if err != nil {
		return nil, err
	}
	conv, err := BuildConversation(req.Instructions, history, req.Input, req.Tools)
	if err != nil {
		return nil, err
	}
	if len(conv.Images) > 0 && !m.HasCapability("vision") {
		return nil, hearth.InvalidRequest("input", "model_not_vision_capable",
			fmt.Sprintf("The model %q does not accept images (the runtime lists no vision capability for it).", req.Model))
	}

	j := &Job{e: e, Model: m, req: req, conv: conv, tools: conv.toolgrammarTools()}

	thinking := m.Format.Thinking.ForEffort(reasoningEffort(req))
	think := applyThinking(conv, thinking)
	if m.Format.Emulated && len(j.tools) > 0 {
		// A model with no tool format learns the tools and the call syntax from its
		// system prompt; its template sees no tools.
		conv.addSystemText(m.Format.EmulatedSystemPrompt(j.tools))
		conv.Tools = nil
	}
	j.Prompt, err = RenderPrompt(m.Show, conv, think)
	if err != nil {
		return nil, fmt.Errorf("render prompt for %s: %w", m.Name, err)
	}
	j.startInReasoning = m.Format.StartInReasoning(j.Prompt, think != nil && think.Bool())

	j.gen = api.GenerateRequest{
		Model:   m.Name,
		Prompt:  j.Prompt,
		Raw:     true,
		Images:  conv.Images,
		Options: generationOptions(req, m),
		// Raw text must come back whole: with thinking on, the runtime would move
		// <think> text into a separate field.
		Think: &api.ThinkValue{Value: false},
	}
	switch req.Text.Format.Type {
	case "json_object":
		j.gen.Format = []byte(`"json"`)
	case "json_schema":
		j.gen.Format = req.Text.Format.Schema
	}
	return j, nil
}

func reasoningEffort(req *hearth.CreateResponseRequest) string {
	return req.Reasoning.Effort
}

// generationOptions maps sampling fields onto runtime options. Budgets and the context
// are hearth's to enforce, so the runtime's silent context shift and truncation are off.
func generationOptions(req *hearth.CreateResponseRequest, m *Model) map[string]any {
	o := map[string]any{
		"shift":    false,
		"truncate": false,
	}
	if req.Temperature != nil {
		o["temperature"] = *req.Temperature
	}
	if req.TopP != nil {
		o["top_p"] = *req.TopP
	}
	if req.PresencePenalty != nil {
		o["presence_penalty"] = *req.PresencePenalty
	}
	if req.FrequencyPenalty != nil {
		o["frequency_penalty"] = *req.FrequencyPenalty
	}
	if req.MaxOutputTokens != nil {
		o["num_predict"] = *req.MaxOutputTokens
	}
	stops := append([]string(nil), m.Stop...)
	for _, s := range m.Format.Stop {
		if !contains(stops, s) {
			stops = append(stops, s)
		}
	}
	if len(stops) > 0 {
		o["stop"] = stops
	}
	return o
}

// Run generates the response, reporting every item to b, and ends it with exactly one
// terminal call (Complete, Incomplete or Fail). The error it returns is for logging:
// the response already says what went wrong.
func (j *Job) Run(ctx context.Context, b *hearth.Builder) error {
	if err := b.Start(); err != nil {
		return err
	}
	p := toolgrammar.NewParser(j.Model.Format, toolgrammar.Options{
		Tools:            j.tools,
		StartInReasoning: j.startInReasoning,
	})
	s := &itemSink{b: b, conv: j.conv}
	var final api.GenerateResponse
	stream := true
	j.gen.Stream = &stream
	err := j.e.rt.Generate(ctx, &j.gen, func(r api.GenerateResponse) error {
		if r.Response != "" {
			if err := s.apply(p.Feed(r.Response)); err != nil {
				return err
			}
		}
		if r.Done {
			final = r
		}
		return nil
	})
	if err == nil {
		err = s.apply(p.Close())
	}
	usage := hearth.Usage{
		InputTokens:  final.PromptEvalCount,
		OutputTokens: final.EvalCount,
	}
	usage.OutputTokensDetails.ReasoningTokens = min(s.reasoningChunks, final.EvalCount)
	var malformed *malformedCallError
	switch {
	case errors.As(err, &malformed):
		b.Fail(hearth.ModelError(malformed.Error()), &usage)
		return err
	case ctx.Err() != nil:
		// The client went away (the runtime client may then end the stream without an
		// error); nobody reads the rest, but the stored response must say where
		// generation stopped.
		b.Incomplete(IncompleteClientDisconnected, usage)
		return ctx.Err()
	case err != nil:
		b.Fail(runtimeError(err), &usage)
		return err
	case !final.Done:
		// The runtime closed the stream without a done chunk (reported for runaway
		// repetition): the output is cut, not complete.
		err := errors.New("the runtime ended the generation without finishing it")
		b.Fail(hearth.ServerError(err.Error()), &usage)
		return err
	case final.DoneReason == "length":
		b.Incomplete(hearth.IncompleteMaxOutputTokens, usage)
	default:
		b.Complete(usage)
	}
	return nil
}

func runtimeError(err error) *hearth.Error {
	var se api.StatusError
	if errors.As(err, &se) && se.ErrorMessage != "" {
		return hearth.ServerError("The runtime failed: " + se.ErrorMessage)
	}
	return hearth.ServerError("The runtime failed: " + err.Error())
}

// itemSink forwards parser events to the builder.
type itemSink struct {
	b    *hearth.Builder
	conv *Conversation
	// reasoningChunks counts runtime chunks that carried reasoning: the runtime sends
	// about one chunk per token, so it estimates reasoning tokens.
	reasoningChunks int
}

func (s *itemSink) apply(events []toolgrammar.Event) error {
	for _, ev := range events {
		var err error
		switch ev.Kind {
		case toolgrammar.ReasoningDelta:
			s.reasoningChunks++
			err = s.b.ReasoningDelta(ev.Text)
		case toolgrammar.ReasoningEnd:
			if cur, ok := s.b.Current(); ok && cur.Type == hearth.ItemReasoning {
				err = s.b.EndItem(hearth.StatusCompleted)
			}
		case toolgrammar.TextDelta:
			err = s.b.TextDelta(ev.Text)
		case toolgrammar.CallBegin:
			name, namespace := s.conv.resolveToolName(ev.Name)
			err = s.b.StartFunctionCall(name, namespace)
		case toolgrammar.ArgumentsDelta:
			err = s.b.ArgumentsDelta(ev.Text)
		case toolgrammar.CallEnd:
			err = s.b.EndItem(hearth.StatusCompleted)
		case toolgrammar.Malformed:
			// A call that turned out malformed after its item was announced cannot be
			// taken back, and passing it on would hand the client an invalid call.
			if ev.Index >= 0 {
				return &malformedCallError{reason: ev.Reason, span: ev.Text}
			}
		}
		if err != nil {
			return fmt.Errorf("engine: %s event: %w", ev.Kind, err)
		}
	}
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// IncompleteClientDisconnected is the incomplete reason of a response whose client went
// away before it finished: generation stopped there.
const IncompleteClientDisconnected = "client_disconnected"

type malformedCallError struct{ reason, span string }

func (e *malformedCallError) Error() string {
	return fmt.Sprintf("The model wrote a malformed tool call (%s): %.200q", e.reason, e.span)
}
