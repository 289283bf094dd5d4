package filesearch

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/engine"
)

// stores is a fake of the vector stores: ids owned by owner, and a search that
// answers found or fails with err.
type stores struct {
	owner string
	ids   []string
	found []FileSearchResult
	err   error
	asked []FileSearchQuery
}

func (s *stores) MissingVectorStore(_ context.Context, owner string, ids []string) (int, error) {
	for i, id := range ids {
		if owner != s.owner || !contains(s.ids, id) {
			return i, nil
		}
	}
	return -1, nil
}

func (s *stores) SearchVectorStores(_ context.Context, owner string, q FileSearchQuery) ([]FileSearchResult, error) {
	s.asked = append(s.asked, q)
	return s.found, s.err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func request(t *testing.T, body, caller string, later bool) *engine.HostedRequest {
	t.Helper()
	req, _, err := hearth.DecodeCreateRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var mine []int
	for i, tool := range req.Tools {
		if tool.Type == ToolFileSearch {
			mine = append(mine, i)
		}
	}
	return &engine.HostedRequest{Request: req, Tools: mine, Caller: caller, LaterTurn: later,
		Taken: func(name string) bool {
			return contains([]string{"lookup"}, name) || strings.Contains(body, `"name":"`+name+`"`)
		},
		Grammar: func(string, json.RawMessage) error { return nil }}
}

// Plan checks the caller's stores (not on a later turn of the same response), the
// filter, one tool per request, and offers the function under a free name, with
// tool_choice and allowed_tools in its terms.
func TestPlan(t *testing.T) {
	fake := &stores{owner: "alice", ids: []string{"vs_a", "vs_b"}}
	k := NewKind(fake, nil)
	ctx := context.Background()
	for _, c := range []struct {
		name, body, caller string
		later              bool
		status             int
		param              string
	}{
		{"another caller's store", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_a"]}]}`, "bob", false, 404, "tools[0].vector_store_ids[0]"},
		{"unknown store", `{"model":"m","tools":[{"type":"function","name":"f"},{"type":"file_search","vector_store_ids":["vs_a","vs_x"]}]}`, "alice", false, 404, "tools[1].vector_store_ids[1]"},
		{"later turn", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_x"]}]}`, "alice", true, 0, ""},
		{"bad filter", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_a"],"filters":{"type":"and","filters":[{"type":"eq","key":"a"}]}}]}`, "alice", false, 400, "tools[0].filters.filters[0].value"},
		{"two tools", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_a"]},{"type":"file_search","vector_store_ids":["vs_b"]}]}`, "alice", false, 400, "tools[1].type"},
		{"names taken", `{"model":"m","tools":[{"type":"function","name":"file_search"},{"type":"function","name":"hearth_file_search"},{"type":"file_search","vector_store_ids":["vs_a"]}]}`, "alice", false, 400, "tools[2].type"},
	} {
		_, err := k.Plan(ctx, request(t, c.body, c.caller, c.later))
		var he *hearth.Error
		switch {
		case c.status == 0 && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.status != 0 && (!errors.As(err, &he) || he.Status != c.status || he.Param != c.param):
			t.Errorf("%s: error %v, want %d on %s", c.name, err, c.status, c.param)
		}
	}

	for _, c := range []struct{ choice, want string }{
		{`{"type":"file_search"}`, `{"type":"function","name":"hearth_file_search"}`},
		{`{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"file_search"},{"type":"file_search"}]}`,
			`{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"file_search"},{"type":"function","name":"hearth_file_search"}]}`},
		{`"auto"`, `null`},
	} {
		body := `{"model":"m","tools":[{"type":"function","name":"file_search"},{"type":"file_search","vector_store_ids":["vs_a"]}],"tool_choice":` + c.choice + `}`
		p, err := k.Plan(ctx, request(t, body, "alice", false))
		if err != nil {
			t.Fatal(err)
		}
		if tools := p.Tools(); len(tools) != 1 || tools[0].Name != "hearth_file_search" || !*tools[0].Strict {
			t.Errorf("tools %+v", tools)
		}
		if got, _ := json.Marshal(p.ToolChoice()); string(got) != c.want {
			t.Errorf("tool_choice %s became %s, want %s", c.choice, got, c.want)
		}
	}
}

// A call runs the tool's search with the model's query; a search that fails ends
// the item failed (no completed event, an empty results list when included) and the
// model reads why; a call without a query fails without searching.
func TestCall(t *testing.T) {
	ctx := context.Background()
	found := []FileSearchResult{{FileID: "file_1", Filename: "a.md", Score: 0.5, Text: "A."}}
	for _, c := range []struct {
		name, args string
		err        error
		status     string
		item, read string
		searches   int
	}{
		{"found", `{"query":"leave"}`, nil, "completed",
			`{"type":"file_search_call","id":"ID","status":"completed","queries":["leave"],"results":[{"file_id":"file_1","filename":"a.md","score":0.5,"text":"A.","attributes":{}}]}`, "[1] a.md\nA.", 1},
		{"search fails", `{"query":"leave"}`, errors.New("vector store vs_a was not found (deleted?)"), "failed",
			`{"type":"file_search_call","id":"ID","status":"failed","queries":["leave"],"results":[]}`, "Error: the search failed: vector store vs_a was not found (deleted?)", 1},
		{"no query", `{"q":1}`, nil, "failed",
			`{"type":"file_search_call","id":"ID","status":"failed","queries":[],"results":[]}`, `Error: the search needs a query: call file_search with {"query": "..."}.`, 0},
	} {
		fake := &stores{owner: "alice", ids: []string{"vs_a"}, found: found, err: c.err}
		p, err := NewKind(fake, nil).Plan(ctx, request(t, `{"model":"m","include":["file_search_call.results"],"tools":[{"type":"file_search","vector_store_ids":["vs_a"],"max_num_results":3,"ranking_options":{"score_threshold":0.2}}]}`, "alice", false))
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		b := hearth.NewBuilder(hearth.NewResponse("resp_1", &hearth.CreateResponseRequest{Model: "m"}, time.Unix(0, 0)), func(e hearth.Event) { types = append(types, e.Type) })
		call, ok := p.Call(FunctionName)
		if !ok {
			t.Fatal("no call of file_search")
		}
		if err := call.Begin(b); err != nil {
			t.Fatal(err)
		}
		if ran, err := call.End(ctx, b, c.args); !ran || err != nil {
			t.Fatalf("%s: End = %v, %v", c.name, ran, err)
		}
		it := b.Response().Output[0]
		got, _ := json.Marshal(it)
		if w := strings.ReplaceAll(c.item, `"ID"`, `"`+it.ID+`"`); string(got) != w {
			t.Errorf("%s: item\n got %s\nwant %s", c.name, got, w)
		}
		if it.Output.Text != c.read {
			t.Errorf("%s: the model reads %q, want %q", c.name, it.Output.Text, c.read)
		}
		if len(fake.asked) != c.searches {
			t.Fatalf("%s: %d searches", c.name, len(fake.asked))
		}
		if c.searches > 0 {
			q := fake.asked[0]
			if !reflect.DeepEqual(q.VectorStoreIDs, []string{"vs_a"}) || !reflect.DeepEqual(q.Queries, []string{"leave"}) || q.MaxNumResults != 3 || *q.ScoreThreshold != 0.2 {
				t.Errorf("%s: searched %+v", c.name, q)
			}
		}
		if completed := contains(types, EventFileSearchCallCompleted); completed != (c.status == "completed") {
			t.Errorf("%s: events %q", c.name, types)
		}
	}
}

// A search reads as a call of the function and its results: this response's with what
// the model read, a stored one with its results rendered as they were read, or a note
// when they were not kept.
func TestAsCalls(t *testing.T) {
	found := []FileSearchResult{{FileID: "file_1", Filename: "a.md", Score: 0.5, Text: "A."}}
	items := []hearth.Item{
		{Type: hearth.ItemMessage, Role: hearth.RoleUser},
		{Type: ItemFileSearchCall, ID: "fs_1", Status: "completed", Arguments: `{"query": "x"}`, Output: hearth.ToolOutput{Text: "live"}},
		{Type: ItemFileSearchCall, ID: "fs_2", Status: "completed", Hosted: &FileSearchCall{Queries: []string{"y"}, Results: found}},
		{Type: ItemFileSearchCall, ID: "fs_3", Status: "completed", Hosted: &FileSearchCall{Queries: []string{"z", "w"}}},
		{Type: ItemFileSearchCall, ID: "fs_4", Status: "failed", Hosted: &FileSearchCall{Queries: []string{"v"}}},
	}
	out := asCalls("file_search", items)
	if len(out) != 9 {
		t.Fatalf("%d items", len(out))
	}
	for i, w := range []struct{ args, output string }{
		{`{"query": "x"}`, "live"},
		{`{"query":"y"}`, "[1] a.md\nA."},
		{`{"query":"z; w"}`, "(The results of this search are not kept: the request did not include file_search_call.results. Search again to read them.)"},
		{`{"query":"v"}`, "Error: the search failed."},
	} {
		c, o := out[1+2*i], out[2+2*i]
		if c.Type != hearth.ItemFunctionCall || c.Name != "file_search" || c.Arguments != w.args || o.CallID != c.CallID || o.Output.Text != w.output {
			t.Errorf("search %d: %+v / %+v", i, c, o)
		}
	}
	if got := Render(nil); got != "No results." {
		t.Errorf("Render(nil) = %q", got)
	}
}
