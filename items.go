package hearth

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Item types. Items are bidirectional: the output items of one response are
// fed back as input items of the next, so one Item type serves both.
const (
	ItemMessage              = "message"
	ItemFunctionCall         = "function_call"
	ItemFunctionCallOutput   = "function_call_output"
	ItemReasoning            = "reasoning"
	ItemReference            = "item_reference"
	ItemCustomToolCall       = "custom_tool_call"
	ItemCustomToolCallOutput = "custom_tool_call_output"
	ItemCompaction           = "compaction"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleDeveloper = "developer"
)

// Statuses of responses and items. Items use in_progress, completed and
// incomplete; responses add queued, failed and cancelled.
const (
	StatusQueued     = "queued"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusIncomplete = "incomplete"
	StatusFailed     = "failed"
	StatusCancelled  = "cancelled"
)

// Content part types.
const (
	PartInputText     = "input_text"
	PartInputImage    = "input_image"
	PartInputFile     = "input_file"
	PartInputVideo    = "input_video"
	PartOutputText    = "output_text"
	PartRefusal       = "refusal"
	PartText          = "text"
	PartSummaryText   = "summary_text"
	PartReasoningText = "reasoning_text"
)

// Item is one input or output item. Type says which fields mean something:
//
//	message                  ID, Status, Role, Content, Phase
//	reasoning                ID, Status, Summary, Content (reasoning_text), EncryptedContent
//	function_call            ID, Status, CallID, Name, Namespace, Arguments
//	function_call_output     ID, Status, CallID, Output
//	custom_tool_call         ID, Status, CallID, Name, Input
//	custom_tool_call_output  ID, Status, CallID, Output
//	item_reference           ID
//	compaction               ID, EncryptedContent
//	a hosted kind's types     ID, Status, Hosted (the kind's own fields), and those of
//	                         the fields above the kind's package documents
//
// One struct rather than an interface per type because the engine and
// storage mostly switch on Type and copy fields across, and because a stored
// output item has to come back as an input item unchanged. MarshalJSON writes
// exactly the fields the schema has for Type; UnmarshalJSON accepts both the
// input (ItemParam) and output (ItemField) shapes.
type Item struct {
	Type   string
	ID     string
	Status string

	Role    string
	Content []ContentPart
	// Phase labels an assistant message as PhaseCommentary or PhaseFinalAnswer;
	// clients that set it expect it back, and hearth's Builder sets it on the
	// messages the model writes.
	Phase string

	Summary          []ContentPart
	EncryptedContent string

	CallID string
	Name   string
	// Namespace is the namespace tool a function call belongs to (Codex
	// groups tools in namespaces and sends it back with the call).
	Namespace string
	Arguments string
	Input     string

	Output ToolOutput

	// Hosted is the own fields of an item of a hosted kind's type (RegisterKind),
	// a value of the kind's package; nil for every other item.
	Hosted HostedData
}

// ToolOutput is the output of a function or custom tool call: either a string
// (usually JSON) or content parts. Parts != nil selects the array form.
type ToolOutput struct {
	Text  string
	Parts []ContentPart
}

// MarshalJSON writes the string or the parts.
func (o ToolOutput) MarshalJSON() ([]byte, error) {
	if o.Parts != nil {
		return json.Marshal(o.Parts)
	}
	return json.Marshal(o.Text)
}

// UnmarshalJSON reads a string or an array of content parts.
func (o *ToolOutput) UnmarshalJSON(data []byte) error {
	out, err := decodeToolOutput(data, "output")
	if err != nil {
		return err
	}
	*o = out
	return nil
}

// The phases of an assistant message (OpenAI's): commentary on the way to a tool
// call, or the final answer of the response.
const (
	PhaseCommentary  = "commentary"
	PhaseFinalAnswer = "final_answer"
)

// ContentPart is one part of a message's or reasoning item's content. Type
// says which fields mean something:
//
//	input_text, output_text, text, summary_text, reasoning_text   Text
//	output_text                                                   Annotations, Logprobs
//	refusal                                                       Refusal
//	input_image                                                   ImageURL or FileID, Detail
//	input_file                                                    FileID, FileURL, FileData, Filename
//	input_video                                                   VideoURL
type ContentPart struct {
	Type        string
	Text        string
	Annotations []Annotation
	Logprobs    []LogProb
	Refusal     string
	ImageURL    string
	FileID      string
	Detail      string
	Filename    string
	FileData    string
	FileURL     string
	VideoURL    string
}

