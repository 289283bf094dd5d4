package main

import (
	"strings"
	"testing"

	"hearth/engine"
)

// TestModelRowTextOnly: `hearth models` shows a model whose runtime renderer has no
// format as "text only", with no reasoning markers (it gets none), and a known one by
// its format's id.
func TestModelRowTextOnly(t *testing.T) {
	formats := engine.DefaultFormats()
	var unknown modelRow
	unknown.fill(&engine.Model{Name: "olmo3:7b-think", Info: &engine.ModelInfo{}, Format: formats.Lookup("emulated-hermes"),
		UnknownMarkup: `renderer "olmo3-think"`})
	if unknown.format != "text only" || unknown.reasoning != "" {
		t.Fatalf("unknown renderer: format %q, reasoning %q", unknown.format, unknown.reasoning)
	}
	var known modelRow
	known.fill(&engine.Model{Name: "qwen3.5:9b", Info: &engine.ModelInfo{}, Format: formats.Lookup("qwen3.5")})
	if known.format != "qwen3.5" || known.reasoning != "<think>…</think>" {
		t.Fatalf("qwen3.5: format %q, reasoning %q", known.format, known.reasoning)
	}
	// The formats of Ollama v0.32.15's renderers show as any other.
	for _, id := range []string{"qwen3.8", "ornith", "nemotron-3.5-nano", "poolside-v1"} {
		var row modelRow
		row.fill(&engine.Model{Name: id + ":latest", Info: &engine.ModelInfo{Capabilities: []string{"completion", "tools", "thinking"}}, Format: formats.Lookup(id)})
		if row.format != id || row.reasoning != "<think>…</think>" || !strings.Contains(row.caps, "thinking") {
			t.Errorf("%s: format %q, reasoning %q, capabilities %q", id, row.format, row.reasoning, row.caps)
		}
	}
}

// The formats of Ollama v0.32.15's cohere and glimmer renderers, with their reasoning:
// delimiters for cohere, the recipient of reasoning messages for glimmer.
func TestModelRowLaterRenderers(t *testing.T) {
	formats := engine.DefaultFormats()
	for _, c := range []struct{ format, reasoning string }{
		{"cohere", "<|START_THINKING|>…<|END_THINKING|>"},
		{"glimmer", "messages to=self"},
	} {
		var row modelRow
		row.fill(&engine.Model{Name: "x:latest", Info: &engine.ModelInfo{}, Format: formats.Lookup(c.format)})
		if row.format != c.format || row.reasoning != c.reasoning {
			t.Errorf("%s: format %q, reasoning %q; want %q", c.format, row.format, row.reasoning, c.reasoning)
		}
	}
}

// A model the runtime cannot run says so in its format column, whatever else is known.
func TestModelRowUnsupportedArchitecture(t *testing.T) {
	var row modelRow
	row.fill(&engine.Model{Name: "odd:1b", Format: engine.DefaultFormats().Lookup("qwen3.5"),
		Info: &engine.ModelInfo{Architecture: "hearthtestarch", UnsupportedBy: "the embedded runtime (Ollama 0.24.0)"}})
	if want := "architecture hearthtestarch: not in the embedded runtime (Ollama 0.24.0)"; row.format != want || row.reasoning != "" {
		t.Fatalf("format %q, reasoning %q; want %q and none", row.format, row.reasoning, want)
	}
}
