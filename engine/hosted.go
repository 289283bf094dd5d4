package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"hearth"
	"hearth/internal/scrub"
	"hearth/toolgrammar"
)

// hostedState is what a response with hosted tools carries across its turns: each
// kind's plan of the turn, and the counts of all turns. The kinds (kind.go) run the
// calls; the engine only continues the model after a turn that made some.
type hostedState struct {
	plans []HostedPlan

	// calls counts the hosted calls of the response, all turns.
	calls int
	// turnCalls counts the hosted calls of the current turn: the model continues
	// after a turn that made some.
	turnCalls int
	// turnPending counts the hosted calls of the current turn that wait for the
	// client (approval requests): the response then ends, for the client to answer.
	turnPending int
	// prior is the usage of the earlier turns.
	prior hearth.Usage
	// turnStart is the output index where the current turn's items begin.
	turnStart int
	// orig is the request as the client sent it, with its own input and the
	// history behind it, for the next turn's conversation.
	orig    *hearth.CreateResponseRequest
	history []hearth.Item
}

// planHosted resolves the request's hosted tools through their kinds: it returns a
// copy of req whose tools are the request's own plus the functions each kind offers,
// with tool_choice in those terms, and history and input with the kinds' items in
// function-call terms. A request with no hosted tools comes back unchanged, with a
// nil state (its kinds' items, if any, in function-call terms). history[:plain] is
// known to hold no kind's items.
func (e *Engine) planHosted(ctx context.Context, req *hearth.CreateResponseRequest, history, input []hearth.Item, plain int, inputs Inputs) (*hearth.CreateResponseRequest, []hearth.Item, []hearth.Item, *hostedState, error) {
	offered := false
	for i := range req.Tools {
		t := &req.Tools[i]
		if _, ok := e.HostedKindFor(t.Type); ok {
			offered = true
		} else if t.Hosted() && !t.Ignored() {
			// A hosted tool hearth runs, with no kind registered for it (the wiring
			// registers every kind; an engine built without it refuses the tool).
			p := fmt.Sprintf("tools[%d].type", i)
			return nil, nil, nil, nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue,
				fmt.Sprintf("Invalid '%s': this hearth runs no '%s' tools.", p, t.Type))
		}
	}
	if len(e.kinds) == 0 {
		return req, history, input, nil, nil
	}
	if !offered {
		// Earlier turns may have used hosted tools this request no longer offers:
		// they still render as the calls and results they were.
		for _, kind := range e.kinds {
			if hasItemsOf(kind, history[plain:]) || hasItemsOf(kind, input) {
				history, input = kind.AsCalls(history, input), kind.AsCalls(input, history)
			}
		}
		return req, history, input, nil, nil
	}

	// Each kind's entries of tools, by their index.
	entries := make([][]int, len(e.kinds))
	for i, t := range req.Tools {
		for k, kind := range e.kinds {
			if t.Type == kind.ToolType() {
				entries[k] = append(entries[k], i)
			}
		}
	}
	// Names taken by the request's own tools, then by the kinds planned before.
	taken := map[string]bool{}
	for _, t := range req.Tools {
		switch t.Type {
		case hearth.ToolFunction, hearth.ToolCustom:
			taken[t.Name] = true
		case hearth.ToolNamespace:
			for _, c := range t.Tools {
				taken[c.Name] = true
			}
		}
	}
	out := *req
	out.Tools = nil
	for _, t := range req.Tools {
		if _, hosted := e.HostedKindFor(t.Type); !hosted {
			out.Tools = append(out.Tools, t)
		}
	}
	own := len(out.Tools)
	st := &hostedState{orig: req, history: history}
	planned := make([]HostedPlan, len(e.kinds))
	for k, kind := range e.kinds {
		if len(entries[k]) == 0 {
			continue
		}
		p, err := kind.Plan(ctx, &HostedRequest{
			Request: req, Tools: entries[k], History: history, Input: input,
			LaterTurn: inputs.laterTurn, Caller: inputs.Caller,
			Taken: func(name string) bool { return taken[name] },
			Grammar: func(name string, params json.RawMessage) error {
				return e.checkToolGrammar(ctx, toolgrammar.Tool{Name: name, Parameters: params})
			},
			Seal: e.Seal,
		})
		if err != nil {
			return nil, nil, nil, nil, err
		}
		for _, t := range p.Tools() {
			taken[t.Name] = true
			out.Tools = append(out.Tools, t)
		}
		if c := p.ToolChoice(); c != nil {
			out.ToolChoice = *c
		}
		planned[k] = p
		st.plans = append(st.plans, p)
	}
	for _, p := range st.plans {
		if ts, ok := p.(HostedToolset); ok {
			shown := ts.OwnTools(out.Tools[:own:own])
			out.Tools = append(shown, out.Tools[own:]...)
			own = len(shown)
		}
	}
	h, in := history, input
	for k, kind := range e.kinds {
		if p := planned[k]; p != nil {
			h, in = p.AsCalls(h, in), p.AsCalls(in, h)
		} else if hasItemsOf(kind, h) || hasItemsOf(kind, in) {
			h, in = kind.AsCalls(h, in), kind.AsCalls(in, h)
		}
	}
	return &out, h, in, st, nil
}

