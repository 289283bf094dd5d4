package chattemplate

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func render(t *testing.T, src string, in Inputs) string {
	t.Helper()
	tmpl, err := Compile(src)
	if err != nil {
		t.Fatalf("compile %q: %v", src, err)
	}
	out, err := tmpl.Render(in)
	if err != nil {
		t.Fatalf("render %q: %v", src, err)
	}
	return out
}

func withArgs(args string) Inputs {
	call := ToolCall{ID: "c1", Type: "function"}
	call.Function.Name = "f"
	call.Function.Arguments = json.RawMessage(args)
	return Inputs{Messages: []Message{{Role: "assistant", ToolCalls: []ToolCall{call}}}}
}

// The expected strings are what Python's json.dumps and str() write for the same values
// (checked with python3; the parity goldens cover them in whole templates).
func TestToJSONAsHuggingFace(t *testing.T) {
	in := withArgs(`{"z": 1, "a": [1.0, 2.5, 1e20, 1.5e-7, -0.0, 123456789012345678], "s": "é\"\\\n\u0001\u2028<&>", "n": null, "b": true, "o": {}, "l": []}`)
	args := "messages[0].tool_calls[0].function.arguments"
	cases := []struct{ expr, want string }{
		{args + " | tojson", `{"z": 1, "a": [1.0, 2.5, 1e+20, 1.5e-07, -0.0, 123456789012345678], "s": "é\"\\\n\u0001` + "\u2028" + `<&>", "n": null, "b": true, "o": {}, "l": []}`},
		{args + ".a | tojson(indent=2)", "[\n  1.0,\n  2.5,\n  1e+20,\n  1.5e-07,\n  -0.0,\n  123456789012345678\n]"},
		{"{'b': 1, 'a': {'d': [], 'c': 2}} | tojson(indent=1)", "{\n \"b\": 1,\n \"a\": {\n  \"d\": [],\n  \"c\": 2\n }\n}"},
		{"{'b': 1, 'a': 2} | tojson(sort_keys=true)", `{"a": 2, "b": 1}`},
		{"{'b': 1, 'a': [1, 2]} | tojson(separators=(',', ':'))", `{"b":1,"a":[1,2]}`},
		{args + ".s | tojson(ensure_ascii=true)", `"\u00e9\"\\\n\u0001\u2028<&>"`},
		{"'🙂' | tojson(ensure_ascii=true)", `"\ud83d\ude42"`},
		{"[1, 'a'] | tojson | length", "8"},
		{"x.y | default([]) | tojson", "[]"},
	}
	for _, c := range cases {
		if got := render(t, "{{ "+c.expr+" }}", in); got != c.want {
			t.Errorf("%s\n got  %q\n want %q", c.expr, got, c.want)
		}
	}
}