// Annotation is a citation on output text: a url_citation (URL, Title, StartIndex,
// EndIndex: the schema's one annotation, made for web search results) or OpenAI's
// file_citation (FileID, Filename, Index: made for file search results). hearth keeps
// those a client sends back.
type Annotation struct {
	Type       string `json:"type"`
	URL        string `json:"url"`
	Title      string `json:"title"`
	StartIndex int    `json:"start_index"`
	EndIndex   int    `json:"end_index"`
	FileID     string `json:"file_id"`
	Filename   string `json:"filename"`
	Index      int    `json:"index"`
}

type urlCitationJSON struct {
	Type       string `json:"type"`
	URL        string `json:"url"`
	Title      string `json:"title"`
	StartIndex int    `json:"start_index"`
	EndIndex   int    `json:"end_index"`
}

type fileCitationJSON struct {
	Type     string `json:"type"`
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
	Index    int    `json:"index"`
}

// MarshalJSON writes the fields of the annotation's type.
func (a Annotation) MarshalJSON() ([]byte, error) {
	if a.Type == "file_citation" {
		return json.Marshal(fileCitationJSON{a.Type, a.FileID, a.Filename, a.Index})
	}
	return json.Marshal(urlCitationJSON{a.Type, a.URL, a.Title, a.StartIndex, a.EndIndex})
}

// LogProb is the log probability of one sampled token.
type LogProb struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []TopLogProb `json:"top_logprobs"`
}

// TopLogProb is one alternative token at a position.
type TopLogProb struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// Text returns the concatenated text of an item's content parts of the
// given types (all text-bearing types when none are given). The engine uses
// it to render messages and reasoning into a prompt.
func (it *Item) Text(types ...string) string {
	var s string
	for _, p := range it.Content {
		if len(types) == 0 || slices.Contains(types, p.Type) {
			switch p.Type {
			case PartInputText, PartOutputText, PartText, PartSummaryText, PartReasoningText:
				s += p.Text
			case PartRefusal:
				s += p.Refusal
			}
		}
	}
	return s
}

// Clone returns a copy that shares no slices with it, so a snapshot sent in
// an event cannot change when the builder keeps appending to the original.
func (it Item) Clone() Item {
	it.Content = cloneParts(it.Content)
	it.Summary = cloneParts(it.Summary)
	it.Output.Parts = cloneParts(it.Output.Parts)
	if it.Hosted != nil {
		it.Hosted = it.Hosted.CloneHosted()
	}
	return it
}

func cloneParts(ps []ContentPart) []ContentPart {
	if ps == nil {
		return nil
	}
	out := make([]ContentPart, len(ps))
	for i, p := range ps {
		if p.Annotations != nil {
			p.Annotations = append([]Annotation{}, p.Annotations...)
		}
		if p.Logprobs != nil {
			p.Logprobs = append([]LogProb{}, p.Logprobs...)
		}
		out[i] = p
	}
	return out
}

// The wire shapes below list fields in the schema's order; omitempty only
// where the schema makes a field optional, so required fields are always
// present even when empty.

type messageJSON struct {
	Type    string        `json:"type"`
	ID      string        `json:"id,omitempty"`
	Status  string        `json:"status,omitempty"`
	Role    string        `json:"role"`
	Content []ContentPart `json:"content"`
	Phase   string        `json:"phase,omitempty"`
}

