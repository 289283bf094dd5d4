// Package filesearch is file search as a hosted tool kind of the engine: a request's
// {"type": "file_search", "vector_store_ids": [...]} tool becomes a function the model
// may call; hearth searches the caller's vector stores, reports the search as a
// file_search_call item and feeds the results back to the model, whose answer's
// mentions of a result's file name become file_citation annotations.
//
// The package knows no HTTP and no database: it reaches the vector stores through
// Stores (the server's, in the wiring).
package filesearch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"hearth"
	"hearth/engine"
	"hearth/internal/attrfilter"
	"hearth/internal/scrub"
	"hearth/internal/textcap"
)

// Stores is what a file search reaches: the caller's vector stores (the server's, in
// the wiring; a fake in tests of the kind). owner is the response's caller, the
// storage owner of its API key.
type Stores interface {
	// MissingVectorStore returns the index in ids of the first id that names no
	// vector store of owner (another key's store is missing too), -1 when all do.
	MissingVectorStore(ctx context.Context, owner string, ids []string) (int, error)
	// SearchVectorStores runs one search over owner's stores: the best results of
	// them all, best first. An error is a search that could not run.
	SearchVectorStores(ctx context.Context, owner string, q FileSearchQuery) ([]FileSearchResult, error)
}

// FunctionName is the function the model calls to search.
const FunctionName = "file_search"

// Description and Parameters are the search function's, as the model is offered it.
const Description = "Search the user's files. Returns numbered excerpts, each under the name of its file." +
	" When the answer uses an excerpt, name its file."

var Parameters = json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to search the files for."}},"required":["query"],"additionalProperties":false}`)

// Kind serves the file_search tool type.
type Kind struct {
	stores Stores
	log    *slog.Logger
}

// NewKind returns the kind, searching stores.
func NewKind(stores Stores, log *slog.Logger) *Kind {
	return &Kind{stores: stores, log: cmp.Or(log, slog.Default())}
}

var (
	_ engine.HostedKind      = (*Kind)(nil)
	_ engine.HostedReemitter = (*Kind)(nil)
	_ engine.HostedViewer    = (*Kind)(nil)
)

func (k *Kind) ToolType() string { return ToolFileSearch }

// Owns reports whether itemType is file_search_call.
func (k *Kind) Owns(itemType string) bool { return itemType == ItemFileSearchCall }

// plan is one turn's file search: the function offered and the search it runs.
type plan struct {
	engine.OneFunction
	k *Kind
	// tool is the request's file_search tool, caller whose stores it searches.
	tool   *FileSearchTool
	caller string
	// results: the request included the results in the items.
	results bool
}

// Plan checks the request's file_search tool (one per request; its filter; its
// stores, the caller's) and offers the search function, under the name file_search
// unless the request's own tools take it.
func (k *Kind) Plan(ctx context.Context, r *engine.HostedRequest) (engine.HostedPlan, error) {
	at := func(field string) string { return fmt.Sprintf("tools[%d].%s", r.Tools[0], field) }
	if len(r.Tools) > 1 {
		p := fmt.Sprintf("tools[%d].type", r.Tools[1])
		return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue, fmt.Sprintf(
			"Invalid '%s': a request has at most one file_search tool (name several vector stores in its vector_store_ids).", p))
	}
	tool := ToolOf(&r.Request.Tools[r.Tools[0]])
	if tool == nil {
		return nil, fmt.Errorf("filesearch: tools[%d] was not decoded as a file_search tool", r.Tools[0])
	}
	if len(tool.Filters) > 0 {
		if _, err := attrfilter.Parse(tool.Filters, at("filters")); err != nil {
			var fe *attrfilter.Error
			if errors.As(err, &fe) {
				return nil, hearth.InvalidRequest(fe.Param, hearth.CodeInvalidValue, "Invalid '"+fe.Param+"': "+fe.Message+".")
			}
			return nil, err
		}
	}
	if k.stores == nil {
		p := fmt.Sprintf("tools[%d].type", r.Tools[0])
		return nil, hearth.InvalidRequest(p, hearth.CodeInvalidValue, fmt.Sprintf("Invalid '%s': this hearth has no vector stores to search.", p))
	}
	// A later turn of the same response searched these stores already: a store
	// deleted since then fails its search, which the model reads.
	if !r.LaterTurn {
		i, err := k.stores.MissingVectorStore(ctx, r.Caller, tool.VectorStoreIDs)
		if err != nil {
			return nil, err
		}
		if i >= 0 {
			return nil, hearth.NotFound(fmt.Sprintf("%s[%d]", at("vector_store_ids"), i), hearth.CodeVectorStoreNotFound,
				fmt.Sprintf("Vector store with id '%s' not found.", textcap.Cut(tool.VectorStoreIDs[i], 100)))
		}
	}
	p := &plan{OneFunction: engine.OneFunction{Description: Description, Parameters: Parameters}, k: k, tool: tool, caller: r.Caller, results: r.Request.Includes(IncludeFileSearchResults)}
	if err := p.Offer(r, k.log, "the file search", FunctionName, "hearth_"+FunctionName); err != nil {
		return nil, err
	}
	p.Choice = p.toolChoice(r.Request.ToolChoice)
	return p, nil
}

