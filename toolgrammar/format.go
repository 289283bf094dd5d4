package toolgrammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// EnvelopeKind names the shape a family wraps its tool calls in.
type EnvelopeKind string

const (
	// JSONObject: Open, then one JSON object {"<name_key>": ..., "<args_key>": {...}},
	// then Close (hermes, Qwen, Granite 4, Llama 3.x with Bare).
	JSONObject EnvelopeKind = "json_object"
	// JSONArray: Open, then a JSON array of such objects, then Close
	// (Mistral v3/v7, Granite 3, Command-R).
	JSONArray EnvelopeKind = "json_array"
	// NameJSON: Open, the bare name, NameEnd, then a JSON object of arguments
	// (Mistral v11 [TOOL_CALLS]name[ARGS]{...}, DeepSeek).
	NameJSON EnvelopeKind = "name_json"
	// XMLParams: Open, the name, then key/value parameter tags whose values are
	// typed by the tool's schema (Qwen3-Coder, GLM-4.5+).
	XMLParams EnvelopeKind = "xml"
	// Harmony: gpt-oss channels; a call is a commentary message addressed
	// to=functions.NAME whose body is the JSON arguments. Without channels
	// (ReasoningRecipient set: Glimmer) a message's recipient alone says what
	// it is, and with KeyOpen set a call's body is XML parameters.
	Harmony EnvelopeKind = "harmony"
	// GemmaCall: Open, NamePrefix ("call:"), the name, then the arguments as an
	// object in Gemma's JSON-like syntax (bare keys, strings between
	// StringDelim), then Close (Gemma 4, FunctionGemma).
	GemmaCall EnvelopeKind = "gemma_call"
	// PythonCall: Open, then calls in Python's syntax, NAME(key="value", n=1),
	// separated by Separator, maybe in a list (CallList), then Close (Olmo 3's
	// <function_calls>, LFM2's <|tool_call_start|>[...]).
	PythonCall EnvelopeKind = "python_call"
)

// Format describes how one model family writes tool calls and reasoning.
// It is loaded from models.json; the zero value has no tools and no reasoning.
type Format struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	Notes  string `json:"notes,omitempty"`
	// Template names the family's chat template among hearth's built-in ones
	// (engine/chattemplate's templates/ directory): the prompt of a model whose own file
	// carries no template is rendered from it. Empty for a family without one.
	Template string `json:"template,omitempty"`
	// ReplacesRenderer: the runtime module's renderers of the names Match.Renderers
	// lists are replaced by Template, for hearth's prompts and the embedded runtime's own
	// chat alike: the module lacks those names (a later Ollama release added them) or
	// renders them otherwise than the family's chat template.
	ReplacesRenderer bool `json:"replaces_renderer,omitempty"`

	Match MatchRules `json:"match"`
	Tools Envelope   `json:"tools"`
	// Reasoning is nil when the family does not reason in text.
	Reasoning *ReasoningDelims `json:"reasoning,omitempty"`
	// Strip lists control markup that may appear in the output and carries no
	// content (e.g. <|START_RESPONSE|>); it is removed from text and reasoning.
	Strip []string `json:"strip,omitempty"`
	// Stop lists the family's stop strings; raw generation replaces the
	// model's own stops, so the engine must send these.
	Stop          []string         `json:"stop,omitempty"`
	ContextLength int              `json:"context_length,omitempty"`
	Thinking      ThinkingControls `json:"thinking,omitempty"`
	// SystemPrompt is set for emulated formats: text to add to the system
	// prompt so a model without native tool support knows the tools and the
	// call syntax. {{tools}} is replaced by one JSON tool definition per line.
	SystemPrompt string `json:"system_prompt,omitempty"`
	// Emulated is true when the family has no native tool format.
	Emulated bool `json:"emulated,omitempty"`
	// ChatParsers are the runtime's parser names (Ollama's PARSER) under which the
	// embedded runtime's own chat (/api/chat) reads this family's output with this
	// format, in place of the runtime's parser of that name or where it has none, so
	// that chat returns what the Responses API does.
	ChatParsers []ChatParser `json:"chat_parsers,omitempty"`

	compiled *compiled
}

