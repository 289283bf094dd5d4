package hearth_test

import (
	"encoding/json"
	"testing"

	"hearth"

	// The hosted kinds register their shapes when imported: the root's decode,
	// marshal, stream and official schema tests cover requests that use them, as
	// `hearth serve` (which wires them all) sees them.
	_ "hearth/filesearch"
	_ "hearth/mcp"
	_ "hearth/toolsearch"
	_ "hearth/websearch"
)

// TestRegisterKindTwice: a type two kinds declare is a wiring mistake, refused at
// once rather than one kind silently decoding the other's items.
func TestRegisterKindTwice(t *testing.T) {
	for name, k := range map[string]hearth.Kind{
		"item type":    {Name: "again", Items: []hearth.ItemType{{Type: "mcp_call"}}},
		"base item":    {Name: "again", Items: []hearth.ItemType{{Type: hearth.ItemMessage}}},
		"tool type":    {Name: "again", Tools: []hearth.ToolType{{Types: []string{"web_search_preview"}}}},
		"base tool":    {Name: "again", Tools: []hearth.ToolType{{Types: []string{hearth.ToolFunction}}}},
		"stream event": {Name: "again", Events: []hearth.EventType{{Type: "response.file_search_call.searching"}}},
		"partly new":   {Name: "again", Items: []hearth.ItemType{{Type: "partly_new_call"}}, Tools: []hearth.ToolType{{Types: []string{"mcp"}}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: registered twice without a panic", name)
				}
			}()
			hearth.RegisterKind(k)
		}()
	}
	// A refused kind leaves no part of itself registered.
	if _, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":[{"type":"partly_new_call","id":"p_1"}]}`)); err == nil {
		t.Error("the item type of a refused kind decodes")
	}
}

// TestUnregisteredKindShapes: a type no kind declares is what it was before kinds:
// an item type is a 400 naming the type, a tool a hosted tool kept as sent, ignored.
func TestUnregisteredKindShapes(t *testing.T) {
	_, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":[{"type":"code_interpreter_call","id":"ci_1"}]}`))
	if e, ok := err.(*hearth.Error); !ok || e.Param != "input[0].type" {
		t.Errorf("unknown item type: %v", err)
	}
	req, ignored, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":"hi","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`))
	if err != nil || len(ignored) != 1 || ignored[0] != "tools[0] (code_interpreter)" {
		t.Fatalf("unknown tool: %v %q", err, ignored)
	}
	if echo, _ := json.Marshal(req.Tools[0]); string(echo) != `{"type":"code_interpreter","container":{"type":"auto"}}` {
		t.Errorf("echo %s", echo)
	}
}
