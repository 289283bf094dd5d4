package toolgrammar

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// summary renders events compactly for table tests.
func summary(evs []Event) string {
	var parts []string
	for _, e := range normalize(evs) {
		switch e.Kind {
		case TextDelta, ReasoningDelta:
			parts = append(parts, e.Kind.String()+":"+e.Text)
		case CallBegin:
			parts = append(parts, "begin:"+e.Name)
		case CallEnd:
			parts = append(parts, "end:"+e.Name+e.Text)
		case Malformed:
			parts = append(parts, "malformed("+e.Reason+"):"+e.Text)
		case ReasoningEnd:
			if e.Reason != "" {
				parts = append(parts, "reasoning_end("+e.Reason+")")
			} else {
				parts = append(parts, "reasoning_end")
			}
		case CallOpen, ArgumentsDelta:
		}
	}
	return strings.Join(parts, " | ")
}

func TestParserCases(t *testing.T) {
	long := strings.Repeat("x", skipLimit+100)
	tests := []struct {
		name   string
		format string
		opts   Options
		chunks []string
		want   string
	}{
		{"whitespace around runs is trimmed", "qwen3", Options{}, []string{"  \n Hello  ", "\n", " world \n\n"}, "text:Hello  \n world"},
		{"partial delimiter at the end is text", "hermes", Options{}, []string{"see <tool_ca"}, "text:see <tool_ca"},
		{"the engine feeds the opener itself", "hermes", Options{}, []string{"Sure.", "<tool_call>", `{"name":"get_time","arguments":{}}`, "</tool_call>"}, "text:Sure. | begin:get_time | end:get_time{}"},
		{"stray closers are markup", "qwen3", Options{}, []string{"a</think>b</tool_call>c"}, "text:abc"},
		{"reasoning may contain call markup", "qwen3", Options{}, []string{"<think>maybe <tool_call>{...}</tool_call>?</think>no"}, "reasoning:maybe <tool_call>{...}</tool_call>? | reasoning_end | text:no"},
		{"invalid UTF-8 is replaced per byte", "hermes", Options{}, []string{"a\xff\xfeb"}, "text:a\uFFFD\uFFFDb"},
		{"truncated UTF-8 at the end", "hermes", Options{}, []string{"ab\xe6\x97"}, "text:ab\uFFFD\uFFFD"},
		{"a runaway malformed call gives the text back", "hermes", Options{}, []string{"<tool_call>oops " + long}, "malformed(expected '{' to open a call):<tool_call>oops " + long[:skipLimit-5] + " | text:<tool_call>oops " + long},
		{"malformed as error drops the span", "hermes", Options{Malformed: MalformedAsError}, []string{`<tool_call>{"name": 1}</tool_call>after`}, "malformed(call name is not a string):<tool_call>{\"name\": 1}</tool_call> | text:after"},
		{"arguments null mean none", "hermes", Options{}, []string{`<tool_call>{"name": "get_time", "arguments": null}</tool_call>`}, "begin:get_time | end:get_time{}"},
		{"arguments that are not an object", "hermes", Options{Malformed: MalformedAsError}, []string{`<tool_call>{"name": "get_time", "arguments": [1]}</tool_call>`}, "begin:get_time | malformed(arguments are not a JSON object):<tool_call>{\"name\": \"get_time\", \"arguments\": [1]}</tool_call>"},
		{"escaped name", "hermes", Options{}, []string{`<tool_call>{"name": "get\u005ftime"}</tool_call>`}, "begin:get_time | end:get_time{}"},
		{"other keys are skipped", "hermes", Options{}, []string{`<tool_call>{"id": [1, {"a": "}"}], "name": "x", "arguments": {"k": -1.5e3}}</tool_call>`}, "begin:x | end:x{\"k\":-1.5e3}"},
		{"llama: text first, so a later object is text", "llama3", Options{}, []string{`Hi {"name": "x", "parameters": {}}`}, `text:Hi {"name": "x", "parameters": {}}`},
		{"qwen3-coder: values keep inner newlines", "qwen3-coder", Options{Tools: testTools}, []string{"<tool_call>\n<function=write_file>\n<parameter=content>\n\nline1\n\n</parameter>\n</function>\n</tool_call>"}, "begin:write_file | end:write_file{\"content\":\"\\nline1\\n\"}"},
		{"qwen3-coder: untyped values parse as JSON when they can", "qwen3-coder", Options{}, []string{"<tool_call>\n<function=f>\n<parameter=n>\n1.5\n</parameter>\n<parameter=s>\nhi there\n</parameter>\n<parameter=b>\nTrue\n</parameter>\n</function>\n</tool_call>"}, "begin:f | end:f{\"n\":1.5,\"s\":\"hi there\",\"b\":\"True\"}"},
		{"qwen3-coder: Python booleans for boolean params", "qwen3-coder", Options{Tools: testTools}, []string{"<tool_call>\n<function=search>\n<parameter=exact>\nTrue\n</parameter>\n</function>\n</tool_call>"}, "begin:search | end:search{\"exact\":true}"},
		{"harmony: unterminated analysis", "gpt-oss", Options{}, []string{"<|channel|>analysis<|message|>hmm"}, "reasoning:hmm | reasoning_end(unterminated)"},
		{"harmony: built-in tool recipient", "gpt-oss", Options{}, []string{`<|channel|>analysis to=browser.search <|constrain|>json<|message|>{"q":"x"}<|call|>`}, "begin:browser.search | end:browser.search{\"q\":\"x\"}"},
		{"deepseek: group closed, text after", "deepseek", Options{}, []string{"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>\n\nDone."}, "begin:get_time | end:get_time{} | text:Done."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := testFormat(t, tt.format)
			evs := parseChunks(f, tt.opts, tt.chunks)
			checkInvariants(t, normalize(evs))
			if got := summary(evs); got != tt.want {
				t.Fatalf("got  %q\nwant %q", got, tt.want)
			}
			// The same whole and byte by byte.
			in := strings.Join(tt.chunks, "")
			if got := summary(parseChunks(f, tt.opts, []string{in})); got != tt.want {
				t.Fatalf("whole: got %q", got)
			}
			var bytewise []string
			for i := 0; i < len(in); i++ {
				bytewise = append(bytewise, in[i:i+1])
			}
			if got := summary(parseChunks(f, tt.opts, bytewise)); got != tt.want {
				t.Fatalf("byte by byte: got %q", got)
			}
		})
	}
}

