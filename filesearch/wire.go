package filesearch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"hearth"
)

// File search as a hosted tool: OpenAI's `file_search` tool over the caller's vector
// stores. A request's file_search tool becomes a function the model may call; hearth
// searches the named stores, reports the search as a file_search_call item and feeds
// the results back; the answer's mentions of a result's file name become
// file_citation annotations. The Open Responses schema has none of this; the shapes
// below are OpenAI's (the openai npm package, src/resources/responses/responses.ts:
// FileSearchTool, ResponseFileSearchToolCall, ResponseFileSearchCall*Event,
// ResponseOutputText.FileCitation). The kind declares them to the root package when
// it is imported (init, below).
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

// CloneHosted copies the call, its queries and results too.
func (c *FileSearchCall) CloneHosted() hearth.HostedData {
	fs := *c
	fs.Queries = slices.Clone(fs.Queries)
	if fs.Results != nil {
		fs.Results = append([]FileSearchResult{}, fs.Results...)
	}
	return &fs
}

// CallOf returns a file_search_call's queries and results (nil for an item of
// another kind).
func CallOf(it hearth.Item) *FileSearchCall { return searchCall.Of(it) }

// ToolOf returns what a request's file_search tool asks for (nil for a tool of
// another type).
func ToolOf(t *hearth.Tool) *FileSearchTool {
	f, _ := t.Spec.(*FileSearchTool)
	return f
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

// marshalItem writes a file_search_call.
func marshalItem(it hearth.Item) ([]byte, error) {
	out := fileSearchCallJSON{Type: it.Type, ID: it.ID, Status: cmp.Or(it.Status, hearth.StatusCompleted), Queries: []string{}}
	fs := CallOf(it)
	if fs != nil {
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
	data, err := json.Marshal(out)
	if err == nil && fs != nil && fs.Results != nil && len(fs.Results) == 0 {
		// Asked for and none found: an empty list, not a missing field.
		data = append(data[:len(data)-1], `,"results":[]}`...)
	}
	return data, err
}

// enumFileSearchCallStatus: OpenAI's statuses of a file_search_call.
var enumFileSearchCallStatus = []string{hearth.StatusInProgress, "searching", hearth.StatusCompleted, hearth.StatusIncomplete, hearth.StatusFailed}

// decodeItem reads a file_search_call's queries and results (type, id and status are
// read already).
func decodeItem(o hearth.Object, it *hearth.Item) error {
	fs := &FileSearchCall{Queries: []string{}}
	if elems, has, err := o.Array("queries"); err != nil {
		return err
	} else if has {
		if fs.Queries, err = hearth.Strings(elems, o.At("queries")); err != nil {
			return err
		}
	}
	if raw, has := o.Get("results"); has {
		if hearth.JSONType(raw) != "array" {
			return hearth.TypeError(o.At("results"), "an array of results", raw)
		}
		if err := json.Unmarshal(raw, &fs.Results); err != nil {
			return hearth.TypeError(o.At("results"), "an array of results (file_id, filename, score, text, attributes)", raw)
		}
		if fs.Results == nil {
			fs.Results = []FileSearchResult{}
		}
	}
	it.Hosted = fs
	return nil
}

// decodeFileSearchTool reads the fields of a {"type": "file_search"} tool. Whether
// the stores exist and are the caller's, and whether the filter is well formed, are
// the kind's to say: it knows the stores and the filter language.
func decodeTool(o hearth.Object) (any, error) {
	t := &FileSearchTool{}
	p := o.At("vector_store_ids")
	elems, ok, err := o.Array("vector_store_ids")
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, hearth.Missing(p)
	case len(elems) == 0:
		return nil, hearth.InvalidRequest(p, hearth.CodeEmptyArray, fmt.Sprintf("Invalid '%s': expected at least one vector store id.", p))
	case len(elems) > FileSearchMaxStores:
		return nil, hearth.InvalidRequest(p, hearth.CodeArrayAboveMaxLength, fmt.Sprintf("Invalid '%s': at most %d vector store ids.", p, FileSearchMaxStores))
	}
	for i, e := range elems {
		ep := hearth.IndexPath(p, i)
		id, err := hearth.AsString(e, ep)
		if err != nil {
			return nil, err
		}
		if id == "" {
			return nil, hearth.EmptyString(ep)
		}
		if j := slices.Index(t.VectorStoreIDs, id); j >= 0 {
			return nil, hearth.InvalidRequest(ep, hearth.CodeInvalidValue, fmt.Sprintf("Invalid '%s': vector store '%s' is named twice (also at %s).", ep, id, hearth.IndexPath(p, j)))
		}
		t.VectorStoreIDs = append(t.VectorStoreIDs, id)
	}
	if n, err := o.IntegerIn("max_num_results", 1, FileSearchMaxResults); err != nil {
		return nil, err
	} else if n != nil {
		t.MaxNumResults = *n
	}
	if raw, ok := o.Get("filters"); ok {
		if hearth.JSONType(raw) != "object" {
			return nil, hearth.TypeError(o.At("filters"), "a comparison or compound filter object", raw)
		}
		t.Filters = hearth.CompactJSON(raw)
	}
	if ro, ok, err := o.Object("ranking_options"); err != nil {
		return nil, err
	} else if ok {
		if t.Ranker, err = ro.Enum("ranker", []string{"auto", "none", "default-2024-11-15"}); err != nil {
			return nil, err
		}
		if t.ScoreThreshold, err = ro.DecimalIn("score_threshold", 0, 1); err != nil {
			return nil, err
		}
		// hybrid_search is accepted for the SDKs' sake and not honoured: hearth's
		// search is by embeddings alone.
		if _, _, err := ro.Object("hybrid_search"); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// searchCall is the life of a file_search_call (hearth.SearchCall); its citations are
// file_citation annotations.
var searchCall = &hearth.SearchCall[*FileSearchCall, FileSearchResult]{
	Type: ItemFileSearchCall, Prefix: PrefixFileSearchCall,
	EventInProgress: EventFileSearchCallInProgress, EventSearching: EventFileSearchCallSearching,
	EventCompleted: EventFileSearchCallCompleted,
	New:            func() *FileSearchCall { return &FileSearchCall{Queries: []string{}} },
	Cite:           fileCitations,
	// File citations come after URL citations, as they did before the kinds had
	// packages of their own.
	CiteOrder: 1,
}

// StartCall starts a file_search_call hearth runs itself (hearth.SearchCall.Start):
// response.file_search_call.in_progress follows output_item.added.
func StartCall(b *hearth.Builder) error { return searchCall.Start(b) }

// Searching sets the open file_search_call's queries: the search runs next.
func Searching(b *hearth.Builder, queries []string) error {
	return searchCall.Searching(b, func(fs *FileSearchCall) { fs.Queries = append([]string{}, queries...) })
}

// EndCall ends the open file_search_call (hearth.SearchCall.End), completed or failed,
// with its results (nil leaves them out of the item: the request did not include
// them); cite are those the answer may cite (a file_citation where output text names
// one's file), text what the model reads of the search.
func EndCall(b *hearth.Builder, results, cite []FileSearchResult, text string, failed bool) error {
	return searchCall.End(b, text, func(fs *FileSearchCall) {
		if results != nil {
			fs.Results = append([]FileSearchResult{}, results...)
		}
	}, cite, failed)
}

// ReemitCall reports a stored file_search_call as the live stream did.
func ReemitCall(b *hearth.Builder, stored hearth.Item) error { return searchCall.Reemit(b, stored) }

// fileCitations finds where text names the file of a result the response's searches
// returned: one file_citation per occurrence of a file name standing as a word of
// its own (not part of a longer name), whose index is the position, in characters
// (code points) of text, just after the name: where OpenAI places its citation
// marks. A name two files share cites the first result of it.
func fileCitations(text string, cite []FileSearchResult) []hearth.Annotation {
	var out []hearth.Annotation
	seen := map[string]bool{}
	taken := map[int]bool{}
	for _, r := range cite {
		if r.Filename == "" || seen[r.Filename] {
			continue
		}
		seen[r.Filename] = true
		for from := 0; from < len(text); {
			i := strings.Index(text[from:], r.Filename)
			if i < 0 {
				break
			}
			i += from
			end := i + len(r.Filename)
			from = end
			if !nameBoundary(text, i, end) || taken[end] {
				continue
			}
			taken[end] = true
			out = append(out, hearth.Annotation{Type: "file_citation", FileID: r.FileID, Filename: r.Filename,
				Index: utf8.RuneCountInString(text[:end])})
		}
	}
	slices.SortStableFunc(out, func(a, b hearth.Annotation) int { return a.Index - b.Index })
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

func init() {
	hearth.RegisterKind(hearth.Kind{
		Name:  "file_search",
		Order: 3,
		Items: []hearth.ItemType{{
			Type: ItemFileSearchCall, Statuses: enumFileSearchCallStatus, Decode: decodeItem, Marshal: marshalItem,
			// OpenAI streams no arguments of a file search: the item carries its
			// queries.
			Arguments: true,
		}},
		// Whether hearth can search is its configuration (a database for vector
		// stores), so the tool is not Runs; it is a call the model can make (`hearth
		// serve` always runs it) and allowed_tools may name it by its type alone.
		Tools: []hearth.ToolType{{Types: []string{ToolFileSearch}, Decode: decodeTool, Forced: true, Allowed: true, Callable: true}},
		Events: []hearth.EventType{
			{Type: EventFileSearchCallInProgress}, {Type: EventFileSearchCallSearching}, {Type: EventFileSearchCallCompleted},
		},
		Includes: []string{IncludeFileSearchResults},
	})
}