// hostedAsCalls renders the hosted items of a conversation in function-call terms,
// for a caller that has no hosted tools to offer (compaction).
func (e *Engine) hostedAsCalls(history, input []hearth.Item) ([]hearth.Item, []hearth.Item) {
	for _, kind := range e.kinds {
		if hasItemsOf(kind, history) || hasItemsOf(kind, input) {
			history, input = kind.AsCalls(history, input), kind.AsCalls(input, history)
		}
	}
	return history, input
}

func hasItemsOf(k HostedKind, items []hearth.Item) bool {
	for i := range items {
		if k.Owns(items[i].Type) {
			return true
		}
	}
	return false
}

// lookup returns the hosted call the model makes by name.
func (st *hostedState) lookup(name string) (HostedCall, bool) {
	if st == nil {
		return nil, false
	}
	for _, p := range st.plans {
		if c, ok := p.Call(name); ok {
			return c, true
		}
	}
	return nil, false
}

// attach sets the kinds' builder hooks.
func (st *hostedState) attach(b *hearth.Builder) {
	for _, p := range st.plans {
		p.Attach(b)
	}
}

// start reports what a turn does before it generates: each kind's own items, then the
// calls the client approved.
func (st *hostedState) start(ctx context.Context, b *hearth.Builder) error {
	if st == nil {
		return nil
	}
	for _, p := range st.plans {
		ran, err := p.Start(ctx, b)
		st.calls += ran
		st.turnCalls += ran
		if err != nil {
			return err
		}
	}
	st.turnStart = len(b.Response().Output)
	return nil
}

// end finishes a hosted call the model made, and counts it.
func (st *hostedState) end(ctx context.Context, b *hearth.Builder, c HostedCall, arguments string) error {
	ctx, span := startToolSpan(ctx, b)
	ran, err := c.End(ctx, b, arguments)
	endToolSpan(span, b, ran, err)
	if ran {
		st.calls++
		st.turnCalls++
	} else if err == nil {
		st.turnPending++
	}
	return err
}

// maxTurns bounds the turns of one response: a model that calls hosted tools for
// ever still ends (the response is then incomplete, as at the call cap).
const maxTurns = 32

