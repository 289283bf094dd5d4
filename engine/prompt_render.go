package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/parsers"
	"github.com/ollama/ollama/model/renderers"
	"github.com/ollama/ollama/template"
	"github.com/ollama/ollama/thinking"
	"github.com/ollama/ollama/types/model"
)

// RenderPrompt renders conv for the model described by show exactly as the
// runtime (Ollama v0.17.4, server.ChatHandler and server/prompt.go) renders
// /api/chat with the same messages, tools and think value, so that raw
// generation sees the prompt the model's own chat path would. think nil
// means not set. The runtime's steps, in its order:
//
//   - the model's own MESSAGEs (show.Messages) come first, and its SYSTEM
//     prompt (show.System) leads when conv does not start with a system
//     message;
//   - a model with the thinking capability thinks when think is not set;
//   - for qwen3-family models, <think> blocks are cut from the content of
//     assistant messages before the last user message (the runtime also
//     does this for models named deepseek-r1, a name RenderPrompt cannot
//     see);
//   - a model's built-in output parser may rewrite the tools it is shown
//     (harmony renames functions for gpt-oss);
//   - template models get an [img-N] tag per image in the message content
//     (replacing an "[img]" placeholder when the text has one); renderer
//     models (show.Renderer) place images themselves.
//
// Two deliberate differences: think=true for a model without the thinking
// capability renders as unset instead of failing (the runtime relaxes it the
// same way for its Anthropic layer; the engine decides whether to reason),
// and nothing is truncated: the engine sends truncate=false and reports an
// over-long prompt itself.
func RenderPrompt(show *api.ShowResponse, conv *Conversation, think *api.ThinkValue) (string, error) {
	if show.RemoteHost != "" {
		return "", fmt.Errorf("engine: model %s is remote (%s); hearth cannot render its prompt", show.RemoteModel, show.RemoteHost)
	}
	// Copies throughout: the template layer merges messages in place, and
	// the caller's conversation is rendered again on the next turn.
	msgs := make([]api.Message, 0, len(show.Messages)+len(conv.Messages)+1)
	if len(show.System) > 0 && (len(conv.Messages) == 0 || conv.Messages[0].Role != "system") {
		msgs = append(msgs, api.Message{Role: "system", Content: show.System})
	}
	for _, m := range show.Messages {
		if len(m.Images) > 0 {
			return "", errors.New("engine: the model's own messages carry images; hearth cannot number them")
		}
	}
	// The runtime puts the model's SYSTEM before its MESSAGEs too:
	// append(m.Messages, req.Messages...) then prepends the system.
	msgs = append(msgs, show.Messages...)
	msgs = append(msgs, conv.Messages...)

	if slices.Contains(show.Capabilities, model.CapabilityThinking) {
		if think == nil {
			think = &api.ThinkValue{Value: true}
		}
	} else if think != nil && think.Bool() {
		think = nil
	}

	if show.Details.Family == "qwen3" {
		cutThinkTags(msgs)
	}

	tools := conv.Tools
	if p := parserName(show); p != "" {
		if parser := parsers.ParserForName(p); parser != nil {
			var last *api.Message
			if len(msgs) > 0 {
				last = &msgs[len(msgs)-1]
			}
			tools = parser.Init(slices.Clone(tools), last, think)
		}
	}

	if show.Renderer != "" {
		return renderers.RenderWithRenderer(show.Renderer, msgs, tools, think)
	}

	tagImages(msgs)
	tmpl, err := parseTemplate(show.Template)
	if err != nil {
		return "", err
	}
	v := template.Values{Messages: msgs, Tools: tools, IsThinkSet: think != nil}
	if think != nil {
		v.Think, v.ThinkLevel = think.Bool(), think.String()
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, v); err != nil {
		return "", fmt.Errorf("engine: render the model's template: %w", err)
	}
	return b.String(), nil
}

// parserName is the runtime's output parser for the model: show.Parser, or
// harmony for gpt-oss templates (server.shouldUseHarmony).
func parserName(show *api.ShowResponse) string {
	if show.Parser != "" {
		return show.Parser
	}
	if f := show.Details.Family; (f == "gptoss" || f == "gpt-oss") &&
		strings.Contains(show.Template, "<|start|>") && strings.Contains(show.Template, "<|end|>") {
		return "harmony"
	}
	return ""
}

// cutThinkTags is server.filterThinkTags: earlier assistant turns lose their
// <think> blocks, which saves tokens for models trained that way.
func cutThinkTags(msgs []api.Message) {
	lastUser := -1
	for i, m := range msgs {
		if m.Role == "user" {
			lastUser = i
		}
	}
	for i := range lastUser {
		if msgs[i].Role == "assistant" {
			p := &thinking.Parser{OpeningTag: "<think>", ClosingTag: "</think>"}
			_, msgs[i].Content = p.AddContent(msgs[i].Content)
		}
	}
}

// tagImages marks each image in its message's content as the runtime does
// for template models (server.chatPrompt): [img-N], N counting images across
// the prompt, replacing the first "[img]" placeholder if there is one, else
// prefixed to the content.
func tagImages(msgs []api.Message) {
	n := 0
	for i := range msgs {
		var prefix string
		content := msgs[i].Content
		for range msgs[i].Images {
			tag := fmt.Sprintf("[img-%d]", n)
			n++
			if !strings.Contains(content, "[img]") {
				prefix += tag
			} else {
				content = strings.Replace(content, "[img]", tag, 1)
			}
		}
		msgs[i].Content = prefix + content
	}
}

// templateCache holds parsed templates by their text: parsing walks the whole
// template and most requests use one of a few models.
var templateCache sync.Map // string -> *template.Template

func parseTemplate(text string) (*template.Template, error) {
	if t, ok := templateCache.Load(text); ok {
		return t.(*template.Template), nil
	}
	t, err := template.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("engine: parse the model's template: %w", err)
	}
	actual, _ := templateCache.LoadOrStore(text, t)
	return actual.(*template.Template), nil
}
