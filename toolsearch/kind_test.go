package toolsearch

import (
	"encoding/json"
	"strings"
	"testing"

	"hearth"
	"hearth/engine"
)

func fn(name, desc string, deferred bool) hearth.Tool {
	return hearth.Tool{Type: hearth.ToolFunction, Name: name, Description: desc, DeferLoading: deferred,
		Parameters: json.RawMessage(`{"type":"object"}`)}
}

// requestTools: two deferred functions, one shown, and a namespace with a deferred
// and a shown function.
func requestTools() []hearth.Tool {
	return []hearth.Tool{
		fn("get_weather", "Get the current weather of a city.", true),
		fn("get_time", "Local time in a timezone.", true),
		fn("read_file", "Read a file of the workspace.", false),
		{Type: hearth.ToolNamespace, Name: "crm", Description: "Customer records and orders.", Tools: []hearth.Tool{
			fn("list_open_orders", "List the open orders of a customer.", true),
			fn("whoami", "The signed-in user.", false),
		}},
		{Type: ToolToolSearch},
	}
}

func names(tools []hearth.Tool) string {
	var out []string
	for _, t := range tools {
		if t.Type == hearth.ToolNamespace {
			var cs []string
			for _, c := range t.Tools {
				cs = append(cs, c.Name)
			}
			out = append(out, t.Name+"{"+strings.Join(cs, ",")+"}")
			continue
		}
		out = append(out, t.Name)
	}
	return strings.Join(out, " ")
}

// TestSearch: the query's words rank the deferred tools by BM25 over their names and
// descriptions; an exact name (of a tool or a namespace) comes first; stop words and
// words no tool has load nothing; a namespace's functions come back in their
// namespace.
func TestSearch(t *testing.T) {
	docs := deferredDocuments(requestTools())
	for _, c := range []struct{ query, want string }{
		{"weather of a city", "get_weather"},
		{"what time is it", "get_time"},
		{"orders of a customer", "crm{list_open_orders}"},
		{"crm", "crm{list_open_orders}"},
		{"get_time", "get_time get_weather"}, // the exact name, then "get" matches get_weather
		{"the a of", ""},
		{"spreadsheet", ""},
		{"", ""},
		{"read file", ""}, // read_file is not deferred: nothing to load
	} {
		if got := names(search(docs, c.query, MaxResults)); got != c.want {
			t.Errorf("search %q = %q, want %q", c.query, got, c.want)
		}
	}
	if got := names(search(docs, "get weather time", 1)); got != "get_weather" {
		t.Errorf("max 1: %q", got)
	}
}

func TestWords(t *testing.T) {
	if got := strings.Join(words("listOpenOrders of the multi_agent-v1.spawn"), " "); got != "list open orders multi agent v1 spawn" {
		t.Errorf("words = %q", got)
	}
}

// TestOwnTools: deferred tools stay out until a tool_search_output loads them; loaded
// tools the request does not have join at the end (a namespace's in the request's
// namespace of that name).
func TestOwnTools(t *testing.T) {
	own := requestTools()[:4]
	plan := func(loaded ...hearth.Tool) *plan {
		p := &plan{loaded: map[toolKey]bool{}, deferred: deferredDocuments(own)}
		p.load([]hearth.Item{{Type: ItemToolSearchOutput, Hosted: &Fields{LoadedTools: loaded}}})
		return p
	}
	for _, c := range []struct {
		name   string
		loaded []hearth.Tool
		want   string
	}{
		{"nothing loaded", nil, "read_file crm{whoami}"},
		{"a top-level tool", []hearth.Tool{fn("get_time", "", false)}, "get_time read_file crm{whoami}"},
		{"a namespace function", []hearth.Tool{{Type: hearth.ToolNamespace, Name: "crm", Tools: []hearth.Tool{fn("list_open_orders", "", false)}}},
			"read_file crm{list_open_orders,whoami}"},
		{"tools of no request tool", []hearth.Tool{fn("deploy", "", false),
			{Type: hearth.ToolNamespace, Name: "crm", Tools: []hearth.Tool{fn("close_order", "", false)}},
			{Type: hearth.ToolNamespace, Name: "git", Tools: []hearth.Tool{fn("log", "", false)}}},
			"read_file crm{whoami,close_order} deploy git{log}"},
	} {
		if got := names(plan(c.loaded...).OwnTools(own)); got != c.want {
			t.Errorf("%s: shown %q, want %q", c.name, got, c.want)
		}
	}
	// The request's definition of a loaded tool is the one shown.
	shown := plan(fn("get_time", "another description", false)).OwnTools(own)
	if shown[0].Description != "Local time in a timezone." {
		t.Errorf("loaded get_time shown as %+v, want the request's", shown[0])
	}
}