// ChatParser is one runtime parser name read with a format (Format.ChatParsers).
type ChatParser struct {
	Name string `json:"name"`
	// Thinking: the parser reports thinking support, which the runtime turns into
	// the model's "thinking" capability (and a request's think, when unset, into
	// true). False for a name that stands for the family's models that do not reason
	// (gemma4-no-thinking, lfm2).
	Thinking bool `json:"thinking,omitempty"`
}

// MatchRules say how to recognise a model. Template fingerprints win over
// renderer/parser names, which win over families, which win over names.
type MatchRules struct {
	// Templates is a list of alternatives; each alternative is a list of
	// substrings that must all occur in the model's template.
	Templates [][]string `json:"templates,omitempty"`
	// Renderers and Parsers match Ollama's built-in renderer/parser names
	// (/api/show fields) for families that carry no Go template.
	Renderers []string `json:"renderers,omitempty"`
	Parsers   []string `json:"parsers,omitempty"`
	// Families match the model's architecture family exactly (lowercase).
	Families []string `json:"families,omitempty"`
	// Names are path.Match globs over the lowercase model name without
	// registry/namespace, e.g. "qwen3-coder*".
	Names []string `json:"names,omitempty"`
}

// Envelope gives the delimiters of a tool-call envelope. Which fields apply
// depends on Kind; unused fields stay empty.
type Envelope struct {
	Kind EnvelopeKind `json:"kind"`
	// Open lists the strings that start a call (or a group of calls for
	// JSONArray). The first is the one an engine writes when it prefills.
	Open []string `json:"open,omitempty"`
	// Close ends a call; empty when the JSON value's end ends the call.
	Close string `json:"close,omitempty"`
	// GroupOpen/GroupClose wrap a run of calls (DeepSeek). Optional.
	GroupOpen  string `json:"group_open,omitempty"`
	GroupClose string `json:"group_close,omitempty"`

	// JSON envelopes: keys of the call object. Set on an xml envelope without
	// NameOpen, the call inside the wrapper may also be such a JSON object.
	NameKey string `json:"name_key,omitempty"`
	ArgsKey string `json:"args_key,omitempty"`
	// Bare: a call may also come without the envelope. JSON kinds: a bare "{"
	// at the start of the output or right after another call, confirmed by its
	// first key (Llama 3.x). PythonCall: an answer (after any reasoning) that is
	// nothing but calls of known tools, NAME(...) or [NAME(...), ...], confirmed
	// at the end of the output (LFM2; Options.BareCallTools).
	Bare bool `json:"bare,omitempty"`
	// Separator may appear between consecutive bare calls (Llama writes ";");
	// for PythonCall it is what separates the calls of one envelope.
	Separator string `json:"separator,omitempty"`
	// CallList: a PythonCall envelope holds its calls in a list, [f(), g()].
	CallList bool `json:"call_list,omitempty"`

	// NameJSON: NamePrefix is skipped when present before the name;
	// NameEnd lists what may end the name; IDMarker introduces a call id that
	// is skipped up to ArgsMarker; Fence allows ```json ... ``` around the
	// arguments.
	NamePrefix string   `json:"name_prefix,omitempty"`
	NameEnd    []string `json:"name_end,omitempty"`
	IDMarker   string   `json:"id_marker,omitempty"`
	ArgsMarker string   `json:"args_marker,omitempty"`
	Fence      bool     `json:"fence,omitempty"`

	// XMLParams: NameOpen precedes the name ("<function=") and NameClose
	// ends it (">"); for GLM NameOpen is empty and the name runs to the first
	// KeyOpen, newline or Close. FunctionClose ends the parameter list.
	NameOpen      string `json:"name_open,omitempty"`
	NameClose     string `json:"name_close,omitempty"`
	KeyOpen       string `json:"key_open,omitempty"`
	KeyClose      string `json:"key_close,omitempty"`
	ValueOpen     string `json:"value_open,omitempty"`
	ValueClose    string `json:"value_close,omitempty"`
	FunctionClose string `json:"function_close,omitempty"`
	// TrimValueNewline strips one newline on each side of a value, which
	// Qwen3-Coder writes around every parameter value.
	TrimValueNewline bool `json:"trim_value_newline,omitempty"`

	// GemmaCall: StringDelim quotes a string value (<|"|> in Gemma 4,
	// <escape> in FunctionGemma); NamePrefix ("call:") precedes the name.
	StringDelim string `json:"string_delim,omitempty"`

	// Harmony tokens.
	Start            string   `json:"start,omitempty"`             // <|start|>
	Channel          string   `json:"channel,omitempty"`           // <|channel|>
	Message          string   `json:"message,omitempty"`           // <|message|>
	End              []string `json:"end,omitempty"`               // <|end|>, <|return|>, <|call|>
	Recipient        string   `json:"recipient,omitempty"`         // "to=functions."
	ReasoningChannel string   `json:"reasoning_channel,omitempty"` // analysis
	// ReasoningRecipient replaces channels (Glimmer): a message addressed
	// to it ("self") is reasoning, one addressed to the user or no one is
	// text. Its calls' bodies are XML parameters, described by the XMLParams
	// fields above with Open and Close around each call's block.
	ReasoningRecipient string `json:"reasoning_recipient,omitempty"`
}

