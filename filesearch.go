package hearth

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// File search as a hosted tool: OpenAI's `file_search` tool over the caller's vector
// stores. A request's file_search tool becomes a function the model may call; hearth
// searches the named stores, reports the search as a file_search_call item and feeds
// the results back; the answer's mentions of a result's file name become
// file_citation annotations. The Open Responses schema has none of this; the shapes
// below are OpenAI's (the openai npm package, src/resources/responses/responses.ts:
// FileSearchTool, ResponseFileSearchToolCall, ResponseFileSearchCall*Event,
// ResponseOutputText.FileCitation).
const (
	ToolFileSearch = "file_search"

	ItemFileSearchCall   = "file_search_call"
	PrefixFileSearchCall = "fs"

	// IncludeFileSearchResults asks for what a search found in the
	// file_search_call item's results.
	IncludeFileSearchResults = "file_search_call.results"
)

// OpenAI's streaming events of a file search call.
const (
	EventFileSearchCallInProgress = "response.file_search_call.in_progress"
	EventFileSearchCallSearching  = "response.file_search_call.searching"
	EventFileSearchCallCompleted  = "response.file_search_call.completed"
)

// File search bounds, OpenAI's: results per search, and the stores one tool names.
const (
	FileSearchMaxResults     = 50
	FileSearchDefaultResults = 10
	FileSearchMaxStores      = 16
)

// FileSearchTool is what a request's file_search tool asks for (Tool.Raw keeps it as
// sent, for the echo).
type FileSearchTool struct {
	VectorStoreIDs []string
	// MaxNumResults is 1..50; 0 when the request left it out (the default, 10).
	MaxNumResults int
	// Filters is the attribute filter as sent (a comparison or compound filter),
	// nil when none: the kind checks it, the search applies it.
	Filters json.RawMessage
	// Ranker is ranking_options.ranker as sent; ScoreThreshold its score_threshold
	// (0..1), nil when none. hybrid_search is accepted and not honoured.
	Ranker         string
	ScoreThreshold *float64
}

// Results is MaxNumResults with its default.
func (t *FileSearchTool) Results() int {
	if t.MaxNumResults == 0 {
		return FileSearchDefaultResults
	}
	return t.MaxNumResults
}

// FileSearchCall is a file_search_call item's own fields.
type FileSearchCall struct {
	Queries []string
	// Results are what the search found, nil when the request did not include
	// them (the item then has no results field).
	Results []FileSearchResult
}

// FileSearchResult is one chunk a file search found.
type FileSearchResult struct {
	FileID     string         `json:"file_id"`
	Filename   string         `json:"filename"`
	Score      float64        `json:"score"`
	Text       string         `json:"text"`
	Attributes map[string]any `json:"attributes"`
}

// FileSearchQuery is one search of a caller's vector stores, as a file search kind
// hands it to the search (the server's vector stores).
type FileSearchQuery struct {
	VectorStoreIDs []string
	Queries        []string
	MaxNumResults  int
	// Filters is the tool's attribute filter as sent, nil for none.
	Filters        json.RawMessage
	ScoreThreshold *float64
}

type fileSearchCallJSON struct {
	Type    string             `json:"type"`
	ID      string             `json:"id"`
	Status  string             `json:"status"`
	Queries []string           `json:"queries"`
	Results []FileSearchResult `json:"results,omitempty"`
}

// marshalFileSearchItem writes a file_search_call; ok is false for any other type.
func marshalFileSearchItem(it Item) (data []byte, ok bool, err error) {
	if it.Type != ItemFileSearchCall {
		return nil, false, nil
	}
	out := fileSearchCallJSON{Type: it.Type, ID: it.ID, Status: it.Status, Queries: []string{}}
	if out.Status == "" {
		out.Status = StatusCompleted
	}
	if fs := it.FileSearch; fs != nil {
		if fs.Queries != nil {
			out.Queries = fs.Queries
		}
		out.Results = fs.Results
		if slices.ContainsFunc(out.Results, func(r FileSearchResult) bool { return r.Attributes == nil }) {
			// OpenAI's results carry attributes always: none is {}.
			out.Results = slices.Clone(out.Results)
			for i := range out.Results {
				if out.Results[i].Attributes == nil {
					out.Results[i].Attributes = map[string]any{}
				}
			}
		}
	}
	data, err = json.Marshal(out)
	if err == nil && it.FileSearch != nil && it.FileSearch.Results != nil && len(it.FileSearch.Results) == 0 {
		// Asked for and none found: an empty list, not a missing field.
		data = append(data[:len(data)-1], `,"results":[]}`...)
	}
	return data, true, err
}

