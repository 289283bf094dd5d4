package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"hearth"
	"hearth/internal/tracing"
	"hearth/toolgrammar"
)

// Job is one prepared response: the rendered prompt and generation request, checked
// before anything is sent to the client so that every problem with the request is still
// an HTTP error rather than a failed stream.
type Job struct {
	e *Engine
	// rt is the engine's runtime bound to the job's placement (Engine.on).
	rt    Runtime
	Model *Model
	req   *hearth.CreateResponseRequest
	// Prompt is the exact text sent to the runtime.
	Prompt string
	gen    GenerateRequest
	conv   *Conversation
	tools  []toolgrammar.Tool
	// startInReasoning: the prompt leaves the model inside reasoning.
	startInReasoning bool
	// thinkingOff: the request turned the model's thinking off, so a required call
	// need not wait for reasoning to end.
	thinkingOff bool
	// window is the num_ctx sent to the runtime.
	window int
	// policy is what tool_choice and the call caps ask; nil when nothing needs
	// enforcing and the response is one plain generation.
	policy *toolPolicy
	// kv is the runtime's KV cache slot the job generates in, claimed when it starts
	// generating (for cached_tokens; kvslots.go).
	kv *kvClaim
	// hosted is the response's hosted tools (hosted.go); nil without any.
	hosted *hostedState
	// turn counts the model's turns in this response: a turn that made hosted calls
	// is followed by another with their results.
	turn int
	// think is the template's think value the prompt was rendered with.
	think *Think
	// in are the inputs the job was prepared with (its caller, placement, cache
	// group...); its later turns are prepared with them too.
	in Inputs
	// compaction, when set, runs before the job's generation, which is then prepared
	// again from the compacted window (autocompact.go).
	compaction *pendingCompaction
	// watch are the request's own stop strings when the engine watches for them
	// itself (stopwatch.go) rather than the runtime.
	watch []string
}

// Prepare resolves the model, builds the conversation (history, then the request's own
// input), renders the prompt and the generation request, and makes sure the prompt and
// max_output_tokens fit the model's context window (dropping old turns when truncation
// is "auto").
//
// A tool call output in the input must answer a call of the conversation (see
// checkCallIDs). in are the response's inputs besides the request (Inputs); ctx only
// cancels.
func (e *Engine) Prepare(ctx context.Context, req *hearth.CreateResponseRequest, history []hearth.Item, in Inputs) (*Job, error) {
	if err := checkCallIDs(history, req.Input); err != nil {
		return nil, err
	}
	j, err := e.prepare(ctx, req, history, in)
	if cm, ok := req.Compaction(); ok {
		return e.compactFirst(ctx, req, history, in, cm, j, err)
	}
	return j, err
}

