package websearch

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"hearth"
)

// Web search as a hosted tool: OpenAI's `web_search` (and `web_search_preview`)
// tools. hearth has no search engine of its own: the operator names an MCP server's
// search tool, and a request's web_search tool then becomes a function the model may
// call; hearth runs the search, reports it as a web_search_call item and feeds the
// results back. The Open Responses schema has none of this; the shapes below are
// OpenAI's (the openai npm package, src/resources/responses/responses.ts:
// ResponseFunctionWebSearch, ResponseWebSearchCall*Event, WebSearchTool). The kind
// declares them to the root package when it is imported (init, below).
const (
	ToolWebSearch        = "web_search"
	ToolWebSearchPreview = "web_search_preview"

	ItemWebSearchCall   = "web_search_call"
	PrefixWebSearchCall = "ws"

	// IncludeWebSearchSources asks for the URLs a search returned, in the
	// web_search_call item's action.sources.
	IncludeWebSearchSources = "web_search_call.action.sources"
)

// OpenAI's streaming events of a web search call.
const (
	EventWebSearchCallInProgress = "response.web_search_call.in_progress"
	EventWebSearchCallSearching  = "response.web_search_call.searching"
	EventWebSearchCallCompleted  = "response.web_search_call.completed"
)

// WebSearchToolTypes are the request tool types of web search: OpenAI's names and
// their dated versions (WebSearchTool, WebSearchPreviewTool).
var WebSearchToolTypes = []string{ToolWebSearch, "web_search_2025_08_26", ToolWebSearchPreview, "web_search_preview_2025_03_11"}

// IsWebSearchTool reports whether a request tool type is a web search tool.
func IsWebSearchTool(typ string) bool { return slices.Contains(WebSearchToolTypes, typ) }

// WebSearchAction is a web_search_call item's action. hearth makes "search"
// actions; an item a client sends back with another action (open_page,
// find_in_page) keeps it as it came, in Raw.
type WebSearchAction struct {
	Type  string
	Query string
	// Sources are the URLs the search returned; nil when the request did not
	// include them (the item then has no sources field).
	Sources []WebSearchSource
	Raw     json.RawMessage
}

// CloneHosted copies the action, its sources too.
func (a *WebSearchAction) CloneHosted() hearth.HostedData {
	c := *a
	if c.Sources != nil {
		c.Sources = append([]WebSearchSource{}, c.Sources...)
	}
	return &c
}

// ActionOf returns a web_search_call's action (nil for an item of another kind).
func ActionOf(it hearth.Item) *WebSearchAction { return searchCall.Of(it) }

// WebSearchSource is one result of a search as action.sources reports it.
// Title is not on the wire (OpenAI's source has type and url only): it serves
// the url_citation annotations of the response that made the search.
type WebSearchSource struct {
	URL   string
	Title string
}

type webSearchSourceJSON struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

type webSearchActionJSON struct {
	Type    string                `json:"type"`
	Query   string                `json:"query"`
	Sources []webSearchSourceJSON `json:"sources,omitempty"`
}

type webSearchCallJSON struct {
	Type   string          `json:"type"`
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Action json.RawMessage `json:"action"`
}

func marshalWebSearchAction(a *WebSearchAction) (json.RawMessage, error) {
	if a == nil {
		a = &WebSearchAction{Type: "search"}
	}
	if a.Raw != nil {
		return a.Raw, nil
	}
	out := webSearchActionJSON{Type: cmp.Or(a.Type, "search"), Query: a.Query}
	if a.Sources != nil {
		out.Sources = make([]webSearchSourceJSON, len(a.Sources))
		for i, s := range a.Sources {
			out.Sources[i] = webSearchSourceJSON{"url", s.URL}
		}
	}
	data, err := json.Marshal(out)
	if err == nil && a.Sources != nil && len(a.Sources) == 0 {
		// Asked for and none found: an empty list, not a missing field.
		data = append(data[:len(data)-1], `,"sources":[]}`...)
	}
	return data, err
}

// marshalItem writes a web_search_call.
func marshalItem(it hearth.Item) ([]byte, error) {
	action, err := marshalWebSearchAction(ActionOf(it))
	if err != nil {
		return nil, err
	}
	return json.Marshal(webSearchCallJSON{it.Type, it.ID, cmp.Or(it.Status, hearth.StatusCompleted), action})
}

// enumWebSearchCallStatus: OpenAI's statuses of a web_search_call.
var enumWebSearchCallStatus = []string{hearth.StatusInProgress, "searching", hearth.StatusCompleted, hearth.StatusFailed, hearth.StatusIncomplete}

