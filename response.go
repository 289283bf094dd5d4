package hearth

import (
	"encoding/json"
	"time"
)

// Response is the response object (ResponseResource): what a non-streaming
// request returns, what the lifecycle events carry, and what storage keeps.
// Every field the schema requires is always marshalled; pointer fields are
// the nullable ones and marshal as null when nil.
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"`
	Status             string             `json:"status"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Model              string             `json:"model"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Instructions       *string            `json:"instructions"`
	Output             []Item             `json:"output"`
	Error              *ResponseError     `json:"error"`
	Tools              []Tool             `json:"tools"`
	ToolChoice         ToolChoice         `json:"tool_choice"`
	Truncation         string             `json:"truncation"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	Text               TextConfig         `json:"text"`
	TopP               float64            `json:"top_p"`
	PresencePenalty    float64            `json:"presence_penalty"`
	FrequencyPenalty   float64            `json:"frequency_penalty"`
	TopLogprobs        int                `json:"top_logprobs"`
	Temperature        float64            `json:"temperature"`
	Reasoning          *Reasoning         `json:"reasoning"`
	Usage              *Usage             `json:"usage"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	MaxToolCalls       *int               `json:"max_tool_calls"`
	Store              bool               `json:"store"`
	Background         bool               `json:"background"`
	ServiceTier        string             `json:"service_tier"`
	Metadata           map[string]string  `json:"metadata"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
	// Conversation is the conversation the response was appended to (OpenAI's field;
	// not in the Open Responses schema, whose objects allow more properties).
	Conversation *ConversationRef `json:"conversation,omitempty"`
	// StopSequence is the request's own stop string that ended the output (a front
	// door's stop or stop_sequences), "" when none did. The Responses API has no field
	// for it: the doors that report it read it here.
	StopSequence string `json:"-"`
}

// IncompleteDetails says why a response stopped early.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// Reasons for an incomplete response.
const (
	IncompleteMaxOutputTokens = "max_output_tokens"
	IncompleteContentFilter   = "content_filter"
)

// ResponseError is the error of a failed response (the schema's Error: code
// and message, both required).
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Usage counts tokens. The details objects are required by the schema even
// when zero.
type Usage struct {
	InputTokens         int                 `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int                 `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int                 `json:"total_tokens"`
}

// InputTokensDetails breaks down input tokens. CachedTokens are prompt
// tokens the runtime did not re-evaluate (its KV cache held them).
type InputTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// OutputTokensDetails breaks down output tokens.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// MarshalJSON writes nil slices and maps as [] and {} so that a Response
// built by hand is as valid as one from NewResponse.
func (r Response) MarshalJSON() ([]byte, error) {
	type plain Response // no methods: avoids recursion
	p := plain(r)
	if p.Object == "" {
		p.Object = "response"
	}
	if p.Output == nil {
		p.Output = []Item{}
	}
	if p.Tools == nil {
		p.Tools = []Tool{}
	}
	if p.Metadata == nil {
		p.Metadata = map[string]string{}
	}
	return json.Marshal(p)
}

// NewResponse starts the response to req: status in_progress, no output,
// and every setting echoed with the defaults OpenAI reports when the request
// left it out (temperature 1, top_p 1, tool_choice auto, parallel tool
// calls on, truncation disabled, text format text, store on, ...).
//
// Two echoes differ from the request because the schema cannot hold them:
//   - tools lists only function tools. A namespace tool's functions are
//     listed flat, each with a "namespace" field; custom and hosted tools
//     are left out (the schema's Tool is function-only).
//   - a json_schema text format is echoed with "schema": null, the only
//     value the schema's JsonSchemaResponseFormat allows. The schema itself
//     stays in the stored request, which is what the engine uses.
//
// Reasoning effort "minimal" (OpenAI's, not in the schema's enum) is echoed
// as "low", which is how hearth treats it, and "max" (OpenAI's of 2026) as
// "xhigh", the schema's highest, which hearth treats alike.
func NewResponse(id string, req *CreateResponseRequest, createdAt time.Time) *Response {
	if req == nil {
		req = &CreateResponseRequest{}
	}
	r := &Response{
		ID:                id,
		Object:            "response",
		CreatedAt:         createdAt.Unix(),
		Status:            StatusInProgress,
		Model:             req.Model,
		Output:            []Item{},
		Tools:             echoTools(req.Tools),
		ToolChoice:        req.ToolChoice,
		Truncation:        req.Truncation,
		ParallelToolCalls: req.ParallelToolCallsEnabled(),
		Text:              req.Text,
		TopP:              valueOr(req.TopP, 1),
		PresencePenalty:   valueOr(req.PresencePenalty, 0),
		FrequencyPenalty:  valueOr(req.FrequencyPenalty, 0),
		TopLogprobs:       valueOr(req.TopLogprobs, 0),
		Temperature:       valueOr(req.Temperature, 1),
		Reasoning:         &Reasoning{Effort: req.Reasoning.Effort, Summary: req.Reasoning.Summary},
		MaxOutputTokens:   req.MaxOutputTokens,
		MaxToolCalls:      req.MaxToolCalls,
		Store:             req.StoreEnabled(),
		Background:        req.Background,
		// One local tier: whatever was asked for, this is what ran.
		ServiceTier:        "default",
		Metadata:           req.Metadata,
		PreviousResponseID: nullable(req.PreviousResponseID),
		Instructions:       nullable(req.Instructions),
		SafetyIdentifier:   nullable(req.SafetyIdentifier),
		PromptCacheKey:     nullable(req.PromptCacheKey),
		Conversation:       req.Conversation,
	}
	if r.ToolChoice.Type == "" && r.ToolChoice.Mode == "" {
		r.ToolChoice.Mode = ToolChoiceAuto
	}
	if r.Truncation == "" {
		r.Truncation = TruncationDisabled
	}
	if r.Text.Format.Type == "" {
		r.Text.Format.Type = FormatText
	}
	r.Text.Format.Schema = nil
	if r.Text.Verbosity == "" {
		r.Text.Verbosity = "medium"
	}
	switch r.Reasoning.Effort {
	case ReasoningEffortMinimal:
		r.Reasoning.Effort = ReasoningEffortLow
	case ReasoningEffortMax:
		r.Reasoning.Effort = ReasoningEffortXHigh
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	return r
}

func echoTools(tools []Tool) []Tool {
	out := []Tool{}
	for _, t := range tools {
		switch t.Type {
		case ToolFunction:
			out = append(out, t)
		case ToolNamespace:
			for _, c := range t.Tools {
				c.Namespace = t.Name
				out = append(out, c)
			}
		}
	}
	return out
}

func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// Clone returns a copy sharing no mutable state with r (Output items and
// the pointer fields a builder changes), for snapshots in events.
func (r *Response) Clone() *Response {
	c := *r
	c.Output = make([]Item, len(r.Output))
	for i, it := range r.Output {
		c.Output[i] = it.Clone()
	}
	if r.Usage != nil {
		u := *r.Usage
		c.Usage = &u
	}
	if r.Error != nil {
		e := *r.Error
		c.Error = &e
	}
	if r.IncompleteDetails != nil {
		d := *r.IncompleteDetails
		c.IncompleteDetails = &d
	}
	if r.CompletedAt != nil {
		t := *r.CompletedAt
		c.CompletedAt = &t
	}
	return &c
}