func (e *Engine) prepare(ctx context.Context, req *hearth.CreateResponseRequest, history []hearth.Item, in Inputs) (*Job, error) {
	rt := e.on(in.Placement)
	m, err := e.model(ctx, rt, req.Model)
	if err != nil {
		return nil, err
	}
	if m.Info.UnsupportedBy != "" {
		return nil, ErrUnsupportedArchitecture(m.Name, m.Info)
	}
	if m.EmbeddingOnly() {
		return nil, ErrEmbeddingModel(m.Name)
	}
	if m.UnknownMarkup != "" && len(req.Tools) > 0 {
		return nil, ErrUnknownMarkup(m)
	}
	if err := checkLogprobs(req, m); err != nil {
		return nil, err
	}
	// A kept build (memo.go) was kept only where neither step below changed its
	// items: those need no looking through again.
	memo := in.Memo
	plain := 0
	if memo != nil && memo.build != nil && memo.build.items <= len(history) {
		plain = memo.build.items
	}
	// The last compaction item stands for what came before it (autocompact.go).
	stored, given := history, req.Input
	history, input, cut := e.cutAtCompaction(history, req.Input)
	if cut {
		plain = 0
	}
	// Sealed items (encrypted reasoning, compaction) render as what they stand for.
	history, input, err = e.openSealedFrom(history, input, plain)
	if err != nil {
		return nil, err
	}
	// Hosted tools become functions of the conversation, and their items calls and
	// results (each kind says how: kind.go).
	req, history, input, hosted, err := e.planHosted(ctx, req, history, input, plain, in)
	if err != nil {
		return nil, err
	}
	// A kept build is of the chain's items as stored: only where neither step above
	// changed them, and where this turn's are stored as given.
	var prior *buildState
	if memo != nil && sameItems(history, stored) {
		prior = memo.build
	}
	conv, built, err := buildConversation(req.Instructions, history, input, req.Tools, m.Info.Prompt, prior)
	if err != nil {
		return nil, err
	}
	if built != nil && hosted == nil && sameItems(history, stored) && sameItems(input, given) {
		conv.keep(built)
	}
	if conv.resumed {
		// Its messages are the kept ones, which the renderer compares cheaply.
		conv.Prior = memo.rendered
	}
	if len(conv.Images) > 0 && !m.HasCapability("vision") {
		return nil, hearth.InvalidRequest("input", "model_not_vision_capable",
			fmt.Sprintf("The model %q does not accept images (the runtime lists no vision capability for it).", req.Model))
	}

	j := &Job{e: e, rt: rt, Model: m, req: req, conv: conv, tools: conv.toolgrammarTools(), hosted: hosted, in: in}

	thinking := m.Format.Thinking.ForEffort(reasoningEffort(req, m.Format))
	think := applyThinking(conv, thinking)
	j.thinkingOff = think != nil && !think.Bool() && !m.Format.Thinking.AlwaysOn
	if m.Format.Emulated && len(j.tools) > 0 {
		// A model with no tool format learns the tools and the call syntax from its
		// system prompt; its template sees no tools.
		conv.addSystemText(m.Format.EmulatedSystemPrompt(j.tools))
		conv.Tools = nil
	}
	j.think = think
	conv.Resume = in.Saved
	conv.Stable = conv.stable()
	render := func(c *Conversation) (string, error) {
		_, span := tracing.Start(ctx, "hearth.prompt.render")
		defer span.End()
		p, err := m.Info.Prompt.RenderPrompt(c, think)
		span.Int("hearth.prompt.bytes", len(p))
		span.Int("hearth.prompt.messages", len(c.Messages))
		span.Fail(err)
		if err != nil && m.UnknownMarkup != "" && m.Info.Renderer != "" {
			// A renderer newer than the Ollama module hearth renders with (an external
			// runtime of a later release): the request is the problem, not hearth.
			return "", hearth.InvalidRequest("model", "model_renderer_unsupported", fmt.Sprintf(
				"The model %q is rendered by the runtime's %s, which hearth cannot render (%v).", m.Name, m.UnknownMarkup, err))
		}
		if err != nil {
			return "", fmt.Errorf("render prompt for %s: %w", m.Name, err)
		}
		return p, nil
	}
	if j.Prompt, err = render(conv); err != nil {
		return nil, err
	}
	j.window = e.ContextWindow(m)
	j.gen = GenerateRequest{
		Model:   m.Name,
		Prompt:  j.Prompt,
		Images:  conv.Images,
		Options: generationOptions(req, j.window),
		Stop:    generationStops(m, req.Stop),
		// Budgets and the context are hearth's to enforce: the runtime must refuse a
		// prompt that does not fit, not silently drop its middle (truncate) or half of
		// the context mid-generation (shift).
		NoSilentCuts: true,
	}
	if d, ok := req.KeepAlive(); ok {
		// The prompt cache lives as long as the runtime keeps the model and its
		// KV cache: the cache life asked is the model's keep-alive.
		j.gen.KeepAlive = &d
	}
	switch req.Text.Format.Type {
	case "json_object":
		j.gen.Format = []byte(`"json"`)
	case "json_schema":
		schema := req.Text.Format.Schema
		if err := e.CheckFormat(ctx, schema); err != nil {
			return nil, hearth.InvalidRequest("text.format.schema", hearth.CodeInvalidJSONSchema,
				fmt.Sprintf("Invalid 'text.format.schema': %v.", err))
		}
		j.gen.Format = req.Text.Format.Schema
	}
	// A tool schema the runtime cannot take is the client's first mistake to hear
	// of, before whether the input fits.
	j.policy = newToolPolicy(req, j.conv, j.tools)
	if err := j.checkToolGrammars(ctx); err != nil {
		return nil, err
	}
	untruncated := j.conv
	if err := j.fitWindow(ctx, render); err != nil {
		return nil, err
	}
	if j.conv != untruncated {
		j.policy = newToolPolicy(req, j.conv, j.tools)
	}
	if j.policy == nil && len(req.Stop) > 0 && req.ReportStop {
		// One plain generation: the engine finds the request's stop strings itself,
		// so that it knows when one of them (not the end of turn) ended the output.
		// The enforced path leaves them to the runtime, which cuts the output there.
		j.watch = req.Stop
		j.gen.Stop = generationStops(m, nil)
	}
	// Asked only now: the prompt's token counts above need none.
	if wantsLogprobs(req) {
		j.gen.Logprobs = true
		if req.TopLogprobs != nil {
			j.gen.TopLogprobs = *req.TopLogprobs
		}
	}
	j.startInReasoning = m.Format.StartInReasoning(j.Prompt, think != nil && think.Bool())
	for name, f := range j.conv.freeforms {
		if f.Syntax != "" && f.Pattern == "" {
			// Worth knowing when a model keeps failing the check: nothing steered it.
			e.log.Info("custom tool grammar is checked after generation, not enforced while generating",
				"tool", name, "syntax", f.Syntax, "reason", f.Unconstrained)
		}
	}
	return j, nil
}