func TestPrintAsPythonStr(t *testing.T) {
	in := withArgs(`{"f": 1.0, "big": 1234567.0, "n": null, "b": false, "l": [1, "it's", null, 2.0], "d": {"k": "v"}}`)
	args := "messages[0].tool_calls[0].function.arguments"
	cases := []struct{ expr, want string }{
		{"{{ " + args + ".f }}", "1.0"},
		{"{{ " + args + ".big }}", "1234567.0"},
		{"{{ " + args + ".n }}", "None"},
		{"{{ " + args + ".b }}", "False"},
		{"{{ " + args + ".l }}", `[1, "it's", None, 2.0]`},
		{"{{ " + args + ".d }}", "{'k': 'v'}"},
		{"{{ " + args + ".f | string }}", "1.0"},
		{"{{- " + args + ".f -}}", "1.0"},
		{"{{ messages[0].content }}", ""},
	}
	for _, c := range cases {
		if got := render(t, c.expr, in); got != c.want {
			t.Errorf("%s: got %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestPrepareFindsTheOperand(t *testing.T) {
	cases := []struct{ in, want string }{
		{"{{ x | tojson }}", "{{ __hearth_print(__hearth_tojson(x)) }}"},
		{"{{- '\\n' + tool | tojson -}}", "{{ __hearth_print('\\n' + __hearth_tojson(tool)) }}"},
		{"{% set a = m.tool_calls[0]['function'].arguments | tojson(indent=4) %}", "{% set a = __hearth_tojson(m.tool_calls[0]['function'].arguments, indent=4) %}"},
		{"{{ xs | map(attribute='a') | list | tojson }}", "{{ __hearth_print(__hearth_tojson(xs | map(attribute='a') | list)) }}"},
		{"{{ f(1)(2) | string }}", "{{ __hearth_print(__hearth_string(f(1)(2))) }}"},
		{"{% if v is string %}{{ v }}{% else %}{{ v | tojson }}{% endif %}", "{% if v is string %}{{ __hearth_print(v) }}{% else %}{{ __hearth_print(__hearth_tojson(v)) }}{% endif %}"},
		{"{# x | tojson #}{{ '| tojson' }}", "{{ __hearth_print('| tojson') }}"},
		{"{% raw %}{{ x | tojson }}{% endraw %}", "{{ '{{ x | tojson }}' }}"},
		{"{{ x }}\n{% endfor %}", "{{ __hearth_print(x) }}{{ '\\n' }}{% endfor %}"},
		{"k:{\n  {%- if x %}", "{{ 'k:{' }}{% if x %}"},
		{"{{ a if b | tojson else c }}", "{{ __hearth_print(a if __hearth_tojson(b) else c) }}"},
		{"{{ {'a': {'b': 1}} | tojson }}", "{{ __hearth_print(__hearth_tojson({'a': {'b': 1} })) }}"},
	}
	for _, c := range cases {
		got, err := prepare(c.in)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s\n got  %s\n want %s", c.in, got, c.want)
		}
	}
}

func TestRaiseExceptionIsATemplateError(t *testing.T) {
	tmpl, err := Compile("{% if messages[0].role != 'user' %}{{ raise_exception('Conversation roles must start with user, got ' + messages[0].role) }}{% endif %}ok")
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render(Inputs{Messages: []Message{{Role: "tool"}}})
	if !IsTemplateError(err) || err.Error() != "Conversation roles must start with user, got tool" {
		t.Fatalf("got %v", err)
	}
	// A fault of the template itself is an error, not a TemplateError.
	tmpl, _ = Compile("{{ messages[0].content.nosuch() }}")
	if _, err := tmpl.Render(Inputs{Messages: []Message{{Role: "user"}}}); err == nil || IsTemplateError(err) {
		t.Fatalf("got %v", err)
	}
}

func TestStrftimeNowUsesTheGivenClock(t *testing.T) {
	now := time.Date(2026, 1, 5, 14, 7, 9, 0, time.UTC)
	got := render(t, `{{ strftime_now("%d %b %Y|%B %-d|%Y-%m-%d %H:%M:%S|%I%p %A %a %j %y %%") }}`, Inputs{Now: now})
	// As Python's strftime writes it (glibc keeps the unknown %-d as written).
	want := "05 Jan 2026|January %-d|2026-01-05 14:07:09|02PM Monday Mon 005 26 %"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestVariablesAsHuggingFacePassesThem(t *testing.T) {
	src := "{{ tools is none }} {{ documents is none }} {{ enable_thinking is defined }} {{ reasoning_effort is defined }} {{ builtin_tools is defined }} {{ bos_token }}{{ eos_token }} {{ add_generation_prompt }}"
	if got, want := render(t, src, Inputs{}), "True True False False False  False"; got != want {
		t.Errorf("unset: got %q, want %q", got, want)
	}
	on := true
	in := Inputs{EnableThinking: &on, ReasoningEffort: "high", BuiltinTools: []string{"python"}, BOSToken: "<s>", EOSToken: "</s>",
		AddGenerationPrompt: true, Tools: []Tool{}, Documents: []json.RawMessage{}, Extra: map[string]any{"custom": map[string]any{"k": 1}}}
	src += " {{ enable_thinking }} {{ reasoning_effort }} {{ builtin_tools }} {{ custom.k }}"
	if got, want := render(t, src, in), "False False True True True <s></s> True True high ['python'] 1"; got != want {
		t.Errorf("set: got %q, want %q", got, want)
	}
}

func TestMessageShapes(t *testing.T) {
	var in Inputs
	raw := `{"messages": [
		{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "u"}}]},
		{"role": "assistant", "content": null, "reasoning_content": "r", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": {"b": 1, "a": 2}}}]},
		{"role": "tool", "tool_call_id": "1", "name": "f", "content": "ok"}]}`
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		t.Fatal(err)
	}
	src := "{% for m in messages %}{{ m | tojson }}\n{% endfor %}"
	want := `{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "u"}}]}
{"role": "assistant", "content": null, "reasoning_content": "r", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": {"b": 1, "a": 2}}}]}
{"role": "tool", "content": "ok", "tool_call_id": "1", "name": "f"}
`
	if got := render(t, src, in); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if err := json.Unmarshal([]byte(`{"messages": [{"role": "user", "content": 5}]}`), &in); err == nil || !strings.Contains(err.Error(), "content") {
		t.Fatalf("a number as content: %v", err)
	}
}

func TestCompileCachesByText(t *testing.T) {
	a, err := Compile("{{ 'cached' }}")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Compile("{{ 'cached' }}")
	c, _ := Compile("{{ 'other' }}")
	if a != b || a == c {
		t.Fatal("the same text must give the same compiled template, another text another")
	}
	if _, err := Compile("{% if %}"); err == nil {
		t.Fatal("a broken template compiles")
	}
}

func TestTemplateTextAsJinja2ReadsIt(t *testing.T) {
	// One final newline is dropped and line ends are "\n", as Jinja2's lexer makes them.
	if got := render(t, "a\r\nb\n", Inputs{}); got != "a\nb" {
		t.Fatalf("got %q", got)
	}
	if got := render(t, "a\n\n", Inputs{}); got != "a\n" {
		t.Fatalf("got %q", got)
	}
}