// enumFileSearchCallStatus: OpenAI's statuses of a file_search_call.
var enumFileSearchCallStatus = []string{StatusInProgress, "searching", StatusCompleted, StatusIncomplete, StatusFailed}

// decodeFileSearchItem reads a file_search_call's queries and results (type, id and
// status are read already); ok is false for any other type.
func decodeFileSearchItem(o object, it *Item) (ok bool, err error) {
	if it.Type != ItemFileSearchCall {
		return false, nil
	}
	fs := &FileSearchCall{Queries: []string{}}
	if elems, has, err := o.array("queries"); err != nil {
		return true, err
	} else if has {
		for i, e := range elems {
			q, err := asString(e, indexPath(o.at("queries"), i))
			if err != nil {
				return true, err
			}
			fs.Queries = append(fs.Queries, q)
		}
	}
	if raw, has := o.get("results"); has {
		if kindOf(raw) != kindArray {
			return true, typeError(o.at("results"), "an array of results", raw)
		}
		if err := json.Unmarshal(raw, &fs.Results); err != nil {
			return true, typeError(o.at("results"), "an array of results (file_id, filename, score, text, attributes)", raw)
		}
		if fs.Results == nil {
			fs.Results = []FileSearchResult{}
		}
	}
	it.FileSearch = fs
	return true, nil
}