// sameItems reports whether a and b are the same slice of items (not equal items:
// the same ones).
func sameItems(a, b []hearth.Item) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// checkToolGrammars makes sure the runtime can turn the parameters of every tool the
// policy constrains into a grammar: a tool it cannot is the client's 400, not a failed
// generation. Tools that are only shown to the model need no grammar.
func (j *Job) checkToolGrammars(ctx context.Context) error {
	p := j.policy
	if p == nil || !p.constrain {
		return nil
	}
	if plan := j.Model.Format.Plan(); plan != toolgrammar.PlanCall && plan != toolgrammar.PlanNameThenArgs {
		return nil // XML parameters are not generated under a JSON grammar
	}
	for _, t := range p.allowed {
		if _, custom := j.conv.Freeform(t.Name); custom {
			// hearth writes a custom tool's schema from its grammar; a grammar it
			// cannot constrain is checked after generation instead.
			continue
		}
		param := j.conv.toolParams[t.Name] + ".parameters"
		// The schema is built from the tool's name and parameters alone.
		err := j.e.checkToolGrammar(ctx, t)
		if err != nil {
			return hearth.InvalidRequest(param, hearth.CodeInvalidFunctionParameters,
				fmt.Sprintf("Invalid '%s': the call must be generated under a grammar of this schema, and %v.", param, err))
		}
	}
	return nil
}

// GenerateRequest is a copy of the raw generation request the job sends first, for a
// caller that wants to send the runtime exactly what hearth sends (the bench's floor).
func (j *Job) GenerateRequest() GenerateRequest { return j.gen }

// reasoningEffort is the effort to apply to format f. "minimal" turns thinking off
// where the family can (a think switch); families with levels get their lowest level.
func reasoningEffort(req *hearth.CreateResponseRequest, f *toolgrammar.Format) string {
	effort := req.Reasoning.Effort
	if effort == hearth.ReasoningEffortMinimal && f.Thinking.TemplateVar != "think_level" {
		return hearth.ReasoningEffortNone
	}
	return effort
}

// noSilentCuts is the value of the runtime's truncate and shift flags.
var noSilentCuts = false

// generationOptions maps sampling fields onto runtime options. The window is always
// sent: the window hearth checked is the one the runtime uses.
func generationOptions(req *hearth.CreateResponseRequest, window int) Options {
	o := Options{ContextWindow: window, Temperature: req.Temperature, TopP: req.TopP,
		PresencePenalty: req.PresencePenalty, FrequencyPenalty: req.FrequencyPenalty, Seed: req.Seed,
		TopK: req.TopK}
	if req.MaxOutputTokens != nil {
		o.MaxTokens = *req.MaxOutputTokens
	}
	return o
}

// generationStops are the model's own stop strings and its format's: raw generation
// does not apply the model's, so the engine sends them; then the request's own (a
// front door's stop), which end the output where the model writes them.
func generationStops(m *Model, asked []string) []string {
	stops := append([]string(nil), m.Stop...)
	for _, s := range slices.Concat(m.Format.Stop, asked) {
		if !slices.Contains(stops, s) {
			stops = append(stops, s)
		}
	}
	return stops
}