// ReasoningDelims are the delimiters of reasoning text.
type ReasoningDelims struct {
	Open  string `json:"open"`
	Close string `json:"close"`
	// PromptOpens is true when the family's template itself ends a thinking
	// prompt with Open (after any last message but an assistant message it
	// continues), so the output starts inside reasoning. The engine should
	// still check the rendered prompt: see Format.PromptOpensReasoning.
	PromptOpens bool `json:"prompt_opens,omitempty"`
	// PromptOpensAfter lists the roles of a last message after which the
	// template ends a thinking prompt with Open besides PromptOpens: a family
	// that opens reasoning only then (Gemma 4 opens the thought channel after a
	// tool result), or one that opens a fresh turn after an assistant message
	// rather than continuing it (Poolside v1, Nemotron 3.5 Nano).
	PromptOpensAfter []string `json:"prompt_opens_after,omitempty"`
	// MayOmitOpen is true when the model is known to start reasoning without
	// writing Open; the engine should then start the parser in reasoning when
	// thinking was requested.
	MayOmitOpen bool `json:"may_omit_open,omitempty"`
}

// ThinkingControls say how reasoning.effort reaches the model.
type ThinkingControls struct {
	// TemplateVar is "think" when the template reads .Think (a bool), or
	// "think_level" when it reads .ThinkLevel (low/medium/high).
	TemplateVar string `json:"template_var,omitempty"`
	// Levels are the accepted effort levels when TemplateVar is think_level.
	Levels []string `json:"levels,omitempty"`
	// OnSwitch/OffSwitch are soft switches appended to the last user or
	// system message (Qwen3 /think, /no_think).
	OnSwitch  string `json:"on_switch,omitempty"`
	OffSwitch string `json:"off_switch,omitempty"`
	// SystemLine is a line for the system message with {effort} replaced
	// (harmony: "Reasoning: {effort}").
	SystemLine string `json:"system_line,omitempty"`
	// AlwaysOn is true when the model reasons whatever it is told.
	AlwaysOn bool `json:"always_on,omitempty"`
}

// ThinkingSetting is what an engine applies for one request.
type ThinkingSetting struct {
	// Think is the value for the template's .Think; nil leaves it unset.
	Think *bool
	// Level is the value for .ThinkLevel, empty when unused.
	Level string
	// UserSuffix is appended to the last user message (soft switch).
	UserSuffix string
	// SystemLine is added to the system message.
	SystemLine string
}