type functionCallJSON struct {
	Type      string `json:"type"`
	ID        string `json:"id,omitempty"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
	Arguments string `json:"arguments"`
	Status    string `json:"status,omitempty"`
}

type toolOutputJSON struct {
	Type   string     `json:"type"`
	ID     string     `json:"id,omitempty"`
	CallID string     `json:"call_id"`
	Output ToolOutput `json:"output"`
	Status string     `json:"status,omitempty"`
}

type reasoningJSON struct {
	Type    string        `json:"type"`
	ID      string        `json:"id,omitempty"`
	Summary []ContentPart `json:"summary"`
	// content is optional: nil leaves it out, an empty slice (what the
	// builder starts with) writes [].
	Content          []ContentPart `json:"content,omitzero"`
	EncryptedContent string        `json:"encrypted_content,omitempty"`
	Status           string        `json:"status,omitempty"`
}

type customToolCallJSON struct {
	Type   string `json:"type"`
	ID     string `json:"id,omitempty"`
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Input  string `json:"input"`
	Status string `json:"status,omitempty"`
}

type idOnlyJSON struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

type compactionJSON struct {
	Type             string `json:"type"`
	ID               string `json:"id,omitempty"`
	EncryptedContent string `json:"encrypted_content"`
}

// MarshalJSON writes the item in the schema's shape for its Type.
func (it Item) MarshalJSON() ([]byte, error) {
	switch it.Type {
	case ItemMessage:
		return json.Marshal(messageJSON{it.Type, it.ID, it.Status, it.Role, nonNilParts(it.Content), it.Phase})
	case ItemFunctionCall:
		return json.Marshal(functionCallJSON{it.Type, it.ID, it.CallID, it.Name, it.Namespace, it.Arguments, it.Status})
	case ItemFunctionCallOutput, ItemCustomToolCallOutput:
		return json.Marshal(toolOutputJSON{it.Type, it.ID, it.CallID, it.Output, it.Status})
	case ItemReasoning:
		return json.Marshal(reasoningJSON{it.Type, it.ID, nonNilParts(it.Summary), it.Content, it.EncryptedContent, it.Status})
	case ItemCustomToolCall:
		return json.Marshal(customToolCallJSON{it.Type, it.ID, it.CallID, it.Name, it.Input, it.Status})
	case ItemReference:
		return json.Marshal(idOnlyJSON{it.Type, it.ID})
	case ItemCompaction:
		return json.Marshal(compactionJSON{it.Type, it.ID, it.EncryptedContent})
	}
	if data, ok, err := marshalHostedItem(it); ok {
		return data, err
	}
	return nil, fmt.Errorf("hearth: cannot marshal item of type %q", it.Type)
}

// UnmarshalJSON accepts any input or output item shape, with the same rules
// (and the same *Error values) as request decoding.
func (it *Item) UnmarshalJSON(data []byte) error {
	v, err := decodeItem(data, "")
	if err != nil {
		return err
	}
	*it = v
	return nil
}

func nonNilParts(ps []ContentPart) []ContentPart {
	if ps == nil {
		return []ContentPart{}
	}
	return ps
}

type textPartJSON struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type outputTextJSON struct {
	Type        string       `json:"type"`
	Text        string       `json:"text"`
	Annotations []Annotation `json:"annotations"`
	Logprobs    []LogProb    `json:"logprobs"`
}

type refusalJSON struct {
	Type    string `json:"type"`
	Refusal string `json:"refusal"`
}

// image_url and detail are required (image_url nullable) in the output-side
// InputImageContent, optional on input; always writing both fits both.
type inputImageJSON struct {
	Type     string  `json:"type"`
	ImageURL *string `json:"image_url"`
	FileID   string  `json:"file_id,omitempty"`
	Detail   string  `json:"detail"`
}

type inputFileJSON struct {
	Type     string `json:"type"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data,omitempty"`
	FileURL  string `json:"file_url,omitempty"`
}

type inputVideoJSON struct {
	Type     string `json:"type"`
	VideoURL string `json:"video_url"`
}

// MarshalJSON writes the part in the schema's shape for its Type. Output text
// always carries annotations and logprobs arrays, as OpenAI sends them.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	switch p.Type {
	case PartInputText, PartText, PartSummaryText, PartReasoningText:
		return json.Marshal(textPartJSON{p.Type, p.Text})
	case PartOutputText:
		a, l := p.Annotations, p.Logprobs
		if a == nil {
			a = []Annotation{}
		}
		if l == nil {
			l = []LogProb{}
		}
		return json.Marshal(outputTextJSON{p.Type, p.Text, a, l})
	case PartRefusal:
		return json.Marshal(refusalJSON{p.Type, p.Refusal})
	case PartInputImage:
		d := p.Detail
		if d == "" {
			d = "auto"
		}
		return json.Marshal(inputImageJSON{p.Type, nullable(p.ImageURL), p.FileID, d})
	case PartInputFile:
		return json.Marshal(inputFileJSON{p.Type, p.FileID, p.Filename, p.FileData, p.FileURL})
	case PartInputVideo:
		return json.Marshal(inputVideoJSON{p.Type, p.VideoURL})
	}
	return nil, fmt.Errorf("hearth: cannot marshal content part of type %q", p.Type)
}

// UnmarshalJSON accepts any content part type.
func (p *ContentPart) UnmarshalJSON(data []byte) error {
	v, err := decodePart(data, "", nil)
	if err != nil {
		return err
	}
	*p = v
	return nil
}