// decodeFileSearchTool reads the fields of a {"type": "file_search"} tool. Whether
// the stores exist and are the caller's, and whether the filter is well formed, are
// the kind's to say: it knows the stores and the filter language.
func decodeFileSearchTool(o object) (*FileSearchTool, error) {
	t := &FileSearchTool{}
	p := o.at("vector_store_ids")
	elems, ok, err := o.array("vector_store_ids")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, missing(p)
	case len(elems) == 0:
		return nil, InvalidRequest(p, CodeEmptyArray, fmt.Sprintf("Invalid '%s': expected at least one vector store id.", p))
	case len(elems) > FileSearchMaxStores:
		return nil, InvalidRequest(p, CodeArrayAboveMaxLength, fmt.Sprintf("Invalid '%s': at most %d vector store ids.", p, FileSearchMaxStores))
	}
	for i, e := range elems {
		ep := indexPath(p, i)
		id, err := asString(e, ep)
		if err != nil {
			return nil, err
		}
		if id == "" {
			return nil, emptyString(ep)
		}
		if j := slices.Index(t.VectorStoreIDs, id); j >= 0 {
			return nil, InvalidRequest(ep, CodeInvalidValue, fmt.Sprintf("Invalid '%s': vector store '%s' is named twice (also at %s).", ep, id, indexPath(p, j)))
		}
		t.VectorStoreIDs = append(t.VectorStoreIDs, id)
	}
	if n, err := o.integerIn("max_num_results", 1, FileSearchMaxResults); err != nil {
		return nil, err
	} else if n != nil {
		t.MaxNumResults = *n
	}
	if raw, ok := o.get("filters"); ok {
		if kindOf(raw) != kindObject {
			return nil, typeError(o.at("filters"), "a comparison or compound filter object", raw)
		}
		t.Filters = compact(raw)
	}
	if ro, ok, err := o.object("ranking_options"); err != nil {
		return nil, err
	} else if ok {
		if t.Ranker, err = ro.enum("ranker", []string{"auto", "none", "default-2024-11-15"}); err != nil {
			return nil, err
		}
		if t.ScoreThreshold, err = ro.decimalIn("score_threshold", 0, 1); err != nil {
			return nil, err
		}
		// hybrid_search is accepted for the SDKs' sake and not honoured: hearth's
		// search is by embeddings alone.
		if _, _, err := ro.object("hybrid_search"); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// StartFileSearchCall completes the open item, if any, and starts a file_search_call
// hearth runs itself: output_item.added, then response.file_search_call.in_progress.
// The model's arguments (ArgumentsDelta) are kept out of the item, which reports the
// query in its queries once FileSearchSearching has it.
func (b *Builder) StartFileSearchCall() error {
	it := Item{Type: ItemFileSearchCall, ID: NewID(PrefixFileSearchCall), FileSearch: &FileSearchCall{Queries: []string{}}}
	if err := b.startItem(it); err != nil {
		return err
	}
	b.send(Event{Type: EventFileSearchCallInProgress, ItemID: it.ID, OutputIndex: b.cur})
	return nil
}

// FileSearchSearching sets the open file_search_call's queries and reports
// response.file_search_call.searching: the search runs next.
func (b *Builder) FileSearchSearching(queries []string) error {
	it, err := b.openFileSearch()
	if err != nil {
		return err
	}
	it.FileSearch.Queries = append([]string{}, queries...)
	it.Status = "searching"
	b.send(Event{Type: EventFileSearchCallSearching, ItemID: it.ID, OutputIndex: b.cur})
	return nil
}

// EndFileSearchCall ends the open file_search_call: completed with its results (nil
// leaves them out of the item: the request did not include them), then
// response.file_search_call.completed and output_item.done; or failed (the search
// could not run), with no completed event. cite are the results the answer may cite:
// output text that names one of their files gets a file_citation annotation.
//
// text is what the model reads of the search (not on the wire: the item's Output),
// for the response's later turns.
func (b *Builder) EndFileSearchCall(results, cite []FileSearchResult, text string, failed bool) error {
	it, err := b.openFileSearch()
	if err != nil {
		return err
	}
	it.Output = ToolOutput{Text: text}
	if results != nil {
		it.FileSearch.Results = append([]FileSearchResult{}, results...)
	}
	b.citableFiles = append(b.citableFiles, cite...)
	if failed {
		b.closeItem(StatusFailed)
		return nil
	}
	b.send(Event{Type: EventFileSearchCallCompleted, ItemID: it.ID, OutputIndex: b.cur})
	b.closeItem(StatusCompleted)
	return nil
}

func (b *Builder) openFileSearch() (*Item, error) {
	if b.state == stateFinished {
		return nil, ErrFinished
	}
	if b.cur < 0 || b.resp.Output[b.cur].Type != ItemFileSearchCall {
		return nil, fmt.Errorf("hearth: no file_search_call open")
	}
	it := &b.resp.Output[b.cur]
	if it.FileSearch == nil {
		it.FileSearch = &FileSearchCall{Queries: []string{}}
	}
	return it, nil
}

// ReemitFileSearchCall reports a stored file_search_call as the live stream did:
// added, in_progress, searching, completed (for a completed one), done, with its
// stored id.
func (b *Builder) ReemitFileSearchCall(stored Item) error {
	it := Item{Type: ItemFileSearchCall, ID: stored.ID, FileSearch: &FileSearchCall{Queries: []string{}}}
	if err := b.startItem(it); err != nil {
		return err
	}
	b.send(Event{Type: EventFileSearchCallInProgress, ItemID: it.ID, OutputIndex: b.cur})
	cur := &b.resp.Output[b.cur]
	if stored.FileSearch != nil {
		c := stored.Clone()
		cur.FileSearch = c.FileSearch
	}
	if stored.Status == StatusIncomplete {
		b.closeItem(StatusIncomplete)
		return nil
	}
	b.send(Event{Type: EventFileSearchCallSearching, ItemID: it.ID, OutputIndex: b.cur})
	if stored.Status == StatusFailed {
		b.closeItem(StatusFailed)
		return nil
	}
	b.send(Event{Type: EventFileSearchCallCompleted, ItemID: it.ID, OutputIndex: b.cur})
	b.closeItem(StatusCompleted)
	return nil
}

// fileCitations finds where text names the file of a result the response's searches
// returned: one file_citation per occurrence of a file name standing as a word of
// its own (not part of a longer name), whose index is the position, in characters
// (code points) of text, just after the name: where OpenAI places its citation
// marks. A name two files share cites the first result of it.
func fileCitations(text string, cite []FileSearchResult) []Annotation {
	var out []Annotation
	seen := map[string]bool{}
	taken := map[int]bool{}
	for _, r := range cite {
		if r.Filename == "" || seen[r.Filename] {
			continue
		}
		seen[r.Filename] = true
		for from := 0; from < len(text); {
			i := indexFrom(text, r.Filename, from)
			if i < 0 {
				break
			}
			end := i + len(r.Filename)
			from = end
			if !nameBoundary(text, i, end) || taken[end] {
				continue
			}
			taken[end] = true
			out = append(out, Annotation{Type: "file_citation", FileID: r.FileID, Filename: r.Filename,
				Index: utf8.RuneCountInString(text[:end])})
		}
	}
	slices.SortStableFunc(out, func(a, b Annotation) int { return a.Index - b.Index })
	return out
}

// nameBoundary reports whether text[start:end] stands apart from a longer name:
// the characters around it are not letters, digits or the marks file names join
// words with. A name at the end of a sentence ("see notes.md.") still counts.
func nameBoundary(text string, start, end int) bool {
	joins := func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-/\\", r)
	}
	if start > 0 {
		if r, _ := utf8.DecodeLastRuneInString(text[:start]); joins(r) || r == '.' {
			return false
		}
	}
	if end < len(text) {
		r, _ := utf8.DecodeRuneInString(text[end:])
		if joins(r) {
			return false
		}
		if r == '.' {
			// "notes.md.bak" is another file; "notes.md." ends a sentence.
			if n, _ := utf8.DecodeRuneInString(text[end+1:]); end+1 < len(text) && joins(n) {
				return false
			}
		}
	}
	return true
}
