package hearth_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"testing"
	"time"

	"hearth"
	"hearth/internal/schematest"
)

// script drives a Builder the way the engine would.
type script func(b *hearth.Builder) error

func steps(fs ...func(b *hearth.Builder) error) script {
	return func(b *hearth.Builder) error {
		for _, f := range fs {
			if err := f(b); err != nil {
				return err
			}
		}
		return nil
	}
}

func text(s string) func(*hearth.Builder) error {
	return func(b *hearth.Builder) error { return b.TextDelta(s) }
}
func refusal(s string) func(*hearth.Builder) error {
	return func(b *hearth.Builder) error { return b.RefusalDelta(s) }
}
func reasoning(s string) func(*hearth.Builder) error {
	return func(b *hearth.Builder) error { return b.ReasoningDelta(s) }
}
func args(s string) func(*hearth.Builder) error {
	return func(b *hearth.Builder) error { return b.ArgumentsDelta(s) }
}
func call(name, ns string) func(*hearth.Builder) error {
	return func(b *hearth.Builder) error { return b.StartFunctionCall(name, ns) }
}
func end(status string) func(*hearth.Builder) error {
	return func(b *hearth.Builder) error { return b.EndItem(status) }
}
func start(b *hearth.Builder) error    { return b.Start() }
func queue(b *hearth.Builder) error    { return b.Queue() }
func startMsg(b *hearth.Builder) error { return b.StartMessage() }
func startRs(b *hearth.Builder) error  { return b.StartReasoning() }

var usage = hearth.Usage{InputTokens: 12, InputTokensDetails: hearth.InputTokensDetails{CachedTokens: 8},
	OutputTokens: 20, OutputTokensDetails: hearth.OutputTokensDetails{ReasoningTokens: 6}}

func complete(b *hearth.Builder) error { return b.Complete(usage) }
func incomplete(b *hearth.Builder) error {
	return b.Incomplete(hearth.IncompleteMaxOutputTokens, usage)
}
func fail(e *hearth.Error) func(*hearth.Builder) error {
	return func(b *hearth.Builder) error { return b.Fail(e, nil) }
}

