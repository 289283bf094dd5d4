package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"hearth"
	"hearth/internal/tracing"
	"hearth/toolgrammar"
)

// The enforced path generates a response in phases. A free phase lets the model write
// (reasoning, text, calls); the parser pauses at every decision point (a call opener,
// a finished name, the end of reasoning, a finished call) and the engine either lets
// it go on or stops the runtime there. It then continues in raw mode from the prompt
// plus the output it keeps plus, when it forces a call, the opener it writes itself,
// with `format` set to the JSON schema of what may come next: a call of the allowed
// tools, a name among them, or one tool's arguments. The closer is appended and a free
// phase follows. The runtime's KV cache holds the prompt and the output so far, so each
// continuation evaluates only the few tokens that are new.
//
// Everything appended (model output and engine prefills alike) is fed to one parser,
// which therefore sees one continuous transcript. A call's events are held until the
// call is complete and its arguments validate against the tool's schema; a call that
// fails is taken back (nothing of it reached the client) and generated once more
// under the grammar from its opener, and fails the response if it fails again.
//
// Once a call was generated under a grammar, the response is in an enforced call
// section, and what follows the closer is constrained too: the model may open another
// call of an allowed tool (while parallel_tool_calls and max_tool_calls allow) or end
// its turn, nothing else. Text or reasoning after the closer ends the turn there (none
// of it reaches the client), and so does a call identical to one the response already
// made: a model that repeats a call verbatim is looping, and the closer the engine
// writes would only lead it into the same call again. Each of these decisions is taken
// on what the model writes first after the closer, so it does not depend on how far the
// runtime runs past it before the stream is left.

// phaseKind says what a phase generates.
type phaseKind uint8

const (
	phaseFree phaseKind = iota // the model writes what it wants
	phaseCall                  // one call (or array of calls): CallSchema
	phaseName                  // a call's name as a JSON string: NameSchema
	phaseArgs                  // one tool's arguments: ArgumentsSchema
	// phaseXMLArgs: one tool's arguments under ArgumentsSchema in a format whose
	// arguments are not JSON (XML parameters, Gemma's or Python's call syntax). The
	// JSON is not the transcript's: the engine writes it in the format's own syntax
	// (Format.ArgumentsFromJSON) when the phase ends.
	phaseXMLArgs
)

type phase struct {
	kind   phaseKind
	format json.RawMessage
	// limit caps the phase's tokens below the response's budget; 0 means none, -1
	// on a free phase means the output ends instead.
	limit int
}

// action is what the engine does at a decision point.
type action uint8

const (
	actContinue  action = iota
	actEnd              // end the output here: no (more) calls may be made
	actConstrain        // continue from the opener with a constrained call
	actForce            // rewind to cut, write the opener, continue constrained
	actArgs             // the name is settled (harmony header): constrain the arguments
	actRetry            // the call failed validation: rewind to its opener, constrain
	actFail             // the call failed again: the response fails
	actResume           // a decision stop was not a decision: the free phase goes on
)

// errStopPhase ends a streaming generation from inside its callback, at a decision
// point the runtime's stop strings cannot mark (a bare JSON call, a harmony header, text
// where a call is required, a finished call). Over an external runtime the seam then
// reads the rest of the stream in the background instead of leaving it (Ollama wedges a
// model whose stream is left at the wrong instant), so the decision points that can be
// stop strings are: see decisionStops.
var errStopPhase = errors.New("engine: phase stopped at a decision point")

type enforcer struct {
	j     *Job
	f     *toolgrammar.Format
	pol   *toolPolicy
	b     *hearth.Builder
	sink  *itemSink
	popts toolgrammar.Options
	p     *toolgrammar.Parser

	// out is the transcript after the prompt: everything the parser was fed and the
	// engine keeps. The next phase's prompt is j.Prompt + out.
	out []byte

	budget          int // output tokens left; -1 when the request set no budget
	inputTokens     int
	outputTokens    int
	reasoningTokens int
	calls           int
	retried         bool

	// section: a call was generated under the grammar, so what follows is another
	// call or the end of the turn.
	section bool
	// made holds the calls of the response (name and compact arguments), to tell a
	// call the model repeats verbatim.
	made map[string]bool
	// capped: the safety cap on calls ended the output, which is then incomplete.
	capped bool

	// The call in progress: its events are held until it validates.
	holding bool
	held    []toolgrammar.Event
	openAt  int64 // offset right after its opener, where a retry restarts
	// inReasoning tracks whether the parser is inside reasoning.
	inReasoning bool
	// boundary is the offset after the last event that reached the builder: a point
	// the transcript can be cut back to without taking anything back from the client.
	boundary int64
	// cut is where the decision that stopped the phase wants the transcript to end.
	cut int64
	// pendingName is the call name a decision settled (harmony).
	pendingName string
	// recipientPrefix is what a harmony transcript cut back to the call's
	// recipient needs before a name (toolgrammar's Format.RecipientAt).
	recipientPrefix string
	// pendingArgs is the JSON a phaseXMLArgs generated.
	pendingArgs string
	failure     error

	// last is the last phase's request and counts, for the cache bookkeeping.
	lastPrompt       string
	lastOut          strings.Builder
	lastPromptTokens int
	// lastTokens is what the last phase left in the KV cache (inCache).
	lastTokens int
}

