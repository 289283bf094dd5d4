package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"hearth"
	"hearth/internal/schematest"
)

const (
	freeTool  = `{"type":"custom","name":"apply_patch","description":"Patch files."}`
	countTool = `{"type":"custom","name":"count","format":{"type":"grammar","syntax":"regex","definition":"[0-9]+"}}`
	calcTool  = `{"type":"custom","name":"calc","format":{"type":"grammar","syntax":"lark","definition":"start: sum\nsum: atom | sum \"+\" atom\natom: /[0-9]+/ | \"(\" sum \")\""}}`
)

// customSummary is like summary, with a custom tool call's input.
func customSummary(r *hearth.Response) string {
	var parts []string
	for _, it := range r.Output {
		switch it.Type {
		case hearth.ItemCustomToolCall:
			parts = append(parts, fmt.Sprintf("custom[%s] %s %q", it.Status, it.Name, it.Input))
		case hearth.ItemFunctionCall:
			parts = append(parts, fmt.Sprintf("call[%s] %s %s", it.Status, it.Name, it.Arguments))
		default:
			parts = append(parts, fmt.Sprintf("%s[%s] %s", it.Type, it.Status, it.Text(hearth.PartOutputText)))
		}
	}
	s := r.Status + ": " + strings.Join(parts, " | ")
	if r.Error != nil {
		s += " | error " + r.Error.Code + ": " + r.Error.Message
	}
	return s
}

func TestCustomToolCalls(t *testing.T) {
	qwenCall := func(name, args string) []string {
		return append(append([]string{"<tool_call>"}, bytesOf(`{"name":"`+name+`","arguments":`+args+`}`)...), "</tool_call>")
	}
	patch := "*** Begin Patch\n+\"hi\" \\ é\n*** End Patch"
	patchJSON, _ := json.Marshal(map[string]string{"input": patch})
	cases := []struct {
		name  string
		body  string
		free  []string
		bound func(n int) string // the constrained continuation, as one string
		want  string             // customSummary, prefix-matched for failures
		// formats: each request's format must contain it ("" for none). A free phase
		// that ends at a stop after a call is followed by the probe that asks which
		// stop it was (whichStop): "probe".
		formats []string
	}{
		{
			name:    "a free-text tool on the fast path: the string argument becomes the raw input",
			body:    `{"model":"m","input":"hi","tools":[` + freeTool + `]}`,
			free:    qwenCall("apply_patch", string(patchJSON)),
			want:    "completed: custom[completed] apply_patch " + fmt.Sprintf("%q", patch),
			formats: []string{""},
		},
		{
			name:    "a regex tool: the call is generated under the input's JSON-string pattern",
			body:    `{"model":"m","input":"hi","tools":[` + countTool + `]}`,
			free:    qwenCall("count", `{"input":"twelve"}`),
			bound:   func(int) string { return `{"name":"count","arguments":{"input":"12"}}` },
			want:    `completed: custom[completed] count "12"`,
			formats: []string{"", `"pattern":"^[\\u0030-\\u0039]+$"`, "", "probe"},
		},
		{
			name:    "tool_choice names a custom tool: the text is taken back and the call written",
			body:    `{"model":"m","input":"hi","tools":[` + freeTool + `,` + countTool + `],"tool_choice":{"type":"custom","name":"count"}}`,
			free:    []string{"Hello", " there."},
			bound:   func(int) string { return `{"name":"count","arguments":{"input":"7"}}` },
			want:    `completed: custom[completed] count "7"`,
			formats: []string{"", `"const":"count"`, "", "probe"},
		},
		{
			name:    "a recursive grammar: the input is not constrained but checked",
			body:    `{"model":"m","input":"hi","tools":[` + calcTool + `]}`,
			free:    qwenCall("calc", `{"input":"(1+2)+3"}`),
			bound:   func(int) string { return `{"name":"calc","arguments":{"input":"(1+2)+3"}}` },
			want:    `completed: custom[completed] calc "(1+2)+3"`,
			formats: []string{"", `"input":{"type":"string"}`, "", "probe"},
		},
		{
			name:    "an input the grammar rejects is generated once more, then fails the response saying where",
			body:    `{"model":"m","input":"hi","tools":[` + calcTool + `]}`,
			free:    qwenCall("calc", `{"input":"(1+2"}`),
			bound:   func(int) string { return `{"name":"calc","arguments":{"input":"(1+2"}}` },
			want:    `failed:  | error model_error: The model wrote a malformed tool call (still invalid after a constrained retry): "the input of custom tool 'calc' does not match its format: the input ends before the Lark grammar allows (line 1, column 5)"`,
			formats: []string{"", "calc", "calc"},
		},
		{
			name:    "arguments without a string input fail the response",
			body:    `{"model":"m","input":"hi","tools":[` + freeTool + `]}`,
			free:    qwenCall("apply_patch", `{"patch":"x"}`),
			want:    `failed: custom[incomplete] apply_patch "" | error model_error: The model wrote a malformed tool call (custom tool call: the arguments have no "input")`,
			formats: []string{""},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			free := script(tc.free...)
			bound := 0
			rt := &fakeRuntime{show: qwenShow()}
			rt.write = func(transcript string, format json.RawMessage) []string {
				if format != nil {
					bound++
					return bytesOf(tc.bound(bound))
				}
				return free(transcript)
			}
			j := newFakeJob(t, rt, tc.body)
			var events []map[string]any
			b := hearth.NewBuilder(hearth.NewResponse("resp_test", j.req, timeZero), func(e hearth.Event) {
				data, err := json.Marshal(e)
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				json.Unmarshal(data, &m)
				events = append(events, m)
			})
			_ = j.Run(context.Background(), b)
			r := b.Response()
			if got := customSummary(r); !strings.HasPrefix(got, tc.want) {
				t.Errorf("output\n got %s\nwant %s", got, tc.want)
			}
			if len(rt.reqs) != len(tc.formats) {
				var fs []string
				for _, req := range rt.reqs {
					fs = append(fs, string(req.Format))
				}
				t.Fatalf("%d requests, want %d: formats %q", len(rt.reqs), len(tc.formats), fs)
			}
			for i, want := range tc.formats {
				got := string(rt.reqs[i].Format)
				if want == "probe" {
					if !isProbe(rt.reqs[i]) || got != "" {
						t.Errorf("request %d: not the probe after a stop (format %s)", i, got)
					}
					continue
				}
				if (want == "") != (got == "") || !strings.Contains(got, want) || isProbe(rt.reqs[i]) {
					t.Errorf("request %d: format %s, want one with %s", i, got, want)
				}
			}
			if err := schematest.CheckLifecycle(events); err != nil {
				t.Error(err)
			}
			schematest.CustomTools.ValidateEvents(t, events)
			var deltas []string
			for _, e := range events {
				if e["type"] == hearth.EventCustomToolCallInputDelta {
					deltas = append(deltas, e["delta"].(string))
				}
			}
			if r.Status == hearth.StatusCompleted && strings.Join(deltas, "") != r.Output[len(r.Output)-1].Input {
				t.Errorf("input deltas %q do not add up to the input", deltas)
			}
			if tc.bound == nil && r.Status == hearth.StatusCompleted && len(deltas) < 2 {
				t.Errorf("the input came in %d delta(s); on the fast path it streams as generated", len(deltas))
			}
		})
	}
}