// Run generates the response, reporting every item to b, and ends it with exactly one
// terminal call (Complete, Incomplete or Fail). The error it returns is for logging:
// the response already says what went wrong.
func (j *Job) Run(ctx context.Context, b *hearth.Builder) error {
	if err := b.Start(); err != nil {
		return err
	}
	if pc := j.compaction; pc != nil {
		nj, err := j.runCompaction(ctx, b, pc)
		if err != nil {
			return err
		}
		// The job is the one from the compacted window from here on, for what the
		// caller asks of it after the run (Memo, SavedPrompt) too.
		*j = *nj
	}
	if j.req.Includes(hearth.IncludeReasoningEncryptedContent) {
		b.Seal = j.e.sealReasoning
	}
	if j.hosted != nil {
		j.hosted.attach(b)
		if err := j.hosted.start(ctx, b); err != nil {
			return j.hostedFailed(ctx, b, err)
		}
		if j.hosted.turnCalls > 0 {
			// Approved calls ran: the model goes on with their results.
			return j.complete(ctx, b, hearth.Usage{})
		}
	}
	j.kv = j.e.claimKV(j.in.Placement, j.in.CacheGroup, j.Model.Name, j.Prompt)
	defer j.e.releaseKV(j.kv)
	if j.policy != nil {
		return j.runEnforced(ctx, b)
	}
	return j.runDirect(ctx, b)
}

// runDirect is the fast path: one streaming generation, parsed as it comes.
func (j *Job) runDirect(ctx context.Context, b *hearth.Builder) error {
	p := toolgrammar.NewParser(j.Model.Format, toolgrammar.Options{
		Tools:            j.tools,
		StartInReasoning: j.startInReasoning,
	})
	s := j.newSink(ctx, b)
	var final Chunk
	var out strings.Builder
	reasoning := 0
	// raw counts the runtime's output bytes, out what was parsed: out falls behind
	// by what the stop watch holds back.
	var raw int64
	chunks := 0
	w := newStopWatch(j.watch)
	j.gen.Stream = true
	err := j.rt.Generate(ctx, &j.gen, func(r Chunk) error {
		if r.Text != "" {
			chunks++
			s.tokens.add(raw, r.Text, r.Logprobs)
			raw += int64(len(r.Text))
			text, stopped := w.feed(r.Text)
			out.WriteString(text)
			before := s.reasoningEvents
			if err := s.apply(p.Feed(text)); err != nil {
				return err
			}
			if s.reasoningEvents > before {
				reasoning++
			}
			if stopped {
				return errStopSequence
			}
		}
		if r.Done {
			final = r
			text := w.flush()
			out.WriteString(text)
			return s.apply(p.Feed(text))
		}
		return nil
	})
	stopped := errors.Is(err, errStopSequence)
	if stopped {
		// Left before its done chunk, which would have counted the tokens: each
		// chunk the runtime streams is one token (or a few it held back together),
		// and the prompt is counted as count_tokens counts it (its tokens are in
		// the runtime's cache by now: one decode step).
		err = nil
		final.EvalCount = chunks
		f := &promptFit{e: j.e, rt: j.rt, gen: j.gen, window: j.window}
		n, tooLong, cerr := f.count(ctx, j.Prompt, j.gen.Images)
		switch {
		case cerr != nil:
			err = cerr
		case tooLong:
			err = errors.New("the prompt no longer fits the context window")
		default:
			final.PromptEvalCount = n
		}
	}
	if err == nil {
		err = s.apply(p.Close())
	}
	usage := hearth.Usage{
		InputTokens:  final.PromptEvalCount,
		OutputTokens: final.EvalCount,
	}
	usage.OutputTokensDetails.ReasoningTokens = min(reasoning, final.EvalCount)
	usage.InputTokensDetails.CachedTokens = cachedTokens(j.kv.prev, j.Prompt, j.gen.Images, final.PromptEvalCount)
	turn := usage
	usage = j.hosted.total(usage)
	if final.Done {
		j.kv.keep(j.Prompt+out.String(), j.gen.Images,
			cacheMark{len(j.Prompt), final.PromptEvalCount},
			cacheMark{len(j.Prompt) + out.Len(), inCache(final.PromptEvalCount, final.EvalCount)})
	} else if stopped && err == nil {
		// The prompt's count ran last and left the prompt in the runtime's cache.
		j.kv.keep(j.Prompt, j.gen.Images, cacheMark{len(j.Prompt), final.PromptEvalCount})
	}
	// Released before a hosted turn goes on from here: the runtime's slot is free.
	j.e.releaseKV(j.kv)
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
	case stopped:
		// The request's stop string ended the output: the response is complete
		// there, without another turn of hosted calls.
		b.StoppedAt(w.matched)
		b.Complete(usage)
	case !final.Done:
		// The runtime closed the stream without a done chunk (reported for runaway
		// repetition): the output is cut, not complete.
		b.Fail(runtimeError(errRuntimeCut), &usage)
		return errRuntimeCut
	case final.DoneReason == "length":
		b.Incomplete(hearth.IncompleteMaxOutputTokens, usage)
	default:
		return j.complete(ctx, b, turn)
	}
	return nil
}

