package toolsearch_test

import (
	"encoding/json"
	"testing"

	"hearth"
	"hearth/internal/schematest"
	"hearth/toolsearch"
)

// TestToolSearchShapes: hearth's tool search items and the tool_search tool, as hearth
// writes them, are OpenAI's shapes; a shape that is not (a field OpenAI does not
// have, a missing one) is refused, so the schemas can catch a change.
func TestToolSearchShapes(t *testing.T) {
	fn := hearth.Tool{Type: hearth.ToolFunction, Name: "get_weather", Description: "Weather in a city",
		Parameters: json.RawMessage(`{"type":"object"}`)}
	items := []hearth.Item{
		{Type: toolsearch.ItemToolSearchCall, ID: "tsc_1", CallID: "call_1", Hosted: &toolsearch.Fields{Execution: toolsearch.ExecutionServer}, Status: hearth.StatusCompleted, Arguments: `{"query":"weather"}`},
		{Type: toolsearch.ItemToolSearchCall, ID: "tsc_2", Hosted: &toolsearch.Fields{Execution: toolsearch.ExecutionClient}, Status: hearth.StatusInProgress},
		{Type: toolsearch.ItemToolSearchOutput, ID: "tso_1", CallID: "call_1", Status: hearth.StatusCompleted, Hosted: &toolsearch.Fields{Execution: toolsearch.ExecutionServer,
			LoadedTools: []hearth.Tool{fn, {Type: hearth.ToolNamespace, Name: "crm", Description: "CRM", Tools: []hearth.Tool{fn}}}}},
		{Type: toolsearch.ItemToolSearchOutput, ID: "tso_2", Status: hearth.StatusCompleted},
	}
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ItemField", "ItemParam"} {
			if err := schematest.ToolSearch.Check(name, b); err != nil {
				t.Errorf("%s %s: %v", name, b, err)
			}
		}
	}
	if err := schematest.ToolSearch.Check("ResponsesToolParam", []byte(`{"type":"tool_search","execution":"client","description":"d","parameters":{"type":"object"}}`)); err != nil {
		t.Errorf("tool_search tool: %v", err)
	}
	for _, bad := range []string{
		`{"type":"tool_search_call","id":"tsc_1","call_id":null,"execution":"server","status":"completed"}`,
		`{"type":"tool_search_output","id":"tso_1","call_id":null,"execution":"server","status":"completed","tools":[],"query":"x"}`,
		`{"type":"tool_search_output","id":"tso_1","call_id":null,"execution":"hearth","status":"completed","tools":[]}`,
	} {
		if err := schematest.ToolSearch.Check("ItemField", []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
