package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"hearth"
	"hearth/internal/seal"
)

// HostedKind is one kind of hosted tool: a request tool type that hearth runs itself,
// inside the response, rather than handing the call to the client (MCP servers are
// one kind, package mcp). The engine knows nothing of any kind's wire or items: it
// asks the kind what the model is offered, lets it run the calls the model makes, and
// lets it say how its items read in a later turn's conversation. The server asks the
// optional parts (HostedAccess, HostedReemitter, HostedViewer) for key limits, stream
// replays and the console.
//
// A kind is registered once, before the engine serves (Engine.RegisterHosted); its
// items, tools and events are declared to the root package by its own package
// (hearth.RegisterKind, docs/adding-a-kind.md).
type HostedKind interface {
	// ToolType is the type of the request tools the kind serves ("mcp").
	ToolType() string
	// Owns reports whether itemType is one of the kind's item types.
	Owns(itemType string) bool
	// Plan resolves a request's tools of the kind for one turn of a response: what
	// the model is offered, and how its calls run. An error is the request's (a
	// *hearth.Error) or the kind's failure.
	Plan(ctx context.Context, r *HostedRequest) (HostedPlan, error)
	// AsCalls renders the kind's items of a conversation as the model reads them
	// on a later turn: in function-call terms (calls and their outputs), the shape
	// every template knows, with the tools' own names; the rest of items is
	// unchanged. other is the rest of the conversation (history for input, input
	// for history), where an item may find what answers it. It serves a request that
	// carries the kind's items but offers none of its tools, and compaction.
	AsCalls(items, other []hearth.Item) []hearth.Item
}

// HostedRequest is what a kind plans a turn from.
type HostedRequest struct {
	// Request is the request as the engine runs this turn (tool_choice, the other
	// tools); Tools are the indexes in Request.Tools of the kind's own entries.
	Request *hearth.CreateResponseRequest
	Tools   []int
	// History and Input are the conversation, sealed items opened.
	History, Input []hearth.Item
	// LaterTurn: the turn continues a response whose earlier turn made hosted calls
	// (its items are the response's own, made for this very request).
	LaterTurn bool
	// Caller is whom the response is for (Inputs.Caller).
	Caller string
	// Taken reports whether a function name is the request's own or another kind's:
	// the kind offers its tools under other names.
	Taken func(name string) bool
	// Grammar reports why the runtime cannot generate the arguments of a function
	// name with parameters under a grammar (nil when it can: the kind may then
	// offer it strict).
	Grammar func(name string, parameters json.RawMessage) error
	// Seal is the engine's key, for what a kind issues and must recognise later
	// (nil when the engine has none).
	Seal *seal.Key
}

// HostedPlan is a kind's plan for one turn.
type HostedPlan interface {
	// Tools are the functions the model is offered for the kind's entries.
	Tools() []hearth.Tool
	// ToolChoice is the request's tool_choice in terms of those functions when it
	// named the kind's tools; nil leaves it as it is.
	ToolChoice() *hearth.ToolChoice
	// AsCalls is HostedKind.AsCalls with the names this turn offers.
	AsCalls(items, other []hearth.Item) []hearth.Item
	// Attach sets what the builder needs from the kind while the response is built
	// (hooks of the kind's items).
	Attach(b *hearth.Builder)
	// Start reports what the turn does before it generates (items of its own, calls
	// the client approved) and returns how many calls it ran.
	Start(ctx context.Context, b *hearth.Builder) (ran int, err error)
	// Call returns the call of the function the model calls by name, when it is one
	// of this plan's.
	Call(name string) (HostedCall, bool)
}

// HostedToolset is the optional part of a plan that decides which of the request's
// own tools (function, custom and namespace tools) the model is offered this turn:
// tool search keeps deferred tools out of the prompt until a search loads them, and
// adds the tools its searches loaded. The engine enforces tool_choice, allowed_tools
// and strict grammars over what it returns, as over any request's tools.
type HostedToolset interface {
	// OwnTools returns the tools offered in place of own (the request's own tools,
	// in order).
	OwnTools(own []hearth.Tool) []hearth.Tool
}

// HostedCall is one call the model makes of a kind's function.
type HostedCall interface {
	// Begin starts the call's item in b as the model starts the call; its
	// arguments then stream into it (Builder.ArgumentsDelta).
	Begin(b *hearth.Builder) error
	// End finishes the call, its item open in b with the arguments whole: it runs
	// and ends the item with the result (ran true), or ends it waiting for the
	// client (ran false, e.g. an approval request). A call that failed is the
	// model's to read, not an error; err ends the response (the client left).
	End(ctx context.Context, b *hearth.Builder, arguments string) (ran bool, err error)
}

