package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"hearth"
)

// TestXMLFormatsEnforced: tool_choice over the formats whose arguments are not JSON:
// the XML formats (Qwen3-Coder's and GLM's envelopes, on the renderers of Ollama
// v0.24.0 and v0.17.4), Gemma's call syntax (gemma4, functiongemma) and Python's
// (olmo3, lfm2). The model answers in text; "required" takes the text
// back, writes the opener and constrains the name to the allowed tools, and the model
// writes the parameters; a named choice writes the name itself; allowed_tools keeps the
// constraint to the allowed names. A model that writes no parameters after the forced
// name (it ends its turn there) gets one retry, whose parameters are generated as JSON
// under the tool's schema and written as XML by the engine; before, a required call
// was forced again after each such stop, without end.
func TestXMLFormatsEnforced(t *testing.T) {
	families := []struct {
		renderer, format string
		// nameOpen is what the engine writes before the name; params is what the
		// model writes after "get_time"'s name, through the call's closer.
		nameOpen, afterName string
		params              []string
	}{
		{"qwen3.5", "qwen3.5", "<tool_call>\n<function=", "<function=get_time>\n",
			[]string{"<parameter=timezone>", "\nUTC\n", "</parameter>", "\n</function>", "\n</tool_call>"}},
		{"laguna", "laguna", "<tool_call>", "<tool_call>get_time\n",
			[]string{"<arg_key>timezone</arg_key>", "\n<arg_value>UTC</arg_value>", "\n</tool_call>"}},
		// The families of Ollama v0.32.15's renderers on the same envelopes.
		{"qwen3.8", "qwen3.8", "<tool_call>\n<function=", "<function=get_time>\n",
			[]string{"<parameter=timezone>", "\nUTC\n", "</parameter>", "\n</function>", "\n</tool_call>"}},
		{"ornith", "ornith", "<tool_call>\n<function=", "<function=get_time>\n",
			[]string{"<parameter=timezone>", "\nUTC\n", "</parameter>", "\n</function>", "\n</tool_call>"}},
		{"nemotron-3.5-nano", "nemotron-3.5-nano", "<tool_call>\n<function=", "<function=get_time>\n",
			[]string{"<parameter=timezone>", "\nUTC\n", "</parameter>", "\n</function>", "\n</tool_call>"}},
		{"poolside-v1", "poolside-v1", "<tool_call>", "<tool_call>get_time\n",
			[]string{"<arg_key>timezone</arg_key>", "<arg_value>UTC</arg_value>", "</tool_call>"}},
		// The XML families of v0.17.4's renderers, the same enforcement.
		{"qwen3-coder", "qwen3-coder", "<tool_call>\n<function=", "<function=get_time>\n",
			[]string{"<parameter=timezone>", "\nUTC\n", "</parameter>", "\n</function>", "\n</tool_call>"}},
		{"glm-4.7", "glm4-moe", "<tool_call>", "<tool_call>get_time\n",
			[]string{"<arg_key>timezone</arg_key>", "\n<arg_value>UTC</arg_value>", "\n</tool_call>"}},
		// Gemma's bare-key syntax; the retry's JSON is written back in it.
		{"gemma4", "gemma4", "<|tool_call>call:", "<|tool_call>call:get_time{",
			[]string{"timezone:", `<|"|>UTC<|"|>`, "}", "<tool_call|>"}},
		{"functiongemma", "functiongemma", "<start_function_call>call:", "<start_function_call>call:get_time{",
			[]string{"timezone:<escape>", "UTC<escape>}", "<end_function_call>"}},
		// Python's call syntax; the retry's JSON is written as keyword arguments.
		{"olmo3", "olmo3", "<function_calls>", "<function_calls>get_time(",
			[]string{"timezone=", `"UTC"`, ")", "</function_calls>"}},
		{"lfm2", "lfm2", "<|tool_call_start|>[", "<|tool_call_start|>[get_time(",
			[]string{"timezone=", `'UTC'`, ")]", "<|tool_call_end|>"}},
		// Glimmer's messages: the prompt ends in the header, so the engine writes the
		// recipient's marker; the name is written twice, in the header and the block.
		{"glimmer", "glimmer", " to=", "<atem:invoke name=\"get_time\">\n",
			[]string{`<atem:parameter name="timezone">`, "UTC</atem:parameter>\n", "</atem:invoke>\n", "</atem:function_calls>"}},
	}
	// The model's answer in text, where it is not "Sure thing.": Glimmer's is a message
	// to the user (its prompt ends in the header).
	answers := map[string][]string{"glimmer": {" to=user", "<|message|>", "Sure", " thing."}}
	choices := []struct {
		name, choice string
		// constrained is whether the name is generated under an enum of the allowed
		// tools (one allowed name is written by the engine instead).
		constrained bool
	}{
		{"required", `"required"`, true},
		{"named", `{"type":"function","name":"get_time"}`, false},
		{"allowed_tools", `{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"get_time"}]}`, false},
	}
	for _, fam := range families {
		for _, ch := range choices {
			for _, silent := range []bool{false, true} {
				name := fam.renderer + "/" + ch.name
				if silent {
					name += "/no parameters"
				}
				t.Run(name, func(t *testing.T) {
					text, ok := answers[fam.renderer]
					if !ok {
						text = []string{"Sure", " thing."}
					}
					answer := script(text...)
					show := &ModelInfo{Renderer: fam.renderer, Parser: fam.renderer, ContextLength: 8192, Prompt: scriptRenderer{}}
					rt := &fakeRuntime{show: show}
					var enums, schemas []string
					rt.write = func(transcript string, format json.RawMessage) []string {
						if len(rt.reqs) > 40 {
							t.Fatalf("%d runtime requests: the engine loops", len(rt.reqs))
						}
						if strings.Contains(string(format), `"properties"`) {
							schemas = append(schemas, string(format))
							return bytesOf(`{"timezone":"UTC"}`)
						}
						if format != nil {
							enums = append(enums, string(format))
							return bytesOf(`"get_time"`)
						}
						if strings.HasSuffix(transcript, fam.afterName) {
							if silent {
								return nil
							}
							return fam.params
						}
						return answer(transcript)
					}
					body := `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":` + ch.choice + `}`
					j := newFakeJob(t, rt, body)
					if j.Model.Format.ID != fam.format {
						t.Fatalf("format %s", j.Model.Format.ID)
					}
					b := hearth.NewBuilder(hearth.NewResponse("resp_test", j.req, timeZero), nil)
					if err := j.Run(context.Background(), b); err != nil {
						t.Fatal(err)
					}
					if got, want := summary(b.Response()), `completed: call[completed] get_time {"timezone":"UTC"}`; got != want {
						t.Errorf("output\n got %s\nwant %s", got, want)
					}
					names := 1
					if silent {
						// The retry constrains the name again.
						names = 2
					}
					if ch.constrained && (len(enums) != names || !strings.Contains(enums[0], `"enum":["get_weather","get_time"]`)) {
						t.Errorf("name constraints %q, want %d enums of both tools", enums, names)
					}
					if silent != (len(schemas) == 1) || len(schemas) > 1 {
						t.Errorf("argument schemas %q, want one only when the model wrote no parameters", schemas)
					}
					if !ch.constrained && len(enums) != 0 {
						t.Errorf("name constraints %q, want none (one allowed name is written)", enums)
					}
					for _, req := range rt.reqs[1:] {
						transcript := strings.TrimPrefix(req.Prompt, rt.base)
						if strings.HasPrefix(strings.Join(text, ""), transcript) {
							continue // the model's own answer, before the engine takes it back
						}
						if !strings.HasPrefix(transcript, fam.nameOpen) && !isProbe(req) {
							t.Errorf("a request after the text does not continue the call: %q", strings.TrimPrefix(req.Prompt, rt.base))
						}
					}
				})
			}
		}
	}
}