// ForEffort maps an Open Responses reasoning.effort ("none", "minimal",
// "low", "medium", "high", "xhigh", "max", or "" for the model's default) to
// settings. A family with levels gets the nearest it has: its lowest for
// minimal, and for none when it always reasons (else none turns reasoning off),
// its highest for xhigh and max.
func (t ThinkingControls) ForEffort(effort string) ThinkingSetting {
	var s ThinkingSetting
	if effort == "" {
		return s
	}
	on := effort != "none"
	lvl := t.level(effort)
	switch t.TemplateVar {
	case "think":
		s.Think = &on
	case "think_level":
		// A family that can stop reasoning is told not to (think false, no level),
		// or given its own level of that name where it has one (Glimmer's "none");
		// one that always reasons gets its lowest level instead.
		if on || t.AlwaysOn || contains(t.Levels, effort) {
			s.Level = lvl
		}
		s.Think = &on
	}
	if on && t.OnSwitch != "" {
		s.UserSuffix = t.OnSwitch
	}
	if !on && t.OffSwitch != "" {
		s.UserSuffix = t.OffSwitch
	}
	if t.SystemLine != "" {
		s.SystemLine = strings.ReplaceAll(t.SystemLine, "{effort}", lvl)
	}
	return s
}

// level is the family's level for effort: the effort itself where the family has
// it, else the nearest end of its levels (low, medium, high without a list).
func (t ThinkingControls) level(effort string) string {
	levels := t.Levels
	if len(levels) == 0 {
		levels = []string{"low", "medium", "high"}
	}
	switch {
	case contains(levels, effort):
		return effort
	case effort == "none" || effort == "minimal":
		return levels[0]
	case effort == "xhigh" || effort == "max":
		return levels[len(levels)-1]
	}
	return levels[len(levels)/2]
}

// Reasons reports whether the family writes reasoning at all: between delimiters, or
// as the messages of a reasoning channel (gpt-oss) or recipient (Glimmer).
func (f *Format) Reasons() bool {
	if f == nil {
		return false
	}
	return f.Reasoning != nil || (f.Tools.Kind == Harmony && (f.Tools.ReasoningChannel != "" || f.Tools.ReasoningRecipient != ""))
}

// PromptOpensReasoning reports whether a rendered prompt leaves the model
// inside reasoning: it ends with the reasoning opener (ignoring trailing
// whitespace). Pass the result as Options.StartInReasoning.
func (f *Format) PromptOpensReasoning(prompt string) bool {
	if f == nil || f.Reasoning == nil || f.Reasoning.Open == "" {
		return false
	}
	return strings.HasSuffix(strings.TrimRight(prompt, " \t\r\n"), f.Reasoning.Open)
}

// StartInReasoning is the value for Options.StartInReasoning: the rendered
// prompt ends inside reasoning, or thinking was requested from a family
// known to start reasoning without writing the opener. (A closer without an
// opener in message text is dropped either way, so markup never leaks.)
func (f *Format) StartInReasoning(prompt string, thinkingRequested bool) bool {
	if f.PromptOpensReasoning(prompt) {
		return true
	}
	return thinkingRequested && f.Reasoning != nil && f.Reasoning.MayOmitOpen
}

// StartInReasoningAfter is StartInReasoning for a caller that has not seen the
// rendered prompt, only the role of the conversation's last message: whether the
// template ends the prompt in reasoning is then what models.json says of it
// (PromptOpens, PromptOpensAfter). The embedded runtime's own chat needs it: it
// sets up its output parser before it renders the prompt. PromptOpens does not
// cover an assistant message last: a template continues it (prefill), unless
// PromptOpensAfter names the role.
func (f *Format) StartInReasoningAfter(lastRole string, thinkingRequested bool) bool {
	if f == nil || f.Reasoning == nil || !thinkingRequested {
		return false
	}
	r := f.Reasoning
	if (r.PromptOpens && lastRole != "assistant") || contains(r.PromptOpensAfter, lastRole) {
		return true
	}
	return r.MayOmitOpen
}

