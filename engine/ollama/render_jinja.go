package ollama

import (
	"encoding/json"
	"fmt"

	"github.com/ollama/ollama/api"

	"hearth/engine/chattemplate"
)

// jinjaRenderer renders prompts from a chat template written in Jinja (the model's own
// from its GGUF file, or its family's from models.json), with the variables Hugging
// Face's apply_chat_template hands a template. It is the one renderer for every family
// rendered so: hearth renders through it, and the names registered with the module's
// registry (register.go) make the embedded runtime's own /api/chat render the same.
type jinjaRenderer struct {
	tmpl     *chattemplate.Template
	bos, eos string
}

// Render implements the module's renderers.Renderer.
func (r jinjaRenderer) Render(msgs []api.Message, tools []api.Tool, think *api.ThinkValue) (string, error) {
	in, err := jinjaInputs(msgs, tools, think)
	if err != nil {
		return "", err
	}
	in.BOSToken, in.EOSToken = r.bos, r.eos
	return r.tmpl.Render(in)
}

// jinjaInputs are the template's variables for the runtime's messages, tools and think
// value:
//   - a message's thinking is its reasoning_content and its thinking (templates read
//     either name); calls carry their arguments as objects, with an index-free
//     OpenAI shape; a tool result names its function and call;
//   - images become [img-N] tags in the message's text, N counting images across the
//     prompt (replacing an "[img]" placeholder where the text has one), where the
//     runtime puts each image's embedding, as it does for every template model;
//   - think true/false is enable_thinking; a level ("low", "medium", "high") is
//     reasoning_effort with enable_thinking true; nil leaves both undefined, which
//     templates read as their own default;
//   - the generation prompt is always added: hearth asks for the assistant's next turn.
func jinjaInputs(msgs []api.Message, tools []api.Tool, think *api.ThinkValue) (chattemplate.Inputs, error) {
	in := chattemplate.Inputs{AddGenerationPrompt: true, Messages: make([]chattemplate.Message, len(msgs))}
	image := 0
	for i, m := range msgs {
		cm := chattemplate.Message{Role: m.Role, ToolCallID: m.ToolCallID, Name: m.ToolName}
		text := m.Content
		if len(m.Images) > 0 {
			tagged := []api.Message{{Content: text, Images: m.Images}}
			tagImagesFrom(tagged, image)
			text, image = tagged[0].Content, image+len(m.Images)
		}
		cm.Content = chattemplate.Content{Text: text}
		if m.Thinking != "" {
			thinking := m.Thinking
			cm.ReasoningContent, cm.Thinking = &thinking, &thinking
		}
		if len(m.ToolCalls) > 0 {
			cm.ToolCalls = make([]chattemplate.ToolCall, len(m.ToolCalls))
			for j, c := range m.ToolCalls {
				args, err := json.Marshal(c.Function.Arguments)
				if err != nil {
					return chattemplate.Inputs{}, fmt.Errorf("engine: the arguments of call %q: %w", c.Function.Name, err)
				}
				tc := chattemplate.ToolCall{ID: c.ID, Type: "function"}
				tc.Function.Name, tc.Function.Arguments = c.Function.Name, args
				cm.ToolCalls[j] = tc
			}
		}
		in.Messages[i] = cm
	}
	if len(tools) > 0 {
		in.Tools = make([]chattemplate.Tool, len(tools))
		for i, t := range tools {
			params, err := json.Marshal(t.Function.Parameters)
			if err != nil {
				return chattemplate.Inputs{}, fmt.Errorf("engine: the parameters of tool %q: %w", t.Function.Name, err)
			}
			ct := chattemplate.Tool{Type: "function"}
			ct.Function.Name, ct.Function.Description, ct.Function.Parameters = t.Function.Name, t.Function.Description, params
			in.Tools[i] = ct
		}
	}
	if think != nil {
		on := think.Bool()
		in.EnableThinking = &on
		if level, ok := think.Value.(string); ok && level != "" {
			in.ReasoningEffort = level
		}
	}
	return in, nil
}