// runEnforced generates the response in phases; see the comment at the top.
func (j *Job) runEnforced(ctx context.Context, b *hearth.Builder) error {
	r := &enforcer{
		j: j, f: j.Model.Format, pol: j.policy, b: b,
		sink: j.newSink(ctx, b),
		popts: toolgrammar.Options{
			Tools: j.tools, StartInReasoning: j.startInReasoning, PauseAtDecisions: true,
			// A call written without its markers is one only when it may be made.
			BareCallTools: j.policy.names(),
		},
		budget: -1,
	}
	if j.req.MaxOutputTokens != nil {
		r.budget = *j.req.MaxOutputTokens
	}
	r.p = toolgrammar.NewParser(r.f, r.popts)
	r.inReasoning = j.startInReasoning
	err := r.run(ctx)
	return r.finish(ctx, err)
}

func (r *enforcer) run(ctx context.Context) error {
	next, err := r.firstPhase(ctx)
	if err != nil {
		return err
	}
	for {
		if r.budget == 0 {
			return r.stopForBudget()
		}
		act, res, err := r.generate(ctx, next)
		if isInputTooLong(err) && r.outputTokens > 0 {
			// The output filled the context window: the window is the hard limit
			// of the output, as max_output_tokens is.
			return r.stopForBudget()
		}
		if err != nil {
			return err
		}
		if act == actResume {
			continue
		}
		if act == actContinue {
			// The phase ran to its end.
			if res.DoneReason == "length" && !(next.limit > 0 && r.budget != 0 && res.EvalCount >= next.limit) {
				return r.stopForBudget()
			}
			if act, next, err = r.afterPhase(next, res); err != nil {
				return err
			}
			if act == actContinue {
				continue
			}
			if act == actEnd {
				return nil
			}
		}
		if next, err = r.decide(act); err != nil {
			return err
		}
		if next.kind == phaseFree && next.limit < 0 {
			return nil // the output ended
		}
	}
}

// firstPhase starts the response: a free phase of one token, whose done chunk reports
// the prompt's exact token count (a phase stopped early reports none, and continuations
// re-read the output as prompt); or, for a required call the model cannot reason
// before, the forced call at once.
func (r *enforcer) firstPhase(ctx context.Context) (phase, error) {
	j := r.j
	if r.mustCall() && !j.startInReasoning && (!r.f.Reasons() || j.thinkingOff || j.gen.Format != nil) {
		f := &promptFit{e: j.e, rt: j.rt, gen: j.gen, window: j.window}
		n, tooLong, err := f.count(ctx, j.Prompt, j.gen.Images)
		if err != nil {
			return phase{}, err
		}
		if tooLong {
			return phase{}, errors.New("the prompt no longer fits the context window")
		}
		r.inputTokens = n
		if _, err := r.prefill(r.f.CallPrefix("")); err != nil {
			return phase{}, err
		}
		return r.constrained()
	}
	if j.gen.Format != nil {
		// A text.format grammar starts at the phase's first token: the output must
		// not be split.
		return phase{kind: phaseFree}, nil
	}
	return phase{kind: phaseFree, limit: 1}, nil
}

func (r *enforcer) mustCall() bool {
	return r.pol.mode == hearth.ToolChoiceRequired && r.calls == 0
}

func (r *enforcer) noMoreCalls() bool {
	if r.pol.mode == hearth.ToolChoiceNone {
		return true
	}
	if !r.pol.capReached(r.calls) {
		return false
	}
	if r.pol.maxCalls == 0 || r.pol.maxCalls > r.calls {
		// The request allowed more: hearth's own cap stopped the model.
		r.capped = true
	}
	return true
}

