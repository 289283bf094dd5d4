package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/scriptmodel"
)

// fakeRuntime plays a model: write decides the chunks (one per token) that continue a
// prompt under a format; every request is recorded.
type fakeRuntime struct {
	show  *ModelInfo
	write func(transcript string, format json.RawMessage) []string
	base  string // set from the first request: the rendered prompt
	reqs  []GenerateRequest
	// only, when set, is the one model the runtime has.
	only string
	// badFormat, when set, is the runtime's refusal of the format schemas it
	// cannot take (CheckFormat); unset, it takes every schema.
	badFormat func(schema []byte) error
}

func (f *fakeRuntime) CheckFormat(_ context.Context, schema []byte) error {
	if f.badFormat == nil {
		return nil
	}
	return f.badFormat(schema)
}

func (f *fakeRuntime) Model(_ context.Context, name string) (*ModelInfo, error) {
	if f.only != "" && name != f.only {
		return nil, fmt.Errorf("%w: %q", ErrModelNotFound, name)
	}
	return f.show, nil
}

func (f *fakeRuntime) Generate(ctx context.Context, req *GenerateRequest, fn func(Chunk) error) error {
	f.reqs = append(f.reqs, *req)
	if f.base == "" {
		f.base = req.Prompt
	}
	transcript := strings.TrimPrefix(req.Prompt, f.base)
	chunks := f.write(transcript, req.Format)
	limit := req.Options.MaxTokens
	n, reason := 0, "stop"
	var out strings.Builder
	for _, c := range chunks {
		if limit > 0 && n == limit {
			reason = "length"
			break
		}
		n++
		// As Ollama's runner: the token limit first, then the stop strings, whose
		// text is left out of the output (their tokens are counted).
		if limit == 0 || n < limit {
			if at, ok := firstStop(out.String()+c, req.Stop); ok {
				if text := (out.String() + c)[out.Len():at]; text != "" {
					if err := fn(Chunk{Text: text}); err != nil {
						return err
					}
				}
				return fn(Chunk{Done: true, DoneReason: "stop", PromptEvalCount: len(req.Prompt), EvalCount: n})
			}
		}
		out.WriteString(c)
		if err := fn(Chunk{Text: c}); err != nil {
			return err
		}
	}
	if reason == "stop" && (limit == 0 || n < limit) {
		n++ // the EOS token
	} else {
		reason = "length"
	}
	return fn(Chunk{Done: true, DoneReason: reason, PromptEvalCount: len(req.Prompt), EvalCount: n})
}

