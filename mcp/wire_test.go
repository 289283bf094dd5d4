package mcp_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"hearth"
	"hearth/internal/schematest"
	"hearth/mcp"
)

// TestDecodeMCPTool: the mcp tool's forms, and mistakes named by their field.
func TestDecodeMCPTool(t *testing.T) {
	req, ignored := decode(t, `{"model":"m","tools":[
		{"type":"mcp","server_label":"files","allowed_tools":["read"],"require_approval":"never"},
		{"type":"mcp","server_label":"web","server_url":"https://mcp.example.com/mcp","headers":{"X-Key":"k"},
		 "allowed_tools":{"tool_names":["a","b"]},"require_approval":{"never":{"tool_names":["a"]}}},
		{"type":"mcp","server_label":"plain"}],
		"tool_choice":{"type":"mcp","server_label":"files","name":"read"}}`)
	if len(ignored) != 0 {
		t.Errorf("ignored %q: mcp tools are hearth's to run", ignored)
	}
	want := []*mcp.MCPTool{
		{ServerLabel: "files", AllowedTools: []string{"read"}, Approval: mcp.MCPApproval{Mode: "never"}},
		{ServerLabel: "web", ServerURL: "https://mcp.example.com/mcp", Headers: map[string]string{"X-Key": "k"},
			AllowedTools: []string{"a", "b"}, Approval: mcp.MCPApproval{Never: []string{"a"}}},
		{ServerLabel: "plain", Approval: mcp.MCPApproval{Mode: "always"}},
	}
	for i, w := range want {
		if !reflect.DeepEqual(mcp.ToolOf(&req.Tools[i]), w) {
			t.Errorf("tools[%d] = %+v, want %+v", i, mcp.ToolOf(&req.Tools[i]), w)
		}
	}
	ro, _ := decode(t, `{"model":"m","tools":[{"type":"mcp","server_label":"r","allowed_tools":{"read_only":true},
		"require_approval":{"never":{"read_only":true,"tool_names":["w"]}}}]}`)
	wantRO := &mcp.MCPTool{ServerLabel: "r", AllowedReadOnly: true, Approval: mcp.MCPApproval{Never: []string{"w"}, NeverReadOnly: true}}
	if !reflect.DeepEqual(mcp.ToolOf(&ro.Tools[0]), wantRO) {
		t.Errorf("read_only forms = %+v, want %+v", mcp.ToolOf(&ro.Tools[0]), wantRO)
	}
	reader := mcp.MCPToolInfo{Name: "r", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	writer := mcp.MCPToolInfo{Name: "x", Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":true}`)}
	if m := mcp.ToolOf(&ro.Tools[0]); !m.Allows(reader) || m.Allows(writer) || m.Approval.Required(reader) || !m.Approval.Required(writer) ||
		m.Approval.Required(mcp.MCPToolInfo{Name: "w"}) {
		t.Error("read_only: Allows/Required")
	}
	// OpenAI's default asks for every call; the filter form runs only "never" tools.
	tool := func(name string) mcp.MCPToolInfo { return mcp.MCPToolInfo{Name: name} }
	if a := want[1].Approval; a.Required(tool("a")) || !a.Required(tool("b")) || !want[2].Approval.Required(tool("x")) || want[0].Approval.Required(tool("read")) {
		t.Error("MCPApproval.Required")
	}
	c := req.ToolChoice
	if c.Type != "mcp" || mcp.ChoiceLabel(c) != "files" || c.Name != "read" || c.EffectiveMode() != hearth.ToolChoiceRequired {
		t.Errorf("tool_choice = %+v", c)
	}
	if b, _ := json.Marshal(c); string(b) != `{"type":"mcp","server_label":"files","name":"read"}` {
		t.Errorf("tool_choice echo %s", b)
	}

	for _, tc := range []struct{ name, body, param string }{
		{"no label", `"tools":[{"type":"mcp"}]`, "tools[0].server_label"},
		{"label pattern", `"tools":[{"type":"mcp","server_label":"a b"}]`, "tools[0].server_label"},
		{"label twice", `"tools":[{"type":"mcp","server_label":"a"},{"type":"mcp","server_label":"a"}]`, "tools[1].server_label"},
		{"approval value", `"tools":[{"type":"mcp","server_label":"a","require_approval":"sometimes"}]`, "tools[0].require_approval"},
		{"allowed_tools type", `"tools":[{"type":"mcp","server_label":"a","allowed_tools":"x"}]`, "tools[0].allowed_tools"},
		{"allowed_tools item", `"tools":[{"type":"mcp","server_label":"a","allowed_tools":[1]}]`, "tools[0].allowed_tools[0]"},
		{"read_only type", `"tools":[{"type":"mcp","server_label":"a","allowed_tools":{"read_only":"yes"}}]`, "tools[0].allowed_tools.read_only"},
		{"connector", `"tools":[{"type":"mcp","server_label":"a","connector_id":"connector_gmail"}]`, "tools[0].connector_id"},
		{"choice names no server", `"tools":[{"type":"mcp","server_label":"a"}],"tool_choice":{"type":"mcp","server_label":"b"}`, "tool_choice.server_label"},
		{"approval response no approve", `"input":[{"type":"mcp_approval_response","approval_request_id":"mcpr_1"}]`, "input[0].approve"},
		{"approval response no id", `"input":[{"type":"mcp_approval_response","approval_request_id":"","approve":true}]`, "input[0].approval_request_id"},
		{"mcp_call no name", `"input":[{"type":"mcp_call","id":"mcp_1","server_label":"a","arguments":"{}"}]`, "input[0].name"},
		{"failed message", `"input":[{"type":"message","role":"user","content":"hi","status":"failed"}]`, "input[0].status"},
	} {
		_, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m",` + tc.body + `}`))
		var e *hearth.Error
		if !errors.As(err, &e) || e.Param != tc.param || e.Status != 400 {
			t.Errorf("%s: %v, want a 400 naming %s", tc.name, err, tc.param)
		}
	}
}

// A stateless client sends a failed call back as hearth gave it.
func TestMCPFailedCallInput(t *testing.T) {
	req, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":[{"type":"mcp_call","id":"mcp_1","server_label":"a","name":"echo","arguments":"{}","error":"timed out","status":"failed"}]}`))
	if err != nil || len(req.Input) != 1 || req.Input[0].Status != hearth.StatusFailed || mcp.Of(req.Input[0]).Error != "timed out" {
		t.Fatalf("decode: %v, %+v", err, req)
	}
}

// TestMCPItemsRoundTrip: each MCP item marshals in OpenAI's shape (valid against the
// MCP schema) and decodes back unchanged, as storage and stateless clients need.
func TestMCPItemsRoundTrip(t *testing.T) {
	yes := true
	items := []hearth.Item{
		{Type: mcp.ItemMCPListTools, ID: "mcpl_1", Status: hearth.StatusCompleted, Hosted: &mcp.Fields{ServerLabel: "s",
			MCPTools: []mcp.MCPToolInfo{{Name: "echo", Description: "Echoes", InputSchema: json.RawMessage(`{"type":"object"}`)}}}},
		{Type: mcp.ItemMCPListTools, ID: "mcpl_2", Status: hearth.StatusCompleted, Hosted: &mcp.Fields{ServerLabel: "s", MCPTools: []mcp.MCPToolInfo{}, Error: "connection refused"}},
		{Type: mcp.ItemMCPCall, ID: "mcp_1", Status: hearth.StatusCompleted, Name: "echo", Arguments: `{"m":"x"}`,
			Output: hearth.ToolOutput{Text: "Echo: x"}, Hosted: &mcp.Fields{ServerLabel: "s", ApprovalRequestID: "mcpr_1"}},
		{Type: mcp.ItemMCPCall, ID: "mcp_2", Status: hearth.StatusFailed, Name: "echo", Arguments: `{}`, Hosted: &mcp.Fields{ServerLabel: "s", Error: "timed out"}},
		{Type: mcp.ItemMCPApprovalRequest, ID: "mcpr_1", Status: hearth.StatusCompleted, Name: "echo", Arguments: `{"m":"x"}`, Hosted: &mcp.Fields{ServerLabel: "s"}},
		{Type: mcp.ItemMCPApprovalResponse, ID: "mcpa_1", Hosted: &mcp.Fields{ApprovalRequestID: "mcpr_1", Approve: &yes, Reason: "fine"}},
	}
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		union := "ItemField"
		if it.Type == mcp.ItemMCPApprovalResponse {
			union = "ItemParam"
		}
		if err := schematest.MCP.Check(union, b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
		var back hearth.Item
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(back, it) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", b, back, it)
		}
	}
	// A call in progress or failed has no output; a failed one says why.
	b, _ := json.Marshal(items[3])
	if want := `{"type":"mcp_call","id":"mcp_2","server_label":"s","name":"echo","arguments":"{}","output":null,"error":"timed out","status":"failed","approval_request_id":null}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

// TestBuilderMCPEvents: a listing, a call and an approval request stream in OpenAI's
// order and pass the schema and the lifecycle check.
func TestBuilderMCPEvents(t *testing.T) {
	var events []hearth.Event
	b := hearth.NewBuilder(hearth.NewResponse("resp_1", &hearth.CreateResponseRequest{Model: "m"}, time.Unix(1, 0)), func(e hearth.Event) { events = append(events, e) })
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Start())
	must(mcp.AddListTools(b, hearth.Item{Hosted: &mcp.Fields{ServerLabel: "s", MCPTools: []mcp.MCPToolInfo{{Name: "echo", InputSchema: json.RawMessage(`{}`)}}}}))
	must(mcp.StartCall(b, "s", "echo", ""))
	must(b.ArgumentsDelta(`{"m":`))
	must(b.ArgumentsDelta(`"x"}`))
	must(mcp.ArgumentsDone(b))
	must(mcp.EndCall(b, "Echo: x", ""))
	must(mcp.StartCall(b, "s", "echo", ""))
	must(b.ArgumentsDelta(`{}`))
	must(mcp.EndCall(b, "", "the server is down"))
	must(mcp.StartApprovalRequest(b, "s", "echo"))
	must(b.ArgumentsDelta(`{}`))
	must(b.EndItem(hearth.StatusCompleted))
	must(b.Complete(hearth.Usage{}))

	var types []string
	var maps []map[string]any
	for _, e := range events {
		types = append(types, e.Type)
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(data, &m)
		maps = append(maps, m)
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.output_item.done",
		"response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call_arguments.delta", "response.mcp_call_arguments.delta",
		"response.mcp_call_arguments.done", "response.mcp_call.completed", "response.output_item.done",
		"response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call_arguments.delta",
		"response.mcp_call_arguments.done", "response.mcp_call.failed", "response.output_item.done",
		"response.output_item.added", "response.output_item.done", "response.completed"}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("events\n%q\nwant\n%q", types, want)
	}
	schematest.MCP.ValidateEvents(t, maps)
	if err := schematest.CheckLifecycle(maps); err != nil {
		t.Error(err)
	}
	out := b.Response().Output
	if out[1].Output.Text != "Echo: x" || out[1].Arguments != `{"m":"x"}` || out[1].Status != hearth.StatusCompleted ||
		mcp.Of(out[2]).Error != "the server is down" || out[2].Status != hearth.StatusFailed || out[3].Arguments != `{}` {
		t.Errorf("output %+v", out)
	}
}

// decode decodes a create request that must be valid.
func decode(t *testing.T, body string) (*hearth.CreateResponseRequest, []string) {
	t.Helper()
	req, ignored, err := hearth.DecodeCreateRequest([]byte(body))
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return req, ignored
}

// Off the fast path Event.AppendJSON calls MarshalJSON without json.Marshal's
// compacting pass: the bytes must be the same for events that carry MCP items, whose
// tool schemas are raw JSON written loosely.
func TestEventAppendJSONMCPItems(t *testing.T) {
	yes := true
	items := []hearth.Item{
		{Type: mcp.ItemMCPListTools, ID: "mcpl_1", Status: hearth.StatusCompleted, Hosted: &mcp.Fields{ServerLabel: "s",
			MCPTools: []mcp.MCPToolInfo{{Name: "echo", InputSchema: json.RawMessage("{ \"type\" : \"object\",\n \"x\": \"<&>\" }"), Annotations: json.RawMessage(`{"readOnlyHint": true}`)}}}},
		{Type: mcp.ItemMCPApprovalResponse, ID: "mcpa_1", Hosted: &mcp.Fields{ApprovalRequestID: "mcpr_1", Approve: &yes}},
	}
	resp := &hearth.Response{ID: "resp_1", Object: "response", Status: hearth.StatusCompleted, Model: "m<1>", Output: items}
	events := []hearth.Event{{Type: hearth.EventResponseCompleted, SequenceNumber: 9, Response: resp}}
	for i := range items {
		events = append(events, hearth.Event{Type: hearth.EventOutputItemDone, OutputIndex: i, Item: &items[i]})
	}
	for _, e := range events {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.AppendJSON(nil); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s (%v)\nwant %s", e.Type, got, err, want)
		}
	}
}

// TestBuilderApprovalRequestAddedWhole: an mcp_approval_request is added when it ends,
// with its arguments and the id SetApprovalID gives it (both events carry that id); one cut
// short (incomplete) keeps the id it started with, and without SetApprovalID the start's
// id stays.
func TestBuilderApprovalRequestAddedWhole(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sealed bool
		end    func(b *hearth.Builder) error
		status string
	}{
		{"completed, sealed", true, func(b *hearth.Builder) error { return b.EndItem(hearth.StatusCompleted) }, hearth.StatusCompleted},
		{"completed by the response's end", true, func(b *hearth.Builder) error { return b.Complete(hearth.Usage{}) }, hearth.StatusCompleted},
		{"cut short", true, func(b *hearth.Builder) error { return b.Incomplete(hearth.IncompleteMaxOutputTokens, hearth.Usage{}) }, hearth.StatusIncomplete},
		{"no SetApprovalID", false, func(b *hearth.Builder) error { return b.EndItem(hearth.StatusCompleted) }, hearth.StatusCompleted},
	} {
		var events []hearth.Event
		b := hearth.NewBuilder(hearth.NewResponse("resp_1", &hearth.CreateResponseRequest{Model: "m"}, time.Unix(0, 0)),
			func(e hearth.Event) { events = append(events, e) })
		var sealedArgs string
		if tc.sealed {
			mcp.SetApprovalID(b, func(it hearth.Item) string { sealedArgs = it.Arguments; return "mcpr_sealed" })
		}
		if err := mcp.StartApprovalRequest(b, "srv", "echo"); err != nil {
			t.Fatal(err)
		}
		started, _ := b.Current()
		for _, e := range events {
			if e.Type == hearth.EventOutputItemAdded {
				t.Fatalf("%s: output_item.added before the request ended", tc.name)
			}
		}
		b.ArgumentsDelta(`{"m":`)
		b.ArgumentsDelta(`"hi"}`)
		if err := tc.end(b); err != nil {
			t.Fatal(err)
		}
		wantID := started.ID
		if tc.sealed && tc.status == hearth.StatusCompleted {
			wantID = "mcpr_sealed"
			if sealedArgs != `{"m":"hi"}` {
				t.Errorf("%s: SetApprovalID saw arguments %q", tc.name, sealedArgs)
			}
		}
		var items []string
		for _, e := range events {
			if e.Type == hearth.EventOutputItemAdded || e.Type == hearth.EventOutputItemDone {
				items = append(items, e.Type+" "+e.Item.ID+" "+e.Item.Status+" "+e.Item.Arguments)
			}
		}
		want := []string{
			hearth.EventOutputItemAdded + " " + wantID + " in_progress " + `{"m":"hi"}`,
			hearth.EventOutputItemDone + " " + wantID + " " + tc.status + " " + `{"m":"hi"}`,
		}
		if !reflect.DeepEqual(items, want) {
			t.Errorf("%s: item events\n%q\nwant\n%q", tc.name, items, want)
		}
		if got := b.Response().Output[0].ID; got != wantID {
			t.Errorf("%s: the response's item has id %q, want %q", tc.name, got, wantID)
		}
	}
}
