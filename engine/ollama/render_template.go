package ollama

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/renderers"
	"github.com/ollama/ollama/template"

	"hearth"
	"hearth/engine"
	"hearth/engine/chattemplate"
	"hearth/toolgrammar"
)

// Which template renders a model, in this order:
//
//  1. the model's own chat template, tokenizer.chat_template of its GGUF file, when
//     hearth can read the file (seam.go puts it into show's model_info, which /api/show
//     leaves it out of);
//  2. else, for a model the runtime renders with one of the renderers hearth renders
//     as templates (jinjaRegistered: this year's families), the template of the
//     models.json format that names that renderer: the family's format, in Jinja;
//  3. else what the runtime itself renders with: the module's renderer of that name, or
//     the Modelfile's Go TEMPLATE.
//
// A model with a Go TEMPLATE of its own and no GGUF template keeps its TEMPLATE: that is
// the model's own definition, where a models.json template is only its family's. A
// template that does not compile, or fails on a conversation, gives way to the next
// source, with one warning per template (RenderPrompt); only when no source renders
// does the request fail.

// ModelInfo keys under which seam.go hands the GGUF file's chat template and the
// tokenizer's BOS and EOS texts to the renderer. The first is the GGUF key itself.
const (
	chatTemplateKey = "tokenizer.chat_template"
	bosTextKey      = "hearth.tokenizer.bos_text"
	eosTextKey      = "hearth.tokenizer.eos_text"
)

// Template source kinds (TemplateSource.Kind).
const (
	SourceGGUF      = "gguf"
	SourceFormat    = "models.json"
	SourceRenderer  = "module renderer"
	SourceModelfile = "Modelfile template"
)

// TemplateSource is one way of rendering a model's prompts.
type TemplateSource struct {
	// Kind is SourceGGUF, SourceFormat, SourceRenderer or SourceModelfile.
	Kind string
	// Name is the format's id (SourceFormat) or the renderer's name (SourceRenderer).
	Name string
	// Text is the template: Jinja for SourceGGUF and SourceFormat, Go's text/template
	// for SourceModelfile, "" for a module renderer.
	Text string
	// BOS and EOS are the tokenizer's texts handed to a Jinja template as bos_token and
	// eos_token.
	BOS, EOS string
}

// String is how `hearth show` names the source: "gguf", "models.json:<id>", "module
// renderer <name>" or "Modelfile template".
func (s TemplateSource) String() string {
	switch s.Kind {
	case SourceFormat:
		return SourceFormat + ":" + s.Name
	case SourceRenderer:
		return SourceRenderer + " " + s.Name
	}
	return s.Kind
}

// jinja reports whether the source is a Jinja template.
func (s TemplateSource) jinja() bool { return s.Kind == SourceGGUF || s.Kind == SourceFormat }

// TemplateSources lists the sources that can render the model show describes, best
// first (see the top of this file). rendererName is the model's built-in renderer
// (ModelRenderer).
func TemplateSources(show *api.ShowResponse) ([]TemplateSource, error) {
	rendererName, parserName, err := ModelRenderer(show)
	if err != nil {
		return nil, err
	}
	bos, _ := show.ModelInfo[bosTextKey].(string)
	eos, _ := show.ModelInfo[eosTextKey].(string)
	var out []TemplateSource
	if t, _ := show.ModelInfo[chatTemplateKey].(string); t != "" {
		out = append(out, TemplateSource{Kind: SourceGGUF, Text: t, BOS: bos, EOS: eos})
	}
	if rendererName != "" {
		if f := formatOfRenderer(rendererName, parserName); f != nil && slices.Contains(jinjaRegistered, rendererName) {
			if text, ok := chattemplate.Builtin(f.Template); ok {
				out = append(out, TemplateSource{Kind: SourceFormat, Name: f.ID, Text: text, BOS: bos, EOS: eos})
			}
		}
		out = append(out, TemplateSource{Kind: SourceRenderer, Name: rendererName})
	} else {
		out = append(out, TemplateSource{Kind: SourceModelfile, Text: show.Template})
	}
	return out, nil
}

// builtinFormats is models.json as built in; read once.
var builtinFormats = sync.OnceValue(func() *toolgrammar.Registry {
	r, err := toolgrammar.LoadFormats(hearth.ModelsJSON)
	if err != nil {
		panic(fmt.Sprintf("embedded models.json: %v", err))
	}
	return r
})

