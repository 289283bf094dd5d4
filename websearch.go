package hearth

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Web search as a hosted tool: OpenAI's `web_search` (and `web_search_preview`)
// tools. hearth has no search engine of its own: the operator names an MCP server's
// search tool, and a request's web_search tool then becomes a function the model may
// call; hearth runs the search, reports it as a web_search_call item and feeds the
// results back. The Open Responses schema has none of this; the shapes below are
// OpenAI's (the openai npm package, src/resources/responses/responses.ts:
// ResponseFunctionWebSearch, ResponseWebSearchCall*Event, WebSearchTool).
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
	out := webSearchActionJSON{Type: a.Type, Query: a.Query}
	if out.Type == "" {
		out.Type = "search"
	}
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

// marshalWebSearchItem writes a web_search_call; ok is false for any other type.
func marshalWebSearchItem(it Item) (data []byte, ok bool, err error) {
	if it.Type != ItemWebSearchCall {
		return nil, false, nil
	}
	action, err := marshalWebSearchAction(it.WebSearch)
	if err != nil {
		return nil, true, err
	}
	status := it.Status
	if status == "" {
		status = StatusCompleted
	}
	data, err = json.Marshal(webSearchCallJSON{it.Type, it.ID, status, action})
	return data, true, err
}

// enumWebSearchCallStatus: OpenAI's statuses of a web_search_call.
var enumWebSearchCallStatus = []string{StatusInProgress, "searching", StatusCompleted, StatusFailed, StatusIncomplete}

// decodeWebSearchItem reads a web_search_call's action (type, id and status are read
// already); ok is false for any other type.
func decodeWebSearchItem(o object, it *Item) (ok bool, err error) {
	if it.Type != ItemWebSearchCall {
		return false, nil
	}
	raw, has := o.get("action")
	if !has || kindOf(raw) == kindNull {
		it.WebSearch = &WebSearchAction{Type: "search"}
		return true, nil
	}
	a, err := asObject(raw, o.at("action"))
	if err != nil {
		return true, err
	}
	typ, err := a.requiredString("type")
	if err != nil {
		return true, err
	}
	w := &WebSearchAction{Type: typ}
	if typ != "search" {
		w.Raw = append(json.RawMessage{}, raw...)
		it.WebSearch = w
		return true, nil
	}
	if w.Query, _, err = a.string("query"); err != nil {
		return true, err
	}
	if elems, ok, err := a.array("sources"); err != nil {
		return true, err
	} else if ok {
		w.Sources = []WebSearchSource{}
		for i, e := range elems {
			so, err := asObject(e, indexPath(a.at("sources"), i))
			if err != nil {
				return true, err
			}
			u, _, err := so.string("url")
			if err != nil {
				return true, err
			}
			w.Sources = append(w.Sources, WebSearchSource{URL: u})
		}
	}
	it.WebSearch = w
	return true, nil
}

// StartWebSearchCall completes the open item, if any, and starts a web_search_call
// hearth runs itself: output_item.added, then response.web_search_call.in_progress.
// The model's arguments (ArgumentsDelta) are kept out of the item, which reports the
// query in its action once WebSearchSearching has it.
func (b *Builder) StartWebSearchCall() error {
	it := Item{Type: ItemWebSearchCall, ID: NewID(PrefixWebSearchCall), WebSearch: &WebSearchAction{Type: "search"}}
	if err := b.startItem(it); err != nil {
		return err
	}
	b.send(Event{Type: EventWebSearchCallInProgress, ItemID: it.ID, OutputIndex: b.cur})
	return nil
}

// WebSearchSearching sets the open web_search_call's query and reports
// response.web_search_call.searching: the search runs next.
func (b *Builder) WebSearchSearching(query string) error {
	it, err := b.openWebSearch()
	if err != nil {
		return err
	}
	it.WebSearch.Query = query
	it.Status = "searching"
	b.send(Event{Type: EventWebSearchCallSearching, ItemID: it.ID, OutputIndex: b.cur})
	return nil
}

