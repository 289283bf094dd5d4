package toolsearch_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"hearth"
	"hearth/toolsearch"
)

// TestDecodeToolSearch: a tool_search tool makes defer_loading honoured (not named
// ignored); what cannot be searched or deferred is a 400 naming the field; tool
// search items round-trip.
func TestDecodeToolSearch(t *testing.T) {
	const weather = `{"type":"function","name":"get_weather","defer_loading":true,"parameters":{"type":"object"}}`
	for _, c := range []struct {
		name, tools, param, ignored string
	}{
		{"searched", `[{"type":"tool_search"},` + weather + `]`, "", ""},
		{"a namespace's function", `[{"type":"tool_search","execution":"client","description":"d","parameters":{"type":"object"}},{"type":"namespace","name":"crm","description":"CRM","tools":[` + weather + `]}]`, "", ""},
		{"no tool_search: ignored", `[` + weather + `]`, "", "tools[0].defer_loading"},
		{"nothing deferred", `[{"type":"tool_search"},{"type":"function","name":"f"}]`, "tools[0]", ""},
		{"two searches", `[{"type":"tool_search"},` + weather + `,{"type":"tool_search"}]`, "tools[2]", ""},
		{"a deferred namespace", `[{"type":"tool_search"},{"type":"namespace","name":"crm","defer_loading":true,"tools":[` + weather + `]}]`, "tools[1].defer_loading", ""},
		{"a deferred mcp server", `[{"type":"tool_search"},` + weather + `,{"type":"mcp","server_label":"x","server_url":"https://x.example/mcp","defer_loading":true}]`, "tools[2].defer_loading", ""},
		{"a deferred web search", `[{"type":"tool_search"},` + weather + `,{"type":"web_search","defer_loading":true}]`, "tools[2].defer_loading", ""},
		{"an unknown field", `[{"type":"tool_search","paths":["x"]},` + weather + `]`, "tools[0].paths", ""},
		{"a wrong execution", `[{"type":"tool_search","execution":"hearth"},` + weather + `]`, "tools[0].execution", ""},
		{"parameters not an object", `[{"type":"tool_search","parameters":[]},` + weather + `]`, "tools[0].parameters", ""},
	} {
		req, ignored, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":"hi","tools":` + c.tools + `}`))
		var herr *hearth.Error
		switch {
		case c.param != "":
			if !errors.As(err, &herr) || herr.Param != c.param || herr.Status != 400 {
				t.Errorf("%s: err %v, want a 400 at %s", c.name, err, c.param)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case strings.Join(ignored, ",") != c.ignored:
			t.Errorf("%s: ignored %q, want %q", c.name, ignored, c.ignored)
		case c.name == "searched" && (toolsearch.ToolOf(&req.Tools[0]) == nil || toolsearch.ToolOf(&req.Tools[0]).Execution != toolsearch.ExecutionServer):
			t.Errorf("%s: tool_search read as %+v", c.name, req.Tools[0])
		}
	}

	// Items as a client sends them back (call_id and status may be null) read and
	// write as OpenAI's shapes.
	for _, c := range []struct{ in, out string }{
		{`{"type":"tool_search_call","call_id":null,"status":null,"execution":"client","arguments":{"paths":["crm"]}}`,
			`{"type":"tool_search_call","id":"","call_id":null,"execution":"client","status":"completed","arguments":{"paths":["crm"]}}`},
		{`{"type":"tool_search_output","id":"tso_1","call_id":"call_1","execution":"client","tools":[` + weather + `]}`,
			`{"type":"tool_search_output","id":"tso_1","call_id":"call_1","execution":"client","status":"completed","tools":[{"type":"function","name":"get_weather","description":null,"parameters":{"type":"object"},"strict":null}]}`},
	} {
		var it hearth.Item
		if err := json.Unmarshal([]byte(c.in), &it); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got, _ := json.Marshal(it); string(got) != c.out {
			t.Errorf("round trip\n got %s\nwant %s", got, c.out)
		}
	}
	for _, bad := range []string{
		`{"type":"tool_search_call","call_id":"c"}`,
		`{"type":"tool_search_output","call_id":"c"}`,
		`{"type":"tool_search_output","execution":"hearth","tools":[]}`,
	} {
		var it hearth.Item
		if err := json.Unmarshal([]byte(bad), &it); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