// firstStop finds where the first of stops occurs in s.
func firstStop(s string, stops []string) (int, bool) {
	at := -1
	for _, stop := range stops {
		if i := strings.Index(s, stop); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	return at, at >= 0
}

// isProbe reports whether req is the engine asking for the model's next token after a
// phase ended at a stop string (whichStop).
func isProbe(req GenerateRequest) bool {
	return !req.Stream
}

// script continues transcript along full, one chunk per token, when the transcript
// is a prefix of it (the model following its own script).
func script(tokens ...string) func(string) []string {
	return func(transcript string) []string {
		var done strings.Builder
		for i, tok := range tokens {
			if done.Len() >= len(transcript) {
				if done.String() == transcript {
					return tokens[i:]
				}
				break
			}
			done.WriteString(tok)
		}
		return nil
	}
}

// bytesOf cuts s into one-byte tokens, as the script models write under a grammar.
func bytesOf(s string) []string {
	out := make([]string, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = s[i : i+1]
	}
	return out
}

const (
	weatherTool = `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`
	timeTool    = `{"type":"function","name":"get_time","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}`
	// The grammar cannot express a bound on a non-integer number; validation can.
	tempTool = `{"type":"function","name":"set_temp","strict":true,"parameters":{"type":"object","properties":{"celsius":{"type":"number","minimum":-273.15}},"required":["celsius"]}}`
)

var timeZero = time.Unix(0, 0)

func newFakeJob(t *testing.T, rt *fakeRuntime, body string) *Job {
	t.Helper()
	req, _, err := hearth.DecodeCreateRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	j, err := New(rt, DefaultFormats(), nil).Prepare(context.Background(), req, nil, Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// qwenShow is the tools script model as the runtime describes it (stop "<|end|>", a
// trained context of 4096).
func qwenShow() *ModelInfo {
	return &ModelInfo{Template: scriptmodel.Template, Stop: []string{"<|end|>"}, ContextLength: 4096,
		Prompt: scriptRenderer{}}
}

// mistralShow is a Mistral v11 model: the name is outside the JSON.
func mistralShow() *ModelInfo {
	const tmpl = `{{- if .Tools }}[AVAILABLE_TOOLS]{{ json .Tools }}[/AVAILABLE_TOOLS]{{ end }}{{- range .Messages }}[INST]{{ .Content }}[/INST]{{ range .ToolCalls }}[TOOL_CALLS]{{ .Function.Name }}[ARGS]{{ .Function.Arguments }}{{ end }}{{ end }}`
	return &ModelInfo{Template: tmpl, ContextLength: 8192, Prompt: mistralRenderer{}}
}

func summary(r *hearth.Response) string {
	var parts []string
	for _, it := range r.Output {
		switch it.Type {
		case hearth.ItemFunctionCall:
			parts = append(parts, fmt.Sprintf("call[%s] %s %s", it.Status, it.Name, it.Arguments))
		case hearth.ItemReasoning:
			parts = append(parts, fmt.Sprintf("reasoning[%s] %s", it.Status, it.Text(hearth.PartReasoningText)))
		default:
			parts = append(parts, fmt.Sprintf("%s[%s] %s", it.Type, it.Status, it.Text(hearth.PartOutputText)))
		}
	}
	s := r.Status + ": " + strings.Join(parts, " | ")
	if r.Error != nil {
		s += " | error " + r.Error.Code
	}
	return s
}

func TestEnforcedPhases(t *testing.T) {
	qwenCall := func(name, args string) []string {
		return append(append([]string{"<tool_call>"}, bytesOf(`{"name":"`+name+`","arguments":`+args+`}`)...), "</tool_call>")
	}
	cases := []struct {
		name  string
		show  *ModelInfo
		body  string
		free  []string // what the model writes unconstrained
		bound func(n int, format string) []string
		want  string
		// formats lists the format of each request ("" when free, "?" for the
		// probe of which stop ended a phase), in order.
		formats []string
		output  int
	}{
		{
			name: "allowed_tools turns a disallowed call into an allowed one",
			show: qwenShow(),
			body: `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}}`,
			free: append([]string{"<think>", "why", "</think>"}, qwenCall("get_weather", `{"city":"Paris"}`)...),
			bound: func(int, string) []string {
				return bytesOf(`{"name":"get_time","arguments":{"timezone":"UTC"}}`)
			},
			want: "completed: reasoning[completed] why | call[completed] get_time {\"timezone\":\"UTC\"}",
			// The free phase ends at the opener (a stop string); the probe tells it
			// from the end of turn; after the call the free phase ends (EOS), which
			// the probe tells from an opener.
			formats: []string{"", "", "?", "get_time", "", "?"},
			// 1 + 3 free tokens through the opener, 50 constrained + EOS, and the
			// script ends after the closer the engine wrote (EOS).
			output: 4 + 51 + 1,
		},
		{
			// The opener is a stop string of the free phase; inside reasoning it is
			// reasoning text, so the phase goes on after it.
			name: "an opener in reasoning is text: the phase goes on",
			show: qwenShow(),
			body: `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}}`,
			free: append([]string{"<think>", "use ", "<tool_call>", " tags", "</think>"}, qwenCall("get_weather", `{"city":"Paris"}`)...),
			bound: func(int, string) []string {
				return bytesOf(`{"name":"get_time","arguments":{"timezone":"UTC"}}`)
			},
			want:    "completed: reasoning[completed] use <tool_call> tags | call[completed] get_time {\"timezone\":\"UTC\"}",
			formats: []string{"", "", "?", "", "?", "get_time", "", "?"},
			// 1 + 2 through the first stop, 3 through the second, 50 constrained +
			// EOS, then EOS.
			output: 1 + 2 + 3 + 51 + 1,
		},
		{
			name:    "none ends the output at the opener",
			show:    qwenShow(),
			body:    `{"model":"m","input":"hi","tools":[` + weatherTool + `],"tool_choice":"none"}`,
			free:    append([]string{"Let", " me", " check."}, qwenCall("get_weather", `{"city":"Paris"}`)...),
			want:    "completed: message[completed] Let me check.",
			formats: []string{"", "", "?"},
			output:  4,
		},
		{
			name:    "required takes back text and writes the call",
			show:    qwenShow(),
			body:    `{"model":"m","input":"hi","tools":[` + timeTool + `],"tool_choice":"required"}`,
			free:    []string{"Hello", " there."},
			bound:   func(int, string) []string { return bytesOf(`{"name":"get_time","arguments":{"timezone":"UTC"}}`) },
			want:    "completed: call[completed] get_time {\"timezone\":\"UTC\"}",
			formats: []string{"", "get_time", "", "?"},
			output:  1 + 51 + 1, // "Hello" (taken back), the call, then the model ends
		},
		{
			name: "an invalid strict call is retried once under the grammar",
			show: qwenShow(),
			body: `{"model":"m","input":"hi","tools":[` + tempTool + `]}`,
			free: qwenCall("set_temp", `{"celsius":-300}`),
			bound: func(n int, _ string) []string {
				if n == 1 {
					return bytesOf(`{"name":"set_temp","arguments":{"celsius":-300.5}}`)
				}
				return bytesOf(`{"name":"set_temp","arguments":{"celsius":21}}`)
			},
			want:    "completed: call[completed] set_temp {\"celsius\":21}",
			formats: []string{"", "set_temp", "set_temp", "", "?"},
			// The opener; the invalid call (stopped as soon as its JSON closed); the
			// retried call + EOS; EOS.
			output: 1 + len(`{"name":"set_temp","arguments":{"celsius":-300.5}}`) +
				len(`{"name":"set_temp","arguments":{"celsius":21}}`) + 1 + 1,
		},
		{
			name:    "a call invalid twice fails the response",
			show:    qwenShow(),
			body:    `{"model":"m","input":"hi","tools":[` + tempTool + `]}`,
			free:    qwenCall("set_temp", `{}`),
			bound:   func(int, string) []string { return bytesOf(`{"name":"set_temp","arguments":{"celsius":-300.5}}`) },
			want:    "failed:  | error model_error",
			formats: []string{"", "set_temp", "set_temp"},
			output:  1 + 2*len(`{"name":"set_temp","arguments":{"celsius":-300.5}}`),
		},
		{
			name:    "parallel_tool_calls false stops after the first call",
			show:    qwenShow(),
			body:    `{"model":"m","input":"hi","parallel_tool_calls":false,"tools":[` + weatherTool + `,` + timeTool + `]}`,
			free:    append(qwenCall("get_weather", `{"city":"Paris"}`), qwenCall("get_time", `{"timezone":"UTC"}`)...),
			want:    "completed: call[completed] get_weather {\"city\":\"Paris\"}",
			formats: []string{"", ""},
			output:  1 + len(`{"name":"get_weather","arguments":{"city":"Paris"}}`),
		},
		{
			name: "max_output_tokens counts every phase; the cut call is the last item",
			show: qwenShow(),
			body: `{"model":"m","input":"hi","max_output_tokens":30,"tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}}`,
			free: append([]string{"<think>", "why", "</think>"}, qwenCall("get_weather", `{"city":"Paris"}`)...),
			bound: func(int, string) []string {
				return bytesOf(`{"name":"get_time","arguments":{"timezone":"UTC"}}`)
			},
			want:    "incomplete: reasoning[completed] why | call[incomplete] get_time ",
			formats: []string{"", "", "?", "get_time"},
			// 4 free tokens, then 26 bytes of {"name":"get_time","argumen...
			output: 30,
		},
		{
			name: "name outside the JSON: the name is written, the arguments constrained",
			show: mistralShow(),
			body: `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}}`,
			free: append([]string{"[TOOL_CALLS]", "get_weather", "[ARGS]"}, bytesOf(`{"city":"Paris"}`)...),
			bound: func(int, string) []string {
				return bytesOf(`{"timezone":"UTC"}`)
			},
			want: "completed: call[completed] get_time {\"timezone\":\"UTC\"}",
			// The opener comes in the one-token first phase; the engine writes
			// "get_time[ARGS]" (one name possible) and constrains the arguments.
			formats: []string{"", "timezone", "", "?"},
			output:  1 + len(`{"timezone":"UTC"}`) + 1 + 1,
		},
		{
			name: "name outside the JSON, several allowed: the name is constrained first",
			show: mistralShow(),
			body: `{"model":"m","input":"hi","tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":"required"}`,
			free: []string{"Sure"},
			bound: func(_ int, format string) []string {
				if strings.Contains(format, "enum") {
					return bytesOf(`"get_weather"`)
				}
				return bytesOf(`{"city":"Oslo"}`)
			},
			want:    "completed: call[completed] get_weather {\"city\":\"Oslo\"}",
			formats: []string{"", "enum", "city", "", "?"},
			// "Sure" (taken back), the quoted name + EOS, the arguments + EOS, and
			// the free phase after the call ends at once.
			output: 1 + len(`"get_weather"`) + 1 + len(`{"city":"Oslo"}`) + 1 + 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			free := script(tc.free...)
			bound := 0
			rt := &fakeRuntime{show: tc.show}
			rt.write = func(transcript string, format json.RawMessage) []string {
				if format != nil {
					bound++
					return tc.bound(bound, string(format))
				}
				return free(transcript)
			}
			j := newFakeJob(t, rt, tc.body)
			resp := hearth.NewResponse("resp_test", j.req, timeZero)
			b := hearth.NewBuilder(resp, nil)
			_ = j.Run(context.Background(), b)
			r := b.Response()
			if got := summary(r); got != tc.want {
				t.Errorf("output\n got %s\nwant %s", got, tc.want)
			}
			var formats []string
			for _, req := range rt.reqs {
				if isProbe(req) {
					formats = append(formats, "?")
					continue
				}
				formats = append(formats, string(req.Format))
			}
			if len(formats) != len(tc.formats) {
				t.Fatalf("%d requests, want %d: formats %q", len(formats), len(tc.formats), formats)
			}
			for i, f := range tc.formats {
				if (f == "") != (formats[i] == "") || !strings.Contains(formats[i], f) {
					t.Errorf("request %d: format %q, want one with %q", i, formats[i], f)
				}
				if strings.Contains(formats[i], "get_weather") && strings.Contains(tc.body, `"name":"get_time"}]}`) {
					t.Errorf("request %d: a disallowed tool in the constraint: %s", i, formats[i])
				}
			}
			if r.Usage == nil || r.Usage.OutputTokens != tc.output {
				t.Errorf("usage %+v, want output_tokens %d", r.Usage, tc.output)
			}
			if r.Usage != nil && r.Usage.InputTokens != len(j.Prompt) {
				t.Errorf("input_tokens %d, want the first prompt's %d", r.Usage.InputTokens, len(j.Prompt))
			}
		})
	}
}

func TestToolPolicy(t *testing.T) {
	tools := `"tools":[` + weatherTool + `,` + timeTool + `]`
	cases := []struct {
		name, body string
		want       string // "" for no policy (the fast path)
	}{
		{"auto, nothing to enforce", tools, ""},
		{"none", tools + `,"tool_choice":"none"`, "none [] constrain=false max=0"},
		{"required", tools + `,"tool_choice":"required"`, "required [get_weather get_time] constrain=true max=0"},
		{"named", tools + `,"tool_choice":{"type":"function","name":"get_time"}`, "required [get_time] constrain=true max=0"},
		{"allowed subset", tools + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]}`, "auto [get_time] constrain=true max=0"},
		{"allowed all", tools + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"},{"type":"function","name":"get_weather"}]}`, ""},
		{"parallel off", tools + `,"parallel_tool_calls":false`, "auto [get_weather get_time] constrain=false max=1"},
		{"max_tool_calls", tools + `,"max_tool_calls":3`, "auto [get_weather get_time] constrain=false max=3"},
		{"strict tool", `"tools":[` + tempTool + `]`, "auto [set_temp] constrain=true max=0"},
		{"no tools", `"tool_choice":"none"`, ""},
	}
	for _, tc := range cases {
		rt := &fakeRuntime{show: qwenShow()}
		j := newFakeJob(t, rt, `{"model":"m","input":"hi",`+tc.body+`}`)
		got := ""
		if p := j.policy; p != nil {
			var names []string
			for _, t := range p.allowed {
				names = append(names, t.Name)
			}
			got = fmt.Sprintf("%s %v constrain=%v max=%d", p.mode, names, p.constrain, p.maxCalls)
		}
		if got != tc.want {
			t.Errorf("%s: policy %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestPolicyCheck(t *testing.T) {
	rt := &fakeRuntime{show: qwenShow()}
	j := newFakeJob(t, rt, `{"model":"m","input":"hi","tool_choice":"required","tools":[`+tempTool+`,`+timeTool+`]}`)
	cases := []struct {
		name, args string
		ok         bool
	}{
		{"set_temp", `{"celsius":21.5}`, true},
		{"set_temp", `{"celsius":-300.5}`, false}, // minimum on a number: the grammar cannot
		{"set_temp", `{}`, false},
		{"set_temp", `{"celsius":`, false},
		{"get_time", `{"timezone":"UTC"}`, true},
		{"get_weather", `{"city":"Paris"}`, false}, // not a tool of the request
	}
	for _, tc := range cases {
		err := j.policy.check(tc.name, tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("check(%s, %s) = %v, want ok=%v", tc.name, tc.args, err, tc.ok)
		}
	}
}

func TestCachedTokens(t *testing.T) {
	prev := promptCache{text: "0123456789abcdefghij", marks: []cacheMark{{10, 4}, {20, 14}}}
	cases := []struct {
		prompt string
		input  int
		want   int
	}{
		{"0123456789abcdefghijXYZ", 20, 14}, // extends the whole sequence: exact
		{"0123456789", 4, 3},                // the same prompt: all but the last token
		{"0123456789XYZ", 8, 4},             // diverges at an exact mark
		{"0123456789abcdeXYZ", 20, 8},       // halfway through the output span: 4+5-1
		{"XYZ", 3, 0},
	}
	for _, tc := range cases {
		if got := cachedTokens(prev, tc.prompt, nil, tc.input); got != tc.want {
			t.Errorf("cachedTokens(%q, %d) = %d, want %d", tc.prompt, tc.input, got, tc.want)
		}
	}
}

func TestTurnRangesKeepSystemAndLastTurn(t *testing.T) {
	msgs := []Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "u1"}, {Role: "assistant", Content: "a1"},
		{Role: "user", Content: "u2"}, {Role: "system", Content: "dev"}, {Role: "assistant"}, {Role: "tool", Content: "out"},
		{Role: "user", Content: "u3"},
	}
	c := &Conversation{Messages: msgs}
	turns := turnRanges(msgs)
	if fmt.Sprint(turns) != "[[1 3] [3 7]]" {
		t.Fatalf("turns %v", turns)
	}
	var got []string
	for _, m := range c.withoutTurns(turns).Messages {
		got = append(got, m.Content)
	}
	if strings.Join(got, ",") != "sys,dev,u3" {
		t.Errorf("after dropping both turns: %v", got)
	}
}

func TestContextWindow(t *testing.T) {
	e := New(&fakeRuntime{}, DefaultFormats(), nil)
	e.DefaultContext = 16384
	cases := []struct {
		numCtx, trained, want int
	}{
		{0, 4096, 4096},       // trained on less than the default
		{0, 131072, 16384},    // the default
		{256, 4096, 256},      // the Modelfile's choice
		{65536, 32768, 32768}, // never beyond training
		{0, 0, 16384},
	}
	for _, tc := range cases {
		m := &Model{NumCtx: tc.numCtx, ContextLength: tc.trained, Format: DefaultFormats().Lookup("hermes")}
		if tc.trained == 0 {
			m.Format = nil
		}
		if got := e.ContextWindow(m); got != tc.want {
			t.Errorf("ContextWindow(num_ctx %d, trained %d) = %d, want %d", tc.numCtx, tc.trained, got, tc.want)
		}
	}
}

func TestIsInputTooLong(t *testing.T) {
	if !isInputTooLong(&StatusError{StatusCode: 400, Message: "the input length exceeds the context length", Err: ErrInputTooLong}) ||
		!isInputTooLong(fmt.Errorf("generate: %w", ErrInputTooLong)) {
		t.Error("runner refusal not recognised")
	}
	if isInputTooLong(errors.New("connection refused")) || isInputTooLong(nil) {
		t.Error("other errors recognised as too long")
	}
}

// The same [img-N] text can stand for another image, which the runtime evaluates
// afresh: the shared prefix ends at the first tag whose image differs.
func TestCachedTokensImages(t *testing.T) {
	red, blue := []byte("red image"), []byte("blue image")
	prompt := "0123456789[img-0]abc[img-1]xyz"
	tag1 := strings.Index(prompt, "[img-1]")
	prev := promptCache{text: prompt, marks: []cacheMark{{tag1, 10}, {len(prompt), 30}}}
	prev.images = imageDigests([][]byte{red, blue})
	cases := []struct {
		name   string
		images [][]byte
		want   int
	}{
		{"same images", [][]byte{red, blue}, 29},
		{"second image differs", [][]byte{red, red}, 10},              // up to [img-1], an exact mark
		{"first image differs", [][]byte{blue, blue}, 10*10/tag1 - 1}, // before [img-0], at the span's density
		{"fewer images", [][]byte{red}, 10},
	}
	for _, tc := range cases {
		if got := cachedTokens(prev, prompt, tc.images, 30); got != tc.want {
			t.Errorf("%s: cachedTokens = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestEnforcedSectionEnds: after a call generated under the grammar the model may only
// call again or end its turn; a loop of calls ends, by itself or at the safety cap.
func TestEnforcedSectionEnds(t *testing.T) {
	strictTime := strings.Replace(timeTool, `"name":"get_time",`, `"name":"get_time","strict":true,`, 1)
	call := func(tz string) []string {
		return bytesOf(`{"name":"get_time","arguments":{"timezone":"` + tz + `"}}`)
	}
	cases := []struct {
		name string
		body string
		// after is what the model writes after the n-th closer the engine wrote
		// (n from 1); bound the n-th constrained call.
		after  func(n int) []string
		bound  func(n int) []string
		want   string
		reason string
		calls  int // constrained requests
	}{
		{
			name:  "text after the call ends the turn, unseen",
			body:  `"tools":[` + strictTime + `]`,
			after: func(int) []string { return []string{"\n", "The", " time", " is", " noon."} },
			bound: func(int) []string { return call("UTC") },
			want:  `completed: call[completed] get_time {"timezone":"UTC"}`,
			calls: 1,
		},
		{
			name:  "reasoning after the call ends the turn, unseen",
			body:  `"tools":[` + strictTime + `]`,
			after: func(int) []string { return []string{"<think>", "more", "</think>"} },
			bound: func(int) []string { return call("UTC") },
			want:  `completed: call[completed] get_time {"timezone":"UTC"}`,
			calls: 1,
		},
		{
			name:  "another opener: another call, then the same call again ends the turn",
			body:  `"tools":[` + strictTime + `]`,
			after: func(int) []string { return []string{"\n", "<tool_call>", `{"name":`} },
			bound: func(n int) []string { return call(map[bool]string{true: "UTC", false: "CET"}[n == 1]) },
			want:  `completed: call[completed] get_time {"timezone":"UTC"} | call[completed] get_time {"timezone":"CET"}`,
			calls: 3,
		},
		{
			name:  "a call per opener, the opener for ever: the safety cap ends the response incomplete",
			body:  `"tools":[` + strictTime + `]`,
			after: func(int) []string { return []string{"<tool_call>"} },
			bound: func(n int) []string { return call(fmt.Sprintf("UTC+%d", n)) },
			want: func() string {
				var parts []string
				for n := 1; n <= safetyMaxCalls; n++ {
					parts = append(parts, fmt.Sprintf(`call[completed] get_time {"timezone":"UTC+%d"}`, n))
				}
				return "incomplete: " + strings.Join(parts, " | ")
			}(),
			reason: IncompleteToolCallLimit,
			calls:  safetyMaxCalls,
		},
		{
			name:  "max_tool_calls below the cap ends the response complete",
			body:  `"max_tool_calls":2,"tools":[` + strictTime + `]`,
			after: func(int) []string { return []string{"<tool_call>"} },
			bound: func(n int) []string { return call(fmt.Sprintf("UTC+%d", n)) },
			want:  `completed: call[completed] get_time {"timezone":"UTC+1"} | call[completed] get_time {"timezone":"UTC+2"}`,
			calls: 2,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bound := 0
			rt := &fakeRuntime{show: qwenShow()}
			rt.write = func(transcript string, format json.RawMessage) []string {
				if format != nil {
					bound++
					return tc.bound(bound)
				}
				if n := strings.Count(transcript, "</tool_call>"); n > 0 {
					// The model goes on from wherever the transcript is after
					// the last closer (a phase may have stopped at an opener).
					at := strings.LastIndex(transcript, "</tool_call>") + len("</tool_call>")
					return script(tc.after(n)...)(transcript[at:])
				}
				if transcript == "" {
					return []string{"<tool_call>"}
				}
				return nil
			}
			j := newFakeJob(t, rt, `{"model":"m","input":"hi",`+tc.body+`}`)
			b := hearth.NewBuilder(hearth.NewResponse("resp_test", j.req, timeZero), nil)
			_ = j.Run(context.Background(), b)
			r := b.Response()
			if got := summary(r); got != tc.want {
				t.Errorf("output\n got %s\nwant %s", got, tc.want)
			}
			reason := ""
			if r.IncompleteDetails != nil {
				reason = r.IncompleteDetails.Reason
			}
			if reason != tc.reason {
				t.Errorf("incomplete reason %q, want %q", reason, tc.reason)
			}
			if bound != tc.calls {
				t.Errorf("%d constrained requests, want %d", bound, tc.calls)
			}
		})
	}
}
