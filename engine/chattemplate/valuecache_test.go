package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestValueCache: a conversation rendered again takes its messages' values from the
// cache and renders the same prompt; a message that differs in any field is a different
// entry, so a changed message is never rendered from another's value.
func TestValueCache(t *testing.T) {
	tmpl, err := Compile(`{% for m in messages %}[{{ m.role }}|{{ m.content }}|{{ m.reasoning_content is defined }}|{% for c in m.tool_calls or [] %}{{ c.function.arguments | tojson }}{% endfor %}]{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	if !tmpl.shareValues {
		t.Fatal("a template that changes nothing does not share values")
	}
	call := func(args string) ToolCall {
		c := ToolCall{ID: "c1", Type: "function"}
		c.Function.Name, c.Function.Arguments = "f", json.RawMessage(args)
		return c
	}
	empty := ""
	base := []Message{
		{Role: "user", Content: Content{Text: "hello"}},
		{Role: "assistant", ToolCalls: []ToolCall{call(`{"a": 1}`)}, Content: Content{Null: true}},
	}
	want := `[user|hello|False|][assistant|None|False|{"a": 1}]`
	for range 2 {
		got, err := tmpl.Render(Inputs{Messages: base})
		if err != nil || got != want {
			t.Fatalf("render: %q, %v; want %q", got, err, want)
		}
	}
	hits, _, _ := ValueCacheStats()
	if hits < 2 {
		t.Errorf("the second render found %d cached messages, want 2", hits)
	}
	for _, tc := range []struct {
		msgs []Message
		want string
	}{
		{[]Message{{Role: "user", Content: Content{Text: "hello!"}}}, `[user|hello!|False|]`},
		{[]Message{{Role: "user", Content: Content{Text: "hello"}, ReasoningContent: &empty}}, `[user|hello|True|]`},
		{[]Message{{Role: "user", Content: Content{Null: true}}}, `[user|None|False|]`},
		{[]Message{{Role: "user", Content: Content{IsParts: true}}}, `[user|[]|False|]`},
		{[]Message{{Role: "assistant", ToolCalls: []ToolCall{call(`{"a": 2}`)}, Content: Content{Null: true}}}, `[assistant|None|False|{"a": 2}]`},
		{[]Message{{Role: "assistant", ToolCalls: []ToolCall{call(`{"a": 1}`), call(`{"a": 1}`)}, Content: Content{Null: true}}}, `[assistant|None|False|{"a": 1}{"a": 1}]`},
	} {
		got, err := tmpl.Render(Inputs{Messages: tc.msgs})
		if err != nil || got != tc.want {
			t.Errorf("render: %q, %v; want %q", got, err, tc.want)
		}
	}
}

// TestValueCacheNotShared: a template that changes a value it is handed (which the
// library allows and Hugging Face's sandbox does not) gets fresh values every render, so
// one render's change never reaches the next.
func TestValueCacheNotShared(t *testing.T) {
	for _, src := range []string{
		`{{ messages[0].content }}{% set m = messages[0] %}{% set m.content = 'changed' %}`,
		`{{ messages[0].content }}{% set _ = messages[0].update({'content': 'changed'}) %}`,
	} {
		tmpl, err := Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		if tmpl.shareValues {
			t.Errorf("%s: shares values", src)
		}
		in := Inputs{Messages: []Message{{Role: "user", Content: Content{Text: "mutable hello"}}}}
		for i := range 2 {
			if got, err := tmpl.Render(in); err != nil || got != "mutable hello" {
				t.Errorf("%s: render %d: %q, %v", src, i, got, err)
			}
		}
	}
	for src, mutates := range map[string]bool{
		`{% set ns = namespace(x=0) %}{% set ns.x = 1 %}`:       false,
		`{% set ns = namespace(x=0) %}{% set other.x = 1 %}`:    true,
		`{{ messages | reverse | list }}{{ 'a b'.split(' ') }}`: false,
		`{% set _ = tools.append(1) %}`:                         true,
	} {
		if got := mutatesValues(src); got != mutates {
			t.Errorf("mutatesValues(%s) = %v, want %v", src, got, mutates)
		}
	}
}

// TestValueCacheTools: tools are cached as messages are, and a tool that differs in any
// field (a description, its schema, no schema) renders as itself.
func TestValueCacheTools(t *testing.T) {
	tmpl, err := Compile(`{% for t in tools %}{{ t | tojson }};{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	tool := func(desc, params string) Tool {
		x := Tool{Type: "function"}
		x.Function.Name, x.Function.Description = "f", desc
		if params != "" {
			x.Function.Parameters = json.RawMessage(params)
		}
		return x
	}
	for _, tc := range []struct {
		tools []Tool
		want  string
	}{
		{[]Tool{tool("d", `{"type": "object"}`)}, `{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}};`},
		{[]Tool{tool("d", `{"type": "object"}`)}, `{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}};`},
		{[]Tool{tool("e", `{"type": "object"}`)}, `{"type": "function", "function": {"name": "f", "description": "e", "parameters": {"type": "object"}}};`},
		{[]Tool{tool("d", `{"type": "object", "properties": {}}`)}, `{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {}}}};`},
		{[]Tool{tool("d", "")}, `{"type": "function", "function": {"name": "f", "description": "d"}};`},
	} {
		got, err := tmpl.Render(Inputs{Tools: tc.tools})
		if err != nil || got != tc.want {
			t.Errorf("render: %q, %v; want %q", got, err, tc.want)
		}
	}
}

// TestValueCacheConcurrent: renders share cached values from several goroutines at once
// (go test -race checks that nothing writes them) and agree.
func TestValueCacheConcurrent(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "templates", "qwen3.jinja"))
	if os.IsNotExist(err) {
		src, err = os.ReadFile(filepath.Join("templates", "qwen3.jinja"))
	}
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := Compile(string(src))
	if err != nil {
		t.Fatal(err)
	}
	in := benchConversation(42)
	want, err := tmpl.Render(in)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if got, err := tmpl.Render(in); err != nil || got != want {
					t.Errorf("concurrent render differs: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
