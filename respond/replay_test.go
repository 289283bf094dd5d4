package respond

import (
	"encoding/json"
	"testing"
	"time"

	"hearth"
	"hearth/engine"
	"hearth/internal/schematest"
	"hearth/mcp"
)

// TestReplayKeepsStoredOutput: GET /v1/responses/{id}?stream=true replays a stored
// response whose final event carries the stored output exactly: the same item ids and
// call_ids (a client resuming from the replay answers calls by call_id), the
// reasoning's encrypted_content, a message's phase; and the events are those of a
// live stream.
func TestReplayKeepsStoredOutput(t *testing.T) {
	req := &hearth.CreateResponseRequest{Model: "m"}
	stored := hearth.NewResponse("resp_stored", req, time.Unix(1_700_000_000, 0))
	stored.Output = []hearth.Item{
		{Type: hearth.ItemReasoning, ID: "rs_stored", Status: hearth.StatusCompleted,
			Summary: []hearth.ContentPart{}, Content: []hearth.ContentPart{{Type: hearth.PartReasoningText, Text: "Think first."}},
			EncryptedContent: "sealed-blob"},
		{Type: hearth.ItemMessage, ID: "msg_stored", Status: hearth.StatusCompleted, Role: hearth.RoleAssistant, Phase: "commentary",
			Content: []hearth.ContentPart{{Type: hearth.PartOutputText, Text: "Checking the weather.", Annotations: []hearth.Annotation{}}}},
		{Type: hearth.ItemFunctionCall, ID: "fc_stored", Status: hearth.StatusCompleted, CallID: "call_stored",
			Name: "get_weather", Namespace: "weather", Arguments: `{"city":"Paris"}`},
		{Type: hearth.ItemCustomToolCall, ID: "ctc_stored", Status: hearth.StatusCompleted, CallID: "call_custom",
			Name: "apply_patch", Input: "*** Begin Patch\n*** End Patch\n"},
		{Type: mcp.ItemMCPListTools, ID: "mcpl_stored", Status: hearth.StatusCompleted, Hosted: &mcp.Fields{ServerLabel: "s",
			MCPTools: []mcp.MCPToolInfo{{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)}}}},
		{Type: mcp.ItemMCPCall, ID: "mcp_stored", Status: hearth.StatusCompleted, Name: "echo",
			Arguments: `{"m":"x"}`, Output: hearth.ToolOutput{Text: "Echo: x"}, Hosted: &mcp.Fields{ServerLabel: "s", ApprovalRequestID: "mcpr_stored"}},
		{Type: mcp.ItemMCPCall, ID: "mcp_failed_stored", Status: hearth.StatusFailed, Name: "echo",
			Arguments: `{}`, Hosted: &mcp.Fields{ServerLabel: "s", Error: "the server is down"}},
		// Stored before hearth gave failed calls the status "failed".
		{Type: mcp.ItemMCPCall, ID: "mcp_older_stored", Status: hearth.StatusCompleted, Name: "echo",
			Arguments: `{}`, Hosted: &mcp.Fields{ServerLabel: "s", Error: "the server is down"}},
		{Type: mcp.ItemMCPApprovalRequest, ID: "mcpr2_stored", Status: hearth.StatusCompleted, Name: "echo", Arguments: `{"m":"y"}`, Hosted: &mcp.Fields{ServerLabel: "s"}},
	}
	stored.Status = hearth.StatusCompleted
	stored.Usage = &hearth.Usage{InputTokens: 10, OutputTokens: 20, TotalTokens: 30}

	var events []map[string]any
	var last hearth.Event
	replay(stored, []engine.HostedKind{mcp.NewKind(nil, nil)}, func(e hearth.Event) {
		last = e
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		events = append(events, m)
	})
	schematest.MCP.ValidateEvents(t, events)
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Errorf("replay lifecycle: %v", err)
	}
	if last.Type != hearth.EventResponseCompleted || last.Response == nil {
		t.Fatalf("replay ended with %s", last.Type)
	}
	got, _ := json.Marshal(last.Response.Output)
	want, _ := json.Marshal(stored.Output)
	if string(got) != string(want) {
		t.Errorf("replayed output differs from the stored one:\n got %s\nwant %s", got, want)
	}
	for _, e := range events {
		if e["type"] == hearth.EventOutputItemAdded {
			it := e["item"].(map[string]any)
			if id, _ := it["id"].(string); len(id) < 7 || id[len(id)-7:] != "_stored" {
				t.Errorf("%s announces item id %v, not the stored one", e["type"], it["id"])
			}
		}
	}
}