// A long run of whitespace fed in tiny chunks must not cost quadratic time
// or lose any of it.
func TestLongWhitespaceRun(t *testing.T) {
	f := testFormat(t, "hermes")
	p := NewParser(f, Options{})
	var got strings.Builder
	p.Feed("a")
	for i := 0; i < 200000; i++ {
		for _, e := range p.Feed(" ") {
			got.WriteString(e.Text)
		}
	}
	for _, e := range p.Feed("b") {
		got.WriteString(e.Text)
	}
	if got.Len() != 200001 || !strings.HasSuffix(got.String(), " b") {
		t.Fatalf("got %d bytes", got.Len())
	}
}

func TestOffsetsLocateDecisionPoints(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		f := testFormat(t, fx.format)
		for _, e := range parseChunks(f, fx.opts, []string{fx.input}) {
			if !e.Kind.IsDecisionPoint() {
				continue
			}
			if e.Offset < 0 || e.Offset > int64(len(fx.input)) {
				t.Fatalf("%s/%s: %v outside the output", fx.format, fx.name, e)
			}
			if e.Kind == CallOpen && e.Text != "" && !strings.HasSuffix(fx.input[:e.Offset], e.Text) {
				t.Fatalf("%s/%s: output[:%d] does not end with the opener %q", fx.format, fx.name, e.Offset, e.Text)
			}
			if !utf8.ValidString(fx.input[:e.Offset]) {
				t.Fatalf("%s/%s: offset %d splits a character", fx.format, fx.name, e.Offset)
			}
		}
	}
}

// A format built by hand, not loaded, works and is not modified; an invalid
// one degrades to plain text.
func TestHandBuiltFormat(t *testing.T) {
	f := &Format{ID: "mine", Tools: Envelope{Kind: NameJSON, Open: []string{"<<"}, NameEnd: []string{"::"}}}
	if got := summary(parseChunks(f, Options{}, []string{"a<<get_time::{}"})); got != "text:a | begin:get_time | end:get_time{}" {
		t.Fatalf("got %q", got)
	}
	if f.compiled != nil {
		t.Fatal("NewParser modified the caller's format")
	}
	bad := &Format{ID: "bad", Tools: Envelope{Kind: "nonsense"}}
	if got := summary(parseChunks(bad, Options{}, []string{"a<<b"})); got != "text:a<<b" {
		t.Fatalf("got %q", got)
	}
}
