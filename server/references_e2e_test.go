package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// toolOutputs answers the calls of r (in order) with outputs, as input items.
func toolOutputs(t *testing.T, r *hearth.Response, outputs ...string) []string {
	t.Helper()
	var items []string
	for _, it := range r.Output {
		if it.Type == hearth.ItemFunctionCall {
			items = append(items, `{"type":"function_call_output","call_id":"`+it.CallID+`","output":`+jsonString(outputs[len(items)])+`}`)
		}
	}
	if len(items) != len(outputs) {
		t.Fatalf("%d calls in %s, want %d", len(items), r.ID, len(outputs))
	}
	return items
}

// itemRef is an item_reference input item.
func itemRef(id string) string { return `{"type":"item_reference","id":"` + id + `"}` }

// spelled is an output item as a client sends it back whole.
func spelled(t *testing.T, it hearth.Item) string {
	t.Helper()
	b, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func inputOf(items ...[]string) string {
	var all []string
	for _, s := range items {
		all = append(all, s...)
	}
	return `"input":[` + strings.Join(all, ",") + `]`
}

// TestItemReferenceE2E: item_reference input items stand for the stored items they
// name, in a full history (JSON and SSE) and after previous_response_id: the model sees
// exactly the prompt it sees with the items spelled out (same answer, same input
// tokens), the stored input lists the items themselves, and an unknown id is a 400
// naming it.
func TestItemReferenceE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	ans := scriptmodel.EntryAnswer
	user := userMsg("weather and time in Paris?")

	first := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false, `"input":[`+user+`],`+toolsJSON))
	if len(first.Output) != 3 || first.Output[0].Type != hearth.ItemReasoning {
		t.Fatalf("first turn: %v", summarize(first.Output))
	}
	outputs := toolOutputs(t, first, "sunny", "12:00")
	var refs, whole []string
	for _, it := range first.Output {
		refs = append(refs, itemRef(it.ID))
		whole = append(whole, spelled(t, it))
	}
	answer := []item{{Type: "message", Status: "completed", Text: tools.Text(ans)}}

	base := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false, inputOf([]string{user}, whole, outputs)+","+toolsJSON))
	sameItems(t, "items spelled out", base.Output, answer)

	byRef := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false, inputOf([]string{user}, refs, outputs)+","+toolsJSON))
	sameItems(t, "items by reference (json)", byRef.Output, answer)
	if byRef.Usage.InputTokens != base.Usage.InputTokens || byRef.Usage.OutputTokens != tools.EvalCount(ans) {
		t.Errorf("by reference: usage %+v; spelled out: %+v (want the same prompt, %d output tokens)",
			*byRef.Usage, *base.Usage, tools.EvalCount(ans))
	}
	events, streamed := createSSE(t, srv, reqBody(scriptmodel.ToolsModel, true, inputOf([]string{user}, refs, outputs)+","+toolsJSON))
	sameItems(t, "items by reference (sse)", streamed.Output, answer)
	checkDeltasMatch(t, "items by reference (sse)", events, streamed)
	if streamed.Usage.InputTokens != base.Usage.InputTokens {
		t.Errorf("by reference (sse): %d input tokens, want %d", streamed.Usage.InputTokens, base.Usage.InputTokens)
	}

	// The stored input holds the items the references stood for, ids included.
	resp, b := getURL(t, srv.URL+"/v1/responses/"+byRef.ID+"/input_items?order=asc")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("input_items: %d %s", resp.StatusCode, b)
	}
	var list struct{ Data []hearth.Item }
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range list.Data {
		got = append(got, it.Type+":"+it.ID)
	}
	want := []string{"message:" + list.Data[0].ID}
	for _, it := range first.Output {
		want = append(want, it.Type+":"+it.ID)
	}
	want = append(want, "function_call_output:"+list.Data[4].ID, "function_call_output:"+list.Data[5].ID)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored input %v, want %v", got, want)
	}
	if r := list.Data[1]; r.Text(hearth.PartReasoningText) != first.Output[0].Text(hearth.PartReasoningText) {
		t.Errorf("stored reasoning %+v, want the referenced one", r)
	}

	// After previous_response_id: the answer's chain, then a reference to the first
	// turn's user message (an input item, stored under its assigned id) as a new turn.
	resp, b = getURL(t, srv.URL+"/v1/responses/"+first.ID+"/input_items")
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != http.StatusOK || len(list.Data) != 1 {
		t.Fatalf("first turn input_items: %d %s", resp.StatusCode, b)
	}
	again := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false,
		`"previous_response_id":"`+byRef.ID+`","input":[`+itemRef(list.Data[0].ID)+`],`+toolsJSON))
	sameItems(t, "reference after previous_response_id", again.Output, summarize(first.Output))
	spelledAgain := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false,
		`"previous_response_id":"`+byRef.ID+`","input":[`+user+`],`+toolsJSON))
	if again.Usage.InputTokens != spelledAgain.Usage.InputTokens {
		t.Errorf("after previous_response_id: %d input tokens by reference, %d spelled out",
			again.Usage.InputTokens, spelledAgain.Usage.InputTokens)
	}

	// Compaction resolves references too: the kept last user message is the one the
	// reference named.
	// (The plain model writes the summary; the tools model would call tools again.)
	resp, b = post(t, srv.URL+"/v1/responses/compact", reqBody(scriptmodel.PlainModel, false,
		inputOf([]string{itemRef(list.Data[0].ID)}, refs, outputs)))
	var compacted hearth.CompactResponse
	if err := json.Unmarshal(b, &compacted); err != nil || resp.StatusCode != http.StatusOK || len(compacted.Output) != 2 ||
		compacted.Output[0].Role != hearth.RoleUser || compacted.Output[0].Text(hearth.PartInputText) != "weather and time in Paris?" ||
		compacted.Output[1].Type != hearth.ItemCompaction {
		t.Errorf("compact by reference: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, srv.URL+"/v1/responses/compact", reqBody(scriptmodel.ToolsModel, false, `"input":[`+user+`,`+itemRef("msg_nothing")+`]`))
	if _, param := errCode(b); resp.StatusCode != http.StatusBadRequest || param != "input[1].id" {
		t.Errorf("compact with an unknown reference: %d %s", resp.StatusCode, b)
	}

	// Unknown ids, for both streaming and not: 400 naming the reference.
	for _, stream := range []bool{false, true} {
		resp, b = post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.ToolsModel, stream,
			`"input":[`+user+`,`+itemRef("rs_nothing")+`],`+toolsJSON))
		code, param := errCode(b)
		if resp.StatusCode != http.StatusBadRequest || param != "input[1].id" || code != "" ||
			!strings.Contains(string(b), "Item with id 'rs_nothing' not found.") {
			t.Errorf("unknown reference (stream %v): %d %s", stream, resp.StatusCode, b)
		}
	}
}