// EndWebSearchCall ends the open web_search_call: completed with its sources (nil
// leaves them out of the item: the request did not include them), then
// response.web_search_call.completed and output_item.done; or failed (the search
// did not run or the tool reported an error), with no completed event. cite are the
// results the answer may cite: output text that names one of their URLs gets a
// url_citation annotation.
//
// results is what the model reads of the search (not on the wire: the item's Output),
// for the response's later turns.
func (b *Builder) EndWebSearchCall(sources, cite []WebSearchSource, results string, failed bool) error {
	it, err := b.openWebSearch()
	if err != nil {
		return err
	}
	it.Output = ToolOutput{Text: results}
	if sources != nil {
		it.WebSearch.Sources = append([]WebSearchSource{}, sources...)
	}
	b.citable = append(b.citable, cite...)
	if failed {
		b.closeItem(StatusFailed)
		return nil
	}
	b.send(Event{Type: EventWebSearchCallCompleted, ItemID: it.ID, OutputIndex: b.cur})
	b.closeItem(StatusCompleted)
	return nil
}

func (b *Builder) openWebSearch() (*Item, error) {
	if b.state == stateFinished {
		return nil, ErrFinished
	}
	if b.cur < 0 || b.resp.Output[b.cur].Type != ItemWebSearchCall {
		return nil, fmt.Errorf("hearth: no web_search_call open")
	}
	it := &b.resp.Output[b.cur]
	if it.WebSearch == nil {
		it.WebSearch = &WebSearchAction{Type: "search"}
	}
	return it, nil
}

// ReemitWebSearchCall reports a stored web_search_call as the live stream did: added,
// in_progress, searching, completed (for a completed one), done, with its stored id.
func (b *Builder) ReemitWebSearchCall(stored Item) error {
	it := Item{Type: ItemWebSearchCall, ID: stored.ID, WebSearch: &WebSearchAction{Type: "search"}}
	if err := b.startItem(it); err != nil {
		return err
	}
	b.send(Event{Type: EventWebSearchCallInProgress, ItemID: it.ID, OutputIndex: b.cur})
	cur := &b.resp.Output[b.cur]
	if stored.WebSearch != nil {
		a := *stored.WebSearch
		a.Sources = append([]WebSearchSource(nil), stored.WebSearch.Sources...)
		if stored.WebSearch.Sources != nil && a.Sources == nil {
			a.Sources = []WebSearchSource{}
		}
		cur.WebSearch = &a
	}
	status := stored.Status
	if status == StatusIncomplete {
		b.closeItem(StatusIncomplete)
		return nil
	}
	b.send(Event{Type: EventWebSearchCallSearching, ItemID: it.ID, OutputIndex: b.cur})
	if status == StatusFailed {
		b.closeItem(StatusFailed)
		return nil
	}
	b.send(Event{Type: EventWebSearchCallCompleted, ItemID: it.ID, OutputIndex: b.cur})
	b.closeItem(StatusCompleted)
	return nil
}

// citations finds where text names the URL of a result the response's searches
// returned: one url_citation per occurrence, with start and end as indexes of
// characters (code points) of text, in the order they appear.
func citations(text string, cite []WebSearchSource) []Annotation {
	var out []Annotation
	type hit struct{ start, end int }
	taken := map[hit]bool{}
	for _, s := range cite {
		if s.URL == "" {
			continue
		}
		for from := 0; from < len(text); {
			i := indexFrom(text, s.URL, from)
			if i < 0 {
				break
			}
			h := hit{i, i + len(s.URL)}
			from = h.end
			if taken[h] {
				continue
			}
			taken[h] = true
			start := utf8.RuneCountInString(text[:h.start])
			out = append(out, Annotation{Type: "url_citation", URL: s.URL, Title: s.Title,
				StartIndex: start, EndIndex: start + utf8.RuneCountInString(s.URL)})
		}
	}
	slices.SortStableFunc(out, func(a, b Annotation) int { return a.StartIndex - b.StartIndex })
	return out
}

func indexFrom(s, sub string, from int) int {
	i := strings.Index(s[from:], sub)
	if i < 0 {
		return -1
	}
	return from + i
}