// HostedAccess is the optional part of a kind whose tools the operator may limit to
// some API keys. The server refuses (403) a request whose tools or conversation name
// what the key may not use.
type HostedAccess interface {
	// ToolRefused reports whether the key named key may not use tool t; field is
	// the tool's field that names what is refused ("server_label"), subject how the
	// refusal names it ("The MCP server 'x'").
	ToolRefused(key string, t *hearth.Tool) (field, subject string, refused bool)
	// ItemRefused is ToolRefused for an item; an item of another kind, or of no
	// kind, passes (it is asked of every item of a conversation).
	ItemRefused(key string, it *hearth.Item) (field, subject string, refused bool)
}

// HostedReemitter is the optional part of a kind whose items a stored response's
// stream replay reports with events of their own.
type HostedReemitter interface {
	// Reemit reports the stored item it through b, with its stored id, as the live
	// stream reported it.
	Reemit(b *hearth.Builder, it hearth.Item)
}

// HostedViewer is the optional part of a kind that says how the console shows its
// items; the console shows the item's JSON otherwise.
type HostedViewer interface {
	View(it hearth.Item) HostedView
}

// HostedView is an item as the console shows it: what it names (a tool), its
// arguments and its text (each pretty-printed when it is JSON).
type HostedView struct {
	Name, Args, Text string
}

// RegisterHosted adds a hosted tool kind: requests may then use tools of its type.
// Call it while wiring, before the engine serves; a type registered twice is the
// later kind's.
func (e *Engine) RegisterHosted(k HostedKind) {
	for i, old := range e.kinds {
		if old.ToolType() == k.ToolType() {
			e.kinds[i] = k
			return
		}
	}
	e.kinds = append(e.kinds, k)
}

// HostedKinds lists the registered kinds, in the order they were registered.
func (e *Engine) HostedKinds() []HostedKind { return e.kinds }

// HostedKindOf returns the kind an item type belongs to.
func (e *Engine) HostedKindOf(itemType string) (HostedKind, bool) {
	for _, k := range e.kinds {
		if k.Owns(itemType) {
			return k, true
		}
	}
	return nil, false
}

// HostedKindFor returns the kind of a request tool type.
func (e *Engine) HostedKindFor(toolType string) (HostedKind, bool) {
	for _, k := range e.kinds {
		if k.ToolType() == toolType {
			return k, true
		}
	}
	return nil, false
}

// OneFunction is the part of a hosted plan that shows the model a single function and
// runs nothing before a turn (the search kinds). A kind's plan
// embeds it and adds its AsCalls and Call.
type OneFunction struct {
	// Name is the function's name this request (the kind's, or another where the
	// request's own tools take it); Description and Parameters describe it.
	Name        string
	Description string
	Parameters  json.RawMessage
	// Strict: the runtime generates the arguments under the schema's grammar.
	Strict bool
	// Choice is the request's tool_choice in terms of the function, or nil.
	Choice *hearth.ToolChoice
}

// Offer names the function the first of names that the request's own tools leave
// free, and makes it strict where the runtime can generate its arguments under the
// schema's grammar (log says why not). With every name taken, the kind's tool
// (tools[i].type) is a 400 saying that what needs the names.
func (f *OneFunction) Offer(r *HostedRequest, log *slog.Logger, what string, names ...string) error {
	for _, n := range names {
		if !r.Taken(n) {
			f.Name = n
			break
		}
	}
	if f.Name == "" {
		at := fmt.Sprintf("tools[%d].type", r.Tools[0])
		return hearth.InvalidRequest(at, hearth.CodeInvalidValue, fmt.Sprintf(
			"Invalid '%s': the request's own tools take the names %s and %s, which %s needs.", at, names[0], names[1], what))
	}
	if err := r.Grammar(f.Name, f.Parameters); err != nil {
		log.Info(names[0]+" offered without a grammar", "reason", err)
	} else {
		f.Strict = true
	}
	return nil
}

// Tools shows the model the function.
func (f *OneFunction) Tools() []hearth.Tool {
	strict := f.Strict
	return []hearth.Tool{{Type: hearth.ToolFunction, Name: f.Name, Description: f.Description, Parameters: f.Parameters, Strict: &strict}}
}

// ToolChoice is the request's choice rewritten for the function.
func (f *OneFunction) ToolChoice() *hearth.ToolChoice { return f.Choice }

// Attach does nothing: the function's items are made when it is called.
func (f *OneFunction) Attach(*hearth.Builder) {}

// Start does nothing before a turn: the function runs only when the model calls it.
func (f *OneFunction) Start(context.Context, *hearth.Builder) (int, error) { return 0, nil }
