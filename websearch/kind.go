// Package websearch is web search as a hosted tool kind of the engine: a request's
// {"type": "web_search"} (or "web_search_preview") tool becomes a function the model
// may call; hearth runs the search with a search tool the operator configured (an MCP
// server's, in the wiring), reports it as a web_search_call item, and feeds the
// results back to the model, whose answer's citations of the returned URLs become
// url_citation annotations.
//
// The package knows no MCP: it runs searches through a Backend, and reads a tool's
// output as the Config maps it.
package websearch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"hearth"
	"hearth/engine"
)

// Backend runs the operator's search tool: an MCP server's tool in the wiring, a
// fake in tests of the kind.
type Backend interface {
	// Call runs the search tool with arguments (a JSON object). A tool that reports
	// an error is output with isError; err is a call that failed (the server is
	// down, the time limit passed, ctx was cancelled).
	Call(ctx context.Context, arguments json.RawMessage) (output string, isError bool, err error)
	// KeyAllowed reports whether the API key named key may use the search tool.
	KeyAllowed(key string) bool
}

// Config says how a search becomes the tool's arguments and how the tool's output
// becomes results. The zero value of a field takes its default.
type Config struct {
	// QueryArgument is the argument of the tool that takes the query ("query").
	QueryArgument string
	// Arguments are further arguments passed on every call, as configured (the
	// number of results, say); a request never sets them.
	Arguments map[string]any
	// Results is the field of the tool's JSON output that lists the results
	// ("results"); output that is a JSON array is the list itself.
	Results string
	// URL, Title and Snippet are the fields of one result ("url", "title",
	// "snippet").
	URL, Title, Snippet string
}

func (c Config) withDefaults() Config {
	c.QueryArgument, c.Results = cmp.Or(c.QueryArgument, "query"), cmp.Or(c.Results, "results")
	c.URL, c.Title, c.Snippet = cmp.Or(c.URL, "url"), cmp.Or(c.Title, "title"), cmp.Or(c.Snippet, "snippet")
	return c
}

// FunctionName is the function the model calls to search.
const FunctionName = "web_search"

// Description and Parameters are the search function's, as the model is offered it.
const Description = "Search the web. Returns numbered results, each with a title, its URL and a snippet." +
	" When the answer uses a result, cite its URL."

var Parameters = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to search for."}},"required":["query"],"additionalProperties":false}`)

// Kind serves one request tool type (web_search or web_search_preview); the wiring
// registers one Kind per type over the same backend.
type Kind struct {
	toolType string
	backend  Backend
	cfg      Config
	log      *slog.Logger
}

// NewKind returns the kind of toolType (ToolWebSearch or
// ToolWebSearchPreview) searching with backend.
func NewKind(toolType string, backend Backend, cfg Config, log *slog.Logger) *Kind {
	return &Kind{toolType: toolType, backend: backend, cfg: cfg.withDefaults(), log: cmp.Or(log, slog.Default())}
}

var (
	_ engine.HostedKind      = (*Kind)(nil)
	_ engine.HostedAccess    = (*Kind)(nil)
	_ engine.HostedReemitter = (*Kind)(nil)
	_ engine.HostedViewer    = (*Kind)(nil)
)

func (k *Kind) ToolType() string { return k.toolType }

// Owns reports whether itemType is web_search_call (the kinds of both tool types own
// it; the engine asks the first).
func (k *Kind) Owns(itemType string) bool { return itemType == ItemWebSearchCall }

// plan is one turn's web search: the function offered, and whether the request
// asked for the sources in the items.
type plan struct {
	engine.OneFunction
	k       *Kind
	sources bool
}

// Plan offers the search function, under the name web_search unless the request's
// own tools take it (then under the tool type's name).
func (k *Kind) Plan(_ context.Context, r *engine.HostedRequest) (engine.HostedPlan, error) {
	p := &plan{OneFunction: engine.OneFunction{Description: Description, Parameters: Parameters}, k: k, sources: r.Request.Includes(IncludeWebSearchSources)}
	if err := p.Offer(r, k.log, "the search tool", FunctionName, k.toolType); err != nil {
		return nil, err
	}
	if r.Request.ToolChoice.Type == k.toolType {
		p.Choice = &hearth.ToolChoice{Type: hearth.ToolFunction, Name: p.Name}
	}
	return p, nil
}

func (p *plan) AsCalls(items, other []hearth.Item) []hearth.Item { return asCalls(p.Name, items) }

