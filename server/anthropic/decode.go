package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"hearth"
)

// decoded is a Messages request as the core runs it, and what its answer's encoding
// needs to know of the request.
type decoded struct {
	req *hearth.CreateResponseRequest
	// ignored are the fields accepted and not used (logged, and named in
	// x-hearth-ignored).
	ignored []string
	// omitThinking: thinking.display "omitted": thinking blocks carry their
	// signature but not their text.
	omitThinking bool
}

// invalid is Anthropic's 400 naming the field at path.
func invalid(path, format string, args ...any) error {
	return &hearth.Error{Status: http.StatusBadRequest, Type: hearth.ErrTypeInvalidRequest, Code: "invalid_request_error",
		Param: path, Message: path + ": " + fmt.Sprintf(format, args...)}
}

func obj(raw json.RawMessage, path string) (map[string]json.RawMessage, error) {
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil || o == nil {
		return nil, invalid(path, "Input should be an object")
	}
	return o, nil
}

func str(raw json.RawMessage, path string) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid(path, "Input should be a string")
	}
	return s, nil
}

func arr(raw json.RawMessage, path string) ([]json.RawMessage, error) {
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil || a == nil {
		return nil, invalid(path, "Input should be an array")
	}
	return a, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" }

func isString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

// only refuses the keys of o outside allowed, the way Anthropic's API does: a field
// hearth does not know may change the answer, and a silent drop would hide it.
func only(o map[string]json.RawMessage, path string, allowed ...string) error {
	for k := range o {
		if !slices.Contains(allowed, k) {
			return invalid(join(path, k), "Extra inputs are not permitted")
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func at(path string, i int) string { return path + "." + strconv.Itoa(i) }

// decodeMessages decodes a Messages body (count: a count_tokens body, which has no
// max_tokens and no stream) into the hearth request the core runs. Every problem is a
// 400 naming the field in Anthropic's dotted form (messages.1.content.0.type).
//
// searchable says whether the server runs tool_search, which keeps deferred tools
// out of the prompt until the model loads them; without it they are shown like any
// other, and defer_loading is reported unused.
func decodeMessages(body []byte, count, searchable bool) (*decoded, error) {
	top, err := obj(body, "body")
	if err != nil {
		return nil, &hearth.Error{Status: http.StatusBadRequest, Type: hearth.ErrTypeInvalidRequest, Code: "invalid_json",
			Message: "The request body is not a JSON object."}
	}
	d := &decoded{req: &hearth.CreateResponseRequest{}}
	r := d.req
	no := false
	r.Store = &no // Messages keeps no state on the server
	// Every reasoning item comes back sealed: a thinking block's signature.
	r.Include = []string{hearth.IncludeReasoningEncryptedContent}

	fields := []string{"model", "messages", "system", "tools", "tool_choice", "thinking", "output_config",
		"context_management", "metadata", "temperature", "top_p", "top_k", "stop_sequences", "cache_control", "mcp_servers",
		"container", "service_tier", "inference_geo", "speed",
		// count_tokens takes neither, but a client that sends the same body to both
		// must not be refused for them.
		"max_tokens", "stream"}
	if err := only(top, "", fields...); err != nil {
		return nil, err
	}
	raw, ok := top["model"]
	if !ok {
		return nil, invalid("model", "Field required")
	}
	if r.Model, err = str(raw, "model"); err != nil {
		return nil, err
	}
	if !count {
		raw, ok := top["max_tokens"]
		if !ok || isNull(raw) {
			return nil, invalid("max_tokens", "Field required")
		}
		var n int
		if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
			return nil, invalid("max_tokens", "Input should be an integer greater than or equal to 1")
		}
		r.MaxOutputTokens = &n
		if raw, ok := top["stream"]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, &r.Stream); err != nil {
				return nil, invalid("stream", "Input should be a valid boolean")
			}
		}
	}
	for _, f := range []struct {
		name string
		to   **float64
	}{{"temperature", &r.Temperature}, {"top_p", &r.TopP}} {
		if raw, ok := top[f.name]; ok && !isNull(raw) {
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil || v < 0 || v > 1 {
				return nil, invalid(f.name, "Input should be a number between 0 and 1")
			}
			*f.to = &v
		}
	}
	if raw, ok := top["top_k"]; ok && !isNull(raw) {
		var k int
		if err := json.Unmarshal(raw, &k); err != nil || k < 0 {
			return nil, invalid("top_k", "Input should be a non-negative integer")
		}
		r.TopK = &k
	}
	if raw, ok := top["stop_sequences"]; ok && !isNull(raw) {
		seqs, err := arr(raw, "stop_sequences")
		if err != nil {
			return nil, err
		}
		if len(seqs) > maxStopSequences {
			// The engine checks every output byte against each of them.
			return nil, invalid("stop_sequences", "at most %d stop sequences are accepted, got %d", maxStopSequences, len(seqs))
		}
		for i, raw := range seqs {
			path := at("stop_sequences", i)
			seq, err := str(raw, path)
			if err != nil {
				return nil, err
			}
			if strings.TrimSpace(seq) == "" {
				// Anthropic refuses these too: an empty one would end every output.
				return nil, invalid(path, "stop sequences must contain non-whitespace")
			}
			r.Stop = append(r.Stop, seq)
		}
	}
	if raw, ok := top["metadata"]; ok && !isNull(raw) {
		m, err := obj(raw, "metadata")
		if err != nil {
			return nil, err
		}
		if err := only(m, "metadata", "user_id"); err != nil {
			return nil, err
		}
		if u, ok := m["user_id"]; ok && !isNull(u) {
			id, err := str(u, "metadata.user_id")
			if err != nil {
				return nil, err
			}
			// An end-user id, as the Responses API's safety_identifier.
			r.SafetyIdentifier = truncate(id, 64)
		}
	}
	for _, f := range []string{"mcp_servers", "container"} {
		if raw, ok := top[f]; ok && !isNull(raw) {
			return nil, invalid(f, "hearth does not run Anthropic's %s; send the request without it", f)
		}
	}
	for _, f := range []string{"service_tier", "inference_geo", "speed", "cache_control"} {
		if _, ok := top[f]; ok {
			// Where and how fast Anthropic runs a request, and its prompt cache, which
			// hearth has by prefix anyway: they do not change the answer.
			if f != "cache_control" {
				d.ignored = append(d.ignored, f)
			}
		}
	}
	if raw, ok := top["context_management"]; ok && !isNull(raw) {
		if err := decodeContextManagement(raw, d); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["system"]; ok && !isNull(raw) {
		text, err := systemText(raw, "system")
		if err != nil {
			return nil, err
		}
		r.Instructions = text
	}
	deferred := false
	if raw, ok := top["tools"]; ok && !isNull(raw) {
		if deferred, err = decodeTools(raw, r); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["tool_choice"]; ok && !isNull(raw) {
		if err := decodeToolChoice(raw, r); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["thinking"]; ok && !isNull(raw) {
		if err := decodeThinking(raw, d); err != nil {
			return nil, err
		}
	}
	if raw, ok := top["output_config"]; ok && !isNull(raw) {
		if err := decodeOutputConfig(raw, r); err != nil {
			return nil, err
		}
	}
	raw, ok = top["messages"]
	if !ok {
		return nil, invalid("messages", "Field required")
	}
	input, loaded, err := decodeConversation(raw)
	if err != nil {
		return nil, err
	}
	for _, name := range loaded {
		i := slices.IndexFunc(r.Tools, func(t hearth.Tool) bool { return t.Name == name })
		if i < 0 {
			return nil, invalid("messages", "a tool_reference names %q, which is not in tools", name)
		}
		r.Tools[i].DeferLoading = false
	}
	deferred = slices.ContainsFunc(r.Tools, func(t hearth.Tool) bool { return t.DeferLoading })
	// The request is decoded by the Responses decoder too: one set of rules for what
	// an item, a tool or a choice may hold, whatever API it came in by.
	enc, err := r.MarshalJSON()
	if err != nil {
		return nil, hearth.ServerError("The request could not be encoded: " + err.Error())
	}
	var rb map[string]any
	if err := json.Unmarshal(enc, &rb); err != nil {
		return nil, hearth.ServerError("The request could not be encoded: " + err.Error())
	}
	rb["input"] = input
	// Anthropic allows any budget from 1 token; the Responses decoder's floor of 16 is
	// OpenAI's rule, not the engine's.
	delete(rb, "max_output_tokens")
	if deferred && searchable {
		// Deferred tools stay out of the prompt until the model loads them: hearth's
		// tool_search does that, run on the server.
		tools, _ := rb["tools"].([]any)
		rb["tools"] = append(tools, map[string]any{"type": "tool_search"})
	}
	dec, more, err := hearth.DecodeCreateRequest(mustJSON(rb))
	if err != nil {
		return nil, err
	}
	dec.MaxOutputTokens, dec.BudgetIsCap, dec.TopK, dec.Stop = r.MaxOutputTokens, true, r.TopK, r.Stop
	dec.ReportStop = len(r.Stop) > 0
	d.req = dec
	d.ignored = append(d.ignored, more...)
	return d, nil
}

// maxStopSequences bounds stop_sequences: far more than a client uses, few enough that
// watching the output for each of them costs little.
const maxStopSequences = 1024

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// systemText is the text of a system prompt: a string, or text blocks (their
// cache_control is accepted: hearth caches by prefix).
func systemText(raw json.RawMessage, path string) (string, error) {
	if isString(raw) {
		return str(raw, path)
	}
	blocks, err := arr(raw, path)
	if err != nil {
		return "", invalid(path, "Input should be a string or an array of text blocks")
	}
	var texts []string
	for i, b := range blocks {
		p := at(path, i)
		o, err := obj(b, p)
		if err != nil {
			return "", err
		}
		if err := only(o, p, "type", "text", "cache_control", "citations"); err != nil {
			return "", err
		}
		if t, _ := str(o["type"], p+".type"); t != "text" {
			return "", invalid(p+".type", "Input should be 'text'")
		}
		s, err := str(o["text"], p+".text")
		if err != nil {
			return "", err
		}
		texts = append(texts, s)
	}
	return strings.Join(texts, "\n\n"), nil
}

// decodeContextManagement accepts the edits that do not change what the model sees on
// hearth: clearing earlier thinking (the model's template already decides which
// earlier thinking it shows). Clearing tool results would drop input, which hearth
// does not do on this API: refused.
func decodeContextManagement(raw json.RawMessage, d *decoded) error {
	o, err := obj(raw, "context_management")
	if err != nil {
		return err
	}
	if err := only(o, "context_management", "edits"); err != nil {
		return err
	}
	edits, err := arr(o["edits"], "context_management.edits")
	if err != nil {
		return err
	}
	for i, e := range edits {
		p := at("context_management.edits", i)
		eo, err := obj(e, p)
		if err != nil {
			return err
		}
		t, _ := str(eo["type"], p+".type")
		if !strings.HasPrefix(t, "clear_thinking_") {
			return invalid(p+".type", "hearth does not apply the context edit %q; send the request without it", t)
		}
	}
	d.ignored = append(d.ignored, "context_management")
	return nil
}

// decodeTools maps client tools to function tools; deferred reports whether any is
// defer_loading.
func decodeTools(raw json.RawMessage, r *hearth.CreateResponseRequest) (deferred bool, err error) {
	list, err := arr(raw, "tools")
	if err != nil {
		return false, err
	}
	for i, t := range list {
		p := at("tools", i)
		o, err := obj(t, p)
		if err != nil {
			return false, err
		}
		if typ, ok := o["type"]; ok && !isNull(typ) {
			s, _ := str(typ, p+".type")
			if s != "custom" {
				// Anthropic's server tools (web search, code execution, text editor...)
				// run on Anthropic's side: hearth has not got them.
				return false, invalid(p+".type", "hearth does not run the tool type %q; declare a client tool with name and input_schema", s)
			}
		}
		if err := only(o, p, "type", "name", "description", "input_schema", "cache_control", "defer_loading",
			"strict", "input_examples", "eager_input_streaming", "allowed_callers"); err != nil {
			return false, err
		}
		name, err := str(o["name"], p+".name")
		if err != nil || name == "" {
			return false, invalid(p+".name", "Field required")
		}
		schema, ok := o["input_schema"]
		if !ok || isNull(schema) {
			return false, invalid(p+".input_schema", "Field required")
		}
		if _, err := obj(schema, p+".input_schema"); err != nil {
			return false, err
		}
		tool := hearth.Tool{Type: hearth.ToolFunction, Name: name, Parameters: schema}
		if raw, ok := o["description"]; ok && !isNull(raw) {
			if tool.Description, err = str(raw, p+".description"); err != nil {
				return false, err
			}
		}
		if raw, ok := o["strict"]; ok && !isNull(raw) {
			var b bool
			if err := json.Unmarshal(raw, &b); err != nil {
				return false, invalid(p+".strict", "Input should be a valid boolean")
			}
			tool.Strict = &b
		}
		if raw, ok := o["defer_loading"]; ok && !isNull(raw) {
			if err := json.Unmarshal(raw, &tool.DeferLoading); err != nil {
				return false, invalid(p+".defer_loading", "Input should be a valid boolean")
			}
			deferred = deferred || tool.DeferLoading
		}
		r.Tools = append(r.Tools, tool)
	}
	return deferred, nil
}

// decodeToolChoice maps tool_choice: auto, any (a call is required: generated under
// the tools' grammar), tool (that tool), none; disable_parallel_tool_use is one call
// at most.
func decodeToolChoice(raw json.RawMessage, r *hearth.CreateResponseRequest) error {
	o, err := obj(raw, "tool_choice")
	if err != nil {
		return err
	}
	if err := only(o, "tool_choice", "type", "name", "disable_parallel_tool_use"); err != nil {
		return err
	}
	typ, err := str(o["type"], "tool_choice.type")
	if err != nil {
		return err
	}
	switch typ {
	case "auto":
		r.ToolChoice = hearth.ToolChoice{Mode: hearth.ToolChoiceAuto}
	case "any":
		r.ToolChoice = hearth.ToolChoice{Mode: hearth.ToolChoiceRequired}
	case "none":
		r.ToolChoice = hearth.ToolChoice{Mode: hearth.ToolChoiceNone}
	case "tool":
		name, err := str(o["name"], "tool_choice.name")
		if err != nil || name == "" {
			return invalid("tool_choice.name", "Field required")
		}
		if !slices.ContainsFunc(r.Tools, func(t hearth.Tool) bool { return t.Name == name }) {
			return invalid("tool_choice.name", "no tool named %q in tools", name)
		}
		r.ToolChoice = hearth.ToolChoice{Type: hearth.ToolFunction, Name: name}
	default:
		return invalid("tool_choice.type", "Input should be 'auto', 'any', 'tool' or 'none'")
	}
	if raw, ok := o["disable_parallel_tool_use"]; ok && !isNull(raw) {
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return invalid("tool_choice.disable_parallel_tool_use", "Input should be a valid boolean")
		}
		if b {
			f := false
			r.ParallelToolCalls = &f
		}
	}
	return nil
}

// decodeThinking maps thinking: enabled (its budget sets the effort), adaptive (the
// model's default, or output_config.effort), disabled (no thinking where the model
// can switch it off).
func decodeThinking(raw json.RawMessage, d *decoded) error {
	o, err := obj(raw, "thinking")
	if err != nil {
		return err
	}
	if err := only(o, "thinking", "type", "budget_tokens", "display"); err != nil {
		return err
	}
	typ, err := str(o["type"], "thinking.type")
	if err != nil {
		return err
	}
	switch typ {
	case "enabled":
		var budget int
		if err := json.Unmarshal(o["budget_tokens"], &budget); err != nil || budget < 1 {
			return invalid("thinking.budget_tokens", "Field required: an integer greater than or equal to 1")
		}
		if mt := d.req.MaxOutputTokens; mt != nil && budget >= *mt {
			return invalid("thinking.budget_tokens", "must be less than max_tokens")
		}
		switch {
		case budget < 4096:
			d.req.Reasoning.Effort = hearth.ReasoningEffortLow
		case budget < 16384:
			d.req.Reasoning.Effort = hearth.ReasoningEffortMedium
		default:
			d.req.Reasoning.Effort = hearth.ReasoningEffortHigh
		}
	case "adaptive":
	case "disabled":
		d.req.Reasoning.Effort = hearth.ReasoningEffortNone
	default:
		return invalid("thinking.type", "Input should be 'enabled', 'adaptive' or 'disabled'")
	}
	if raw, ok := o["display"]; ok && !isNull(raw) {
		s, err := str(raw, "thinking.display")
		if err != nil {
			return err
		}
		switch s {
		case "omitted":
			d.omitThinking = true
		case "summarized", "full":
		default:
			return invalid("thinking.display", "Input should be 'summarized', 'full' or 'omitted'")
		}
	}
	return nil
}

// decodeOutputConfig maps output_config: effort (the reasoning effort) and format (a
// JSON schema the answer follows, enforced by grammar as text.format is).
func decodeOutputConfig(raw json.RawMessage, r *hearth.CreateResponseRequest) error {
	o, err := obj(raw, "output_config")
	if err != nil {
		return err
	}
	if err := only(o, "output_config", "effort", "format"); err != nil {
		return err
	}
	if raw, ok := o["effort"]; ok && !isNull(raw) {
		e, err := str(raw, "output_config.effort")
		if err != nil {
			return err
		}
		switch e {
		case "low", "medium", "high":
			if r.Reasoning.Effort != hearth.ReasoningEffortNone {
				r.Reasoning.Effort = e
			}
		case "xhigh", "max":
			if r.Reasoning.Effort != hearth.ReasoningEffortNone {
				r.Reasoning.Effort = hearth.ReasoningEffortXHigh
			}
		default:
			return invalid("output_config.effort", "Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")
		}
	}
	if raw, ok := o["format"]; ok && !isNull(raw) {
		f, err := obj(raw, "output_config.format")
		if err != nil {
			return err
		}
		if t, _ := str(f["type"], "output_config.format.type"); t != "json_schema" {
			return invalid("output_config.format.type", "Input should be 'json_schema'")
		}
		schema, ok := f["schema"]
		if !ok {
			return invalid("output_config.format.schema", "Field required")
		}
		strict := true
		r.Text.Format = hearth.TextFormat{Type: hearth.FormatJSONSchema, Name: "output", Schema: schema, Strict: &strict}
	}
	return nil
}
