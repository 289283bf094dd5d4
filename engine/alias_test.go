package engine

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func mustAliases(t *testing.T, settings ...string) *Aliases {
	t.Helper()
	var list []Alias
	for _, s := range settings {
		a, err := ParseAlias(s)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, a)
	}
	a, err := NewAliases(list)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAliasResolve(t *testing.T) {
	a := mustAliases(t,
		"claude-*=qwen3:8b",
		"claude-3-5-haiku-*=qwen3:0.6b", // after a glob that also matches: never reached
		"claude-haiku-4-5=qwen3:0.6b",   // exact: wins over the glob given before it
		"gpt-*-mini=llama3.2:1b",
		"*/coder:*=qwen2.5-coder:7b",
		"gpt-4o=qwen3:8b",
	)
	for _, c := range []struct {
		name, want string
		ok         bool
	}{
		{"claude-sonnet-4-5", "qwen3:8b", true},
		{"claude-sonnet-4-5-20250929", "qwen3:8b", true},
		{"Claude-Opus-4-1", "qwen3:8b", true}, // names compare case-insensitively
		{"claude-haiku-4-5", "qwen3:0.6b", true},
		{"CLAUDE-HAIKU-4-5", "qwen3:0.6b", true},
		{"claude-3-5-haiku-20241022", "qwen3:8b", true}, // the first glob that matches
		{"claude-", "qwen3:8b", true},                   // '*' matches nothing too
		{"claude", "claude", false},
		{"gpt-4o", "qwen3:8b", true},
		{"gpt-4o-mini", "llama3.2:1b", true},
		{"gpt-4o-mini-2024", "gpt-4o-mini-2024", false}, // the suffix must end the name
		{"gpt-4.1", "gpt-4.1", false},
		{"hf.co/org/coder:q4", "qwen2.5-coder:7b", true}, // '*' crosses '/' and ':'
		{"qwen3:8b", "qwen3:8b", false},
		{"", "", false},
	} {
		got, ok := a.Resolve(c.name)
		if got != c.want || ok != c.ok {
			t.Errorf("Resolve(%q) = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	var none *Aliases
	if got, ok := none.Resolve("claude-sonnet-4-5"); ok || got != "claude-sonnet-4-5" {
		t.Errorf("nil aliases resolved %q", got)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "", true},
		{"*", "anything:at/all", true},
		{"a*", "a", true},
		{"a*b", "ab", true},
		{"a*b", "aXb", true},
		{"a*b", "aXbY", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXbXbXc", true},
		{"a*b*c", "acb", false},
		{"*bb", "b", false}, // the suffix may not overlap what came before
		{"ab*ba", "aba", false},
		{"x", "x", true},
		{"x", "xx", false},
	} {
		if got := globMatch(c.pattern, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

func TestParseAliasRefusals(t *testing.T) {
	for _, s := range []string{"", "claude-*", "=qwen3:8b", "claude-*=", "claude-*=qwen*", "a=b:c:d:"} {
		if _, err := ParseAlias(s); err == nil {
			t.Errorf("ParseAlias(%q) accepted", s)
		}
	}
	a, err := ParseAlias(" claude-* = qwen3:8b ")
	if err != nil || a != (Alias{Pattern: "claude-*", Model: "qwen3:8b"}) {
		t.Errorf("ParseAlias with spaces = %+v, %v", a, err)
	}
}

func TestNewAliasesRefusesChains(t *testing.T) {
	for _, list := range [][]Alias{
		{{"a", "b"}, {"b", "c"}},                      // a=b, b=c: a chain
		{{"claude-*", "qwen3:8b"}, {"qwen*", "x:1b"}}, // the target is caught by a glob
		{{"gpt-4o", "a"}, {"GPT-4O", "b"}},            // one name, two models
	} {
		if _, err := NewAliases(list); err == nil {
			t.Errorf("NewAliases(%v) accepted", list)
		}
	}
	// A glob that catches its own target sends it nowhere else: fine.
	if _, err := NewAliases([]Alias{{"claude-*", "claude-local"}}); err != nil {
		t.Errorf("self-matching alias refused: %v", err)
	}
}

func TestAliasListed(t *testing.T) {
	a := mustAliases(t, "gpt-4o=qwen3:8b", "claude-*=qwen3:8b", "o3=missing:1b", "claude-haiku-4-5=qwen3")
	now := time.Unix(1700000000, 0)
	list := []ListedModel{{Name: "qwen3:8b", Model: "qwen3:8b", ModifiedAt: now}, {Name: "qwen3:latest", Model: "qwen3:latest"}}
	got := a.Listed(list)
	var names []string
	for _, m := range got {
		names = append(names, m.Name+"->"+m.Model)
	}
	// Exact aliases whose model is served, sorted; globs and missing targets are not
	// names a list can show.
	want := "qwen3:8b->qwen3:8b qwen3:latest->qwen3:latest claude-haiku-4-5->qwen3:latest gpt-4o->qwen3:8b"
	if strings.Join(names, " ") != want {
		t.Errorf("Listed = %s\nwant   %s", strings.Join(names, " "), want)
	}
	if got[3].ModifiedAt != now {
		t.Errorf("an alias's entry has the model's modified time %v, want %v", got[3].ModifiedAt, now)
	}
}

func TestAliasModelNotFound(t *testing.T) {
	a := mustAliases(t, "claude-*=qwen3:8b")
	e := a.ModelNotFound("gpt-4o")
	if e.Status != http.StatusNotFound || e.Code != "model_not_found" || e.Param != "model" {
		t.Errorf("error %d %s %s, want 404 model_not_found on model", e.Status, e.Code, e.Param)
	}
	for _, want := range []string{"'gpt-4o'", "--model-alias 'gpt-4o=MODEL'", "'gpt-*=MODEL'", "docs/clients.md"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q does not say %s", e.Message, want)
		}
	}
	// The target of an alias is missing: the alias is what to fix.
	e = a.ModelNotFound("qwen3:8b")
	for _, want := range []string{"'qwen3:8b'", "claude-*=qwen3:8b", "hearth pull qwen3:8b"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q does not say %s", e.Message, want)
		}
	}
	var none *Aliases
	if e := none.ModelNotFound("claude-sonnet-4-5"); !strings.Contains(e.Message, "--model-alias 'claude-sonnet-4-5=MODEL'") {
		t.Errorf("without aliases: %q", e.Message)
	}
}
