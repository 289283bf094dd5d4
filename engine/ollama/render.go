package ollama

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/parsers"
	modelfile "github.com/ollama/ollama/parser"
	"github.com/ollama/ollama/template"
	"github.com/ollama/ollama/thinking"
	"github.com/ollama/ollama/types/model"

	"hearth/engine"
	// The parsers that read what a family's prompts make a model write, registered
	// under models.json's chat_parsers names for the embedded runtime's own chat.
	_ "hearth/engine/ollama/chatparser"
)

// NewRenderer returns the engine's PromptRenderer of the model /api/show described as
// show: RenderPrompt over it, and Ollama's reading of tool schemas.
func NewRenderer(show *api.ShowResponse) engine.PromptRenderer { return renderer{show} }

type renderer struct{ show *api.ShowResponse }

func (r renderer) RenderPrompt(conv *engine.Conversation, think *engine.Think) (string, error) {
	var tv *api.ThinkValue
	if think != nil {
		tv = &api.ThinkValue{Value: think.Value}
	}
	// The same text as RenderPrompt, spliced onto a kept prompt of the conversation's
	// prefix where the template allows (incremental.go), less a BOS text the runtime's
	// tokenizer adds itself (leadingbos.go).
	prompt, err := renderKeyed(r.show, conv, tv)
	if err != nil {
		return "", err
	}
	return withoutRendererBOS(r.show, prompt), nil
}

// ToolParameters reads a function tool's JSON schema into the runtime's parameter type
// as Ollama's OpenAI layer does. That type keeps type, $defs, items, required and
// properties (each with type, description, enum, items, anyOf, properties and, since
// v0.24.0, required); other keywords are dropped, as they are when the same tool goes
// through Ollama. A schema that type cannot hold (properties that are not an object)
// is the error.
func (renderer) ToolParameters(schema json.RawMessage) (json.RawMessage, error) {
	return toolParameters(schema)
}

// RenderPrompt renders conv for the model described by show exactly as the
// runtime (Ollama v0.24.0, server.ChatHandler and server/prompt.go) renders
// /api/chat with the same messages, tools and think value, so that raw
// generation sees the prompt the model's own chat path would. think nil
// means not set. The runtime's steps, in its order:
//
//   - the model's own MESSAGEs (show.Messages) come first, and its SYSTEM
//     prompt (show.System) leads when conv does not start with a system
//     message (show carries MESSAGEs without their images, so a model whose
//     MESSAGEs have images renders without them);
//   - a model with the thinking capability thinks when think is not set;
//   - for qwen3-family models, <think> blocks are cut from the content of
//     assistant messages before the last user message (the runtime also
//     does this for models named deepseek-r1, a name RenderPrompt cannot
//     see);
//   - a model's built-in output parser may rewrite the tools it is shown
//     (harmony renames functions for gpt-oss);
//   - template models get an [img-N] tag per image in the message content
//     (replacing an "[img]" placeholder when the text has one); renderer
//     models (RENDERER in the Modelfile) place images themselves.
//
// Two deliberate differences: think=true for a model without the thinking
// capability renders as unset instead of failing (the runtime relaxes it the
// same way for its Anthropic layer; the engine decides whether to reason),
// and nothing is truncated: the engine sends truncate=false and reports an
// over-long prompt itself.
//
// The renderer show names is rendered as it is: a model whose renderer the runtime
// resolves by the model's name (gemma4 to gemma4-small or gemma4-large) is rendered as
// the runtime does when show comes from ResolveRenderer, as the seam's Model does.
//
// Not mirrored yet: the runtime gives gpt-oss the think level "high" where a request
// says "max".
func RenderPrompt(show *api.ShowResponse, conv *engine.Conversation, think *api.ThinkValue) (string, error) {
	if show.RemoteHost != "" {
		return "", fmt.Errorf("engine: model %s is remote (%s); hearth cannot render its prompt", show.RemoteModel, show.RemoteHost)
	}
	_, parserName, err := ModelRenderer(show)
	if err != nil {
		return "", err
	}
	// A fresh slice of the runtime's messages: the steps below and the template
	// layer change messages in place, and the caller's conversation is rendered
	// again next turn.
	msgs := make([]api.Message, 0, len(show.Messages)+len(conv.Messages)+1)
	// The runtime puts the model's SYSTEM before its MESSAGEs too:
	// append(m.Messages, req.Messages...), then the system in front.
	if len(show.System) > 0 && (len(conv.Messages) == 0 || conv.Messages[0].Role != "system") {
		msgs = append(msgs, api.Message{Role: "system", Content: show.System})
	}
	msgs = append(msgs, show.Messages...)
	if msgs, err = appendMessages(msgs, conv.Messages); err != nil {
		return "", err
	}
	tools, err := apiTools(conv.Tools)
	if err != nil {
		return "", err
	}

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

	if parserName != "" {
		if parser := parsers.ParserForName(parserName); parser != nil {
			var last *api.Message
			if len(msgs) > 0 {
				last = &msgs[len(msgs)-1]
			}
			tools = parser.Init(slices.Clone(tools), last, think)
		}
	}

	sources, err := TemplateSources(show)
	if err != nil {
		return "", err
	}
	return renderSources(sources, msgs, tools, think)
}

// ModelRenderer returns the model's built-in renderer and output parser.
// /api/show (v0.17.4 to v0.24.0) leaves its renderer and parser fields empty (they are
// declared but GetModelInfo never sets them); its Modelfile text has them as
// RENDERER and PARSER lines, so they are read from there unless the fields
// are set. A gpt-oss template without a parser gets harmony, as in
// server.ChatHandler (shouldUseHarmony).
func ModelRenderer(show *api.ShowResponse) (renderer, parser string, err error) {
	renderer, parser = show.Renderer, show.Parser
	if renderer == "" && parser == "" && show.Modelfile != "" {
		if renderer, parser, err = modelfileRenderer(show.Modelfile); err != nil {
			return "", "", err
		}
	}
	if f := show.Details.Family; parser == "" && (f == "gptoss" || f == "gpt-oss") &&
		strings.Contains(show.Template, "<|start|>") && strings.Contains(show.Template, "<|end|>") {
		parser = "harmony"
	}
	return renderer, parser, nil
}

// modelfiles caches the RENDERER and PARSER of a Modelfile text: the text
// holds the whole template and license, too long to parse per request.
var modelfiles sync.Map // string -> [2]string

func modelfileRenderer(text string) (renderer, parser string, err error) {
	if v, ok := modelfiles.Load(text); ok {
		rp := v.([2]string)
		return rp[0], rp[1], nil
	}
	f, err := modelfile.ParseFile(strings.NewReader(text))
	if err != nil {
		return "", "", fmt.Errorf("engine: read the model's Modelfile: %w", err)
	}
	for _, c := range f.Commands {
		switch c.Name {
		case "renderer":
			renderer = c.Args
		case "parser":
			parser = c.Args
		}
	}
	modelfiles.Store(text, [2]string{renderer, parser})
	return renderer, parser, nil
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
func tagImages(msgs []api.Message) { tagImagesFrom(msgs, 0) }

// tagImagesFrom is tagImages with the first image numbered n.
func tagImagesFrom(msgs []api.Message, n int) {
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