// EmulatedSystemPrompt renders SystemPrompt for tools, or "" when the format
// is native.
func (f *Format) EmulatedSystemPrompt(tools []Tool) string {
	if f.SystemPrompt == "" {
		return ""
	}
	var b strings.Builder
	for i, t := range tools {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(`{"type":"function","function":{"name":`)
		b.Write(quoteJSON(t.Name))
		if t.Description != "" {
			b.WriteString(`,"description":`)
			b.Write(quoteJSON(t.Description))
		}
		b.WriteString(`,"parameters":`)
		if len(bytes.TrimSpace(t.Parameters)) == 0 {
			b.WriteString(`{"type":"object","properties":{}}`)
		} else {
			var c bytes.Buffer
			if json.Compact(&c, t.Parameters) == nil {
				b.Write(c.Bytes())
			} else {
				b.WriteString(`{"type":"object","properties":{}}`)
			}
		}
		b.WriteString("}}")
	}
	return strings.ReplaceAll(f.SystemPrompt, "{{tools}}", b.String())
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// ModelInfo is what the engine knows about a model (from /api/show).
type ModelInfo struct {
	Name     string
	Family   string
	Families []string
	Template string
	Renderer string
	Parser   string
}

// Registry holds the known formats.
type Registry struct {
	formats []*Format
	def     string
}

type registryFile struct {
	Default string    `json:"default"`
	Formats []*Format `json:"formats"`
}

// LoadFormats parses a models.json document.
func LoadFormats(data []byte) (*Registry, error) {
	r := &Registry{}
	if err := r.Merge(data); err != nil {
		return nil, err
	}
	return r, nil
}

// Merge adds the formats of another models.json document (a user file):
// an entry with a known id replaces it, a new id is added and, on equal
// match strength, wins over the built-in entries.
func (r *Registry) Merge(data []byte) error {
	var f registryFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return fmt.Errorf("toolgrammar: models.json: %w", err)
	}
	for i, fm := range f.Formats {
		if fm == nil || fm.ID == "" {
			return fmt.Errorf("toolgrammar: models.json: format %d has no id", i)
		}
		if err := fm.compile(); err != nil {
			return fmt.Errorf("toolgrammar: models.json: format %q: %w", fm.ID, err)
		}
		replaced := false
		for j, old := range r.formats {
			if old.ID == fm.ID {
				r.formats = append(r.formats[:j], r.formats[j+1:]...)
				replaced = true
				break
			}
		}
		_ = replaced
		r.formats = append(r.formats, fm)
	}
	if f.Default != "" {
		r.def = f.Default
	}
	if r.def != "" && r.Lookup(r.def) == nil {
		return fmt.Errorf("toolgrammar: models.json: default format %q not defined", r.def)
	}
	return nil
}

// Formats lists the formats in registry order.
func (r *Registry) Formats() []*Format { return r.formats }

// Lookup returns the format with the given id, or nil.
func (r *Registry) Lookup(id string) *Format {
	for _, f := range r.formats {
		if f.ID == id {
			return f
		}
	}
	return nil
}

// Detection tells which format was chosen for a model and why.
type Detection struct {
	Format *Format
	// By is "template", "renderer", "family", "name", "default" or
	// ByUnknownRenderer.
	By string
	// Unknown names the runtime's renderer or parser that no format matches,
	// as `renderer "gemma4"`, when By is ByUnknownRenderer.
	Unknown string
}

// ByUnknownRenderer is Detection.By for a model that the runtime renders with
// a built-in renderer (or reads with a built-in parser) no format names, and
// whose template matches no fingerprint either. Its markup is unknown, so the
// model gets the default format for plain text only: a caller must refuse it
// tools, because neither guessing from its family or name (Qwen 3.5 is named
// like Qwen 3 but calls in XML) nor teaching it the emulated syntax (its
// renderer shows the tools in its own) would read its calls correctly.
const ByUnknownRenderer = "unknown-renderer"

