package engine

import (
	"encoding/json"
	"errors"
	"strings"

	"hearth/scriptmodel"
)

// The engine's unit tests render prompts with these fakes: the real rendering (the
// model's Go template, through Ollama's template package) belongs to engine/ollama,
// whose tests check it against the runtime. The fakes render the shapes of
// scriptmodel.Template (hermes-style calls) and of a Mistral template (calls after
// [TOOL_CALLS]); the engine's control flow only needs a prompt that ends where the
// model starts writing.

// showParameters is what both fakes show of a tool schema: the schema as sent, an
// object without properties when there is none.
func showParameters(schema json.RawMessage) (json.RawMessage, error) {
	if len(schema) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	if !json.Valid(schema) {
		return nil, errors.New("not JSON")
	}
	return schema, nil
}

// callArguments is a call's arguments as templates print them.
func callArguments(c ToolCall) string {
	if len(c.Arguments) == 0 {
		return "{}"
	}
	return string(c.Arguments)
}

// scriptRenderer renders like scriptmodel.Template.
type scriptRenderer struct{}

func (scriptRenderer) ToolParameters(schema json.RawMessage) (json.RawMessage, error) {
	return showParameters(schema)
}

func (scriptRenderer) RenderPrompt(conv *Conversation, _ *Think) (string, error) {
	var b, system strings.Builder
	for _, m := range conv.Messages {
		if m.Role == "system" {
			if system.Len() > 0 {
				system.WriteString("\n\n")
			}
			system.WriteString(m.Content)
		}
	}
	if system.Len() > 0 || len(conv.Tools) > 0 {
		b.WriteString("<|system|>" + system.String())
		if len(conv.Tools) > 0 {
			b.WriteString("\n# Tools\n<tools>")
			for _, t := range conv.Tools {
				fn, _ := json.Marshal(t)
				b.WriteString("\n{\"type\": \"function\", \"function\": " + string(fn) + "}")
			}
			b.WriteString("\n</tools>")
		}
		b.WriteString("<|end|>\n")
	}
	last := ""
	for _, m := range conv.Messages {
		switch m.Role {
		case "user":
			b.WriteString("<|user|>" + m.Content + "<|end|>\n")
		case "assistant":
			b.WriteString("<|assistant|>")
			if m.Thinking != "" {
				b.WriteString("<think>" + m.Thinking + "</think>")
			}
			b.WriteString(m.Content)
			for _, c := range m.ToolCalls {
				b.WriteString("<tool_call>\n{\"name\": \"" + c.Name + "\", \"arguments\": " + callArguments(c) + "}\n</tool_call>")
			}
			b.WriteString("<|end|>\n")
		case "tool":
			b.WriteString("<|tool|><tool_response>\n" + m.Content + "\n</tool_response><|end|>\n")
		default:
			continue
		}
		last = m.Role
	}
	switch last {
	case "tool":
		b.WriteString(scriptmodel.EntryAnswer)
	case "user":
		b.WriteString(scriptmodel.EntryAssistant)
	}
	return b.String(), nil
}

// mistralRenderer renders like mistralShow's template.
type mistralRenderer struct{}

func (mistralRenderer) ToolParameters(schema json.RawMessage) (json.RawMessage, error) {
	return showParameters(schema)
}

func (mistralRenderer) RenderPrompt(conv *Conversation, _ *Think) (string, error) {
	var b strings.Builder
	if len(conv.Tools) > 0 {
		tools, _ := json.Marshal(conv.Tools)
		b.WriteString("[AVAILABLE_TOOLS]" + string(tools) + "[/AVAILABLE_TOOLS]")
	}
	for _, m := range conv.Messages {
		b.WriteString("[INST]" + m.Content + "[/INST]")
		for _, c := range m.ToolCalls {
			b.WriteString("[TOOL_CALLS]" + c.Name + "[ARGS]" + callArguments(c))
		}
	}
	return b.String(), nil
}