// formatOfRenderer is the built-in format that names the renderer (else the parser) and
// has a template, nil when none does.
func formatOfRenderer(rendererName, parserName string) *toolgrammar.Format {
	var byParser *toolgrammar.Format
	for _, f := range builtinFormats().Formats() {
		if f.Template == "" {
			continue
		}
		for _, r := range f.Match.Renderers {
			if r == rendererName {
				return f
			}
		}
		if byParser == nil && parserName != "" {
			for _, p := range f.Match.Parsers {
				if p == parserName {
					byParser = f
				}
			}
		}
	}
	return byParser
}

// jinjaRenderers caches the compiled renderer of each Jinja template text and BOS/EOS.
var jinjaRenderers sync.Map // [3]string -> *jinjaRenderer or error

func jinjaFor(s TemplateSource) (*jinjaRenderer, error) {
	key := [3]string{s.Text, s.BOS, s.EOS}
	if v, ok := jinjaRenderers.Load(key); ok {
		if err, isErr := v.(error); isErr {
			return nil, err
		}
		return v.(*jinjaRenderer), nil
	}
	tmpl, err := chattemplate.Compile(s.Text)
	if err != nil {
		jinjaRenderers.Store(key, err)
		return nil, err
	}
	r := &jinjaRenderer{tmpl: tmpl, bos: s.BOS, eos: s.EOS}
	jinjaRenderers.Store(key, r)
	return r, nil
}

// warned holds the templates that failed once and were warned about.
var warned sync.Map // [2]string -> struct{}

// warnFallback logs, once per template, that a source failed and the next renders.
func warnFallback(s, next TemplateSource, err error) {
	key := [2]string{s.String(), s.Text}
	if _, dup := warned.LoadOrStore(key, struct{}{}); dup {
		return
	}
	slog.Warn("chat template: rendering with the next source", "template", s.String(), "next", next.String(), "error", err)
}

// withGGUFChat is show with the GGUF file's chat template and BOS/EOS texts in its
// model_info; show itself is not changed.
func withGGUFChat(show *api.ShowResponse, c *ggufChat) *api.ShowResponse {
	if c == nil || (c.Template == "" && c.BOS == "" && c.EOS == "") {
		return show
	}
	changed := *show
	changed.ModelInfo = maps.Clone(show.ModelInfo)
	if changed.ModelInfo == nil {
		changed.ModelInfo = map[string]any{}
	}
	if c.Template != "" {
		changed.ModelInfo[chatTemplateKey] = c.Template
	}
	changed.ModelInfo[bosTextKey], changed.ModelInfo[eosTextKey] = c.BOS, c.EOS
	return &changed
}

// renderSources renders with the first source that renders, each failing one (all but
// the last) warned about once; the last one's error is the render's.
func renderSources(sources []TemplateSource, msgs []api.Message, tools []api.Tool, think *api.ThinkValue) (string, error) {
	var err error
	for i, s := range sources {
		var prompt string
		prompt, err = renderSource(s, msgs, tools, think)
		if err == nil {
			return prompt, nil
		}
		if i+1 < len(sources) {
			warnFallback(s, sources[i+1], err)
		}
	}
	return "", err
}

func renderSource(s TemplateSource, msgs []api.Message, tools []api.Tool, think *api.ThinkValue) (string, error) {
	switch s.Kind {
	case SourceGGUF, SourceFormat:
		r, err := jinjaFor(s)
		if err != nil {
			return "", err
		}
		return r.Render(msgs, tools, think)
	case SourceRenderer:
		return renderers.RenderWithRenderer(s.Name, msgs, tools, think)
	}
	// The Modelfile's template: images become [img-N] tags in the text, as the runtime
	// does for template models; a copy, so that a later source sees the messages as
	// they came.
	msgs = cloneForTags(msgs)
	tagImages(msgs)
	tmpl, err := parseTemplate(s.Text)
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

// cloneForTags is msgs copied where tagImages would change them (messages with images).
func cloneForTags(msgs []api.Message) []api.Message {
	for _, m := range msgs {
		if len(m.Images) > 0 {
			out := make([]api.Message, len(msgs))
			copy(out, msgs)
			return out
		}
	}
	return msgs
}

// ModelTemplate is the source that renders the model info describes (a model of this
// package's seam): the first of TemplateSources whose template compiles. false when
// info is not this package's.
func ModelTemplate(info *engine.ModelInfo) (TemplateSource, bool) {
	r, ok := info.Prompt.(renderer)
	if !ok {
		return TemplateSource{}, false
	}
	sources, err := TemplateSources(r.show)
	if err != nil {
		return TemplateSource{}, false
	}
	for _, s := range sources {
		if s.jinja() {
			if _, err := jinjaFor(s); err != nil {
				continue
			}
		}
		return s, true
	}
	return TemplateSource{}, false
}