// Detect picks the format of a model: template fingerprint first (what the
// template renders around .ToolCalls and .Thinking), then Ollama's renderer
// or parser name, then family, then name. Within a level the most specific
// match wins (longest fingerprint or pattern, a renderer name over a parser
// name), then the later entry, so a
// user file can override. With no match, or when only family or name match
// and the template renders no .Tools, it returns the registry's default
// (the emulated format), or nil when there is none. A model with a renderer
// or parser name that neither a renderer/parser entry nor a template
// fingerprint matches gets the default too, as ByUnknownRenderer (see there).
func (r *Registry) Detect(m ModelInfo) *Format { return r.Explain(m).Format }

// Explain is Detect with the reason.
func (r *Registry) Explain(m ModelInfo) Detection {
	name := strings.ToLower(m.Name)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	families := []string{strings.ToLower(m.Family)}
	for _, f := range m.Families {
		families = append(families, strings.ToLower(f))
	}
	best, bestTier, bestScore := (*Format)(nil), 0, -1
	bestBy := ""
	for _, f := range r.formats {
		tier, score, by := 0, 0, ""
		if m.Template != "" {
			for _, alt := range f.Match.Templates {
				if s, ok := fingerprint(m.Template, alt); ok && (tier < 4 || s > score) {
					tier, score, by = 4, s, "template"
				}
			}
		}
		if tier < 3 {
			// The renderer says more than the parser: several renderers share one
			// parser (Qwen 3.8's models name qwen3.5's), and the renderer is what
			// writes the prompt the model answers.
			byRenderer := m.Renderer != "" && contains(f.Match.Renderers, m.Renderer)
			if byRenderer || (m.Parser != "" && contains(f.Match.Parsers, m.Parser)) {
				tier, score, by = 3, 0, "renderer"
				if byRenderer {
					score = 1
				}
			}
		}
		if tier < 2 {
			for _, fam := range families {
				if fam != "" && contains(f.Match.Families, fam) {
					tier, score, by = 2, 0, "family"
				}
			}
		}
		if tier < 2 {
			for _, pat := range f.Match.Names {
				if ok, _ := path.Match(pat, name); ok && (tier < 1 || len(pat) > score) {
					tier, score, by = 1, len(pat), "name"
				}
			}
		}
		if tier == 0 {
			continue
		}
		if tier > bestTier || (tier == bestTier && score >= bestScore) {
			best, bestTier, bestScore, bestBy = f, tier, score, by
		}
	}
	if bestTier < 3 && (m.Renderer != "" || m.Parser != "") {
		var unknown []string
		if m.Renderer != "" {
			unknown = append(unknown, fmt.Sprintf("renderer %q", m.Renderer))
		}
		if m.Parser != "" {
			unknown = append(unknown, fmt.Sprintf("parser %q", m.Parser))
		}
		return Detection{Format: r.Lookup(r.def), By: ByUnknownRenderer, Unknown: strings.Join(unknown, " and ")}
	}
	if best == nil && r.def != "" {
		return Detection{Format: r.Lookup(r.def), By: "default"}
	}
	if bestTier < 3 && m.Template != "" && !strings.Contains(m.Template, ".Tools") && r.def != "" {
		// Family and name say what the model is, but its template never
		// renders tools, so its native call syntax was never prompted:
		// teach it the emulated one.
		return Detection{Format: r.Lookup(r.def), By: "default"}
	}
	return Detection{Format: best, By: bestBy}
}

func fingerprint(tmpl string, alt []string) (int, bool) {
	if len(alt) == 0 {
		return 0, false
	}
	n := 0
	for _, s := range alt {
		if !strings.Contains(tmpl, s) {
			return 0, false
		}
		n += len(s)
	}
	return n, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