var builderScenarios = []struct {
	name    string
	request string
	run     script
	status  string
	// events, when set, is the exact sequence of event types.
	events []string
	// offSchema: the stream contains an item the schema has no type for (a custom
	// tool call), valid against OpenAI's definitions of it only.
	offSchema bool
}{
	{
		name: "text", run: steps(start, text("Hel"), text("lo"), complete), status: "completed",
		events: []string{"response.created", "response.in_progress",
			"response.output_item.added", "response.content_part.added",
			"response.output_text.delta", "response.output_text.delta", "response.output_text.done",
			"response.content_part.done", "response.output_item.done", "response.completed"},
	},
	{
		name: "reasoning then text", run: steps(reasoning("Let me"), reasoning(" think."), text("42"), complete), status: "completed",
		events: []string{"response.created", "response.in_progress",
			"response.output_item.added", "response.content_part.added",
			"response.reasoning.delta", "response.reasoning.delta", "response.reasoning.done",
			"response.content_part.done", "response.output_item.done",
			"response.output_item.added", "response.content_part.added", "response.output_text.delta",
			"response.output_text.done", "response.content_part.done", "response.output_item.done",
			"response.completed"},
	},
	{
		name: "reasoning with summary", request: `{"model":"m","reasoning":{"summary":"auto"}}`,
		run: steps(reasoning("a"), reasoning("b"), text("c"), complete), status: "completed",
		events: []string{"response.created", "response.in_progress",
			"response.output_item.added", "response.reasoning_summary_part.added", "response.content_part.added",
			"response.reasoning.delta", "response.reasoning_summary_text.delta",
			"response.reasoning.delta", "response.reasoning_summary_text.delta",
			"response.reasoning.done", "response.content_part.done",
			"response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
			"response.output_item.done",
			"response.output_item.added", "response.content_part.added", "response.output_text.delta",
			"response.output_text.done", "response.content_part.done", "response.output_item.done",
			"response.completed"},
	},
	{
		name: "function call", request: `{"model":"m","tools":[{"type":"function","name":"get_weather"}]}`,
		run: steps(call("get_weather", ""), args(`{"city":`), args(`"Oslo"}`), end("completed"), complete), status: "completed",
		events: []string{"response.created", "response.in_progress", "response.output_item.added",
			"response.function_call_arguments.delta", "response.function_call_arguments.delta",
			"response.function_call_arguments.done", "response.output_item.done", "response.completed"},
	},
	{
		name:    "text then parallel calls",
		request: `{"model":"m","tools":[{"type":"function","name":"a"},{"type":"function","name":"b"}]}`,
		run:     steps(text("Calling."), call("a", ""), args(`{}`), call("b", ""), args(`{"x":1}`), complete), status: "completed",
	},
	{
		name:    "namespaced call",
		request: `{"model":"m","tools":[{"type":"namespace","name":"multi_agent_v1","tools":[{"type":"function","name":"spawn_agent"}]}]}`,
		run:     steps(reasoning("spawn"), call("spawn_agent", "multi_agent_v1"), args(`{"message":"go"}`), complete), status: "completed",
	},
	{
		name: "text and refusal in one message", run: steps(text("I "), refusal("can't"), refusal(" do that"), complete), status: "completed",
		events: []string{"response.created", "response.in_progress", "response.output_item.added",
			"response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
			"response.content_part.added", "response.refusal.delta", "response.refusal.delta", "response.refusal.done", "response.content_part.done",
			"response.output_item.done", "response.completed"},
	},
	{
		name: "incomplete mid-text", run: steps(reasoning("hm"), text("The answer is"), incomplete), status: "incomplete",
	},
	{
		name: "incomplete mid-call", request: `{"model":"m","tools":[{"type":"function","name":"f"}]}`,
		run: steps(call("f", ""), args(`{"a":`), incomplete), status: "incomplete",
	},
	{
		name: "incomplete after an ended item", run: steps(text("x"), end("incomplete"), incomplete), status: "incomplete",
	},
	{
		name: "failed mid-text", run: steps(text("partial"), fail(hearth.ModelError("The runner stopped unexpectedly."))), status: "failed",
		events: []string{"response.created", "response.in_progress", "response.output_item.added",
			"response.content_part.added", "response.output_text.delta", "response.output_text.done", "response.content_part.done",
			"response.output_item.done", "error", "response.failed"},
	},
	{
		name: "failed before output", run: steps(start, fail(hearth.ContextLengthExceeded("The input exceeds the context window."))), status: "failed",
		events: []string{"response.created", "response.in_progress", "error", "response.failed"},
	},
	{
		name: "failed with nil error", run: steps(fail(nil)), status: "failed",
	},
	{
		name: "empty", run: steps(complete), status: "completed",
		events: []string{"response.created", "response.in_progress", "response.completed"},
	},
	{
		name: "queued background", request: `{"model":"m","background":true}`,
		run: steps(queue, start, text("done"), complete), status: "completed",
		events: []string{"response.created", "response.queued", "response.in_progress",
			"response.output_item.added", "response.content_part.added", "response.output_text.delta",
			"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"},
	},
	{
		name: "encrypted reasoning", request: `{"model":"m","include":["reasoning.encrypted_content"]}`,
		run: steps(reasoning("r"), func(b *hearth.Builder) error { return b.SetEncryptedContent("b64:cg==") }, text("t"), complete), status: "completed",
	},
	{
		name: "explicit empty items", run: steps(startMsg, end("completed"), startRs, end("completed"), complete), status: "completed",
	},
	{
		name: "custom tool call", request: `{"model":"m","tools":[{"type":"custom","name":"apply_patch"}]}`,
		run:    steps(func(b *hearth.Builder) error { return b.StartCustomToolCall("apply_patch") }, args("*** Begin"), args(""), args(" Patch"), text("done"), complete),
		status: "completed", offSchema: true,
		events: []string{"response.created", "response.in_progress", "response.output_item.added",
			"response.custom_tool_call_input.delta", "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done",
			"response.output_item.done", "response.output_item.added", "response.content_part.added", "response.output_text.delta",
			"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"},
	},
}

var idPattern = regexp.MustCompile(`\b(msg|rs|fc|call|ctc)_[0-9a-f]{32}\b`)

func runBuilder(t *testing.T, request string, run script, emit func(hearth.Event)) *hearth.Response {
	t.Helper()
	if request == "" {
		request = `{"model":"m"}`
	}
	req, _ := decode(t, request)
	resp := hearth.NewResponse("resp_0123", req, created)
	b := hearth.NewBuilder(resp, emit)
	b.Now = func() time.Time { return created.Add(2 * time.Second) }
	if err := run(b); err != nil {
		t.Fatalf("script: %v", err)
	}
	if b.Response() != resp {
		t.Fatalf("Response() is not the response passed in")
	}
	return resp
}