// TestItemReferenceOwnerE2E: a reference resolves only among the caller's own items;
// another key's item id is as unknown as a made-up one.
func TestItemReferenceOwnerE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{APIKeys: []string{"alice-key", "bob-key"}})
	url := srv.URL + "/v1/responses"
	body := reqBody(scriptmodel.PlainModel, false, `"input":"hi"`)
	status, _, b := call(t, nil, "POST", url, "alice-key", body)
	if status != http.StatusOK {
		t.Fatalf("alice: %d %s", status, b)
	}
	var r hearth.Response
	json.Unmarshal(b, &r)
	ref := reqBody(scriptmodel.PlainModel, false, `"input":[`+itemRef(r.Output[0].ID)+`,`+userMsg("and now?")+`]`)
	status, _, b = call(t, nil, "POST", url, "bob-key", ref)
	if code, param := errCode(b); status != http.StatusBadRequest || code != "" || param != "input[0].id" {
		t.Errorf("bob refers to alice's item: %d %s", status, b)
	}
	if status, _, b = call(t, nil, "POST", url, "alice-key", ref); status != http.StatusOK {
		t.Errorf("alice refers to her own item: %d %s", status, b)
	}
}

// TestCallIDE2E: a tool output must answer a call of the conversation (the items sent,
// items resolved from references, or the chain behind previous_response_id); one that
// answers none is a 400 naming its call_id, with OpenAI's message.
func TestCallIDE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	user := userMsg("weather and time in Paris?")
	first := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false, `"input":[`+user+`],`+toolsJSON))
	outputs := toolOutputs(t, first, "sunny", "12:00")
	ok := []struct{ name, extra string }{
		{"after previous_response_id", `"previous_response_id":"` + first.ID + `",` + inputOf(outputs)},
		{"calls by reference", inputOf([]string{user, itemRef(first.Output[1].ID), itemRef(first.Output[2].ID)}, outputs)},
	}
	for _, tc := range ok {
		r := createJSON(t, srv, reqBody(scriptmodel.ToolsModel, false, tc.extra+","+toolsJSON))
		if r.Status != hearth.StatusCompleted || len(r.Output) != 1 || r.Output[0].Type != hearth.ItemMessage {
			t.Errorf("%s: %s %v", tc.name, r.Status, summarize(r.Output))
		}
	}
	orphan := `{"type":"function_call_output","call_id":"call_nowhere","output":"sunny"}`
	bad := []struct{ name, extra, param, msg string }{
		{"no call at all", inputOf([]string{user, orphan}), "input[1].call_id",
			"No tool call found for function call output with call_id call_nowhere."},
		{"not a call of the chain", `"previous_response_id":"` + first.ID + `",` + inputOf(outputs[:1], []string{orphan}),
			"input[1].call_id", "No tool call found for function call output with call_id call_nowhere."},
		{"output before its call", inputOf([]string{user}, outputs[:1], []string{spelled(t, first.Output[1])}),
			"input[1].call_id", "No tool call found for function call output with call_id " + first.Output[1].CallID + "."},
		{"custom tool output", inputOf([]string{user, `{"type":"custom_tool_call_output","call_id":"call_x","output":"done"}`}),
			"input[1].call_id", "No tool call found for custom tool call output with call_id call_x."},
	}
	for _, tc := range bad {
		for _, stream := range []bool{false, true} {
			resp, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.ToolsModel, stream, tc.extra+","+toolsJSON))
			var e struct{ Error map[string]any }
			json.Unmarshal(b, &e)
			if resp.StatusCode != http.StatusBadRequest || e.Error["param"] != tc.param || e.Error["message"] != tc.msg ||
				e.Error["code"] != nil || e.Error["type"] != hearth.ErrTypeInvalidRequest {
				t.Errorf("%s (stream %v): %d %s", tc.name, stream, resp.StatusCode, b)
			}
		}
	}
}

