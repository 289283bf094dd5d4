package schematest_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth/internal/schematest"
)

// The validator must reject what the schema forbids; otherwise every other
// schema test in the repository passes vacuously.
func TestCheckRejects(t *testing.T) {
	valid := validResponse(t)
	for _, tc := range []struct {
		name, schema string
		v            any
	}{
		{"empty response", "ResponseResource", `{}`},
		{"null output", "ResponseResource", strings.Replace(valid, `"output":[]`, `"output":null`, 1)},
		{"string created_at", "ResponseResource", strings.Replace(valid, `"created_at":1700000000`, `"created_at":"1700000000"`, 1)},
		{"missing usage", "ResponseResource", strings.Replace(valid, `"usage":null,`, ``, 1)},
		{"unknown truncation", "ResponseResource", strings.Replace(valid, `"truncation":"disabled"`, `"truncation":"sometimes"`, 1)},
		{"message without content", "ItemField", `{"type":"message","id":"m","status":"completed","role":"assistant"}`},
		{"function call without status", "ItemField", `{"type":"function_call","id":"f","call_id":"c","name":"n","arguments":"{}"}`},
		{"error without code", "Error", `{"message":"m"}`},
	} {
		if err := schematest.Check(tc.schema, []byte(tc.v.(string))); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if err := schematest.Check("ResponseResource", []byte(valid)); err != nil {
		t.Errorf("the valid response was rejected: %v", err)
	}
	if err := schematest.Check("NoSuchSchema", []byte(`{}`)); err == nil {
		t.Error("an unknown schema name was accepted")
	}
}

func TestCheckEventRejectsTypesOutsideTheSchema(t *testing.T) {
	// OpenAI's name for raw reasoning deltas is not in the Open Responses schema.
	ev := `{"type":"response.reasoning_text.delta","sequence_number":1,"item_id":"rs_1","output_index":0,"content_index":0,"delta":"x"}`
	if err := schematest.CheckEvent([]byte(ev)); err == nil {
		t.Error("response.reasoning_text.delta was accepted")
	}
	ok := strings.Replace(ev, "reasoning_text.delta", "reasoning.delta", 1)
	if err := schematest.CheckEvent([]byte(ok)); err != nil {
		t.Error(err)
	}
	if err := schematest.CheckEvent([]byte(`{"type":"response.output_text.delta","sequence_number":1}`)); err == nil {
		t.Error("a delta without item_id was accepted")
	}
}

// validResponse is a response as hearth creates it (testdata/response.json, written by
// hearth.NewResponse for a request of model "m").
func validResponse(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/response.json")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// readStream reads an event stream from testdata, one JSON array of events.
func readStream(t *testing.T, name string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var events []map[string]any
	if err := json.Unmarshal(data, &events); err != nil {
		t.Fatal(err)
	}
	return events
}

// stream is a valid event stream as hearth's Builder writes it (testdata/stream.json):
// reasoning with a summary, text, and a function call.
func stream(t *testing.T) []map[string]any {
	t.Helper()
	events := readStream(t, "stream.json")
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Fatalf("the valid stream was rejected: %v", err)
	}
	return events
}

func index(events []map[string]any, typ string, nth int) int {
	for i, e := range events {
		if e["type"] == typ {
			if nth == 0 {
				return i
			}
			nth--
		}
	}
	panic("no " + typ)
}

func clone(events []map[string]any) []map[string]any {
	data, _ := json.Marshal(events)
	var out []map[string]any
	json.Unmarshal(data, &out)
	return out
}

func remove(events []map[string]any, i int) []map[string]any {
	return append(events[:i:i], events[i+1:]...)
}

// renumber gives events consecutive sequence numbers again, so that a
// mutation is caught by the rule it breaks, not by the numbering.
func renumber(events []map[string]any) []map[string]any {
	for i, e := range events {
		e["sequence_number"] = float64(i)
	}
	return events
}

func TestCheckLifecycleRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(es []map[string]any) []map[string]any
		want   string
	}{
		{"sequence goes back", func(es []map[string]any) []map[string]any {
			es[5]["sequence_number"] = float64(2)
			return es
		}, "does not increase"},
		{"no response.created", func(es []map[string]any) []map[string]any { return renumber(es[1:]) }, "response.created"},
		{"no response.in_progress", func(es []map[string]any) []map[string]any {
			return renumber(remove(es, 1))
		}, "before response.in_progress"},
		{"delta before its item", func(es []map[string]any) []map[string]any {
			i := index(es, "response.output_item.added", 1)
			return renumber(remove(es, i))
		}, ""},
		{"delta before its part", func(es []map[string]any) []map[string]any {
			i := index(es, "response.content_part.added", 1)
			return renumber(remove(es, i))
		}, "not open"},
		{"done text differs", func(es []map[string]any) []map[string]any {
			es[index(es, "response.output_text.delta", 0)]["delta"] = "XX"
			return es
		}, "deltas gave"},
		{"part done before text done", func(es []map[string]any) []map[string]any {
			i := index(es, "response.output_text.done", 0)
			es[i], es[i+1] = es[i+1], es[i]
			return renumber(es)
		}, "before its text"},
		{"summary part left open", func(es []map[string]any) []map[string]any {
			return renumber(remove(es, index(es, "response.reasoning_summary_part.done", 0)))
		}, "still open"},
		{"arguments done missing", func(es []map[string]any) []map[string]any {
			return renumber(remove(es, index(es, "response.function_call_arguments.done", 0)))
		}, "without function_call_arguments.done"},
		{"wrong item_id", func(es []map[string]any) []map[string]any {
			es[index(es, "response.output_text.delta", 1)]["item_id"] = "msg_other"
			return es
		}, "item_id"},
		{"wrong output_index", func(es []map[string]any) []map[string]any {
			es[index(es, "response.output_item.added", 1)]["output_index"] = float64(5)
			return es
		}, "output_index"},
		{"no terminal event", func(es []map[string]any) []map[string]any { return es[:len(es)-1] }, "no terminal"},
		{"two terminal events", func(es []map[string]any) []map[string]any {
			last := clone(es[len(es)-1:])[0]
			return renumber(append(es, last))
		}, "after the terminal"},
		{"terminal output differs", func(es []map[string]any) []map[string]any {
			out := es[len(es)-1]["response"].(map[string]any)["output"].([]any)
			out[1].(map[string]any)["status"] = "incomplete"
			return es
		}, "differs from its output_item.done"},
		{"terminal status differs", func(es []map[string]any) []map[string]any {
			es[len(es)-1]["response"].(map[string]any)["status"] = "incomplete"
			return es
		}, "with status"},
		{"items overlap", func(es []map[string]any) []map[string]any {
			return renumber(remove(es, index(es, "response.output_item.done", 0)))
		}, "while item"},
	} {
		t.Run(tc.name, func(t *testing.T) { rejects(t, tc.mutate(clone(stream(t))), tc.want) })
	}
}

