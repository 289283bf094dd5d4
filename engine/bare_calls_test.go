package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"hearth"
)

// TestBareCallsEnforced: an LFM2 model that answers with bare Python calls, without
// <|tool_call_start|> and <|tool_call_end|>. The answer is calls when the request lets
// the model make them (auto, allowed_tools that include the tool, a policy enforced for
// other reasons), and text when it does not (allowed_tools without the tool, none): a
// bare call to a tool that may not be called is never a call. tool_choice required
// forces a marked call as before. A bare list whose second call fails validation is
// taken back whole (nothing of it reaches the client) and the call is generated again
// under the grammar.
func TestBareCallsEnforced(t *testing.T) {
	weather := []string{"[get", "_weather(city=", `"Paris"`, ")]"}
	weatherText := `message[completed] [get_weather(city="Paris")]`
	weatherCall := `call[completed] get_weather {"city":"Paris"}`
	cases := []struct {
		name, tools, extra string
		answer             []string
		want               string
		// formats are the constraints of the runtime's generations, in order (""
		// for a free phase; the probes of which stop ended a phase left out).
		formats []string
	}{
		{name: "auto", answer: weather, want: weatherCall, formats: []string{""}},
		{name: "enforced for max_tool_calls", extra: `,"max_tool_calls":1`, answer: weather, want: weatherCall,
			formats: []string{"", ""}},
		{name: "allowed_tools with the tool", extra: `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_weather"}]}`,
			answer: weather, want: weatherCall, formats: []string{"", ""}},
		{name: "allowed_tools without the tool", extra: `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}`,
			answer: weather, want: weatherText, formats: []string{"", ""}},
		{name: "none", extra: `,"tool_choice":"none"`, answer: weather, want: weatherText, formats: []string{"", ""}},
		{name: "required", extra: `,"tool_choice":"required"`, answer: weather, want: weatherCall,
			// The bare answer is taken back; the name under an enum, then the
			// model writes the arguments and ends.
			formats: []string{"", "", "enum", ""}},
		{name: "list with an invalid call", tools: "," + tempTool,
			answer: []string{"[get_time(timezone=", `"UTC"`, "), set_temp(celsius=", "-300", ")]"},
			want:   `call[completed] set_temp {"celsius":21}`,
			// The list is taken back from its "[", the name under an enum, the
			// arguments under set_temp's schema, then the model may go on.
			formats: []string{"", "", "enum", "schema", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			show := &ModelInfo{Renderer: "lfm2", Parser: "lfm2", ContextLength: 8192, Prompt: scriptRenderer{}}
			rt := &fakeRuntime{show: show}
			var formats []string
			rt.write = func(transcript string, format json.RawMessage) []string {
				if len(rt.reqs) > 20 {
					t.Fatalf("%d runtime requests: the engine loops", len(rt.reqs))
				}
				switch {
				case strings.Contains(string(format), `"properties"`):
					formats = append(formats, "schema")
					return bytesOf(`{"celsius":21}`)
				case format != nil:
					formats = append(formats, "enum")
					if strings.Contains(string(format), "set_temp") {
						return bytesOf(`"set_temp"`)
					}
					return bytesOf(`"get_weather"`)
				}
				if !isProbe(rt.reqs[len(rt.reqs)-1]) {
					formats = append(formats, "")
				}
				if strings.HasSuffix(transcript, "<|tool_call_start|>[get_weather(") {
					return []string{"city=", `"Paris"`, ")]", "<|tool_call_end|>"}
				}
				return script(c.answer...)(transcript)
			}
			body := `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + c.tools + `]` + c.extra + `}`
			j := newFakeJob(t, rt, body)
			b := hearth.NewBuilder(hearth.NewResponse("resp_test", j.req, timeZero), nil)
			if err := j.Run(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			if got, want := summary(b.Response()), "completed: "+c.want; got != want {
				t.Errorf("output\n got %s\nwant %s", got, want)
			}
			if strings.Join(formats, "|") != strings.Join(c.formats, "|") {
				t.Errorf("requests %q, want %q", formats, c.formats)
			}
		})
	}
}