func TestBuilderScenarios(t *testing.T) {
	for _, sc := range builderScenarios {
		t.Run(sc.name, func(t *testing.T) {
			var lines [][]byte
			resp := runBuilder(t, sc.request, sc.run, func(e hearth.Event) {
				data, err := json.Marshal(e)
				if err != nil {
					t.Fatalf("marshal %s: %v", e.Type, err)
				}
				lines = append(lines, data)
			})

			var events []map[string]any
			var types []string
			for _, l := range lines {
				if bytes.ContainsAny(l, "\r\n") {
					t.Errorf("event is not one line: %s", l)
				}
				var m map[string]any
				if err := json.Unmarshal(l, &m); err != nil {
					t.Fatal(err)
				}
				events = append(events, m)
				types = append(types, m["type"].(string))
			}
			if sc.events != nil && !reflect.DeepEqual(types, sc.events) {
				t.Errorf("events:\n  got  %q\n  want %q", types, sc.events)
			}
			if err := schematest.CheckLifecycle(events); err != nil {
				t.Errorf("lifecycle: %v", err)
			}
			if resp.Status != sc.status {
				t.Errorf("status = %q, want %q", resp.Status, sc.status)
			}

			// The terminal event carries exactly the final response.
			final, _ := json.Marshal(resp)
			var terminal map[string]any
			json.Unmarshal(lines[len(lines)-1], &terminal)
			carried, _ := json.Marshal(terminal["response"])
			var finalMap any
			json.Unmarshal(final, &finalMap)
			normalized, _ := json.Marshal(finalMap)
			if !bytes.Equal(carried, normalized) {
				t.Errorf("terminal event's response differs from Response():\n  %s\n  %s", carried, normalized)
			}

			// Non-streaming: the same calls with no emitter build the same response.
			quiet, _ := json.Marshal(runBuilder(t, sc.request, sc.run, nil))
			if a, b := idPattern.ReplaceAll(quiet, []byte("$1_X")), idPattern.ReplaceAll(final, []byte("$1_X")); !bytes.Equal(a, b) {
				t.Errorf("non-streaming response differs:\n  %s\n  %s", a, b)
			}

			if sc.offSchema {
				if schematest.Check("ResponseResource", final) == nil {
					t.Errorf("the schema now accepts this response; drop offSchema")
				}
				schematest.CustomTools.ValidateEvents(t, events)
				schematest.CustomTools.Validate(t, "ResponseResource", final)
				return
			}
			schematest.ValidateEvents(t, events)
			schematest.Validate(t, "ResponseResource", final)
		})
	}
}

// TestBuilderFinalResponses checks the content of the final responses, not
// only their shape.
func TestBuilderFinalResponses(t *testing.T) {
	req := `{"model":"m","reasoning":{"summary":"auto"},"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]}]}`
	resp := runBuilder(t, req, steps(reasoning("a"), reasoning("b"), text("x"), refusal("no"), call("f", "ns"), args(`{"k":`), args(`1}`), complete), nil)
	out := resp.Output
	if len(out) != 3 {
		t.Fatalf("got %d items", len(out))
	}
	rs, msg, fc := out[0], out[1], out[2]
	if rs.Type != "reasoning" || rs.Status != "completed" || rs.Text() != "ab" ||
		!reflect.DeepEqual(rs.Summary, []hearth.ContentPart{{Type: "summary_text", Text: "ab"}}) {
		t.Errorf("reasoning = %+v", rs)
	}
	if msg.Type != "message" || msg.Role != "assistant" || msg.Status != "completed" || len(msg.Content) != 2 ||
		msg.Content[0].Text != "x" || msg.Content[1].Refusal != "no" {
		t.Errorf("message = %+v", msg)
	}
	if fc.Type != "function_call" || fc.Name != "f" || fc.Namespace != "ns" || fc.Arguments != `{"k":1}` ||
		fc.Status != "completed" || len(fc.CallID) != len("call_")+32 || len(fc.ID) != len("fc_")+32 {
		t.Errorf("function call = %+v", fc)
	}
	want := usage
	want.TotalTokens = 32
	if resp.Usage == nil || *resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	if resp.CompletedAt == nil || *resp.CompletedAt != created.Unix()+2 || resp.IncompleteDetails != nil || resp.Error != nil {
		t.Errorf("completed_at=%v incomplete=%v error=%v", resp.CompletedAt, resp.IncompleteDetails, resp.Error)
	}

	resp = runBuilder(t, "", steps(text("cut"), incomplete), nil)
	if resp.CompletedAt != nil || resp.IncompleteDetails == nil || resp.IncompleteDetails.Reason != "max_output_tokens" ||
		resp.Output[0].Status != "incomplete" {
		t.Errorf("incomplete response = %+v", resp)
	}

	resp = runBuilder(t, "", steps(text("cut"), fail(hearth.ModelError("boom"))), nil)
	if resp.Error == nil || *resp.Error != (hearth.ResponseError{Code: "model_error", Message: "boom"}) ||
		resp.Usage != nil || resp.Output[0].Status != "incomplete" {
		t.Errorf("failed response = %+v", resp)
	}
}