// errRuntimeCut is a generation the runtime closed without its done chunk. Ollama
// does that to a model that repeats itself (the same piece more than 30 times), which a
// small model can do under a grammar that asks for long strings: the model's failure
// on a valid request, not hearth's.
var errRuntimeCut = errors.New("the runtime ended the generation without finishing it (it stops a model that keeps repeating itself)")

func runtimeError(err error) *hearth.Error {
	if errors.Is(err, errRuntimeCut) {
		return hearth.ModelError("The model failed: " + err.Error())
	}
	var se *StatusError
	if errors.As(err, &se) && se.Message != "" {
		return RuntimeFailure(se.Message)
	}
	return RuntimeFailure(err.Error())
}

// newSink returns the sink of one turn's parser events.
func (j *Job) newSink(ctx context.Context, b *hearth.Builder) *itemSink {
	s := &itemSink{b: b, conv: j.conv, ctx: ctx, hosted: j.hosted}
	if j.gen.Logprobs {
		s.tokens = &tokenLog{}
	}
	return s
}

// itemSink forwards parser events to the builder.
type itemSink struct {
	b    *hearth.Builder
	conv *Conversation
	// ctx and hosted run the calls of hosted tools as they end; call is the
	// hosted call in progress.
	ctx    context.Context
	hosted *hostedState
	call   HostedCall
	// reasoningEvents counts reasoning deltas; the engine counts a runtime chunk
	// (about one token) as reasoning when it produced one.
	reasoningEvents int
	// input decodes the raw input of the custom tool call in progress from its
	// streamed arguments; nil during a function call.
	input *toolgrammar.InputStream
	// tokens are the generated tokens' log probabilities not yet handed to an event
	// (logprobs.go); nil when the request asked for none.
	tokens *tokenLog
}

func (s *itemSink) apply(events []toolgrammar.Event) error {
	for _, ev := range events {
		var err error
		lps := s.tokens.eventLogprobs(ev)
		switch ev.Kind {
		case toolgrammar.ReasoningDelta:
			s.reasoningEvents++
			err = s.b.ReasoningDelta(ev.Text)
		case toolgrammar.ReasoningEnd:
			// Reasoning cut off by the end of the output stays open: the terminal
			// call closes it, as incomplete when the budget ran out.
			if ev.Reason == "unterminated" {
				break
			}
			if cur, ok := s.b.Current(); ok && cur.Type == hearth.ItemReasoning {
				err = s.b.EndItem(hearth.StatusCompleted)
			}
		case toolgrammar.TextDelta:
			err = s.b.TextDeltaLogprobs(ev.Text, lps)
		case toolgrammar.CallBegin:
			name, namespace := s.conv.resolveToolName(ev.Name)
			s.input = nil
			s.call = nil
			if c, ok := s.hosted.lookup(name); ok {
				s.call = c
				err = c.Begin(s.b)
			} else if _, custom := s.conv.Freeform(ev.Name); custom {
				// The model called it as a function of one string; the client gets
				// a custom_tool_call whose input is that string.
				s.input = &toolgrammar.InputStream{}
				err = s.b.StartCustomToolCall(name)
			} else {
				err = s.b.StartFunctionCall(name, namespace)
			}
		case toolgrammar.ArgumentsDelta:
			text := ev.Text
			if s.input != nil {
				text = s.input.Feed(text)
			}
			err = s.b.ArgumentsDelta(text)
		case toolgrammar.CallEnd:
			if s.call != nil {
				c := s.call
				s.call = nil
				cur, _ := s.b.Current()
				err = s.hosted.end(s.ctx, s.b, c, cur.Arguments)
				break
			}
			if s.input != nil {
				_, rest, ierr := s.input.Finish(ev.Text)
				s.input = nil
				if ierr != nil {
					return &malformedCallError{reason: "custom tool call: " + ierr.Error(), span: ev.Text}
				}
				if err = s.b.ArgumentsDelta(rest); err != nil {
					break
				}
			}
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

// IncompleteClientDisconnected is the incomplete reason of a response whose client went
// away before it finished: generation stopped there.
const IncompleteClientDisconnected = "client_disconnected"

type malformedCallError struct{ reason, span string }

func (e *malformedCallError) Error() string {
	return fmt.Sprintf("The model wrote a malformed tool call (%s): %.200q", e.reason, e.span)
}