// toolChoice is the request's tool_choice in terms of the search function: forcing
// file_search forces the function; allowed_tools that name file_search name it.
func (p *plan) toolChoice(c hearth.ToolChoice) *hearth.ToolChoice {
	fn := hearth.ToolRef{Type: hearth.ToolFunction, Name: p.Name}
	switch c.Type {
	case ToolFileSearch:
		return &hearth.ToolChoice{Type: hearth.ToolFunction, Name: p.Name}
	case "allowed_tools":
		out := c
		out.Allowed = make([]hearth.ToolRef, len(c.Allowed))
		changed := false
		for i, ref := range c.Allowed {
			if ref.Type == ToolFileSearch {
				ref, changed = fn, true
			}
			out.Allowed[i] = ref
		}
		if changed {
			return &out
		}
	}
	return nil
}

func (p *plan) AsCalls(items, other []hearth.Item) []hearth.Item { return asCalls(p.Name, items) }

// AsCalls renders file_search_call items as the call of file_search and its results.
func (k *Kind) AsCalls(items, other []hearth.Item) []hearth.Item { return asCalls(FunctionName, items) }

// Call returns the plan itself as the call of its function: each call is one search.
func (p *plan) Call(name string) (engine.HostedCall, bool) { return p, name == p.Name }

func (p *plan) Begin(b *hearth.Builder) error { return StartCall(b) }

// End runs the search. A search that could not run (no query, a store gone, the
// embedding model unavailable) ends the item failed and the model reads why; only
// the client's leaving (ctx) ends the response.
func (p *plan) End(ctx context.Context, b *hearth.Builder, arguments string) (bool, error) {
	query, ok := hearth.SearchQuery(arguments)
	if !ok {
		if err := Searching(b, nil); err != nil {
			return true, err
		}
		return true, EndCall(b, hearth.Shown[FileSearchResult](p.results, nil), nil, "Error: the search needs a query: call "+p.Name+" with {\"query\": \"...\"}.", true)
	}
	queries := []string{query}
	if err := Searching(b, queries); err != nil {
		return true, err
	}
	found, err := p.k.stores.SearchVectorStores(ctx, p.caller, FileSearchQuery{
		VectorStoreIDs: p.tool.VectorStoreIDs, Queries: queries, MaxNumResults: p.tool.Results(),
		Filters: p.tool.Filters, ScoreThreshold: p.tool.ScoreThreshold,
	})
	if ctx.Err() != nil {
		return true, ctx.Err()
	}
	if err != nil {
		p.k.log.Warn("file search failed", "error", err)
		// The model (and the client, in the item) read why without the runtime's
		// addresses and paths; the log keeps them.
		return true, EndCall(b, hearth.Shown[FileSearchResult](p.results, nil), nil, "Error: the search failed: "+scrub.HostDetails(err.Error()), true)
	}
	p.k.log.Info("file search", "stores", len(p.tool.VectorStoreIDs), "results", len(found))
	return true, EndCall(b, hearth.Shown(p.results, found), found, Render(found), false)
}

// Render is the results as the model reads them: numbered, each under its file's
// name (the name the answer cites it by), its text as the store holds it.
func Render(found []FileSearchResult) string {
	if len(found) == 0 {
		return "No results."
	}
	var sb strings.Builder
	for i, r := range found {
		if i > 0 {
			sb.WriteString("\n\n")
		}
		fmt.Fprintf(&sb, "[%d] %s\n%s", i+1, r.Filename, r.Text)
	}
	return sb.String()
}

// asCalls renders file_search_call items in function-call terms: the call of name
// with its query, and the results. An item of this response carries the text the
// model read; a stored one (a later response of the chain) has its results when the
// request that made it included them, rendered as the model read them then.
func asCalls(name string, items []hearth.Item) []hearth.Item {
	return searchCall.AsCalls(name, items, func(fs *FileSearchCall) (string, bool) {
		if fs == nil {
			return "", true
		}
		return strings.Join(fs.Queries, "; "), true
	}, func(fs *FileSearchCall) string {
		if fs != nil && fs.Results != nil {
			// The results the request included, kept in the item.
			return Render(fs.Results)
		}
		return "(The results of this search are not kept: the request did not include file_search_call.results. Search again to read them.)"
	})
}