// TestToolChoice: a choice of deferred tools not loaded yet also allows the search.
func TestToolChoice(t *testing.T) {
	p := &plan{OneFunction: engine.OneFunction{Name: FunctionName}, loaded: map[toolKey]bool{}, deferred: deferredDocuments(requestTools())}
	c := p.toolChoice(hearth.ToolChoice{Type: hearth.ToolFunction, Name: "get_time"})
	if c == nil || c.Type != "allowed_tools" || c.Mode != hearth.ToolChoiceRequired || len(c.Allowed) != 2 || c.Allowed[1].Name != FunctionName {
		t.Errorf("function choice of a deferred tool: %+v", c)
	}
	if c := p.toolChoice(hearth.ToolChoice{Type: hearth.ToolFunction, Name: "read_file"}); c != nil {
		t.Errorf("function choice of a shown tool changed: %+v", c)
	}
	p.loaded[toolKey{"", "get_time"}] = true
	if c := p.toolChoice(hearth.ToolChoice{Type: "allowed_tools", Mode: "auto", Allowed: []hearth.ToolRef{{Type: "function", Name: "get_time"}}}); c != nil {
		t.Errorf("allowed_tools of a loaded tool changed: %+v", c)
	}
	c = p.toolChoice(hearth.ToolChoice{Type: "allowed_tools", Mode: "auto", Allowed: []hearth.ToolRef{{Type: "function", Name: "list_open_orders"}}})
	if c == nil || len(c.Allowed) != 2 || c.Allowed[1].Name != FunctionName || c.Mode != "auto" {
		t.Errorf("allowed_tools of a deferred tool: %+v", c)
	}
}

// TestAsCalls: tool search items read as calls of the search function and their
// outputs; an output without its call gets one.
func TestAsCalls(t *testing.T) {
	items := []hearth.Item{
		{Type: ItemToolSearchCall, ID: "tsc_1", CallID: "call_1", Arguments: `{"query":"weather"}`},
		{Type: ItemToolSearchOutput, ID: "tso_1", CallID: "call_1", Hosted: &Fields{LoadedTools: []hearth.Tool{fn("get_weather", "", false)}}},
		{Type: ItemToolSearchOutput, ID: "tso_2", CallID: "call_2", Hosted: &Fields{LoadedTools: []hearth.Tool{}}},
	}
	got, _ := json.Marshal(asCalls("tool_search", items, nil))
	want := `[{"type":"function_call","call_id":"call_1","name":"tool_search","arguments":"{\"query\":\"weather\"}","status":"completed"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"Loaded: get_weather. They can be called now."},` +
		`{"type":"function_call","call_id":"call_2","name":"tool_search","arguments":"{}","status":"completed"},` +
		`{"type":"function_call_output","call_id":"call_2","output":"No deferred tool matched the search; none was loaded."}]`
	if string(got) != want {
		t.Errorf("asCalls\n got %s\nwant %s", got, want)
	}
}

func TestView(t *testing.T) {
	k := NewKind(nil)
	call := k.View(hearth.Item{Type: ItemToolSearchCall, Hosted: &Fields{Execution: ExecutionClient}, Arguments: `{"query": "crm"}`})
	out := k.View(hearth.Item{Type: ItemToolSearchOutput, Hosted: &Fields{Execution: ExecutionServer,
		LoadedTools: []hearth.Tool{{Type: hearth.ToolNamespace, Name: "crm", Tools: []hearth.Tool{fn("list_open_orders", "", false)}}}}})
	if call.Name != "tool_search (client)" || call.Args != `{"query":"crm"}` || out.Name != "tool_search (server)" || out.Text != "Loaded: list_open_orders. They can be called now." {
		t.Errorf("views %+v %+v", call, out)
	}
}
