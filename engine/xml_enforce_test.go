package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"hearth"
)

// TestXMLFormatsEnforced: tool_choice over the XML formats taken from Ollama v0.24.0's
// renderers (qwen3.5, laguna). The model answers in text; "required" takes the text
// back, writes the opener and constrains the name to the allowed tools, and the model
// writes the parameters; a named choice writes the name itself; allowed_tools keeps the
// constraint to the allowed names.
func TestXMLFormatsEnforced(t *testing.T) {
	families := []struct {
		renderer string
		// nameOpen is what the engine writes before the name; params is what the
		// model writes after "get_time"'s name, through the call's closer.
		nameOpen, afterName string
		params              []string
	}{
		{"qwen3.5", "<tool_call>\n<function=", "<function=get_time>\n",
			[]string{"<parameter=timezone>", "\nUTC\n", "</parameter>", "\n</function>", "\n</tool_call>"}},
		{"laguna", "<tool_call>", "<tool_call>get_time\n",
			[]string{"<arg_key>timezone</arg_key>", "\n<arg_value>UTC</arg_value>", "\n</tool_call>"}},
	}
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
			t.Run(fam.renderer+"/"+ch.name, func(t *testing.T) {
				show := &ModelInfo{Renderer: fam.renderer, Parser: fam.renderer, ContextLength: 8192, Prompt: scriptRenderer{}}
				rt := &fakeRuntime{show: show}
				var enums []string
				rt.write = func(transcript string, format json.RawMessage) []string {
					if format != nil {
						enums = append(enums, string(format))
						return bytesOf(`"get_time"`)
					}
					if strings.HasSuffix(transcript, fam.afterName) {
						return fam.params
					}
					if transcript == "" {
						return []string{"Sure", " thing."}
					}
					return nil
				}
				body := `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":` + ch.choice + `}`
				j := newFakeJob(t, rt, body)
				if j.Model.Format.ID != fam.renderer {
					t.Fatalf("format %s", j.Model.Format.ID)
				}
				b := hearth.NewBuilder(hearth.NewResponse("resp_test", j.req, timeZero), nil)
				if err := j.Run(context.Background(), b); err != nil {
					t.Fatal(err)
				}
				if got, want := summary(b.Response()), `completed: call[completed] get_time {"timezone":"UTC"}`; got != want {
					t.Errorf("output\n got %s\nwant %s", got, want)
				}
				if ch.constrained && (len(enums) != 1 || !strings.Contains(enums[0], `"enum":["get_weather","get_time"]`)) {
					t.Errorf("name constraints %q, want one enum of both tools", enums)
				}
				if !ch.constrained && len(enums) != 0 {
					t.Errorf("name constraints %q, want none (one allowed name is written)", enums)
				}
				for _, req := range rt.reqs[1:] {
					if !strings.HasPrefix(strings.TrimPrefix(req.Prompt, rt.base), fam.nameOpen) && !isProbe(req) {
						t.Errorf("a request after the text does not continue the call: %q", strings.TrimPrefix(req.Prompt, rt.base))
					}
				}
			})
		}
	}
}