// phaseNames name the phase kinds in traces.
var phaseNames = [...]string{phaseFree: "free", phaseCall: "call", phaseName: "name", phaseArgs: "arguments", phaseXMLArgs: "xml_arguments"}

// generate runs one phase (runPhase), as a span of its own when the request is traced:
// its kind, whether a grammar constrained it, and the tokens it generated.
func (r *enforcer) generate(ctx context.Context, ph phase) (action, Chunk, error) {
	ctx, span := tracing.Start(ctx, "hearth.phase "+phaseNames[ph.kind])
	if !span.Recording() {
		return r.runPhase(ctx, ph)
	}
	span.Str("hearth.phase.kind", phaseNames[ph.kind])
	span.Bool("hearth.constrained", ph.kind != phaseFree)
	before := r.outputTokens
	act, final, err := r.runPhase(ctx, ph)
	span.Int(tracing.GenAIOutputTokens, r.outputTokens-before)
	span.Fail(err)
	span.End()
	return act, final, err
}

// runPhase runs one phase: it streams the continuation from j.Prompt + out, feeding
// what comes (except a name) to the parser, and stops the runtime at the first
// decision that is not actContinue.
func (r *enforcer) runPhase(ctx context.Context, ph phase) (action, Chunk, error) {
	req := r.j.gen
	req.Prompt = r.j.Prompt + string(r.out)
	n := ph.limit
	if r.budget >= 0 && (n <= 0 || r.budget < n) {
		n = r.budget
	}
	req.Options.MaxTokens = max(n, 0)
	if ph.kind != phaseFree {
		req.Format = ph.format
	}
	var decision []string
	if ph.kind == phaseFree && ph.limit != 1 {
		// A one-token phase needs none: its token comes back whole (the runtime
		// checks the token limit before the stop strings).
		if decision = r.decisionStops(); len(decision) > 0 {
			req.Stop = append(slices.Clone(req.Stop), decision...)
		}
	}
	req.Stream = true

	r.lastPrompt = req.Prompt
	r.lastOut.Reset()
	var (
		act    = actContinue
		final  Chunk
		chunks int
		name   strings.Builder
		last   string // the last chunk's text
	)
	err := r.j.rt.Generate(ctx, &req, func(resp Chunk) error {
		if resp.Done {
			final = resp
		}
		if resp.Text == "" || act != actContinue {
			return nil
		}
		chunks++
		last = resp.Text
		r.lastOut.WriteString(resp.Text)
		if ph.kind == phaseName || ph.kind == phaseXMLArgs {
			name.WriteString(resp.Text)
			return nil
		}
		r.sink.tokens.add(int64(len(r.out)), resp.Text, resp.Logprobs)
		a, err := r.feedChunk(resp.Text, ph.kind)
		if err != nil {
			return err
		}
		if a != actContinue {
			act = a
			if ph.limit != 1 {
				return errStopPhase
			}
			// A one-token phase is let finish: its done chunk carries the
			// prompt's token count, and nothing else can come.
		}
		return nil
	})
	if errors.Is(err, errStopPhase) {
		err = nil
	}
	used := chunks
	if final.Done {
		used = final.EvalCount
		if r.inputTokens == 0 {
			r.inputTokens = final.PromptEvalCount
		}
		r.lastPromptTokens = final.PromptEvalCount
		r.lastTokens = inCache(final.PromptEvalCount, final.EvalCount)
	} else {
		r.lastTokens = 0
	}
	r.outputTokens += used
	if r.budget >= 0 {
		r.budget = max(0, r.budget-used)
	}
	if err != nil {
		if ctx.Err() != nil {
			return act, final, ctx.Err()
		}
		return act, final, err
	}
	if act == actContinue && !final.Done {
		return act, final, errRuntimeCut
	}
	switch ph.kind {
	case phaseName:
		r.pendingName = name.String()
	case phaseXMLArgs:
		r.pendingArgs = name.String()
	}
	if act == actContinue && len(decision) > 0 && final.DoneReason == "stop" {
		// The runtime ended the phase at a stop string, and does not say which:
		// the model's end of turn (or its end token) or a decision point, whose
		// text it leaves out of the output (its tokens are in EvalCount).
		stop, err := r.whichStop(ctx, req, last, decision)
		if err != nil {
			return act, final, err
		}
		if stop != "" {
			// The transcript goes on with the stop's text, as the model wrote
			// it, and the parser takes the decision it would have taken had it
			// seen that text in the stream.
			r.lastOut.WriteString(stop)
			if act, err = r.feedChunk(stop, phaseFree); err != nil {
				return act, final, err
			}
			if act == actContinue {
				act = actResume
			}
		}
	}
	return act, final, nil
}