func TestBuilderSnapshotsDoNotChange(t *testing.T) {
	var events []hearth.Event
	runBuilder(t, "", steps(text("a"), text("b"), complete), func(e hearth.Event) { events = append(events, e) })
	for _, e := range events {
		switch e.Type {
		case "response.created", "response.in_progress":
			if len(e.Response.Output) != 0 || e.Response.Status != "in_progress" || e.Response.Usage != nil {
				t.Errorf("%s snapshot changed after it was sent: %+v", e.Type, e.Response)
			}
		case "response.output_item.added":
			if e.Item.Status != "in_progress" || len(e.Item.Content) != 0 {
				t.Errorf("added item changed after it was sent: %+v", e.Item)
			}
		case "response.content_part.added":
			if e.Part.Text != "" {
				t.Errorf("added part changed after it was sent: %+v", e.Part)
			}
		}
	}
}

func TestBuilderMisuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  script
		want error // nil: any error
	}{
		{"arguments with nothing open", steps(args("{}")), nil},
		{"arguments into a message", steps(text("x"), args("{}")), nil},
		{"end with nothing open", steps(end("completed")), nil},
		{"end with a bad status", steps(text("x"), end("failed")), nil},
		{"encrypted content outside reasoning", steps(text("x"), func(b *hearth.Builder) error { return b.SetEncryptedContent("e") }), nil},
		{"item after an incomplete item", steps(text("x"), end("incomplete"), call("f", "")), nil},
		{"complete after an incomplete item", steps(text("x"), end("incomplete"), complete), nil},
		{"queue after start", steps(start, queue), nil},
		{"text after the end", steps(complete, text("x")), hearth.ErrFinished},
		{"complete twice", steps(complete, complete), hearth.ErrFinished},
		{"fail after the end", steps(incomplete, fail(nil)), hearth.ErrFinished},
		{"start after the end", steps(complete, start), hearth.ErrFinished},
		{"arguments after the end", steps(complete, args("x")), hearth.ErrFinished},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := decode(t, `{"model":"m"}`)
			b := hearth.NewBuilder(hearth.NewResponse("resp_1", req, created), nil)
			err := tc.run(b)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestEventMarshal covers the event types the builder does not emit and
// the error cases of Event.MarshalJSON.
func TestEventMarshal(t *testing.T) {
	ann := hearth.Event{Type: hearth.EventOutputTextAnnotationAdded, SequenceNumber: 7, ItemID: "msg_1", OutputIndex: 1,
		ContentIndex: 0, AnnotationIndex: 0, Annotation: &hearth.Annotation{Type: "url_citation", URL: "https://e", Title: "E", StartIndex: 0, EndIndex: 3}}
	if err := schematest.CheckEvent(ann); err != nil {
		t.Error(err)
	}
	errEv := hearth.Event{Type: hearth.EventError, SequenceNumber: 3, Error: hearth.InvalidRequest("input", "context_length_exceeded", "too long")}
	data, _ := json.Marshal(errEv)
	if want := `{"type":"error","sequence_number":3,"error":{"message":"too long","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`; string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	if err := schematest.CheckEvent(data); err != nil {
		t.Error(err)
	}
	for _, bad := range []hearth.Event{
		{Type: "response.reasoning_text.delta"},
		{Type: hearth.EventResponseCompleted},
		{Type: hearth.EventError},
	} {
		if _, err := json.Marshal(bad); err == nil {
			t.Errorf("marshalling %+v succeeded", bad)
		}
	}
}