func TestCheckLifecycleIncompleteMustBeLast(t *testing.T) {
	es := stream(t)
	// Mark the first item incomplete everywhere it appears: a later item
	// then breaks the rule.
	first := index(es, "response.output_item.done", 0)
	es[first]["item"].(map[string]any)["status"] = "incomplete"
	err := schematest.CheckLifecycle(es)
	if err == nil || !strings.Contains(err.Error(), "after an incomplete item") {
		t.Errorf("got %v", err)
	}
}

func sse(events []map[string]any, done bool) string {
	var b strings.Builder
	b.WriteString(": keep-alive\n\n")
	for _, e := range events {
		data, _ := json.Marshal(e)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", e["type"], data)
	}
	if done {
		b.WriteString("data: [DONE]\n\n")
	}
	return b.String()
}

func TestReadSSE(t *testing.T) {
	es := stream(t)
	got, err := schematest.ReadSSE(strings.NewReader(sse(es, true)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(es) {
		t.Fatalf("read %d events, wrote %d", len(got), len(es))
	}
	if err := schematest.CheckLifecycle(got); err != nil {
		t.Error(err)
	}
	schematest.ValidateEvents(t, got)

	if _, err := schematest.ReadSSE(strings.NewReader(sse(es, false))); err == nil || !strings.Contains(err.Error(), "[DONE]") {
		t.Errorf("a stream without [DONE]: %v", err)
	}
	bad := strings.Replace(sse(es, true), "event: response.in_progress", "event: response.progress", 1)
	if _, err := schematest.ReadSSE(strings.NewReader(bad)); err == nil {
		t.Error("a mismatched event name was accepted")
	}
	after := sse(es, true) + "event: error\ndata: {\"type\":\"error\"}\n\n"
	if _, err := schematest.ReadSSE(strings.NewReader(after)); err == nil {
		t.Error("a frame after [DONE] was accepted")
	}
}

// customStream is a valid stream with a custom tool call between two messages, as
// hearth's Builder writes it (testdata/custom_stream.json).
func customStream(t *testing.T) []map[string]any {
	t.Helper()
	return readStream(t, "custom_stream.json")
}

// The published schema has no custom tools; OpenAI's definitions added by
// CustomTools accept hearth's custom tool stream and reject broken ones.
func TestCustomToolsDocument(t *testing.T) {
	es := customStream(t)
	if err := schematest.CheckLifecycle(es); err != nil {
		t.Fatalf("the valid stream was rejected: %v", err)
	}
	schematest.CustomTools.ValidateEvents(t, es)
	final := es[len(es)-1]["response"]
	schematest.CustomTools.Validate(t, "ResponseResource", final)
	delta := es[index(es, "response.custom_tool_call_input.delta", 0)]
	if err := schematest.CheckEvent(delta); err == nil {
		t.Error("the published schema accepted response.custom_tool_call_input.delta")
	}
	if err := schematest.Check("ResponseResource", final); err == nil {
		t.Error("the published schema accepted a custom_tool_call item")
	}
	for _, bad := range []string{
		`{"type":"response.custom_tool_call_input.delta","sequence_number":1,"item_id":"ctc_1","output_index":0}`,
		`{"type":"response.custom_tool_call_input.done","sequence_number":1,"item_id":"ctc_1","output_index":0,"input":5}`,
	} {
		if err := schematest.CustomTools.CheckEvent([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	for _, bad := range []string{
		`{"type":"custom_tool_call","id":"ctc_1","call_id":"c","name":"n","status":"completed"}`,
		`{"type":"custom_tool_call","id":"ctc_1","call_id":"c","name":"n","input":"x","status":"done"}`,
		`{"type":"custom_tool_call_output","call_id":"c"}`,
	} {
		if err := schematest.CustomTools.Check("ItemField", []byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	for _, ok := range []string{
		`{"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: \"x\""}}`,
		`{"type":"custom","name":"c","description":"d","format":{"type":"text"}}`,
	} {
		schematest.CustomTools.Validate(t, "ResponsesToolParam", []byte(ok))
	}
	if err := schematest.CustomTools.Check("ResponsesToolParam", []byte(`{"type":"custom","name":"c","format":{"type":"grammar","syntax":"peg","definition":"x"}}`)); err == nil {
		t.Error("accepted a grammar of syntax peg")
	}
	schematest.CustomTools.Validate(t, "ToolChoiceParam", []byte(`{"type":"custom","name":"c"}`))
}

func TestCheckLifecycleRejectsBrokenCustomToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(es []map[string]any) []map[string]any
		want   string
	}{
		{"input done missing", func(es []map[string]any) []map[string]any {
			return renumber(remove(es, index(es, "response.custom_tool_call_input.done", 0)))
		}, "without custom_tool_call_input.done"},
		{"done input differs from the deltas", func(es []map[string]any) []map[string]any {
			es[index(es, "response.custom_tool_call_input.delta", 1)]["delta"] = "X"
			return es
		}, "deltas gave"},
		{"item input differs", func(es []map[string]any) []map[string]any {
			i := index(es, "response.output_item.done", 1)
			es[i]["item"].(map[string]any)["input"] = "other"
			return es
		}, "item input"},
		{"input event on a message", func(es []map[string]any) []map[string]any {
			i := index(es, "response.custom_tool_call_input.delta", 0)
			d := clone(es[i : i+1])[0]
			d["item_id"] = es[index(es, "response.output_text.delta", 0)]["item_id"]
			d["output_index"] = float64(0)
			j := index(es, "response.output_text.delta", 0)
			return renumber(append(es[:j+1:j+1], append([]map[string]any{d}, es[j+1:]...)...))
		}, "for a message item"},
	} {
		t.Run(tc.name, func(t *testing.T) { rejects(t, tc.mutate(clone(customStream(t))), tc.want) })
	}
}

// The WebSocket schemas: the checker must tell a valid error envelope from broken
// ones, and a create message from one carrying the disallowed HTTP-only fields.
func TestCheckWebSocketMessage(t *testing.T) {
	valid := `{"type":"error","status":404,"error":{"type":"not_found","code":"previous_response_not_found","message":"m","param":"previous_response_id"}}`
	if err := schematest.CheckWebSocketMessage([]byte(valid)); err != nil {
		t.Errorf("valid error message rejected: %v", err)
	}
	for name, msg := range map[string]string{
		"status as text":        strings.Replace(valid, `404`, `"404"`, 1),
		"no code":               strings.Replace(valid, `"code":"previous_response_not_found",`, ``, 1),
		"null code":             strings.Replace(valid, `"previous_response_not_found"`, `null`, 1),
		"mid-response, no code": `{"type":"error","status":500,"sequence_number":3,"error":{"type":"server_error","code":null,"message":"m","param":null}}`,
		"no status, no seq":     `{"type":"error","error":{"type":"server_error","code":"x","message":"m","param":null}}`,
		"unknown event":         `{"type":"response.cancelled","sequence_number":1}`,
	} {
		if err := schematest.CheckWebSocketMessage([]byte(msg)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	mid := `{"type":"error","status":500,"sequence_number":3,"error":{"type":"server_error","code":"server_error","message":"m","param":null}}`
	if err := schematest.CheckWebSocketMessage([]byte(mid)); err != nil {
		t.Errorf("mid-response error rejected: %v", err)
	}

	create := `{"type":"response.create","model":"m","input":"hi"}`
	if err := schematest.Check("WebSocketResponseCreateEvent", []byte(create)); err != nil {
		t.Errorf("valid create rejected: %v", err)
	}
	for _, f := range []string{`"stream":true`, `"stream":false`, `"stream_options":{"include_obfuscation":false}`, `"background":false`} {
		msg := strings.Replace(create, `"input":"hi"`, `"input":"hi",`+f, 1)
		if err := schematest.Check("WebSocketResponseCreateEvent", []byte(msg)); err == nil {
			t.Errorf("create with %s accepted", f)
		}
	}
	if err := schematest.Check("WebSocketResponseCreateEvent", []byte(`{"model":"m","input":"hi"}`)); err == nil {
		t.Error("create without type accepted")
	}
}

// rejects checks that CheckLifecycle refuses es with an error that mentions want.
func rejects(t *testing.T, es []map[string]any, want string) {
	t.Helper()
	err := schematest.CheckLifecycle(es)
	if err == nil {
		t.Fatal("accepted")
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not mention %q", err, want)
	}
}
