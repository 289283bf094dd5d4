package hearth

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// CreateResponseRequest is the body of POST /v1/responses after decoding and
// validation (see DecodeCreateRequest). Optional settings the engine must
// tell apart from their zero value are pointers or zero-means-default
// structs; the With/Enabled methods apply the defaults.
//
// A string input is normalised to one user message, so Input is always
// items. The struct marshals back to a valid request body, which is what
// storage keeps.
type CreateResponseRequest struct {
	Model              string            `json:"model"`
	Input              []Item            `json:"input,omitempty"`
	Instructions       string            `json:"instructions,omitempty"`
	PreviousResponseID string            `json:"previous_response_id,omitempty"`
	Tools              []Tool            `json:"tools,omitempty"`
	ToolChoice         ToolChoice        `json:"tool_choice,omitzero"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls,omitempty"`
	MaxOutputTokens    *int              `json:"max_output_tokens,omitempty"`
	MaxToolCalls       *int              `json:"max_tool_calls,omitempty"`
	Temperature        *float64          `json:"temperature,omitempty"`
	TopP               *float64          `json:"top_p,omitempty"`
	PresencePenalty    *float64          `json:"presence_penalty,omitempty"`
	FrequencyPenalty   *float64          `json:"frequency_penalty,omitempty"`
	TopLogprobs        *int              `json:"top_logprobs,omitempty"`
	Text               TextConfig        `json:"text,omitzero"`
	Reasoning          Reasoning         `json:"reasoning,omitzero"`
	Truncation         string            `json:"truncation,omitempty"`
	Store              *bool             `json:"store,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	Stream             bool              `json:"stream,omitempty"`
	StreamOptions      *StreamOptions    `json:"stream_options,omitempty"`
	Background         bool              `json:"background,omitempty"`
	ServiceTier        string            `json:"service_tier,omitempty"`
	PromptCacheKey     string            `json:"prompt_cache_key,omitempty"`
	// PromptCacheRetention ("in_memory" or "24h") and PromptCacheOptions (its ttl)
	// say how long the prompt's cache should live: on hearth, how long the runtime
	// keeps the model loaded, with its KV cache, after the response (KeepAlive).
	PromptCacheRetention string              `json:"prompt_cache_retention,omitempty"`
	PromptCacheOptions   *PromptCacheOptions `json:"prompt_cache_options,omitempty"`
	SafetyIdentifier     string              `json:"safety_identifier,omitempty"`
	// ContextManagement asks for server-side compaction (contextmanagement.go).
	ContextManagement []ContextManagement `json:"context_management,omitempty"`
	// User is OpenAI's deprecated end-user id; not in the Open Responses
	// schema, accepted so that older SDK calls are not reported as ignored.
	User    string   `json:"user,omitempty"`
	Include []string `json:"include,omitempty"`

	// BudgetIsCap makes MaxOutputTokens a cap on the output that is not reserved in
	// the context window: a prompt that leaves less room than the budget still runs,
	// and its output ends at the window (incomplete, as the budget would end it).
	// Anthropic's max_tokens means that, and its clients send the largest budget they
	// accept whatever the model (Claude Code: 32000). Not part of the Responses API.
	BudgetIsCap bool `json:"-"`
	// TopK samples from the k likeliest tokens only (Anthropic's top_k); nil: the
	// model's default. Not part of the Responses API.
	TopK *int `json:"-"`
	// Stop and Seed are settings of other APIs' front doors (Chat Completions' stop
	// and seed) that the Responses API has no field for: strings that end the
	// generation where the model writes them (not written out), and the sampler's
	// seed. Not part of a Responses body, so not marshalled: a stored request
	// decodes as the Responses request it is.
	Stop []string `json:"-"`
	Seed *int     `json:"-"`
	// ReportStop asks which of Stop ended the output (Response.StopSequence), as
	// Anthropic's stop_sequence says. hearth then watches for the strings itself and
	// stops reading the runtime there; without it the runtime ends the generation at
	// them cleanly, which an external runtime does sooner (Chat Completions, whose
	// finish_reason is "stop" either way).
	ReportStop bool `json:"-"`

	// Conversation is the conversation the response continues and is appended to
	// (conversation.go); never set together with PreviousResponseID.
	Conversation *ConversationRef `json:"conversation,omitempty"`
}

// MarshalJSON writes a CreateResponseBody. Tools and the text format are
// written in the request's shape, which differs from the response's echo
// (a request omits a function's unknown strict and description; a response
// must write them as null).
func (r CreateResponseRequest) MarshalJSON() ([]byte, error) {
	type plain CreateResponseRequest // no methods: avoids recursion
	var tools []requestTool
	for _, t := range r.Tools {
		tools = append(tools, requestTool(t))
	}
	var text *requestText
	if !r.Text.isZero() {
		text = &requestText{requestFormat(r.Text.Format), r.Text.Verbosity}
	}
	// The outer fields shadow plain's fields of the same JSON name.
	return json.Marshal(struct {
		plain
		Tools []requestTool `json:"tools,omitempty"`
		Text  *requestText  `json:"text,omitempty"`
	}{plain(r), tools, text})
}

type requestTool Tool

func (t requestTool) MarshalJSON() ([]byte, error) {
	switch t.Type {
	case ToolFunction:
		return json.Marshal(struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters,omitempty"`
			Strict      *bool           `json:"strict,omitempty"`
			Defer       bool            `json:"defer_loading,omitempty"`
		}{t.Type, t.Name, t.Description, t.Parameters, t.Strict, t.DeferLoading})
	case ToolNamespace:
		var tools []requestTool
		for _, c := range t.Tools {
			tools = append(tools, requestTool(c))
		}
		if tools == nil {
			tools = []requestTool{}
		}
		return json.Marshal(struct {
			Type        string        `json:"type"`
			Name        string        `json:"name"`
			Description string        `json:"description,omitempty"`
			Tools       []requestTool `json:"tools"`
		}{t.Type, t.Name, t.Description, tools})
	}
	return Tool(t).MarshalJSON()
}

