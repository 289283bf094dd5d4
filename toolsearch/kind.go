// Package toolsearch is tool search as a hosted tool kind of the engine: a request's
// {"type": "tool_search"} tool keeps its deferred tools (defer_loading) out of the
// prompt and becomes a function the model calls to load the ones it needs. With
// execution "server" (the default) hearth runs the search itself over the deferred
// tools' names and descriptions (search.go) and reports it as a tool_search_call and
// a tool_search_output item; with execution "client" the call goes to the client,
// whose tool_search_output item in the next request's input names the tools to load.
// A tool_search_output anywhere in the conversation (this response's earlier turns,
// the stored chain, the input) loads its tools for every later turn, where the engine
// enforces them like any request tool (HostedToolset).
package toolsearch

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"hearth"
	"hearth/engine"
)

// FunctionName is the function the model calls to search.
const FunctionName = "tool_search"

// Parameters are the search function's arguments: what hearth's search reads, and
// the default of a client-executed search whose tool names none.
var Parameters = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"Words that say what the tools you need do."}},"required":["query"],"additionalProperties":false}`)

// descriptionHead is the start of the search function's description; a list of the
// searchable tools follows it.
const descriptionHead = "Search the deferred tools, whose names and descriptions are listed below, and load the ones that match the query: you can call them after the search. Searchable:"

// Kind is the tool_search kind; the wiring registers one.
type Kind struct {
	log *slog.Logger
}

// NewKind returns the tool_search kind.
func NewKind(log *slog.Logger) *Kind {
	return &Kind{log: cmp.Or(log, slog.Default())}
}

var (
	_ engine.HostedKind      = (*Kind)(nil)
	_ engine.HostedReemitter = (*Kind)(nil)
	_ engine.HostedViewer    = (*Kind)(nil)
	_ engine.HostedToolset   = (*plan)(nil)
)

func (k *Kind) ToolType() string { return ToolToolSearch }

// Owns reports whether itemType is tool_search_call or tool_search_output.
func (k *Kind) Owns(itemType string) bool {
	return itemType == ItemToolSearchCall || itemType == ItemToolSearchOutput
}

// toolKey names a deferrable tool: a function or custom tool at the top level
// (namespace ""), or a function of a namespace.
type toolKey struct{ namespace, name string }

// plan is one turn's tool search: the function offered, the deferred tools it
// searches, and the tools the conversation loaded so far.
type plan struct {
	// The function offered: its description and parameters are the client's own
	// for a client-executed search that gives them.
	engine.OneFunction
	k    *Kind
	exec string

	// deferred are the request's deferred tools, in order (a namespace's as
	// documents with their namespace).
	deferred []document
	// loaded are the tools the conversation's tool_search_output items loaded;
	// loadedDefs their definitions, in the order loaded (a namespace's functions
	// each under its namespace).
	loaded     map[toolKey]bool
	loadedDefs []loadedTool
}

type loadedTool struct {
	key  toolKey
	ns   hearth.Tool // the namespace, for a namespace's function
	tool hearth.Tool
}

// Plan offers the search function, under the name tool_search unless the request's
// own tools take it, described with the deferred tools' names and descriptions.
func (k *Kind) Plan(_ context.Context, r *engine.HostedRequest) (engine.HostedPlan, error) {
	spec := ToolOf(&r.Request.Tools[r.Tools[0]])
	if spec == nil {
		spec = &ToolSearch{Execution: ExecutionServer}
	}
	p := &plan{k: k, exec: spec.Execution, loaded: map[toolKey]bool{}}
	p.deferred = deferredDocuments(r.Request.Tools)
	p.Description, p.Parameters = describe(p.deferred), Parameters
	if p.exec == ExecutionClient {
		if spec.Description != "" {
			p.Description = spec.Description
		}
		if spec.Parameters != nil {
			p.Parameters = spec.Parameters
		}
	}
	if err := p.Offer(r, k.log, "the search tool", FunctionName, "search_tools"); err != nil {
		return nil, err
	}
	p.load(r.History)
	p.load(r.Input)
	p.Choice = p.toolChoice(r.Request.ToolChoice)
	return p, nil
}

// load takes the tools of the tool_search_output items of items.
func (p *plan) load(items []hearth.Item) {
	for _, it := range items {
		if it.Type != ItemToolSearchOutput {
			continue
		}
		for _, t := range Of(it).LoadedTools {
			switch t.Type {
			case hearth.ToolFunction, hearth.ToolCustom:
				p.add(loadedTool{key: toolKey{"", t.Name}, tool: t})
			case hearth.ToolNamespace:
				for _, c := range t.Tools {
					p.add(loadedTool{key: toolKey{t.Name, c.Name}, ns: t, tool: c})
				}
			}
		}
	}
}

func (p *plan) add(l loadedTool) {
	if p.loaded[l.key] {
		return
	}
	p.loaded[l.key] = true
	p.loadedDefs = append(p.loadedDefs, l)
}

// toolChoice is tool_choice with the search function allowed wherever the choice
// names deferred tools not loaded yet: the model must search before it can call
// them. nil leaves the choice as it is.
func (p *plan) toolChoice(c hearth.ToolChoice) *hearth.ToolChoice {
	unloaded := func(name string) bool {
		for _, d := range p.deferred {
			if d.key.name == name && !p.loaded[d.key] {
				return true
			}
		}
		return false
	}
	search := hearth.ToolRef{Type: hearth.ToolFunction, Name: p.Name}
	switch c.Type {
	case hearth.ToolFunction, hearth.ToolCustom:
		if unloaded(c.Name) {
			return &hearth.ToolChoice{Type: "allowed_tools", Mode: hearth.ToolChoiceRequired,
				Allowed: []hearth.ToolRef{{Type: c.Type, Name: c.Name}, search}}
		}
	case "allowed_tools":
		for _, ref := range c.Allowed {
			if unloaded(ref.Name) {
				out := c
				out.Allowed = append(append([]hearth.ToolRef{}, c.Allowed...), search)
				return &out
			}
		}
	}
	return nil
}

// OwnTools is the request's tools without its deferred ones, except those the
// conversation loaded; loaded tools that the request does not have (a client's
// search may load any tool, a chain's earlier request may have had others) follow
// at the end, a namespace's joining the request's namespace of that name.
func (p *plan) OwnTools(own []hearth.Tool) []hearth.Tool {
	present := map[toolKey]bool{}
	for _, t := range own {
		switch t.Type {
		case hearth.ToolFunction, hearth.ToolCustom:
			present[toolKey{"", t.Name}] = true
		case hearth.ToolNamespace:
			for _, c := range t.Tools {
				present[toolKey{t.Name, c.Name}] = true
			}
		}
	}
	// Loaded tools of no request tool, by namespace ("" for the top level).
	extra := map[string][]hearth.Tool{}
	var extraNS []hearth.Tool
	for _, l := range p.loadedDefs {
		if present[l.key] {
			continue
		}
		if l.key.namespace != "" && extra[l.key.namespace] == nil {
			extraNS = append(extraNS, l.ns)
		}
		extra[l.key.namespace] = append(extra[l.key.namespace], l.tool)
	}
	out := make([]hearth.Tool, 0, len(own)+len(extra))
	merged := map[string]bool{}
	for _, t := range own {
		switch t.Type {
		case hearth.ToolFunction, hearth.ToolCustom:
			if t.DeferLoading && !p.loaded[toolKey{"", t.Name}] {
				continue
			}
		case hearth.ToolNamespace:
			var kept []hearth.Tool
			for _, c := range t.Tools {
				if !c.DeferLoading || p.loaded[toolKey{t.Name, c.Name}] {
					kept = append(kept, c)
				}
			}
			kept = append(kept, extra[t.Name]...)
			merged[t.Name] = true
			if len(kept) == 0 {
				continue
			}
			t.Tools = kept
		}
		out = append(out, t)
	}
	out = append(out, extra[""]...)
	for _, ns := range extraNS {
		if merged[ns.Name] {
			continue
		}
		ns.Tools = extra[ns.Name]
		out = append(out, ns)
	}
	return out
}

func (p *plan) AsCalls(items, other []hearth.Item) []hearth.Item {
	return asCalls(p.Name, items, other)
}

// AsCalls renders tool search items as calls of tool_search and their results.
func (k *Kind) AsCalls(items, other []hearth.Item) []hearth.Item {
	return asCalls(FunctionName, items, other)
}

// Call returns the plan itself as the call of its function: each call is one search.
func (p *plan) Call(name string) (engine.HostedCall, bool) { return p, name == p.Name }

// Reemit reports a stored tool search item as the live stream did.
func (k *Kind) Reemit(b *hearth.Builder, it hearth.Item) { ReemitItem(b, it) }

// View shows a tool_search_call as the search and its arguments (with who ran it),
// a tool_search_output as the tools it loaded.
func (k *Kind) View(it hearth.Item) engine.HostedView {
	v := engine.HostedView{Name: FunctionName + " (" + Of(it).Execution + ")"}
	if it.Type == ItemToolSearchCall {
		v.Args = string(Arguments(it.Arguments))
		return v
	}
	v.Text = Loaded(Of(it).LoadedTools)
	return v
}

func (p *plan) Begin(b *hearth.Builder) error { return StartCall(b, p.exec) }

// End ends the call. A client-executed search waits for the client (the response
// ends, as after a function call); hearth's own runs now and reports the tools it
// found in a tool_search_output, which the model reads on the next turn. A query
// that cannot be read loads nothing, and the model reads that.
func (p *plan) End(ctx context.Context, b *hearth.Builder, arguments string) (bool, error) {
	cur, _ := b.Current()
	if err := EndCall(b); err != nil {
		return false, err
	}
	if p.exec == ExecutionClient {
		return false, nil
	}
	var args struct {
		Query string `json:"query"`
	}
	json.Unmarshal([]byte(arguments), &args)
	found := search(p.deferred, args.Query, MaxResults)
	p.k.log.Info("tool search", "query", args.Query, "found", len(found))
	return true, AddOutput(b, cur.CallID, found)
}

// asCalls renders tool_search_call items as calls of name with their arguments, and
// tool_search_output items as those calls' outputs: the names of the tools they
// loaded. An output whose call is in neither items nor other (a client that sends
// only the output) gets a call of its own before it.
func asCalls(name string, items, other []hearth.Item) []hearth.Item {
	has := false
	for i := range items {
		if items[i].Type == ItemToolSearchCall || items[i].Type == ItemToolSearchOutput {
			has = true
			break
		}
	}
	if !has {
		return items
	}
	calls := map[string]bool{}
	for _, list := range [][]hearth.Item{items, other} {
		for _, it := range list {
			if it.Type == ItemToolSearchCall {
				calls[callID(it)] = true
			}
		}
	}
	out := make([]hearth.Item, 0, len(items)+1)
	for _, it := range items {
		switch it.Type {
		case ItemToolSearchCall:
			out = append(out, hearth.AsCall(callID(it), name, string(Arguments(it.Arguments)), "")[0])
		case ItemToolSearchOutput:
			pair := hearth.AsCall(callID(it), name, "{}", Loaded(Of(it).LoadedTools))
			if calls[callID(it)] {
				pair = pair[1:] // its call is shown already
			}
			out = append(out, pair...)
		default:
			out = append(out, it)
		}
	}
	return out
}

func callID(it hearth.Item) string {
	if it.CallID != "" {
		return it.CallID
	}
	return it.ID
}

// Loaded is what the model reads of a tool_search_output: the names of the tools it
// loaded (a namespace's functions by their own names, as the model calls them).
func Loaded(tools []hearth.Tool) string {
	var names []string
	for _, t := range tools {
		if t.Type == hearth.ToolNamespace {
			for _, c := range t.Tools {
				names = append(names, c.Name)
			}
			continue
		}
		names = append(names, t.Name)
	}
	if len(names) == 0 {
		return "No deferred tool matched the search; none was loaded."
	}
	return "Loaded: " + strings.Join(names, ", ") + ". They can be called now."
}
