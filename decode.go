package hearth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"hearth/internal/jsonscan"
)

// DecodeCreateRequest decodes and validates the body of POST /v1/responses.
//
// Every failure is a *Error (400, invalid_request_error) whose Param is the
// path of the offending field, e.g. input[2].content[0].image_url. Nothing
// the engine sees has skipped validation.
//
// ignored lists what was accepted but will have no effect, so the server can
// name it (x-hearth-ignored): top-level fields OpenAI takes and hearth does not
// model, such as Codex's client_metadata (toleratedRequestFields), and hosted tools
// hearth cannot run, written as "tools[6] (code_interpreter)". Any other unknown top-level
// field is a 400 unknown_parameter naming it, as OpenAI answers. Unknown fields inside
// known objects are dropped silently, as OpenAI does.
//
// Whether the request has anything to answer is RequireInput's to say.
func DecodeCreateRequest(body []byte) (req *CreateResponseRequest, ignored []string, err error) {
	// One scan checks the whole body and splitObject takes it apart (see
	// decode_split.go); json.Unmarshal is left the bodies that fail, for its message.
	fields, ok := map[string]json.RawMessage(nil), false
	if jsonscan.Valid(body) {
		fields, ok = splitObject(body)
	}
	var perr error
	if !ok {
		fields = nil
		perr = json.Unmarshal(body, &fields)
	}
	if perr != nil || fields == nil {
		msg := "We could not parse the JSON body of your request: expected a JSON object."
		if perr != nil {
			msg = "We could not parse the JSON body of your request: " + perr.Error() + "."
		}
		return nil, nil, InvalidRequest("", CodeInvalidJSON, msg)
	}
	var unknown []string
	for k := range fields {
		switch {
		case knownRequestFields[k]:
		case toleratedRequestFields[k]:
			ignored = append(ignored, k)
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		// A misspelt field ("inputs", "max_tokens") would otherwise run a request
		// other than the one meant, and OpenAI refuses it the same way.
		sort.Strings(unknown)
		name := boundedName(unknown[0])
		return nil, nil, InvalidRequest(name, CodeUnknownParameter, fmt.Sprintf("Unknown parameter: '%s'.", name))
	}
	sort.Strings(ignored)

	req, err = decodeRequestFields(object{"", fields})
	if err != nil {
		return nil, nil, err
	}
	for i, t := range req.Tools {
		if t.Ignored() {
			ignored = append(ignored, fmt.Sprintf("tools[%d] (%s)", i, t.Type))
		}
	}
	// Accepted and not honoured (docs/api-2026.md says why): named, never dropped
	// silently.
	if req.Reasoning.Context != "" {
		ignored = append(ignored, "reasoning.context")
	}
	// Deferred tools are kept out of the prompt only where a tool that loads them can
	// load them; without one they are shown like any other.
	searches, err := checkDeferred(req.Tools)
	if err != nil {
		return nil, nil, err
	}
	for i, t := range req.Tools {
		if searches {
			break
		}
		if t.DeferLoading {
			ignored = append(ignored, fmt.Sprintf("tools[%d].defer_loading", i))
		}
		for j, c := range t.Tools {
			if c.DeferLoading {
				ignored = append(ignored, fmt.Sprintf("tools[%d].tools[%d].defer_loading", i, j))
			}
		}
	}
	if req.PromptCacheOptions != nil && req.PromptCacheOptions.Mode != "" {
		ignored = append(ignored, "prompt_cache_options.mode")
	}
	if err := validateToolChoice(req); err != nil {
		return nil, nil, err
	}
	return req, ignored, nil
}

var knownRequestFields = map[string]bool{
	"model": true, "input": true, "instructions": true, "previous_response_id": true, "conversation": true,
	"tools": true, "tool_choice": true, "parallel_tool_calls": true,
	"max_output_tokens": true, "max_tool_calls": true,
	"temperature": true, "top_p": true, "presence_penalty": true, "frequency_penalty": true,
	"top_logprobs": true, "text": true, "reasoning": true, "truncation": true,
	"store": true, "metadata": true, "stream": true, "stream_options": true,
	"background": true, "service_tier": true, "prompt_cache_key": true,
	"safety_identifier": true, "user": true, "include": true,
	"prompt_cache_retention": true, "prompt_cache_options": true,
	"context_management": true,
}

// boundedName is a field name from a client as an error names it: at most 64 bytes of
// printable ASCII (others become '?'), "..." marking a cut, so that a 100 KB name does
// not come back as a 100 KB error.
func boundedName(n string) string {
	const max = 64
	b := make([]byte, 0, min(len(n), max)+3)
	for i := 0; i < len(n) && len(b) < max; i++ {
		if c := n[i]; c >= ' ' && c <= '~' {
			b = append(b, c)
		} else {
			b = append(b, '?')
		}
	}
	if len(n) > max {
		b = append(b, "..."...)
	}
	return string(b)
}

// RequireInput refuses a create request with nothing to answer: no input, and neither
// previous_response_id nor conversation to continue. The model would otherwise run
// on the instructions alone and an empty completed response be stored. ignored is
// what DecodeCreateRequest returned: a saved prompt (which hearth does not keep)
// supplies no input either, and the message says so.
func RequireInput(req *CreateResponseRequest, ignored []string) error {
	if len(req.Input) > 0 || req.PreviousResponseID != "" || req.Conversation != nil {
		return nil
	}
	msg := "Missing required parameter: 'input'. Send input, or continue with 'previous_response_id' or 'conversation'."
	if slices.Contains(ignored, "prompt") {
		msg += " hearth keeps no saved prompts, so 'prompt' supplies none."
	}
	return InvalidRequest("input", CodeMissingRequiredParameter, msg)
}

// toleratedRequestFields are top-level fields OpenAI's API takes that hearth does not
// model, sent by real clients: accepted, named in x-hearth-ignored, not obeyed. Any
// other field outside knownRequestFields is a 400 unknown_parameter. client_metadata:
// Codex CLI's ids of its thread; prompt: a reference to a prompt saved at OpenAI.
var toleratedRequestFields = map[string]bool{
	"client_metadata": true, "prompt": true,
}

// KnownRequestField says whether a create body's top-level field is one hearth
// decodes or tolerates (DecodeCreateRequest refuses the others).
func KnownRequestField(name string) bool {
	return knownRequestFields[name] || toleratedRequestFields[name]
}

// Enumerations from the schema (plus "minimal", see ReasoningEffortMinimal).
var (
	enumTruncation  = []string{TruncationAuto, TruncationDisabled}
	enumServiceTier = []string{"auto", "default", "flex", "priority"}
	// enumInclude and enumItemType add the registered kinds' values (RegisterKind).
	baseIncludes = []string{IncludeReasoningEncryptedContent, IncludeOutputTextLogprobs}
	enumInclude  = baseIncludes
	enumEffort   = []string{ReasoningEffortNone, ReasoningEffortMinimal, ReasoningEffortLow, ReasoningEffortMedium, ReasoningEffortHigh, ReasoningEffortXHigh, ReasoningEffortMax}
	enumSummary  = []string{"auto", "concise", "detailed"}
	// OpenAI's reasoning.context and prompt_cache_retention of 2026.
	enumReasoningContext = []string{"current_turn", "all_turns"}
	enumCacheRetention   = []string{PromptCacheRetentionInMemory, PromptCacheRetention24h}
	enumVerbosity        = []string{"low", "medium", "high"}
	enumToolChoice       = []string{ToolChoiceNone, ToolChoiceAuto, ToolChoiceRequired}
	enumRole             = []string{RoleUser, RoleAssistant, RoleSystem, RoleDeveloper}
	enumItemStatus       = []string{StatusInProgress, StatusCompleted, StatusIncomplete}
	enumPhase            = []string{PhaseCommentary, PhaseFinalAnswer}
	enumDetail           = []string{"low", "high", "auto"}
	enumFormat           = []string{FormatText, FormatJSONObject, FormatJSONSchema}
	enumGrammar          = []string{"lark", "regex"}
	baseItemTypes        = []string{ItemMessage, ItemFunctionCall, ItemFunctionCallOutput, ItemReasoning, ItemReference, ItemCustomToolCall, ItemCustomToolCallOutput, ItemCompaction}
	enumItemType         = baseItemTypes
	textParts            = []string{PartInputText, PartOutputText, PartText}
	userParts            = []string{PartInputText, PartOutputText, PartText, PartInputImage, PartInputFile, PartInputVideo}
	assistantParts       = []string{PartInputText, PartOutputText, PartText, PartRefusal}
	toolOutputParts      = []string{PartInputText, PartInputImage, PartInputFile, PartInputVideo}
	summaryParts         = []string{PartSummaryText}
	reasoningContent     = []string{PartReasoningText, PartText}
)

// Limits from the schema.
const (
	maxNameLength      = 64  // tool, function and json_schema names; call ids
	maxMetadataPairs   = 16  // metadata keys
	maxMetadataKey     = 64  // characters in a metadata key
	maxMetadataValue   = 512 // characters in a metadata value
	maxCacheKeyLength  = 64  // prompt_cache_key, safety_identifier
	maxAllowedTools    = 128 // allowed_tools.tools
	minMaxOutputTokens = 16
)

func decodeRequestFields(o object) (*CreateResponseRequest, error) {
	r := &CreateResponseRequest{}
	var err error

	if r.Model, err = o.requiredString("model"); err != nil {
		return nil, err
	}
	if r.Model == "" {
		return nil, emptyString("model")
	}
	var additional []declaredTool
	if raw, ok := o.get("input"); ok {
		if r.Input, additional, err = decodeRequestInput(raw, "input"); err != nil {
			return nil, err
		}
	}
	if r.Instructions, _, err = o.string("instructions"); err != nil {
		return nil, err
	}
	if r.PreviousResponseID, _, err = o.string("previous_response_id"); err != nil {
		return nil, err
	}
	if raw, ok := o.get("conversation"); ok {
		if r.Conversation, err = decodeConversationParam(raw, "conversation"); err != nil {
			return nil, err
		}
		if r.PreviousResponseID != "" {
			return nil, InvalidRequest("conversation", "mutually_exclusive_parameters",
				"Mutually exclusive parameters: send either 'previous_response_id' or 'conversation', not both.")
		}
	}
	if raw, ok := o.get("tools"); ok {
		if r.Tools, err = decodeTools(raw, "tools"); err != nil {
			return nil, err
		}
	}
	if r.Tools, err = addTools(r.Tools, additional); err != nil {
		return nil, err
	}
	if raw, ok := o.get("tool_choice"); ok {
		if r.ToolChoice, err = decodeToolChoice(raw, "tool_choice"); err != nil {
			return nil, err
		}
	}
	if r.ParallelToolCalls, err = o.boolean("parallel_tool_calls"); err != nil {
		return nil, err
	}
	if r.MaxOutputTokens, err = o.integerAtLeast("max_output_tokens", minMaxOutputTokens); err != nil {
		return nil, err
	}
	if r.MaxToolCalls, err = o.integerAtLeast("max_tool_calls", 1); err != nil {
		return nil, err
	}
	if r.Temperature, err = o.decimalIn("temperature", 0, 2); err != nil {
		return nil, err
	}
	if r.TopP, err = o.decimalIn("top_p", 0, 1); err != nil {
		return nil, err
	}
	if r.PresencePenalty, err = o.decimalIn("presence_penalty", -2, 2); err != nil {
		return nil, err
	}
	if r.FrequencyPenalty, err = o.decimalIn("frequency_penalty", -2, 2); err != nil {
		return nil, err
	}
	if r.TopLogprobs, err = o.integerIn("top_logprobs", 0, 20); err != nil {
		return nil, err
	}
	if raw, ok := o.get("text"); ok {
		if r.Text, err = decodeText(raw, "text"); err != nil {
			return nil, err
		}
	}
	if raw, ok := o.get("reasoning"); ok {
		if r.Reasoning, err = decodeReasoning(raw, "reasoning"); err != nil {
			return nil, err
		}
	}
	if r.Truncation, err = o.enum("truncation", enumTruncation); err != nil {
		return nil, err
	}
	if r.Store, err = o.boolean("store"); err != nil {
		return nil, err
	}
	if raw, ok := o.get("metadata"); ok {
		if r.Metadata, err = decodeMetadata(raw, "metadata"); err != nil {
			return nil, err
		}
	}
	if b, err := o.boolean("stream"); err != nil {
		return nil, err
	} else if b != nil {
		r.Stream = *b
	}
	if so, ok, err := o.object("stream_options"); err != nil {
		return nil, err
	} else if ok {
		r.StreamOptions = &StreamOptions{}
		if r.StreamOptions.IncludeObfuscation, err = so.boolean("include_obfuscation"); err != nil {
			return nil, err
		}
	}
	if b, err := o.boolean("background"); err != nil {
		return nil, err
	} else if b != nil {
		r.Background = *b
	}
	if r.ServiceTier, err = o.enum("service_tier", enumServiceTier); err != nil {
		return nil, err
	}
	if r.PromptCacheKey, err = o.stringMax("prompt_cache_key", maxCacheKeyLength); err != nil {
		return nil, err
	}
	if r.SafetyIdentifier, err = o.stringMax("safety_identifier", maxCacheKeyLength); err != nil {
		return nil, err
	}
	if r.PromptCacheRetention, err = o.enum("prompt_cache_retention", enumCacheRetention); err != nil {
		return nil, err
	}
	if raw, ok := o.get("prompt_cache_options"); ok && kindOf(raw) != kindNull {
		if r.PromptCacheOptions, err = decodePromptCacheOptions(raw, "prompt_cache_options"); err != nil {
			return nil, err
		}
	}
	if r.ContextManagement, err = decodeContextManagement(o); err != nil {
		return nil, err
	}
	if r.User, _, err = o.string("user"); err != nil {
		return nil, err
	}
	if elems, ok, err := o.array("include"); err != nil {
		return nil, err
	} else if ok {
		for i, e := range elems {
			p := indexPath("include", i)
			s, err := asString(e, p)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(enumInclude, s) {
				return nil, invalidEnum(p, s, enumInclude)
			}
			r.Include = append(r.Include, s)
		}
	}
	// Empty and absent mean the same; keeping them apart would make a
	// stored request decode differently from the one that was stored.
	if len(r.Input) == 0 {
		r.Input = nil
	}
	if len(r.Tools) == 0 {
		r.Tools = nil
	}
	if len(r.Metadata) == 0 {
		r.Metadata = nil
	}
	return r, nil
}

// decodeInput reads input: a string (one user message) or an array of items.
func decodeInput(raw json.RawMessage, path string) ([]Item, error) {
	switch kindOf(raw) {
	case kindString:
		s, err := asString(raw, path)
		if err != nil {
			return nil, err
		}
		return []Item{{Type: ItemMessage, Role: RoleUser, Content: []ContentPart{{Type: PartInputText, Text: s}}}}, nil
	case kindArray:
		elems, err := asArray(raw, path)
		if err != nil {
			return nil, err
		}
		items := make([]Item, 0, len(elems))
		for i, e := range elems {
			it, err := decodeItem(e, indexPath(path, i))
			if err != nil {
				return nil, err
			}
			items = append(items, it)
		}
		return items, nil
	}
	return nil, typeError(path, "a string or an array of input items", raw)
}

// ItemAdditionalTools is OpenAI's input item that declares tools at a point of the
// input ({"type":"additional_tools","role":"developer","tools":[...]}), which
// Codex's lighter request shape sends instead of the top-level tools.
const ItemAdditionalTools = "additional_tools"

// declaredTool is a tool an additional_tools item declared, with its path, which
// the errors of the merge name.
type declaredTool struct {
	Tool
	path string
}

// decodeRequestInput is decodeInput for a request's input, which may also hold
// additional_tools items: their tools are returned apart, in order, to join the
// request's tools (a model is shown its tools in one place, its template's), and the
// items are not kept.
func decodeRequestInput(raw json.RawMessage, path string) ([]Item, []declaredTool, error) {
	if kindOf(raw) != kindArray || !bytes.Contains(raw, []byte(`"`+ItemAdditionalTools+`"`)) {
		items, err := decodeInput(raw, path)
		return items, nil, err
	}
	elems, err := asArray(raw, path)
	if err != nil {
		return nil, nil, err
	}
	items := make([]Item, 0, len(elems))
	var tools []declaredTool
	for i, e := range elems {
		p := indexPath(path, i)
		if bytes.Contains(e, []byte(`"`+ItemAdditionalTools+`"`)) {
			o, err := asObject(e, p)
			if err != nil {
				return nil, nil, err
			}
			if typ, _, _ := o.string("type"); typ == ItemAdditionalTools {
				if _, err := o.enum("role", []string{RoleDeveloper, RoleSystem}); err != nil {
					return nil, nil, err
				}
				rawTools, ok := o.get("tools")
				if !ok {
					return nil, nil, missing(o.at("tools"))
				}
				more, err := decodeTools(rawTools, p+".tools")
				if err != nil {
					return nil, nil, err
				}
				for j, t := range more {
					tools = append(tools, declaredTool{t, indexPath(p+".tools", j)})
				}
				continue
			}
		}
		it, err := decodeItem(e, p)
		if err != nil {
			return nil, nil, err
		}
		items = append(items, it)
	}
	return items, tools, nil
}

// addTools appends the tools of additional_tools items to the request's, refusing a
// name (or what a kind's tools may not share, ToolType.Unique) that two of them
// share, as in one tools array.
func addTools(tools []Tool, more []declaredTool) ([]Tool, error) {
	if len(more) == 0 {
		return tools, nil
	}
	seen := map[string]string{}
	key := func(t *Tool) string {
		if _, value, ok := uniqueOf(t); ok {
			return t.Type + "\x00" + value
		}
		if t.Hosted() {
			return ""
		}
		return t.Name
	}
	for i := range tools {
		if k := key(&tools[i]); k != "" {
			seen[k] = indexPath("tools", i)
		}
	}
	for _, t := range more {
		k := key(&t.Tool)
		if first, dup := seen[k]; k != "" && dup {
			field, name := ".name", t.Name
			if f, value, ok := uniqueOf(&t.Tool); ok {
				field, name = f, value
			}
			return nil, duplicateName(t.path+field, name, first)
		}
		if k != "" {
			seen[k] = t.path
		}
		tools = append(tools, t.Tool)
	}
	return tools, nil
}

// decodeItem reads one input or output item. A missing type means a message
// when there is a role (EasyInputMessage) and an item_reference when there
// is only an id (ItemReferenceParam's type is optional).
func decodeItem(raw json.RawMessage, path string) (Item, error) {
	o, err := asObject(raw, path)
	if err != nil {
		return Item{}, err
	}
	typ, hasType, err := o.string("type")
	if err != nil {
		return Item{}, err
	}
	if !hasType {
		switch {
		case o.has("role"):
			typ = ItemMessage
		case o.has("id"):
			typ = ItemReference
		default:
			return Item{}, missing(o.at("type"))
		}
	}
	it := Item{Type: typ}
	if it.ID, _, err = o.string("id"); err != nil {
		return Item{}, err
	}
	statuses := enumItemStatus
	var kind *ItemType
	if !slices.Contains(baseItemTypes, typ) {
		if kind = itemTypes[typ]; kind != nil && kind.Statuses != nil {
			statuses = kind.Statuses
		}
	}
	if it.Status, err = o.enum("status", statuses); err != nil {
		return Item{}, err
	}

	switch typ {
	case ItemMessage:
		if it.Role, err = o.requiredEnum("role", enumRole); err != nil {
			return Item{}, err
		}
		if it.Phase, err = o.enum("phase", enumPhase); err != nil {
			return Item{}, err
		}
		allowed, stringPart := textParts, PartInputText
		switch it.Role {
		case RoleUser:
			allowed = userParts
		case RoleAssistant:
			allowed, stringPart = assistantParts, PartOutputText
		}
		raw, ok := o.get("content")
		if !ok {
			return Item{}, missing(o.at("content"))
		}
		if kindOf(raw) == kindString {
			s, _ := asString(raw, o.at("content"))
			it.Content = []ContentPart{{Type: stringPart, Text: s}}
		} else if it.Content, err = decodeParts(raw, o.at("content"), allowed, "a string or an array of content parts"); err != nil {
			return Item{}, err
		}

	case ItemFunctionCall, ItemCustomToolCall:
		if it.CallID, err = o.callID(); err != nil {
			return Item{}, err
		}
		if it.Name, err = o.toolName("name"); err != nil {
			return Item{}, err
		}
		if typ == ItemFunctionCall {
			if it.Arguments, err = o.requiredString("arguments"); err != nil {
				return Item{}, err
			}
			if it.Namespace, _, err = o.string("namespace"); err != nil {
				return Item{}, err
			}
		} else if it.Input, err = o.requiredString("input"); err != nil {
			return Item{}, err
		}

	case ItemFunctionCallOutput, ItemCustomToolCallOutput:
		// Only that call_id is non-empty can be checked here; whether a call
		// with that id exists needs the conversation, which the engine has.
		if it.CallID, err = o.callID(); err != nil {
			return Item{}, err
		}
		raw, ok := o.get("output")
		if !ok {
			return Item{}, missing(o.at("output"))
		}
		if it.Output, err = decodeToolOutput(raw, o.at("output")); err != nil {
			return Item{}, err
		}

	case ItemReasoning:
		if raw, ok := o.get("summary"); ok {
			if it.Summary, err = decodeParts(raw, o.at("summary"), summaryParts, "an array of summary parts"); err != nil {
				return Item{}, err
			}
		} else {
			it.Summary = []ContentPart{}
		}
		if raw, ok := o.get("content"); ok {
			if it.Content, err = decodeParts(raw, o.at("content"), reasoningContent, "an array of reasoning parts"); err != nil {
				return Item{}, err
			}
		}
		if it.EncryptedContent, _, err = o.string("encrypted_content"); err != nil {
			return Item{}, err
		}

	case ItemReference:
		if it.ID == "" {
			return Item{}, missing(o.at("id"))
		}

	case ItemCompaction:
		if it.EncryptedContent, err = o.requiredString("encrypted_content"); err != nil {
			return Item{}, err
		}

	default:
		if kind != nil && kind.Decode != nil {
			return it, kind.Decode(Object{o}, &it)
		}
		return Item{}, invalidEnum(o.at("type"), typ, enumItemType)
	}
	return it, nil
}

func decodeToolOutput(raw json.RawMessage, path string) (ToolOutput, error) {
	if kindOf(raw) == kindString {
		s, err := asString(raw, path)
		return ToolOutput{Text: s}, err
	}
	parts, err := decodeParts(raw, path, toolOutputParts, "a string or an array of content parts")
	if err != nil {
		return ToolOutput{}, err
	}
	if parts == nil {
		parts = []ContentPart{}
	}
	return ToolOutput{Parts: parts}, nil
}

func decodeParts(raw json.RawMessage, path string, allowed []string, want string) ([]ContentPart, error) {
	if kindOf(raw) != kindArray {
		return nil, typeError(path, want, raw)
	}
	elems, err := asArray(raw, path)
	if err != nil {
		return nil, err
	}
	parts := make([]ContentPart, 0, len(elems))
	for i, e := range elems {
		p, err := decodePart(e, indexPath(path, i), allowed)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// decodePart reads one content part; allowed (when not nil) limits the types
// that may appear where it stands.
func decodePart(raw json.RawMessage, path string, allowed []string) (ContentPart, error) {
	o, err := asObject(raw, path)
	if err != nil {
		return ContentPart{}, err
	}
	typ, err := o.requiredString("type")
	if err != nil {
		return ContentPart{}, err
	}
	all := []string{PartInputText, PartOutputText, PartText, PartSummaryText, PartReasoningText, PartRefusal, PartInputImage, PartInputFile, PartInputVideo}
	if allowed == nil {
		allowed = all
	}
	if !slices.Contains(allowed, typ) {
		return ContentPart{}, invalidEnum(o.at("type"), typ, allowed)
	}
	p := ContentPart{Type: typ}
	switch typ {
	case PartInputText, PartOutputText, PartText, PartSummaryText, PartReasoningText:
		if p.Text, err = o.requiredString("text"); err != nil {
			return ContentPart{}, err
		}
		if typ == PartOutputText {
			if err := o.decodeStd("annotations", &p.Annotations, "an array of annotations"); err != nil {
				return ContentPart{}, err
			}
			if err := o.decodeStd("logprobs", &p.Logprobs, "an array of log probabilities"); err != nil {
				return ContentPart{}, err
			}
			// Empty and absent are the same (both marshal as []).
			if len(p.Annotations) == 0 {
				p.Annotations = nil
			}
			if len(p.Logprobs) == 0 {
				p.Logprobs = nil
			}
		}
	case PartRefusal:
		if p.Refusal, err = o.requiredString("refusal"); err != nil {
			return ContentPart{}, err
		}
	case PartInputImage:
		if p.ImageURL, _, err = o.string("image_url"); err != nil {
			return ContentPart{}, err
		}
		if p.FileID, _, err = o.string("file_id"); err != nil {
			return ContentPart{}, err
		}
		if p.Detail, err = o.enum("detail", enumDetail); err != nil {
			return ContentPart{}, err
		}
		if p.Detail == "" {
			p.Detail = "auto" // the schema's default, made explicit so it round-trips
		}
		if p.ImageURL == "" && p.FileID == "" {
			return ContentPart{}, InvalidRequest(o.at("image_url"), CodeMissingRequiredParameter,
				fmt.Sprintf("Missing required parameter: '%s'. An input_image needs an image_url or a file_id.", o.at("image_url")))
		}
		if p.ImageURL != "" {
			if err := checkImageURL(p.ImageURL, o.at("image_url")); err != nil {
				return ContentPart{}, err
			}
		}
	case PartInputFile:
		for _, f := range []struct {
			key string
			dst *string
		}{{"file_id", &p.FileID}, {"filename", &p.Filename}, {"file_data", &p.FileData}, {"file_url", &p.FileURL}} {
			if *f.dst, _, err = o.string(f.key); err != nil {
				return ContentPart{}, err
			}
		}
		if p.FileID == "" && p.FileData == "" && p.FileURL == "" {
			return ContentPart{}, InvalidRequest(o.at("file_data"), CodeMissingRequiredParameter,
				fmt.Sprintf("Missing required parameter: '%s'. An input_file needs a file_id, a file_url or file_data.", o.at("file_data")))
		}
	case PartInputVideo:
		if p.VideoURL, err = o.requiredString("video_url"); err != nil {
			return ContentPart{}, err
		}
	}
	return p, nil
}

// checkImageURL accepts http(s) URLs and base64 image data URLs: the forms
// the schema describes. Anything else would fail later, far from its cause.
func checkImageURL(u, path string) error {
	if strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") {
		return nil
	}
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, _, ok := strings.Cut(rest, ",")
		if ok && strings.HasPrefix(meta, "image/") && strings.HasSuffix(meta, ";base64") {
			return nil
		}
	}
	return InvalidRequest(path, CodeInvalidValue,
		fmt.Sprintf("Invalid '%s': expected a fully qualified http(s) URL or a base64 data URL (data:image/...;base64,...).", path))
}

func decodeTools(raw json.RawMessage, path string) ([]Tool, error) {
	elems, err := asArray(raw, path)
	if err != nil {
		return nil, err
	}
	tools := make([]Tool, 0, len(elems))
	seen := map[string]int{}
	for i, e := range elems {
		p := indexPath(path, i)
		t, err := decodeTool(e, p, false)
		if err != nil {
			return nil, err
		}
		if field, value, ok := uniqueOf(&t); ok {
			key := t.Type + "\x00" + value
			if j, dup := seen[key]; dup {
				return nil, duplicateName(p+field, value, indexPath(path, j))
			}
			seen[key] = i
		}
		if !t.Hosted() {
			if j, dup := seen[t.Name]; dup {
				return nil, duplicateName(p+".name", t.Name, indexPath(path, j))
			}
			seen[t.Name] = i
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// decodeTool reads one tool. Inside a namespace (nested) only function tools
// may appear.
func decodeTool(raw json.RawMessage, path string, nested bool) (Tool, error) {
	o, err := asObject(raw, path)
	if err != nil {
		return Tool{}, err
	}
	typ, err := o.requiredString("type")
	if err != nil {
		return Tool{}, err
	}
	if typ == "" {
		return Tool{}, emptyString(o.at("type"))
	}
	t := Tool{Type: typ}
	if nested && typ != ToolFunction {
		return Tool{}, invalidEnum(o.at("type"), typ, []string{ToolFunction})
	}
	switch typ {
	case ToolFunction, ToolNamespace, ToolCustom:
		if t.Name, err = o.toolName("name"); err != nil {
			return Tool{}, err
		}
		if t.Description, _, err = o.string("description"); err != nil {
			return Tool{}, err
		}
		if d, err := o.boolean("defer_loading"); err != nil {
			return Tool{}, err
		} else if d != nil {
			t.DeferLoading = *d
		}
	default:
		t.Raw = compact(raw)
		if k := toolTypes[typ]; k != nil && k.Decode != nil {
			if t.Spec, err = k.Decode(Object{o}); err != nil {
				return Tool{}, err
			}
		}
		return t, nil
	}
	switch typ {
	case ToolFunction:
		if params, ok := o.get("parameters"); ok {
			if kindOf(params) != kindObject {
				return Tool{}, typeError(o.at("parameters"), "a JSON Schema object", params)
			}
			t.Parameters = compact(params)
		}
		if t.Strict, err = o.boolean("strict"); err != nil {
			return Tool{}, err
		}
		// Only in a response's flattened tools list (see NewResponse).
		if t.Namespace, _, err = o.string("namespace"); err != nil {
			return Tool{}, err
		}
	case ToolNamespace:
		elems, ok, err := o.array("tools")
		if err != nil {
			return Tool{}, err
		}
		if !ok {
			return Tool{}, missing(o.at("tools"))
		}
		seen := map[string]int{}
		for i, e := range elems {
			p := indexPath(o.at("tools"), i)
			child, err := decodeTool(e, p, true)
			if err != nil {
				return Tool{}, err
			}
			if j, dup := seen[child.Name]; dup {
				return Tool{}, duplicateName(p+".name", child.Name, indexPath(o.at("tools"), j))
			}
			seen[child.Name] = i
			t.Tools = append(t.Tools, child)
		}
	case ToolCustom:
		f, ok, err := o.object("format")
		if err != nil || !ok {
			return t, err
		}
		if t.Format.Type, err = f.requiredEnum("type", []string{"text", "grammar"}); err != nil {
			return Tool{}, err
		}
		if t.Format.Type == "grammar" {
			if t.Format.Syntax, err = f.requiredEnum("syntax", enumGrammar); err != nil {
				return Tool{}, err
			}
			if t.Format.Definition, err = f.requiredString("definition"); err != nil {
				return Tool{}, err
			}
			// Whether the definition parses is the engine's to say (it compiles
			// it); an empty one is no grammar at all.
			if t.Format.Definition == "" {
				return Tool{}, emptyString(f.at("definition"))
			}
		}
	}
	return t, nil
}

func decodeToolChoice(raw json.RawMessage, path string) (ToolChoice, error) {
	switch kindOf(raw) {
	case kindString:
		s, _ := asString(raw, path)
		if !slices.Contains(enumToolChoice, s) {
			return ToolChoice{}, invalidEnum(path, s, enumToolChoice)
		}
		return ToolChoice{Mode: s}, nil
	case kindObject:
	default:
		return ToolChoice{}, typeError(path, "a string or an object", raw)
	}
	o, _ := asObject(raw, path)
	typ, err := o.requiredString("type")
	if err != nil {
		return ToolChoice{}, err
	}
	c := ToolChoice{Type: typ}
	switch typ {
	case ToolFunction, ToolCustom:
		if c.Name, err = o.requiredString("name"); err != nil {
			return ToolChoice{}, err
		}
		if c.Name == "" {
			return ToolChoice{}, emptyString(o.at("name"))
		}
	case "allowed_tools":
		if c.Mode, err = o.enum("mode", enumToolChoice); err != nil {
			return ToolChoice{}, err
		}
		if c.Mode == "" {
			c.Mode = ToolChoiceAuto // the default, explicit so that it round-trips
		}
		elems, ok, err := o.array("tools")
		if err != nil {
			return ToolChoice{}, err
		}
		if !ok {
			return ToolChoice{}, missing(o.at("tools"))
		}
		if len(elems) == 0 {
			return ToolChoice{}, InvalidRequest(o.at("tools"), CodeEmptyArray,
				fmt.Sprintf("Invalid '%s': empty array. Expected an array with at least 1 element.", o.at("tools")))
		}
		if len(elems) > maxAllowedTools {
			return ToolChoice{}, InvalidRequest(o.at("tools"), CodeArrayAboveMaxLength,
				fmt.Sprintf("Invalid '%s': array too long. Expected an array with at most %d elements.", o.at("tools"), maxAllowedTools))
		}
		for i, e := range elems {
			to, err := asObject(e, indexPath(o.at("tools"), i))
			if err != nil {
				return ToolChoice{}, err
			}
			var ref ToolRef
			if ref.Type, err = to.requiredEnum("type", allowedRefTypes()); err != nil {
				return ToolChoice{}, err
			}
			if k := toolTypes[ref.Type]; k != nil && k.Allowed {
				// A hosted tool is named by its type alone.
				c.Allowed = append(c.Allowed, ref)
				continue
			}
			if ref.Name, err = to.requiredString("name"); err != nil {
				return ToolChoice{}, err
			}
			c.Allowed = append(c.Allowed, ref)
		}
	default:
		if k := toolTypes[typ]; k != nil && k.Forced {
			// Forces a kind's tool; whether this hearth runs it is the server's and
			// the engine's to say.
			if k.ChoiceDecode != nil {
				if err := k.ChoiceDecode(Object{o}, &c); err != nil {
					return ToolChoice{}, err
				}
			}
			break
		}
		return ToolChoice{}, InvalidRequest(o.at("type"), CodeInvalidValue,
			fmt.Sprintf("Invalid value: '%s'. hearth can only force %s tools, or restrict them with 'allowed_tools'; it cannot run hosted tools.", typ, forcibleList()))
	}
	return c, nil
}

// validateToolChoice checks that tool_choice names tools that exist and that
// a required call is possible at all.
func validateToolChoice(r *CreateResponseRequest) error {
	functions, customs := map[string]bool{}, map[string]bool{}
	for _, t := range r.Tools {
		switch t.Type {
		case ToolFunction:
			functions[t.Name] = true
		case ToolCustom:
			customs[t.Name] = true
		case ToolNamespace:
			for _, c := range t.Tools {
				functions[c.Name] = true
			}
		}
	}
	// A kind's tool the model can call (ToolType.Callable) counts as a call.
	callable := slices.ContainsFunc(r.Tools, func(t Tool) bool { k := toolTypes[t.Type]; return k != nil && k.Callable })
	hasType := func(typ string) bool { return slices.ContainsFunc(r.Tools, func(t Tool) bool { return t.Type == typ }) }
	known := func(typ, name string) bool {
		switch typ {
		case ToolCustom:
			return customs[name]
		case ToolFunction:
			return functions[name]
		}
		return hasType(typ)
	}
	c := r.ToolChoice
	if k := toolTypes[c.Type]; k != nil && k.Forced {
		if k.ChoiceCheck != nil {
			return k.ChoiceCheck(c, r.Tools)
		}
		if !hasType(c.Type) {
			return InvalidRequest("tool_choice", CodeInvalidValue,
				fmt.Sprintf("Tool choice '%s' names a tool that is not in 'tools'.", c.Type))
		}
		return nil
	}
	switch c.Type {
	case ToolFunction, ToolCustom:
		if !known(c.Type, c.Name) {
			return InvalidRequest("tool_choice", CodeInvalidValue,
				fmt.Sprintf("Tool choice '%s' names %s tool '%s', which is not in 'tools'.", c.Type, c.Type, c.Name))
		}
	case "allowed_tools":
		for i, ref := range c.Allowed {
			if !known(ref.Type, ref.Name) {
				p := indexPath("tool_choice.tools", i)
				if ref.Type != ToolFunction && ref.Type != ToolCustom {
					return InvalidRequest(p, CodeInvalidValue, fmt.Sprintf("Invalid '%s': 'tools' has no %s tool.", p, ref.Type))
				}
				return InvalidRequest(p, CodeInvalidValue,
					fmt.Sprintf("Invalid '%s': %s tool '%s' is not in 'tools'.", p, ref.Type, ref.Name))
			}
		}
	}
	// A callable kind's tool is a call the model can make: `hearth serve` always runs
	// it (an engine without its kind shows the model nothing to call).
	if c.EffectiveMode() == ToolChoiceRequired && len(functions)+len(customs) == 0 && !callable {
		return InvalidRequest("tool_choice", CodeInvalidValue,
			"Tool choice requires a tool call, but 'tools' has no function or custom tool hearth can call.")
	}
	return nil
}

func decodeText(raw json.RawMessage, path string) (TextConfig, error) {
	o, err := asObject(raw, path)
	if err != nil {
		return TextConfig{}, err
	}
	var t TextConfig
	if f, ok := o.get("format"); ok {
		if t.Format, err = decodeTextFormat(f, o.at("format"), true); err != nil {
			return TextConfig{}, err
		}
	}
	if t.Verbosity, err = o.enum("verbosity", enumVerbosity); err != nil {
		return TextConfig{}, err
	}
	return t, nil
}

// decodeTextFormat reads text.format. A request must give a json_schema
// format its schema; a response echoes it as null (see NewResponse), so
// requireSchema is false when reading one back.
func decodeTextFormat(raw json.RawMessage, path string, requireSchema bool) (TextFormat, error) {
	o, err := asObject(raw, path)
	if err != nil {
		return TextFormat{}, err
	}
	var f TextFormat
	if f.Type, err = o.requiredEnum("type", enumFormat); err != nil {
		return TextFormat{}, err
	}
	if f.Type != FormatJSONSchema {
		return f, nil
	}
	if f.Name, err = o.toolName("name"); err != nil {
		return TextFormat{}, err
	}
	if f.Description, _, err = o.string("description"); err != nil {
		return TextFormat{}, err
	}
	schema, ok := o.get("schema")
	switch {
	case !ok && requireSchema:
		return TextFormat{}, missing(o.at("schema"))
	case ok && kindOf(schema) != kindObject:
		return TextFormat{}, typeError(o.at("schema"), "a JSON Schema object", schema)
	}
	if ok {
		f.Schema = compact(schema)
	}
	if f.Strict, err = o.boolean("strict"); err != nil {
		return TextFormat{}, err
	}
	return f, nil
}

func decodeReasoning(raw json.RawMessage, path string) (Reasoning, error) {
	o, err := asObject(raw, path)
	if err != nil {
		return Reasoning{}, err
	}
	var r Reasoning
	if r.Effort, err = o.enum("effort", enumEffort); err != nil {
		return Reasoning{}, err
	}
	if r.Summary, err = o.enum("summary", enumSummary); err != nil {
		return Reasoning{}, err
	}
	if r.Context, err = o.enum("context", enumReasoningContext); err != nil {
		return Reasoning{}, err
	}
	// generate_summary is the deprecated name older SDKs still send.
	if r.Summary == "" {
		if r.Summary, err = o.enum("generate_summary", enumSummary); err != nil {
			return Reasoning{}, err
		}
	}
	return r, nil
}

// decodePromptCacheOptions reads prompt_cache_options: ttl a positive duration of at
// most MaxPromptCacheTTL ("30m", "1h"), mode any string (reported as ignored).
func decodePromptCacheOptions(raw json.RawMessage, path string) (*PromptCacheOptions, error) {
	o, err := asObject(raw, path)
	if err != nil {
		return nil, err
	}
	var p PromptCacheOptions
	if p.Mode, _, err = o.string("mode"); err != nil {
		return nil, err
	}
	var has bool
	if p.TTL, has, err = o.string("ttl"); err != nil {
		return nil, err
	}
	if has {
		d, perr := time.ParseDuration(p.TTL)
		if perr != nil || d <= 0 || d > MaxPromptCacheTTL {
			return nil, InvalidRequest(o.at("ttl"), CodeInvalidValue,
				fmt.Sprintf("Invalid '%s': %q. Expected a duration such as \"30m\" or \"1h\", at most %s.", o.at("ttl"), p.TTL, MaxPromptCacheTTL))
		}
	}
	return &p, nil
}

// DecodeMetadata decodes and checks metadata at path wherever hearth stores it
// (responses, conversations, vector stores): an object of at most 16 string values,
// keys of at most 64 characters, values of at most 512, as OpenAI bounds it. Anything
// else is a 400 naming the field (path, or path.key). null, or nothing, is no metadata.
func DecodeMetadata(raw json.RawMessage, path string) (map[string]string, error) {
	if len(raw) == 0 || kindOf(raw) == kindNull {
		return nil, nil
	}
	return decodeMetadata(raw, path)
}

// CheckAttributes checks a vector store file's attributes at path, bounded as OpenAI
// bounds them: at most 16 keys of at most 64 characters, each value a string of at
// most 512 characters, a number or a boolean. null is no attributes.
func CheckAttributes(raw json.RawMessage, path string) error {
	if len(raw) == 0 || kindOf(raw) == kindNull {
		return nil
	}
	o, err := asObject(raw, path)
	if err != nil {
		return err
	}
	if len(o.fields) > maxMetadataPairs {
		return InvalidRequest(path, CodeObjectAboveMaxProperties,
			fmt.Sprintf("Invalid '%s': too many properties. Expected an object with at most %d properties, but got an object with %d properties instead.", path, maxMetadataPairs, len(o.fields)))
	}
	for _, k := range o.keys() {
		p := o.at(k)
		if len([]rune(k)) > maxMetadataKey {
			return tooLong(p, maxMetadataKey)
		}
		switch v := o.fields[k]; kindOf(v) {
		case kindString:
			str, err := asString(v, p)
			if err != nil {
				return err
			}
			if len([]rune(str)) > maxMetadataValue {
				return tooLong(p, maxMetadataValue)
			}
		case kindNumber, kindBool:
		default:
			return typeError(p, "a string, a number or a boolean", v)
		}
	}
	return nil
}

func decodeMetadata(raw json.RawMessage, path string) (map[string]string, error) {
	o, err := asObject(raw, path)
	if err != nil {
		return nil, err
	}
	if len(o.fields) > maxMetadataPairs {
		return nil, InvalidRequest(path, CodeObjectAboveMaxProperties,
			fmt.Sprintf("Invalid '%s': too many properties. Expected an object with at most %d properties, but got an object with %d properties instead.", path, maxMetadataPairs, len(o.fields)))
	}
	m := make(map[string]string, len(o.fields))
	for _, k := range o.keys() {
		p := o.at(k)
		if len([]rune(k)) > maxMetadataKey {
			return nil, tooLong(p, maxMetadataKey)
		}
		v, err := asString(o.fields[k], p)
		if err != nil {
			return nil, err
		}
		if len([]rune(v)) > maxMetadataValue {
			return nil, tooLong(p, maxMetadataValue)
		}
		m[k] = v
	}
	return m, nil
}

// --- path-aware JSON access -------------------------------------------------
//
// encoding/json reports type errors by Go field, not by the JSON path a
// client can act on, so requests are decoded one level at a time from raw
// messages, carrying the path along.

type jsonKind int

const (
	kindInvalid jsonKind = iota
	kindNull
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func kindOf(raw json.RawMessage) jsonKind {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return kindInvalid
	}
	switch raw[0] {
	case 'n':
		return kindNull
	case 't', 'f':
		return kindBool
	case '"':
		return kindString
	case '[':
		return kindArray
	case '{':
		return kindObject
	}
	return kindNumber
}

func kindName(k jsonKind, raw json.RawMessage) string {
	switch k {
	case kindNull:
		return "null"
	case kindBool:
		return "a boolean"
	case kindString:
		return "a string"
	case kindArray:
		return "an array"
	case kindObject:
		return "an object"
	case kindNumber:
		if bytes.ContainsAny(raw, ".eE") {
			return "a decimal"
		}
		return "an integer"
	}
	return "invalid JSON"
}

func typeError(path, want string, raw json.RawMessage) error {
	return InvalidRequest(path, CodeInvalidType,
		fmt.Sprintf("Invalid type for '%s': expected %s, but got %s instead.", path, want, kindName(kindOf(raw), raw)))
}

func missing(path string) error {
	return InvalidRequest(path, CodeMissingRequiredParameter, fmt.Sprintf("Missing required parameter: '%s'.", path))
}

func emptyString(path string) error {
	return InvalidRequest(path, CodeEmptyString,
		fmt.Sprintf("Invalid '%s': empty string. Expected a string with minimum length 1, but got an empty string instead.", path))
}

func tooLong(path string, max int) error {
	return InvalidRequest(path, CodeStringAboveMaxLength,
		fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length %d.", path, max))
}

func invalidEnum(path, got string, allowed []string) error {
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = "'" + a + "'"
	}
	return InvalidRequest(path, CodeInvalidValue,
		fmt.Sprintf("Invalid value for '%s': '%s'. Supported values are: %s.", path, got, strings.Join(quoted, ", ")))
}

func duplicateName(path, name, first string) error {
	return InvalidRequest(path, CodeDuplicateToolName,
		fmt.Sprintf("Invalid '%s': duplicate tool name '%s' (already used by %s). Tool names must be unique.", path, name, first))
}

// compact returns raw JSON in the form encoding/json writes it (no
// insignificant whitespace; <, >, &, U+2028 and U+2029 escaped), in a new
// slice. Tool schemas are kept canonical so that a stored request marshals
// back byte-for-byte and decodes to an equal value.
func compact(raw json.RawMessage) json.RawMessage {
	var c, h bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return bytes.Clone(raw) // cannot happen: raw came from a valid document
	}
	json.HTMLEscape(&h, c.Bytes())
	return h.Bytes()
}

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func asString(raw json.RawMessage, path string) (string, error) {
	if kindOf(raw) != kindString {
		return "", typeError(path, "a string", raw)
	}
	if s, ok := plainString(bytes.TrimSpace(raw)); ok {
		return s, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", typeError(path, "a string", raw)
	}
	return s, nil
}

func asArray(raw json.RawMessage, path string) ([]json.RawMessage, error) {
	if kindOf(raw) != kindArray {
		return nil, typeError(path, "an array", raw)
	}
	if elems, ok := splitArray(raw); ok {
		return elems, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, typeError(path, "an array", raw)
	}
	return elems, nil
}

func asObject(raw json.RawMessage, path string) (object, error) {
	if kindOf(raw) != kindObject {
		return object{}, typeError(path, "an object", raw)
	}
	if fields, ok := splitObject(raw); ok {
		return object{path, fields}, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return object{}, typeError(path, "an object", raw)
	}
	return object{path, fields}, nil
}

// object is a JSON object being decoded at path. Its getters treat null like
// an absent field: every optional field of the schema is nullable.
type object struct {
	path   string
	fields map[string]json.RawMessage
}

func (o object) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func (o object) keys() []string {
	ks := make([]string, 0, len(o.fields))
	for k := range o.fields {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (o object) get(key string) (json.RawMessage, bool) {
	raw, ok := o.fields[key]
	if !ok || kindOf(raw) == kindNull {
		return nil, false
	}
	return raw, true
}

func (o object) has(key string) bool { _, ok := o.get(key); return ok }

func (o object) string(key string) (string, bool, error) {
	raw, ok := o.get(key)
	if !ok {
		return "", false, nil
	}
	s, err := asString(raw, o.at(key))
	return s, err == nil, err
}

func (o object) requiredString(key string) (string, error) {
	s, ok, err := o.string(key)
	if err == nil && !ok {
		err = missing(o.at(key))
	}
	return s, err
}

func (o object) stringMax(key string, max int) (string, error) {
	s, _, err := o.string(key)
	if err == nil && len([]rune(s)) > max {
		err = tooLong(o.at(key), max)
	}
	return s, err
}

func (o object) enum(key string, allowed []string) (string, error) {
	s, ok, err := o.string(key)
	if err != nil || !ok {
		return "", err
	}
	if !slices.Contains(allowed, s) {
		return "", invalidEnum(o.at(key), s, allowed)
	}
	return s, nil
}

func (o object) requiredEnum(key string, allowed []string) (string, error) {
	if !o.has(key) {
		return "", missing(o.at(key))
	}
	return o.enum(key, allowed)
}

// toolName reads a required name matching OpenAI's ^[a-zA-Z0-9_-]{1,64}$,
// the rule for function, custom and namespace tools, function calls and
// json_schema formats alike.
func (o object) toolName(key string) (string, error) {
	s, err := o.requiredString(key)
	if err != nil {
		return "", err
	}
	p := o.at(key)
	switch {
	case s == "":
		return "", emptyString(p)
	case len(s) > maxNameLength:
		return "", tooLong(p, maxNameLength)
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", InvalidRequest(p, CodeInvalidValue,
				fmt.Sprintf("Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", p))
		}
	}
	return s, nil
}

func (o object) callID() (string, error) {
	s, err := o.requiredString("call_id")
	switch {
	case err != nil:
		return "", err
	case s == "":
		return "", emptyString(o.at("call_id"))
	case len(s) > maxNameLength:
		return "", tooLong(o.at("call_id"), maxNameLength)
	}
	return s, nil
}

func (o object) boolean(key string) (*bool, error) {
	raw, ok := o.get(key)
	if !ok {
		return nil, nil
	}
	if kindOf(raw) != kindBool {
		return nil, typeError(o.at(key), "a boolean", raw)
	}
	b := bytes.HasPrefix(bytes.TrimSpace(raw), []byte("true"))
	return &b, nil
}

func (o object) number(key string) (float64, bool, error) {
	raw, ok := o.get(key)
	if !ok {
		return 0, false, nil
	}
	if kindOf(raw) != kindNumber {
		return 0, false, typeError(o.at(key), "a number", raw)
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil {
		return 0, false, typeError(o.at(key), "a number", raw)
	}
	return f, true, nil
}

func (o object) decimalIn(key string, min, max float64) (*float64, error) {
	f, ok, err := o.number(key)
	if err != nil || !ok {
		return nil, err
	}
	p := o.at(key)
	if f < min {
		return nil, InvalidRequest(p, CodeDecimalBelowMinValue,
			fmt.Sprintf("Invalid '%s': decimal below minimum value. Expected a value >= %g, but got %g instead.", p, min, f))
	}
	if f > max {
		return nil, InvalidRequest(p, CodeDecimalAboveMaxValue,
			fmt.Sprintf("Invalid '%s': decimal above maximum value. Expected a value <= %g, but got %g instead.", p, max, f))
	}
	return &f, nil
}

func (o object) integer(key string) (*int, error) {
	raw, ok := o.get(key)
	if !ok {
		return nil, nil
	}
	if kindOf(raw) != kindNumber {
		return nil, typeError(o.at(key), "an integer", raw)
	}
	// 16.0 is an integer to JSON Schema; 16.5 and 1e300 are not to us.
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return nil, typeError(o.at(key), "an integer", raw)
	}
	n := int(f)
	return &n, nil
}

func (o object) integerAtLeast(key string, min int) (*int, error) {
	return o.integerIn(key, min, math.MaxInt)
}

func (o object) integerIn(key string, min, max int) (*int, error) {
	n, err := o.integer(key)
	if err != nil || n == nil {
		return nil, err
	}
	p := o.at(key)
	if *n < min {
		return nil, InvalidRequest(p, CodeIntegerBelowMinValue,
			fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= %d, but got %d instead.", p, min, *n))
	}
	if *n > max {
		return nil, InvalidRequest(p, CodeIntegerAboveMaxValue,
			fmt.Sprintf("Invalid '%s': integer above maximum value. Expected a value <= %d, but got %d instead.", p, max, *n))
	}
	return n, nil
}

func (o object) array(key string) ([]json.RawMessage, bool, error) {
	raw, ok := o.get(key)
	if !ok {
		return nil, false, nil
	}
	elems, err := asArray(raw, o.at(key))
	return elems, err == nil, err
}

func (o object) object(key string) (object, bool, error) {
	raw, ok := o.get(key)
	if !ok {
		return object{}, false, nil
	}
	v, err := asObject(raw, o.at(key))
	return v, err == nil, err
}

// decodeStd decodes a field hearth does not inspect (annotations, logprobs)
// with encoding/json, reporting a failure at the field's path.
func (o object) decodeStd(key string, dst any, want string) error {
	raw, ok := o.get(key)
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return typeError(o.at(key), want, raw)
	}
	return nil
}