type requestText struct {
	Format    requestFormat `json:"format"`
	Verbosity string        `json:"verbosity,omitempty"`
}

type requestFormat TextFormat

func (f requestFormat) MarshalJSON() ([]byte, error) {
	if f.Type != FormatJSONSchema {
		return TextFormat(f).MarshalJSON()
	}
	return json.Marshal(struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Schema      json.RawMessage `json:"schema,omitempty"`
		Strict      *bool           `json:"strict,omitempty"`
	}{f.Type, f.Name, f.Description, f.Schema, f.Strict})
}

func (t TextConfig) isZero() bool {
	return t.Verbosity == "" && t.Format.Type == "" && t.Format.Name == "" && t.Format.Schema == nil
}

// Values of include (IncludeEnum).
const (
	IncludeReasoningEncryptedContent = "reasoning.encrypted_content"
	IncludeOutputTextLogprobs        = "message.output_text.logprobs"
)

// Values of truncation.
const (
	TruncationAuto     = "auto"
	TruncationDisabled = "disabled"
)

// StoreEnabled reports whether the response is to be stored (default true).
func (r *CreateResponseRequest) StoreEnabled() bool { return r.Store == nil || *r.Store }

// ParallelToolCallsEnabled reports whether the model may emit several calls
// in one response (default true).
func (r *CreateResponseRequest) ParallelToolCallsEnabled() bool {
	return r.ParallelToolCalls == nil || *r.ParallelToolCalls
}

// Includes reports whether include lists v (an Include constant).
func (r *CreateResponseRequest) Includes(v string) bool { return slices.Contains(r.Include, v) }

// StreamOptions are the options of a streamed response. hearth sends no
// obfuscation padding whatever IncludeObfuscation says: it exists to hide
// token lengths from network observers, and hearth's peers are local.
type StreamOptions struct {
	IncludeObfuscation *bool `json:"include_obfuscation,omitempty"`
}