func TestCustomToolDefinitionErrors(t *testing.T) {
	cases := []struct{ tool, msg string }{
		{`{"type":"custom","name":"c","format":{"type":"grammar","syntax":"lark","definition":"start: a\nb: \"x\""}}`, "line 1: a is not defined"},
		{`{"type":"custom","name":"c","format":{"type":"grammar","syntax":"lark","definition":"rule: \"x\""}}`, "no start rule"},
		{`{"type":"custom","name":"c","format":{"type":"grammar","syntax":"regex","definition":"[a-"}}`, "invalid regular expression"},
	}
	for _, tc := range cases {
		req, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":"hi","tools":[` + freeTool + `,` + tc.tool + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(&fakeRuntime{show: qwenShow()}, DefaultFormats(), nil).Prepare(context.Background(), req, nil, Inputs{})
		var he *hearth.Error
		if !errors.As(err, &he) || he.Status != 400 || he.Param != "tools[1].format.definition" || he.Code != hearth.CodeInvalidValue || !strings.Contains(he.Message, tc.msg) {
			t.Errorf("%s: got %v, want a 400 on tools[1].format.definition saying %q", tc.tool, err, tc.msg)
		}
	}
}

func TestCustomToolPolicy(t *testing.T) {
	cases := []struct{ body, want string }{
		// Free text needs no enforcement: the fast path.
		{`"tools":[` + freeTool + `]`, ""},
		// A grammar is a hard constraint, as a strict function's schema is.
		{`"tools":[` + freeTool + `,` + countTool + `]`, "auto [apply_patch count] constrain=true"},
		{`"tools":[` + freeTool + `,` + countTool + `],"tool_choice":{"type":"custom","name":"apply_patch"}`, "required [apply_patch] constrain=true"},
		{`"tools":[` + freeTool + `,` + timeTool + `],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"custom","name":"apply_patch"}]}`, "required [apply_patch] constrain=true"},
	}
	for _, tc := range cases {
		j := newFakeJob(t, &fakeRuntime{show: qwenShow()}, `{"model":"m","input":"hi",`+tc.body+`}`)
		got := ""
		if p := j.policy; p != nil {
			var names []string
			for _, t := range p.allowed {
				names = append(names, t.Name)
			}
			got = fmt.Sprintf("%s %v constrain=%v", p.mode, names, p.constrain)
		}
		if got != tc.want {
			t.Errorf("%s: policy %q, want %q", tc.body, got, tc.want)
		}
	}

	j := newFakeJob(t, &fakeRuntime{show: qwenShow()}, `{"model":"m","input":"hi","tools":[`+countTool+`,`+calcTool+`]}`)
	checks := []struct {
		name, args string
		ok         bool
	}{
		{"count", `{"input":"12"}`, true},
		{"count", `{"input":"1a"}`, false},
		{"count", `{"input":12}`, false},
		{"count", `{}`, false},
		{"calc", `{"input":"((1)+2)"}`, true},
		{"calc", `{"input":"(1+)"}`, false},
	}
	for _, c := range checks {
		if err := j.policy.check(c.name, c.args); (err == nil) != c.ok {
			t.Errorf("check(%s, %s) = %v, want ok=%v", c.name, c.args, err, c.ok)
		}
	}
	// The grammar's schema carries the pattern; validation does not use it on the input.
	tool, _ := j.policy.tool("count")
	if !strings.Contains(string(tool.Parameters), `"pattern"`) {
		t.Errorf("count's constraint has no pattern: %s", tool.Parameters)
	}
}