// AsCalls renders web_search_call items as the call of web_search and its results.
func (k *Kind) AsCalls(items, other []hearth.Item) []hearth.Item { return asCalls(FunctionName, items) }

// Call returns the plan itself as the call of its function: each call is one search.
func (p *plan) Call(name string) (engine.HostedCall, bool) { return p, name == p.Name }

func (p *plan) Begin(b *hearth.Builder) error { return StartCall(b) }

// End runs the search. A search that could not run (no query, the server down, the
// tool's error) ends the item failed and the model reads why; only the client's
// leaving (ctx) ends the response.
func (p *plan) End(ctx context.Context, b *hearth.Builder, arguments string) (bool, error) {
	k := p.k
	query, ok := hearth.SearchQuery(arguments)
	if err := Searching(b, query); err != nil {
		return true, err
	}
	if !ok {
		return true, EndCall(b, nil, nil, "Error: the search needs a query: call web_search with {\"query\": \"...\"}.", true)
	}
	toolArgs := map[string]any{}
	for a, v := range k.cfg.Arguments {
		toolArgs[a] = v
	}
	toolArgs[k.cfg.QueryArgument] = query
	raw, _ := json.Marshal(toolArgs)
	out, isError, err := k.backend.Call(ctx, raw)
	if ctx.Err() != nil {
		return true, ctx.Err()
	}
	switch {
	case err != nil:
		k.log.Warn("web search failed", "error", err)
		return true, EndCall(b, hearth.Shown[WebSearchSource](p.sources, nil), nil, "Error: "+err.Error(), true)
	case isError:
		k.log.Info("web search tool reported an error")
		return true, EndCall(b, hearth.Shown[WebSearchSource](p.sources, nil), nil, "Error: "+out, true)
	}
	results, ok := k.cfg.parse(out)
	text := out
	if ok {
		text = render(results)
	}
	cite := make([]WebSearchSource, 0, len(results))
	for _, r := range results {
		cite = append(cite, WebSearchSource{URL: r.URL, Title: r.Title})
	}
	k.log.Info("web search", "results", len(results))
	return true, EndCall(b, hearth.Shown(p.sources, cite), cite, text, false)
}

// result is one search result.
type result struct{ URL, Title, Snippet string }

// parse reads the tool's output as the Config maps it: a JSON array of results, or
// an object whose Results field is one. ok is false for output of another shape,
// which the model then reads as it came.
func (c Config) parse(out string) ([]result, bool) {
	var list []map[string]any
	if json.Unmarshal([]byte(out), &list) != nil {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(out), &obj) != nil || obj[c.Results] == nil || json.Unmarshal(obj[c.Results], &list) != nil {
			return nil, false
		}
	}
	str := func(m map[string]any, k string) string {
		s, _ := m[k].(string)
		return s
	}
	results := make([]result, 0, len(list))
	for _, m := range list {
		r := result{URL: str(m, c.URL), Title: str(m, c.Title), Snippet: str(m, c.Snippet)}
		if r.URL == "" {
			continue
		}
		results = append(results, r)
	}
	return results, true
}

// render is the results as the model reads them.
func render(results []result) string {
	if len(results) == 0 {
		return "No results."
	}
	var sb strings.Builder
	for i, r := range results {
		if i > 0 {
			sb.WriteString("\n\n")
		}
		fmt.Fprintf(&sb, "[%d] %s\n%s", i+1, r.Title, r.URL)
		if r.Snippet != "" {
			sb.WriteString("\n" + r.Snippet)
		}
	}
	return sb.String()
}

// asCalls renders web_search_call items in function-call terms: the call of name with
// its query, and the results. An item of this response carries the results the model
// read; a stored one (a later response of the chain) keeps only its sources, when
// the request that made it included them.
func asCalls(name string, items []hearth.Item) []hearth.Item {
	return searchCall.AsCalls(name, items, func(a *WebSearchAction) (string, bool) {
		switch {
		case a == nil:
			return "", true
		case a.Type != "" && a.Type != "search":
			return "", false // another action (a client's item from elsewhere): nothing to show
		}
		return a.Query, true
	}, func(a *WebSearchAction) string {
		if a == nil || len(a.Sources) == 0 {
			return "(The results of this search are not kept; search again to read them.)"
		}
		var sb strings.Builder
		sb.WriteString("Results (their text is not kept):")
		for i, s := range a.Sources {
			fmt.Fprintf(&sb, "\n[%d] %s", i+1, s.URL)
		}
		return sb.String()
	})
}