// TestItemReferenceWebSocketE2E: over a WebSocket, references resolve against the
// connection's own store: false conversation too; an output that answers no call fails
// the create and evicts that conversation, so continuing from it is then
// previous_response_not_found.
func TestItemReferenceWebSocketE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	ans := scriptmodel.EntryAnswer
	ws := dialWS(t, srv, nil)
	user := userMsg("weather and time in Paris?")
	first := ws.completed(wsCreate(scriptmodel.ToolsModel, `"store":false,"input":[`+user+`],`+toolsJSON))
	outputs := toolOutputs(t, first, "sunny", "12:00")

	// Full history with the unstored reasoning and calls by reference.
	var refs []string
	for _, it := range first.Output {
		refs = append(refs, itemRef(it.ID))
	}
	second := ws.completed(wsCreate(scriptmodel.ToolsModel, `"store":false,`+inputOf([]string{user}, refs, outputs)+","+toolsJSON))
	sameItems(t, "websocket by reference", second.Output, []item{{Type: "message", Status: "completed", Text: tools.Text(ans)}})

	// A continuation of the first response whose output answers no call fails...
	third := ws.completed(wsCreate(scriptmodel.ToolsModel, `"store":false,"input":[`+user+`],`+toolsJSON))
	orphan := `{"type":"function_call_output","call_id":"call_nowhere","output":"sunny"}`
	e := ws.failsWith("orphan output", wsCreate(scriptmodel.ToolsModel,
		`"store":false,"previous_response_id":"`+third.ID+`","input":[`+orphan+`],`+toolsJSON), true,
		http.StatusBadRequest, hearth.ErrTypeInvalidRequest, "input[0].call_id")
	if e.Error.Message != "No tool call found for function call output with call_id call_nowhere." {
		t.Errorf("message %q", e.Error.Message)
	}
	// ...and evicts the connection's state: the good retry finds nothing to continue.
	ws.failsWith("retry after eviction", wsCreate(scriptmodel.ToolsModel,
		`"store":false,"previous_response_id":"`+third.ID+`",`+inputOf(toolOutputs(t, third, "sunny", "12:00"))+`,`+toolsJSON), true,
		http.StatusNotFound, hearth.CodePreviousResponseNotFound, "previous_response_id")
	// An unknown reference is refused like over HTTP.
	ws.failsWith("unknown reference", wsCreate(scriptmodel.ToolsModel, `"store":false,"input":[`+itemRef("fc_nothing")+`]`), true,
		http.StatusBadRequest, hearth.ErrTypeInvalidRequest, "input[0].id")
}

// TestItemReferenceStepsE2E: a three-step loop (one call per step) sent as a full
// history whose earlier output items are all references, to items of two different
// stored responses: each step gets exactly its script's items and token counts.
func TestItemReferenceStepsE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m := testenv.Model(t, scriptmodel.StepsModel)
	user := userMsg("weather and time in Paris?")
	history := []string{user}
	steps := []struct {
		entry string
		call  string
	}{{scriptmodel.EntryAssistant, "get_weather"}, {scriptmodel.EntryNextStep, "get_time"}}
	for i, step := range steps {
		r := createJSON(t, srv, reqBody(scriptmodel.StepsModel, false, inputOf(history)+","+toolsJSON))
		reasoning, calls := splitThink(t, m.Text(step.entry))
		want := []item{{Type: "reasoning", Status: "completed", Text: reasoning}}
		for _, c := range parseToolCalls(t, calls) {
			want = append(want, item{Type: "function_call", Status: "completed", Name: c.Name, Arguments: c.Arguments})
		}
		sameItems(t, fmt.Sprintf("step %d", i+1), r.Output, want)
		if r.Usage.OutputTokens != m.EvalCount(step.entry) {
			t.Errorf("step %d: %d output tokens, want %d", i+1, r.Usage.OutputTokens, m.EvalCount(step.entry))
		}
		for _, it := range r.Output {
			history = append(history, itemRef(it.ID))
		}
		history = append(history, toolOutputs(t, r, step.call+" result")...)
	}
	r := createJSON(t, srv, reqBody(scriptmodel.StepsModel, false, inputOf(history)+","+toolsJSON))
	sameItems(t, "step 3", r.Output, []item{{Type: "message", Status: "completed", Text: m.Text(scriptmodel.EntryAnswer)}})
}