// feedChunk feeds one chunk of model output, counting it as a reasoning token when it
// carried reasoning.
func (r *enforcer) feedChunk(text string, kind phaseKind) (action, error) {
	before := r.sink.reasoningEvents
	a, err := r.feed(text, kind)
	if err != nil {
		return a, err
	}
	if r.sink.reasoningEvents > before {
		r.reasoningTokens++
	}
	return a, nil
}

// decisionStops are the decision points of the next free phase that the runtime can end
// it at by itself, as stop strings: the format's call openers, where a call would be
// constrained or refused, and the end of reasoning, where a call is required. The
// runtime then finishes the phase and sends its done chunk, and no stream is left
// mid-way. An opener is used only when it cannot be ordinary text: a bare "{" or "["
// (or a plain word) would end free text at every use, so those formats keep the
// parser's own pause.
func (r *enforcer) decisionStops() []string {
	if r.j.gen.Format != nil {
		// A text.format grammar starts at a request's first token: a phase under
		// it must not be split, and its output holds no markup anyway.
		return nil
	}
	var stops []string
	if r.f.Tools.Kind != toolgrammar.Harmony && !r.holding && (r.pol.constrain || r.pol.mode == hearth.ToolChoiceNone) {
		for _, o := range append([]string{r.f.Tools.GroupOpen}, r.f.Tools.Open...) {
			if markup(o) && !slices.Contains(stops, o) {
				stops = append(stops, o)
			}
		}
	}
	if r.mustCall() && r.f.Reasoning != nil && markup(r.f.Reasoning.Close) {
		stops = append(stops, r.f.Reasoning.Close)
	}
	return stops
}

// markup reports whether s is control markup rather than something prose contains.
func markup(s string) bool { return toolgrammar.IsMarkup(s) }