// complete ends a turn that finished normally: the response completes, unless the
// turn made hosted calls and nothing of it is the client's to run, when the model
// continues with the results in its prompt. usage is the turn's own.
func (j *Job) complete(ctx context.Context, b *hearth.Builder, usage hearth.Usage) error {
	st := j.hosted
	if st == nil {
		b.Complete(usage)
		return nil
	}
	total := st.total(usage)
	output := b.Response().Output
	clientCalls := st.turnPending > 0
	for _, it := range output[min(st.turnStart, len(output)):] {
		switch it.Type {
		case hearth.ItemFunctionCall, hearth.ItemCustomToolCall:
			clientCalls = true
		}
	}
	if st.turnCalls == 0 || clientCalls {
		b.Complete(total)
		return nil
	}
	if j.turn+1 >= maxTurns {
		b.Incomplete(IncompleteToolCallLimit, total)
		return nil
	}
	next := *st.orig
	next.Input = nil
	history := make([]hearth.Item, 0, len(st.history)+len(st.orig.Input)+len(output))
	history = append(append(append(history, st.history...), st.orig.Input...), output...)
	if st.orig.MaxOutputTokens != nil {
		left := *st.orig.MaxOutputTokens - total.OutputTokens
		if left <= 0 {
			b.Incomplete(hearth.IncompleteMaxOutputTokens, total)
			return nil
		}
		next.MaxOutputTokens = &left
	}
	if st.orig.MaxToolCalls != nil {
		left := *st.orig.MaxToolCalls - st.calls
		if left <= 0 {
			// No calls left: the model answers from what it has.
			next.ToolChoice = hearth.ToolChoice{Mode: hearth.ToolChoiceNone}
		} else {
			next.MaxToolCalls = &left
		}
	}
	if c := next.ToolChoice; c.EffectiveMode() == hearth.ToolChoiceRequired && !choosesClientTools(c) {
		// The required call was made; what follows is the model's choice.
		next.ToolChoice = hearth.ToolChoice{Mode: hearth.ToolChoiceAuto}
	}
	// The later turn is prepared with the response's inputs (its caller, placement,
	// cache group), marked as a later turn.
	in := j.in
	in.laterTurn = true
	nj, err := j.e.prepare(ctx, &next, history, in)
	if err != nil {
		var herr *hearth.Error
		if !errors.As(err, &herr) {
			herr = hearth.ServerError(scrub.HostDetails(err.Error()))
		}
		b.Fail(herr, &total)
		return err
	}
	nj.turn = j.turn + 1
	if nj.hosted != nil {
		nj.hosted.prior = total
		nj.hosted.calls = st.calls
		nj.hosted.orig, nj.hosted.history = st.orig, st.history
	}
	return nj.Run(ctx, b)
}

// choosesClientTools reports whether a tool_choice names tools of the client's own (a
// function or custom tool, allowed_tools). Only a call of one of them meets it, and
// such a call ends the response: hosted calls before it (a tool search that loads
// the named tool) leave it standing for the next turn.
//
// allowed_tools chooses the client's tools only when it lists one: a list of hosted
// tools alone ({"type": "file_search"}) was met by the hosted call just made, and left
// standing it would force another search every turn.
func choosesClientTools(c hearth.ToolChoice) bool {
	switch c.Type {
	case hearth.ToolFunction, hearth.ToolCustom:
		return true
	case "allowed_tools":
		for _, t := range c.Allowed {
			if t.Type == hearth.ToolFunction || t.Type == hearth.ToolCustom {
				return true
			}
		}
	}
	return false
}

// total adds the usage of the earlier turns to a turn's.
func (st *hostedState) total(u hearth.Usage) hearth.Usage {
	if st == nil {
		return u
	}
	p := st.prior
	u.InputTokens += p.InputTokens
	u.OutputTokens += p.OutputTokens
	u.TotalTokens = 0
	u.InputTokensDetails.CachedTokens += p.InputTokensDetails.CachedTokens
	u.OutputTokensDetails.ReasoningTokens += p.OutputTokensDetails.ReasoningTokens
	return u
}

// hostedFailed ends a response whose hosted tools could not start: the client left,
// or the builder refused.
func (j *Job) hostedFailed(ctx context.Context, b *hearth.Builder, err error) error {
	usage := j.hosted.total(hearth.Usage{})
	if ctx.Err() != nil {
		b.Incomplete(IncompleteClientDisconnected, usage)
		return ctx.Err()
	}
	b.Fail(hearth.ServerError(scrub.HostDetails(err.Error())), &usage)
	return err
}