// Tool types hearth acts on. Any other type is a hosted tool: a kind's
// (RegisterKind) when one declared it, else one hearth cannot run: kept,
// reported as ignored, and never shown to the model.
const (
	ToolFunction  = "function"
	ToolNamespace = "namespace"
	ToolCustom    = "custom"
)

// Tool is one entry of tools:
//
//	function   Name, Description, Parameters (a JSON Schema object), Strict
//	namespace  Name, Description, Tools (its function tools)
//	custom     Name, Description, Format
//	a kind's   Raw (the original JSON, kept for the echo), Spec (what the kind read of it)
//	other      Raw: the original JSON, kept so it can be echoed or logged
//
// Namespace is set only on function tools flattened out of a namespace tool
// for the response echo (the schema's Tool has no namespace type).
type Tool struct {
	Type        string
	Name        string
	Description string
	Parameters  json.RawMessage
	Strict      *bool
	Tools       []Tool
	Format      CustomToolFormat
	Namespace   string
	// DeferLoading is OpenAI's defer_loading: the tool stays out of the prompt until
	// a tool that loads deferred tools (ToolType.LoadsDeferred) loads it. Without
	// one in the request it is shown like any other, and the field reported as
	// ignored.
	DeferLoading bool
	// Spec is what a kind's tool asks for (ToolType.Decode), a value of the kind's
	// package; Raw holds the tool as sent.
	Spec any
	Raw  json.RawMessage
}

// Hosted reports whether t is a tool the client does not run: a hosted tool.
func (t *Tool) Hosted() bool {
	return t.Type != ToolFunction && t.Type != ToolNamespace && t.Type != ToolCustom
}

// Ignored reports whether t is a hosted tool hearth has no kind for (code_interpreter, ...):
// it is kept, reported as ignored, and never shown to the model. The tools of a kind
// whose registration says it always runs them (ToolType.Runs) are decoded in full,
// and run by the engine's hosted tool kinds. A kind's other tools are ignored here
// too: whether hearth runs them is its configuration (a search server; a database for
// vector stores), so the engine runs them where a kind is registered for them (the
// server then does not report them ignored).
func (t *Tool) Ignored() bool {
	if !t.Hosted() {
		return false
	}
	k := toolTypes[t.Type]
	return k == nil || !k.Runs
}

// CustomToolFormat is the input format of a custom tool: free text, or text
// constrained by a grammar (Syntax "lark" or "regex").
type CustomToolFormat struct {
	Type       string // "text" or "grammar"; empty means text
	Syntax     string
	Definition string
}

type functionToolJSON struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
	Namespace   string          `json:"namespace,omitempty"`
}

type namespaceToolJSON struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Tools       []Tool `json:"tools"`
}

type customToolJSON struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Format      any    `json:"format,omitempty"`
	Defer       bool   `json:"defer_loading,omitempty"`
}

// MarshalJSON writes a function tool the way the response's tools list
// requires it (description, parameters and strict always present, null when
// unknown); other types as they were received. CreateResponseRequest writes
// its tools in the request's shape instead.
func (t Tool) MarshalJSON() ([]byte, error) {
	switch t.Type {
	case ToolFunction:
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage("null")
		}
		return json.Marshal(functionToolJSON{t.Type, t.Name, nullable(t.Description), params, t.Strict, t.Namespace})
	case ToolNamespace:
		tools := t.Tools
		if tools == nil {
			tools = []Tool{}
		}
		return json.Marshal(namespaceToolJSON{t.Type, t.Name, t.Description, tools})
	case ToolCustom:
		var format any
		switch t.Format.Type {
		case "", "text":
			if t.Format.Type != "" {
				format = map[string]string{"type": "text"}
			}
		default:
			format = map[string]string{"type": t.Format.Type, "syntax": t.Format.Syntax, "definition": t.Format.Definition}
		}
		return json.Marshal(customToolJSON{t.Type, t.Name, t.Description, format, t.DeferLoading})
	}
	if len(t.Raw) > 0 {
		return t.Raw, nil
	}
	return json.Marshal(map[string]string{"type": t.Type})
}

