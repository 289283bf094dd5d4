package laterrenderers

// What the tests ported from Ollama v0.32.15's model/renderers (cohere_test.go,
// glimmer_test.go, glimmer_reference_test.go) take from the rest of that package, here
// over this package's registration: its registry's lookups, and, for the Glimmer tool-loop round trip, a parser of the
// model's output. v0.24.0 has no Glimmer parser, so hearth's own reads it: the
// glimmer format of models.json through toolgrammar, whose calls become api.ToolCalls
// as hearth hands them to the renderer (engine/ollama's conversation).

import (
	"encoding/json"
	"fmt"
	"strings"

	"hearth"
	"hearth/toolgrammar"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"
)

// rendererForName is the renderer registered under name with the module's registry
// (which this package's init fills), nil when none is.
func rendererForName(name string) Renderer {
	b := build(name)
	if b == nil {
		return nil
	}
	if _, err := renderers.RenderWithRenderer(name, nil, nil, nil); err != nil && strings.Contains(err.Error(), "unknown renderer") {
		return nil
	}
	return b()
}

// LeadingBOSForRenderer is Ollama's registry lookup of a renderer's BOS text.
func LeadingBOSForRenderer(name string) string { return LeadingBOS(name) }

// parseGlimmerTurn reads one assistant turn of a Glimmer model (the output after
// the prompt's "<|start|>assistant") as hearth does, in place of Ollama's parser.
func parseGlimmerTurn(tools []api.Tool, raw string) (content, thinking string, calls []api.ToolCall, err error) {
	reg, err := toolgrammar.LoadFormats(hearth.ModelsJSON)
	if err != nil {
		return "", "", nil, err
	}
	f := reg.Lookup("glimmer")
	if f == nil {
		return "", "", nil, fmt.Errorf("models.json has no glimmer format")
	}
	var tgTools []toolgrammar.Tool
	for _, t := range tools {
		params, err := json.Marshal(t.Function.Parameters)
		if err != nil {
			return "", "", nil, err
		}
		tgTools = append(tgTools, toolgrammar.Tool{Name: t.Function.Name, Parameters: params})
	}
	p := toolgrammar.NewParser(f, toolgrammar.Options{Tools: tgTools})
	var text, reasoning strings.Builder
	take := func(evs []toolgrammar.Event) error {
		for _, ev := range evs {
			switch ev.Kind {
			case toolgrammar.TextDelta:
				text.WriteString(ev.Text)
			case toolgrammar.ReasoningDelta:
				reasoning.WriteString(ev.Text)
			case toolgrammar.CallEnd:
				var args api.ToolCallFunctionArguments
				if err := json.Unmarshal([]byte(ev.Text), &args); err != nil {
					return err
				}
				calls = append(calls, api.ToolCall{Function: api.ToolCallFunction{Name: ev.Name, Index: len(calls), Arguments: args}})
			case toolgrammar.Malformed:
				return fmt.Errorf("malformed call (%s): %q", ev.Reason, ev.Text)
			}
		}
		return nil
	}
	if err := take(p.Feed(raw)); err != nil {
		return "", "", nil, err
	}
	if err := take(p.Close()); err != nil {
		return "", "", nil, err
	}
	return text.String(), reasoning.String(), calls, nil
}