// whichStop tells which of the decision stops ended a phase, "" for none (the model's
// end of turn). It asks the runtime what the model writes at the same point, without
// the decision stops, so that a decision point comes back as text. The question starts
// before the phase's last chunk (last): the runtime cuts a stop out of the token that
// holds it, so what precedes a stop in that token ("\n" of a "\n<tool_call>" token)
// would otherwise be read as a token of its own. Prompt and output are in the runtime's
// KV cache: a few decode steps. An answer that is neither a stop nor the end of turn
// (sampling drew another token this time) is drawn again, so the answer is drawn from
// the model's own choice among the stops, as the phase drew it.
func (r *enforcer) whichStop(ctx context.Context, phaseReq GenerateRequest, last string, decision []string) (string, error) {
	req := phaseReq
	req.Prompt = r.j.Prompt + strings.TrimSuffix(string(r.out), last)
	req.Stop = r.j.gen.Stop
	req.Stream = false
	req.Logprobs, req.TopLogprobs = false, 0 // a question, not output
	n := whichStopTokens
	for draws := 0; draws < whichStopDraws; {
		req.Options.MaxTokens = n
		var text strings.Builder
		var final Chunk
		err := r.j.rt.Generate(ctx, &req, func(c Chunk) error {
			text.WriteString(c.Text)
			if c.Done {
				final = c
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		rest, ok := strings.CutPrefix(text.String(), last)
		if final.DoneReason == "length" && n < 4*whichStopTokens && (ok && rest == "" || !ok && strings.HasPrefix(last, text.String())) {
			// The last chunk was more than one token: ask for more.
			n *= 2
			continue
		}
		draws++
		if !ok {
			continue // it wrote something else than the phase did
		}
		if rest == "" && final.DoneReason == "stop" {
			return "", nil
		}
		for _, s := range decision {
			if rest != "" && (strings.HasPrefix(s, rest) || strings.HasPrefix(rest, s)) {
				return s, nil
			}
		}
	}
	// The model keeps choosing something else at that point: take the stop for
	// its end of turn, which constrains nothing.
	return "", nil
}

// whichStopTokens is how many tokens whichStop asks for first: the phase's last chunk
// (mostly one token) and the first of a stop; more when the last chunk was longer.
const whichStopTokens = 2

// whichStopDraws bounds the draws of whichStop.
const whichStopDraws = 3

// feed appends text to the transcript, parses it and acts on the events, resuming the
// parser after each pause the engine lets pass.
func (r *enforcer) feed(text string, kind phaseKind) (action, error) {
	r.out = append(r.out, text...)
	evs := r.p.Feed(text)
	for {
		act, err := r.events(evs, kind)
		if err != nil || act != actContinue {
			return act, err
		}
		if r.p.Pending() == "" || len(evs) == 0 {
			return actContinue, nil
		}
		evs = r.p.Feed("")
	}
}

// prefill feeds text the engine writes itself (an opener, a name, a closer): a call
// opener in it is the engine's, and the only decision it can lead to is about the call
// it completes.
func (r *enforcer) prefill(text string) (action, error) {
	if text == "" {
		return actContinue, nil
	}
	return r.feed(text, phaseCall)
}

// events acts on parser events. In a free phase every decision point is a choice; in
// a constrained phase or a prefill only a finished call is (it is validated).
func (r *enforcer) events(evs []toolgrammar.Event, kind phaseKind) (action, error) {
	for _, ev := range evs {
		switch ev.Kind {
		case toolgrammar.TextDelta:
			if r.section && !r.holding {
				// After an enforced call only another call may follow: blanks
				// between calls are the format's, anything else ends the turn.
				if strings.TrimSpace(ev.Text) == "" {
					continue
				}
				return actEnd, nil
			}
			if kind == phaseFree && r.mustCall() && !r.holding {
				// The model answers in text where a call is required: take the
				// text back before the client sees it and write the call.
				r.cut = r.boundary
				return actForce, nil
			}
			if err := r.forward(ev); err != nil {
				return 0, err
			}
		case toolgrammar.ReasoningDelta:
			if r.section && !r.holding {
				return actEnd, nil
			}
			r.inReasoning = true
			if err := r.forward(ev); err != nil {
				return 0, err
			}
		case toolgrammar.ReasoningEnd:
			if r.section && !r.holding {
				return actEnd, nil
			}
			r.inReasoning = false
			if err := r.forward(ev); err != nil {
				return 0, err
			}
			if kind == phaseFree && r.mustCall() {
				r.cut = ev.Offset
				return actForce, nil
			}
		case toolgrammar.CallOpen:
			r.holding, r.held, r.openAt = true, nil, ev.Offset
			if r.f.Tools.Kind == toolgrammar.Harmony {
				// The header is whole here, name included; a retry restarts
				// right after the recipient prefix, before the name.
				if at, prefix := r.f.RecipientAt(string(r.out[:ev.Offset])); at >= 0 {
					r.openAt, r.recipientPrefix = int64(at), prefix
				}
			}
			if kind != phaseFree {
				continue // the engine's own opener
			}
			if r.noMoreCalls() {
				return actEnd, nil
			}
			if r.pol.constrain && r.f.Tools.Kind != toolgrammar.Harmony {
				r.cut = ev.Offset
				return actConstrain, nil
			}
		case toolgrammar.CallBegin:
			r.held = append(r.held, ev)
			if kind == phaseFree && r.pol.constrain && r.f.Tools.Kind == toolgrammar.Harmony {
				// Harmony names the recipient in the header, which is complete
				// when the parser reports the call.
				if _, ok := r.pol.tool(ev.Name); ok {
					r.cut, r.pendingName = ev.Offset, ev.Name
					return actArgs, nil
				}
				at, prefix := r.f.RecipientAt(string(r.out[:ev.Offset]))
				if at < 0 {
					return 0, fmt.Errorf("engine: harmony call header without %q", r.f.Tools.Recipient)
				}
				r.cut, r.recipientPrefix = int64(at), prefix
				return actConstrain, nil
			}
		case toolgrammar.ArgumentsDelta:
			if r.holding {
				r.held = append(r.held, ev)
			} else if err := r.forward(ev); err != nil {
				return 0, err
			}
		case toolgrammar.CallEnd:
			r.held = append(r.held, ev)
			if err := r.pol.check(ev.Name, ev.Text); err != nil {
				return r.callFailed(err), nil
			}
			if r.pol.constrain {
				key := callKey(ev.Name, ev.Text)
				if r.made[key] {
					// The same call again: the model loops. Take it back and end
					// the turn after the calls it made.
					r.holding, r.held, r.retried = false, nil, false
					return actEnd, nil
				}
				if r.made == nil {
					r.made = map[string]bool{}
				}
				r.made[key] = true
				// Every call of a constrained policy is generated under the
				// grammar: the section starts with the first.
				r.section = true
			}
			for _, h := range r.held {
				if err := r.forward(h); err != nil {
					return 0, err
				}
			}
			r.holding, r.held, r.retried = false, nil, false
			r.calls++
			r.boundary = ev.Offset
			if r.noMoreCalls() {
				return actEnd, nil
			}
		case toolgrammar.Malformed:
			if r.holding {
				return r.callFailed(fmt.Errorf("the model wrote a malformed tool call (%s): %.200q", ev.Reason, ev.Text)), nil
			}
			// Not a call after all; its text follows as a TextDelta.
		}
	}
	return actContinue, nil
}

// callKey identifies a call by its name and arguments, blanks aside.
func callKey(name, args string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(args)) != nil {
		return name + "\x00" + args
	}
	return name + "\x00" + b.String()
}

// callFailed takes back the call in progress: once it is generated again under the
// grammar, and then the response fails.
func (r *enforcer) callFailed(err error) action {
	r.held = nil
	if r.retried {
		r.failure = err
		return actFail
	}
	r.retried = true
	r.failure = err
	r.j.e.log.Warn("tool call failed validation; generating it again under the grammar", "model", r.j.Model.Name, "error", err)
	return actRetry
}

func (r *enforcer) forward(ev toolgrammar.Event) error {
	if err := r.sink.apply([]toolgrammar.Event{ev}); err != nil {
		return err
	}
	if ev.Kind != toolgrammar.CallBegin && ev.Kind != toolgrammar.ArgumentsDelta {
		r.boundary = ev.Offset
	}
	return nil
}

// decide carries out the decision that stopped a phase and returns the next phase. A
// free phase with limit -1 means the output ends.
func (r *enforcer) decide(act action) (phase, error) {
	switch act {
	case actEnd:
		return phase{kind: phaseFree, limit: -1}, nil
	case actFail:
		return phase{}, &malformedCallError{reason: "still invalid after a constrained retry", span: r.failure.Error()}
	case actConstrain:
		// What the model wrote after the cut (a name it may not call, the
		// rest of the chunk) goes.
		r.rewind(r.cut)
		r.holding, r.held = true, nil
		if err := r.completeOpener(); err != nil {
			return phase{}, err
		}
		return r.constrained()
	case actArgs:
		held := r.held
		r.rewind(r.cut)
		r.holding, r.held = true, held
		t, _ := r.pol.tool(r.pendingName)
		return r.argsPhase(t)
	case actForce:
		r.rewind(r.cut)
		r.holding, r.held = false, nil
		if r.inReasoning && r.f.Reasoning != nil {
			// Reasoning that never closed: close it, or the opener would be read
			// as more reasoning.
			if _, err := r.prefill(r.f.Reasoning.Close); err != nil {
				return phase{}, err
			}
		}
		if _, err := r.prefill(r.f.CallPrefix(string(r.out))); err != nil {
			return phase{}, err
		}
		return r.constrained()
	case actRetry:
		r.rewind(r.openAt)
		r.holding, r.held = true, nil
		if r.f.Plan() == toolgrammar.PlanNameOnly {
			// The call's opener may be a wrapper ("<tool_call>") that still
			// needs the name's opener ("\n<function=", Gemma's "call:") before
			// the name.
			if err := r.completeOpener(); err != nil {
				return phase{}, err
			}
		}
		return r.constrained()
	}
	return phase{}, fmt.Errorf("engine: unknown decision %d", act)
}

// completeOpener writes what the format's call prefix has beyond the opener the model
// wrote (Qwen3-Coder's "<tool_call>" still needs "\n<function="; DeepSeek's group opener
// needs the call opener).
func (r *enforcer) completeOpener() error {
	if r.f.Tools.Kind == toolgrammar.Harmony {
		// Cut back to the recipient; a header that named none (a Glimmer
		// block the model addressed to no one) needs the recipient's marker.
		_, err := r.prefill(r.recipientPrefix)
		return err
	}
	out := string(r.out)
	head := r.f.CallPrefix(out)
	for _, o := range append([]string{r.f.Tools.GroupOpen}, r.f.Tools.Open...) {
		if o == "" || !strings.HasSuffix(out, o) {
			continue
		}
		switch {
		case strings.HasPrefix(head, o):
			_, err := r.prefill(head[len(o):])
			return err
		case strings.HasSuffix(head, o):
			return nil
		}
	}
	_, err := r.prefill(head)
	return err
}

// constrained returns the phase that generates the call whose opener the transcript
// ends with, by the format's plan.
func (r *enforcer) constrained() (phase, error) {
	tools := r.pol.allowed
	switch r.f.Plan() {
	case toolgrammar.PlanCall:
		parallel := !r.pol.capReached(r.calls + 1)
		schema, err := toolgrammar.CallSchema(r.f, tools, parallel)
		if err != nil {
			return phase{}, err
		}
		return phase{kind: phaseCall, format: schema}, nil
	case toolgrammar.PlanNameThenArgs, toolgrammar.PlanNameOnly:
		if len(tools) == 1 {
			// One possible name: write it rather than have it generated.
			return r.named(tools[0])
		}
		schema, err := toolgrammar.NameSchema(tools)
		if err != nil {
			return phase{}, err
		}
		return phase{kind: phaseName, format: schema}, nil
	}
	return phase{}, fmt.Errorf("engine: format %s cannot constrain tool calls", r.f.ID)
}

// named writes a settled name and returns the phase of its arguments.
func (r *enforcer) named(t toolgrammar.Tool) (phase, error) {
	if _, err := r.prefill(r.f.ArgumentsPrefix(t.Name)); err != nil {
		return phase{}, err
	}
	return r.argsPhase(t)
}

func (r *enforcer) argsPhase(t toolgrammar.Tool) (phase, error) {
	xml := r.f.Plan() == toolgrammar.PlanNameOnly
	if xml && !r.retried {
		// XML parameters (Gemma's arguments) are not JSON: the model writes them
		// in its own syntax first, and the call is validated when it ends.
		return phase{kind: phaseFree}, nil
	}
	schema, err := toolgrammar.ArgumentsSchema(t)
	if err != nil {
		return phase{}, err
	}
	if xml {
		// Its parameters failed (invalid, or it stopped or wandered inside the
		// call): the retry generates them as JSON under the tool's schema, which
		// ends where the arguments do, and the engine writes them in the
		// format's syntax.
		return phase{kind: phaseXMLArgs, format: schema}, nil
	}
	return phase{kind: phaseArgs, format: schema}, nil
}

// afterPhase continues after a phase that ran to its end (done_reason stop, or a
// one-token phase's limit).
func (r *enforcer) afterPhase(ph phase, res Chunk) (action, phase, error) {
	switch ph.kind {
	case phaseFree:
		if res.DoneReason == "length" {
			return actContinue, phase{kind: phaseFree}, nil
		}
		if r.holding {
			// It stopped inside a call: what it wrote cannot be a valid call.
			// Before a required call is forced again: a call the engine forced
			// (an XML one, whose parameters the model writes) would otherwise be
			// forced again and again, with no bound but the budget.
			return r.callFailed(errors.New("the model stopped in the middle of a tool call")), phase{}, nil
		}
		if r.mustCall() {
			// The model stopped without calling.
			r.cut = r.boundary
			return actForce, phase{}, nil
		}
		act, err := r.closeParser()
		return act, phase{}, err
	case phaseCall, phaseArgs, phaseXMLArgs:
		suffix := r.f.CallSuffix()
		if ph.kind == phaseXMLArgs {
			params, err := r.f.ArgumentsFromJSON(strings.TrimSpace(r.pendingArgs))
			if err != nil {
				return r.callFailed(err), phase{}, nil
			}
			suffix = params
		}
		act, err := r.prefill(suffix)
		if err != nil || act != actContinue {
			return act, phase{}, err
		}
		if r.holding {
			// The grammar ended without a complete call (a stop string inside it).
			return r.callFailed(errors.New("the constrained call did not complete")), phase{}, nil
		}
		if r.noMoreCalls() {
			return actEnd, phase{}, nil
		}
		return actContinue, phase{kind: phaseFree}, nil
	case phaseName:
		var name string
		if err := json.Unmarshal([]byte(strings.TrimSpace(r.pendingName)), &name); err != nil {
			return r.callFailed(fmt.Errorf("the constrained name %q is not a JSON string", r.pendingName)), phase{}, nil
		}
		t, ok := r.pol.tool(name)
		if !ok {
			return r.callFailed(fmt.Errorf("the constrained name %q is not an allowed tool", name)), phase{}, nil
		}
		next, err := r.named(t)
		return actContinue, next, err
	}
	return 0, phase{}, fmt.Errorf("engine: unknown phase %d", ph.kind)
}

// closeParser ends the output: what the parser held back comes out. That may be
// calls known to be calls only now, an answer of bare calls (lfm2): they are
// validated together before any reaches the client, and one that fails takes them
// all back, to be generated again under the grammar from where they began.
func (r *enforcer) closeParser() (action, error) {
	evs := r.p.Close()
	if at, err := r.checkCalls(evs); err != nil {
		r.openAt = at
		return r.callFailed(err), nil
	}
	act, err := r.events(evs, phaseCall)
	if err != nil || act != actContinue {
		return act, err
	}
	return actEnd, nil
}

// checkCalls validates the calls that end in evs, as many as the response may still
// make; on a failure it returns where the first of them opened.
func (r *enforcer) checkCalls(evs []toolgrammar.Event) (int64, error) {
	at, n := r.openAt, 0
	for _, ev := range evs {
		switch {
		case ev.Kind == toolgrammar.CallOpen && n == 0:
			at = ev.Offset
		case ev.Kind == toolgrammar.CallEnd:
			if err := r.pol.check(ev.Name, ev.Text); err != nil {
				return at, err
			}
			if n++; r.pol.capReached(r.calls + n) {
				return at, nil
			}
		}
	}
	return at, nil
}

// rewind cuts the transcript back to offset to. The parser cannot go back, so a fresh
// one reads the kept transcript again; its events were reported the first time.
func (r *enforcer) rewind(to int64) {
	r.out = r.out[:to]
	r.sink.tokens.cut(to)
	r.p = toolgrammar.NewParser(r.f, r.popts)
	r.inReasoning = r.j.startInReasoning
	evs := r.p.Feed(string(r.out))
	for {
		for _, ev := range evs {
			switch ev.Kind {
			case toolgrammar.ReasoningDelta:
				r.inReasoning = true
			case toolgrammar.ReasoningEnd:
				r.inReasoning = false
			}
		}
		if r.p.Pending() == "" || len(evs) == 0 {
			return
		}
		evs = r.p.Feed("")
	}
}

// stopForBudget ends the response incomplete: the item in progress (a call cut short
// included) ends incomplete and is the last.
func (r *enforcer) stopForBudget() error {
	if r.holding {
		for _, h := range r.held {
			if h.Kind == toolgrammar.CallEnd {
				break
			}
			if err := r.sink.apply([]toolgrammar.Event{h}); err != nil {
				return err
			}
		}
		r.holding, r.held = false, nil
	} else if !r.section {
		// Text the parser held back (a possible delimiter) is output too. An
		// unterminated reasoning block is not closed: it ends incomplete. After
		// an enforced call there is none: only calls may follow it.
		for _, ev := range r.p.Close() {
			switch ev.Kind {
			case toolgrammar.TextDelta, toolgrammar.ReasoningDelta:
				if err := r.sink.apply([]toolgrammar.Event{ev}); err != nil {
					return err
				}
			}
		}
	}
	return errBudget
}

var errBudget = errors.New("engine: output budget exhausted")

// IncompleteToolCallLimit is the incomplete reason of a response whose enforced calls
// reached hearth's safety cap (safetyMaxCalls) while the request allowed more: the
// model may have had more calls to make, so the response is not complete.
const IncompleteToolCallLimit = "tool_call_limit"

// finish ends the response from how the phases ended.
func (r *enforcer) finish(ctx context.Context, err error) error {
	usage := hearth.Usage{InputTokens: r.inputTokens, OutputTokens: r.outputTokens}
	usage.OutputTokensDetails.ReasoningTokens = min(r.reasoningTokens, r.outputTokens)
	usage.InputTokensDetails.CachedTokens = cachedTokens(r.j.kv.prev, r.j.Prompt, r.j.gen.Images, r.inputTokens)
	turn := usage
	usage = r.j.hosted.total(usage)
	if r.lastTokens > 0 {
		r.j.kv.keep(r.lastPrompt+r.lastOut.String(), r.j.gen.Images,
			cacheMark{len(r.j.Prompt), r.inputTokens},
			cacheMark{len(r.lastPrompt), r.lastPromptTokens},
			cacheMark{len(r.lastPrompt) + r.lastOut.Len(), r.lastTokens})
	}
	// Released before a hosted turn goes on from here: the runtime's slot is free.
	r.j.e.releaseKV(r.j.kv)
	var malformed *malformedCallError
	switch {
	case err == nil && r.capped:
		r.b.Incomplete(IncompleteToolCallLimit, usage)
		return nil
	case err == nil:
		return r.j.complete(ctx, r.b, turn)
	case errors.Is(err, errBudget):
		r.b.Incomplete(hearth.IncompleteMaxOutputTokens, usage)
		return nil
	case errors.As(err, &malformed):
		r.b.Fail(hearth.ModelError(malformed.Error()), &usage)
	case ctx.Err() != nil:
		r.b.Incomplete(IncompleteClientDisconnected, usage)
		return ctx.Err()
	default:
		r.b.Fail(runtimeError(err), &usage)
	}
	return err
}