// UnmarshalJSON reads any tool with the request decoder's rules.
func (t *Tool) UnmarshalJSON(data []byte) error {
	v, err := decodeTool(data, "", false)
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Values of tool_choice's plain form and of allowed_tools' mode.
const (
	ToolChoiceNone     = "none"
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
)

// ToolChoice is tool_choice in one of its forms:
//
//	"none" | "auto" | "required"                       Mode set, Type empty
//	{"type":"function","name":...}                     Type "function", Name
//	{"type":"custom","name":...}                       Type "custom", Name
//	{"type":"allowed_tools","mode":...,"tools":[...]}  Type "allowed_tools", Mode, Allowed
//	{"type": a kind's tool type, ...}                  Type, and what the kind reads (Name, Spec)
//
// The zero value means "not given", which behaves as "auto".
type ToolChoice struct {
	Mode    string
	Type    string
	Name    string
	Allowed []ToolRef
	// Spec is what a kind read of a choice that forces its tool
	// (ToolType.ChoiceDecode), a value of the kind's package.
	Spec any
}

// ToolRef names one tool in an allowed_tools list.
type ToolRef struct {
	Type string `json:"type"`
	// Name is empty for a kind's tool named by its type (ToolType.Allowed).
	Name string `json:"name,omitempty"`
}

// EffectiveMode is what the engine enforces: none, auto or required. A named
// function or custom tool is required (of that one tool).
func (c ToolChoice) EffectiveMode() string {
	switch {
	case c.Type == ToolFunction || c.Type == ToolCustom || forcedKind(c.Type) != nil:
		return ToolChoiceRequired
	case c.Mode == "":
		return ToolChoiceAuto
	}
	return c.Mode
}

// MarshalJSON writes the form the choice was given in; the zero value as "auto".
func (c ToolChoice) MarshalJSON() ([]byte, error) {
	switch c.Type {
	case "":
		if c.Mode == "" {
			return json.Marshal(ToolChoiceAuto)
		}
		return json.Marshal(c.Mode)
	case ToolFunction, ToolCustom:
		return json.Marshal(ToolRef{c.Type, c.Name})
	case "allowed_tools":
		mode, allowed := c.Mode, c.Allowed
		if mode == "" {
			mode = ToolChoiceAuto
		}
		if allowed == nil {
			allowed = []ToolRef{}
		}
		return json.Marshal(struct {
			Type  string    `json:"type"`
			Mode  string    `json:"mode"`
			Tools []ToolRef `json:"tools"`
		}{c.Type, mode, allowed})
	}
	if k := forcedKind(c.Type); k != nil {
		if k.ChoiceMarshal != nil {
			return k.ChoiceMarshal(c)
		}
		return json.Marshal(struct {
			Type string `json:"type"`
		}{c.Type})
	}
	return nil, fmt.Errorf("hearth: cannot marshal tool_choice of type %q", c.Type)
}

// UnmarshalJSON reads any tool_choice form (names are not checked against
// tools here; DecodeCreateRequest does that).
func (c *ToolChoice) UnmarshalJSON(data []byte) error {
	v, err := decodeToolChoice(data, "tool_choice")
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// TextConfig is the text setting: the output format and verbosity.
type TextConfig struct {
	Format    TextFormat `json:"format"`
	Verbosity string     `json:"verbosity,omitempty"`
}

// Text format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// TextFormat is text.format. The zero value is {"type":"text"}.
type TextFormat struct {
	Type        string
	Name        string
	Description string
	Schema      json.RawMessage
	Strict      *bool
}

// MarshalJSON writes the format. For json_schema, name, description, schema
// and strict are always present because the response's
// JsonSchemaResponseFormat requires them; a nil Schema is written as null,
// which NewResponse relies on (see there).
func (f TextFormat) MarshalJSON() ([]byte, error) {
	switch f.Type {
	case "", FormatText:
		return []byte(`{"type":"text"}`), nil
	case FormatJSONObject:
		return []byte(`{"type":"json_object"}`), nil
	case FormatJSONSchema:
		schema := f.Schema
		if len(schema) == 0 {
			schema = json.RawMessage("null")
		}
		strict := false
		if f.Strict != nil {
			strict = *f.Strict
		}
		return json.Marshal(struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      bool            `json:"strict"`
		}{f.Type, f.Name, nullable(f.Description), schema, strict})
	}
	return nil, fmt.Errorf("hearth: cannot marshal text format of type %q", f.Type)
}

// UnmarshalJSON reads a text format.
func (f *TextFormat) UnmarshalJSON(data []byte) error {
	v, err := decodeTextFormat(data, "text.format", false)
	if err != nil {
		return err
	}
	*f = v
	return nil
}

// PromptCacheOptions is OpenAI's prompt_cache_options: TTL, a duration such as
// "30m" or "1h" (at most MaxPromptCacheTTL), and Mode, which hearth does not use
// (its prompt cache is always the runtime's prefix cache).
type PromptCacheOptions struct {
	Mode string `json:"mode,omitempty"`
	TTL  string `json:"ttl,omitempty"`
}

// MaxPromptCacheTTL is the longest cache life a request may ask for, OpenAI's
// longest retention: a longer one would let a client pin a model in memory.
const MaxPromptCacheTTL = 24 * time.Hour

// KeepAlive is how long the request asks the runtime to keep the model and its
// cache after the response: prompt_cache_options.ttl, else 24h for
// prompt_cache_retention "24h"; false when it asks nothing (the runtime's default).
// The decoder checked the ttl.
func (r *CreateResponseRequest) KeepAlive() (time.Duration, bool) {
	if r.PromptCacheOptions != nil && r.PromptCacheOptions.TTL != "" {
		d, err := time.ParseDuration(r.PromptCacheOptions.TTL)
		return d, err == nil
	}
	if r.PromptCacheRetention == PromptCacheRetention24h {
		return 24 * time.Hour, true
	}
	return 0, false
}

// Values of prompt_cache_retention.
const (
	PromptCacheRetentionInMemory = "in_memory"
	PromptCacheRetention24h      = "24h"
)

// Values of reasoning.effort. ReasoningEffortMinimal is OpenAI's and is
// described, but not listed, in the schema's ReasoningEffortEnum;
// ReasoningEffortMax is OpenAI's of 2026, above xhigh.
const (
	ReasoningEffortNone    = "none"
	ReasoningEffortMinimal = "minimal"
	ReasoningEffortLow     = "low"
	ReasoningEffortMedium  = "medium"
	ReasoningEffortHigh    = "high"
	ReasoningEffortXHigh   = "xhigh"
	ReasoningEffortMax     = "max"
)

// Reasoning is the reasoning setting of a request and its echo in the
// response. Empty fields mean "not given" and are sent as null.
type Reasoning struct {
	Effort  string
	Summary string // "auto", "concise" or "detailed"
	// Context is OpenAI's reasoning.context: "current_turn" or "all_turns", which
	// turns' reasoning the model is shown. Accepted and reported as ignored: the
	// model's chat template decides which turns' reasoning it renders.
	Context string
}

// MarshalJSON writes both fields, null when empty (the response's Reasoning
// requires both keys).
func (r Reasoning) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	}{nullable(r.Effort), nullable(r.Summary)})
}

// UnmarshalJSON reads the reasoning object.
func (r *Reasoning) UnmarshalJSON(data []byte) error {
	v, err := decodeReasoning(data, "reasoning")
	if err != nil {
		return err
	}
	*r = v
	return nil
}