// decodeItem reads a web_search_call's action (type, id and status are read
// already).
func decodeItem(o hearth.Object, it *hearth.Item) error {
	raw, has := o.Get("action")
	if !has {
		it.Hosted = &WebSearchAction{Type: "search"}
		return nil
	}
	a, err := hearth.AsObject(raw, o.At("action"))
	if err != nil {
		return err
	}
	typ, err := a.RequiredString("type")
	if err != nil {
		return err
	}
	w := &WebSearchAction{Type: typ}
	if typ != "search" {
		w.Raw = append(json.RawMessage{}, raw...)
		it.Hosted = w
		return nil
	}
	if w.Query, _, err = a.String("query"); err != nil {
		return err
	}
	if elems, ok, err := a.Array("sources"); err != nil {
		return err
	} else if ok {
		w.Sources = []WebSearchSource{}
		for i, e := range elems {
			so, err := hearth.AsObject(e, hearth.IndexPath(a.At("sources"), i))
			if err != nil {
				return err
			}
			u, _, err := so.String("url")
			if err != nil {
				return err
			}
			w.Sources = append(w.Sources, WebSearchSource{URL: u})
		}
	}
	it.Hosted = w
	return nil
}

// searchCall is the life of a web_search_call (hearth.SearchCall); its citations are
// url_citation annotations.
var searchCall = &hearth.SearchCall[*WebSearchAction, WebSearchSource]{
	Type: ItemWebSearchCall, Prefix: PrefixWebSearchCall,
	EventInProgress: EventWebSearchCallInProgress, EventSearching: EventWebSearchCallSearching,
	EventCompleted: EventWebSearchCallCompleted,
	New:            func() *WebSearchAction { return &WebSearchAction{Type: "search"} },
	Cite:           citations,
	// URL citations come before those of other kinds (file citations), as they did
	// before the kinds had packages of their own.
	CiteOrder: 0,
}

// StartCall starts a web_search_call hearth runs itself (hearth.SearchCall.Start):
// response.web_search_call.in_progress follows output_item.added.
func StartCall(b *hearth.Builder) error { return searchCall.Start(b) }

// Searching sets the open web_search_call's query: the search runs next.
func Searching(b *hearth.Builder, query string) error {
	return searchCall.Searching(b, func(a *WebSearchAction) { a.Query = query })
}

// EndCall ends the open web_search_call (hearth.SearchCall.End), completed or failed
// (the search did not run, the tool reported an error), with its sources (nil leaves
// them out of the item: the request did not include them); cite are the results the
// answer may cite (a url_citation where output text names one's URL), results what
// the model reads of the search.
func EndCall(b *hearth.Builder, sources, cite []WebSearchSource, results string, failed bool) error {
	return searchCall.End(b, results, func(a *WebSearchAction) {
		if sources != nil {
			a.Sources = append([]WebSearchSource{}, sources...)
		}
	}, cite, failed)
}

// ReemitCall reports a stored web_search_call as the live stream did.
func ReemitCall(b *hearth.Builder, stored hearth.Item) error { return searchCall.Reemit(b, stored) }

// citations finds where text names the URL of a result the response's searches
// returned: one url_citation per occurrence, with start and end as indexes of
// characters (code points) of text, in the order they appear.
func citations(text string, cite []WebSearchSource) []hearth.Annotation {
	var out []hearth.Annotation
	type hit struct{ start, end int }
	taken := map[hit]bool{}
	for _, s := range cite {
		if s.URL == "" {
			continue
		}
		for from := 0; from < len(text); {
			i := strings.Index(text[from:], s.URL)
			if i < 0 {
				break
			}
			i += from
			h := hit{i, i + len(s.URL)}
			from = h.end
			if taken[h] {
				continue
			}
			taken[h] = true
			start := utf8.RuneCountInString(text[:h.start])
			out = append(out, hearth.Annotation{Type: "url_citation", URL: s.URL, Title: s.Title,
				StartIndex: start, EndIndex: start + utf8.RuneCountInString(s.URL)})
		}
	}
	slices.SortStableFunc(out, func(a, b hearth.Annotation) int { return a.StartIndex - b.StartIndex })
	return out
}

func init() {
	hearth.RegisterKind(hearth.Kind{
		Name:  "web_search",
		Order: 2,
		Items: []hearth.ItemType{{
			Type: ItemWebSearchCall, Statuses: enumWebSearchCallStatus, Decode: decodeItem, Marshal: marshalItem,
			// OpenAI streams no arguments of a web search: the item carries its
			// query, in its action.
			Arguments: true,
		}},
		// Whether hearth can search is its configuration (a search server), so the
		// tools are not Runs: the engine runs them where a kind is registered.
		Tools: []hearth.ToolType{{Types: WebSearchToolTypes, Forced: true}},
		Events: []hearth.EventType{
			{Type: EventWebSearchCallInProgress}, {Type: EventWebSearchCallSearching}, {Type: EventWebSearchCallCompleted},
		},
		Includes: []string{IncludeWebSearchSources},
	})
}
