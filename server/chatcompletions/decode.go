package chatcompletions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"hearth"
)

// chatRequest is what the door keeps of a Chat Completions body besides the hearth
// request it becomes.
type chatRequest struct {
	req *hearth.CreateResponseRequest
	// includeUsage: stream_options.include_usage, a last chunk with the usage.
	includeUsage bool
	// logprobs: the choice carries the tokens' log probabilities.
	logprobs bool
	// ignored are the fields the door did not use (x-hearth-ignored).
	ignored []string
	// paths maps the hearth request's input items back to the messages they came
	// from, for errors that name an input item.
	paths []string
}

// maxStops is OpenAI's bound on stop sequences.
const maxStops = 4

// knownFields are the Chat Completions fields the door reads; refusedFields those it
// refuses because honouring them is not possible here and ignoring them would change
// the answer the client asked for.
var knownFields = map[string]bool{
	"model": true, "messages": true, "tools": true, "tool_choice": true, "parallel_tool_calls": true,
	"response_format": true, "max_tokens": true, "max_completion_tokens": true, "stop": true,
	"temperature": true, "top_p": true, "seed": true, "frequency_penalty": true, "presence_penalty": true,
	"logprobs": true, "top_logprobs": true, "reasoning_effort": true, "stream": true, "stream_options": true,
	"n": true, "store": true, "metadata": true, "user": true, "safety_identifier": true,
	"prompt_cache_key": true, "prompt_cache_retention": true, "service_tier": true, "verbosity": true,
	"modalities": true, "logit_bias": true,
}

var refusedFields = map[string]string{
	"functions":          "'functions' is the deprecated form of tools; send 'tools' instead.",
	"function_call":      "'function_call' is the deprecated form of tool_choice; send 'tool_choice' instead.",
	"audio":              "Audio output is not supported.",
	"web_search_options": "Web search is not supported on Chat Completions; use /v1/responses with a web_search tool.",
	"prediction":         "Predicted outputs are not supported.",
}

// decodeChat reads a Chat Completions body into the hearth request it asks for,
// validating the Chat Completions shape (every failure a 400 naming the field as the
// client wrote it) and leaving the rest to hearth's request decoder.
func decodeChat(body []byte) (*chatRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		msg := "We could not parse the JSON body of your request: expected a JSON object."
		if err != nil {
			msg = "We could not parse the JSON body of your request: " + err.Error() + "."
		}
		return nil, hearth.InvalidRequest("", hearth.CodeInvalidJSON, msg)
	}
	out := &chatRequest{}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if msg, ok := refusedFields[k]; ok && !isNull(fields[k]) {
			return nil, hearth.InvalidRequest(k, "unsupported_parameter", msg)
		}
		if !knownFields[k] && !isNull(fields[k]) {
			// Chat clients send their servers' extensions (top_k, min_p,
			// chat_template_kwargs...): said, not refused.
			out.ignored = append(out.ignored, cutName(k))
		}
	}
	get := func(k string) (json.RawMessage, bool) {
		raw, ok := fields[k]
		if !ok || isNull(raw) {
			return nil, false
		}
		return raw, true
	}
	r := map[string]any{}
	copyAs := func(from, to string) {
		if raw, ok := get(from); ok {
			r[to] = raw
		}
	}
	for _, k := range []string{"model", "temperature", "top_p", "frequency_penalty", "presence_penalty",
		"parallel_tool_calls", "metadata", "user", "safety_identifier", "prompt_cache_key",
		"prompt_cache_retention", "service_tier"} {
		copyAs(k, k)
	}
	if _, ok := fields["model"]; !ok {
		return nil, hearth.InvalidRequest("model", hearth.CodeMissingRequiredParameter, "Missing required parameter: 'model'.")
	}
	if raw, ok := get("n"); ok {
		n, err := integer(raw, "n")
		if err != nil {
			return nil, err
		}
		if n != 1 {
			return nil, hearth.InvalidRequest("n", "unsupported_value",
				fmt.Sprintf("Only n=1 is supported (one choice per request); got n=%d. Send the request again for another choice.", n))
		}
	}
	if raw, ok := get("modalities"); ok {
		var mods []string
		if json.Unmarshal(raw, &mods) != nil {
			return nil, typeError("modalities", "an array of strings")
		}
		for i, m := range mods {
			if m != "text" {
				return nil, hearth.InvalidRequest(fmt.Sprintf("modalities[%d]", i), "unsupported_value",
					fmt.Sprintf("Only the text modality is supported; got %q.", m))
			}
		}
	}
	if raw, ok := get("logit_bias"); ok {
		var bias map[string]json.RawMessage
		if json.Unmarshal(raw, &bias) != nil {
			return nil, typeError("logit_bias", "an object")
		}
		if len(bias) > 0 {
			return nil, hearth.InvalidRequest("logit_bias", "unsupported_parameter", "logit_bias is not supported.")
		}
	}
	raw, ok := get("messages")
	if !ok {
		return nil, hearth.InvalidRequest("messages", hearth.CodeMissingRequiredParameter, "Missing required parameter: 'messages'.")
	}
	input, paths, err := decodeMessages(raw)
	if err != nil {
		return nil, err
	}
	r["input"], out.paths = input, paths
	if raw, ok := get("tools"); ok {
		tools, err := decodeTools(raw)
		if err != nil {
			return nil, err
		}
		r["tools"] = tools
	}
	if raw, ok := get("tool_choice"); ok {
		choice, err := decodeToolChoice(raw)
		if err != nil {
			return nil, err
		}
		r["tool_choice"] = choice
	}
	text := map[string]any{}
	if raw, ok := get("response_format"); ok {
		format, err := decodeResponseFormat(raw)
		if err != nil {
			return nil, err
		}
		text["format"] = format
	}
	if raw, ok := get("verbosity"); ok {
		text["verbosity"] = raw
	}
	if len(text) > 0 {
		r["text"] = text
	}
	if raw, ok := get("reasoning_effort"); ok {
		r["reasoning"] = map[string]any{"effort": raw}
	}
	if raw, ok := get("store"); ok {
		r["store"] = raw
	} else {
		// Chat Completions stores nothing unless asked (OpenAI's default).
		r["store"] = false
	}
	if raw, ok := get("stream"); ok {
		r["stream"] = raw
	}
	if raw, ok := get("stream_options"); ok {
		var so map[string]json.RawMessage
		if json.Unmarshal(raw, &so) != nil || so == nil {
			return nil, typeError("stream_options", "an object")
		}
		if v, ok := so["include_usage"]; ok && !isNull(v) {
			if json.Unmarshal(v, &out.includeUsage) != nil {
				return nil, typeError("stream_options.include_usage", "a boolean")
			}
		}
	}
	if raw, ok := get("logprobs"); ok {
		if json.Unmarshal(raw, &out.logprobs) != nil {
			return nil, typeError("logprobs", "a boolean")
		}
	}
	if raw, ok := get("top_logprobs"); ok {
		if !out.logprobs {
			return nil, hearth.InvalidRequest("top_logprobs", hearth.CodeInvalidValue,
				"top_logprobs requires logprobs to be true.")
		}
		r["top_logprobs"] = raw
	}
	if out.logprobs {
		r["include"] = []string{hearth.IncludeOutputTextLogprobs}
	}
	// Decoded by hearth's own decoder: the same checks as /v1/responses, with the
	// fields' paths named as this API names them (chatParam).
	b, err := json.Marshal(r)
	if err != nil {
		return nil, hearth.ServerError("The request could not be encoded: " + err.Error())
	}
	req, ignored, err := hearth.DecodeCreateRequest(b)
	if he := (*hearth.Error)(nil); errors.As(err, &he) {
		return nil, inChatTerms(he, out.paths)
	}
	if err != nil {
		return nil, err
	}
	out.req, out.ignored = req, append(out.ignored, ignored...)
	// After the decoder: Chat Completions allows budgets below /v1/responses' least
	// (a client asks for one token to check a model).
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if raw, ok := get(k); ok {
			n, err := integer(raw, k)
			if err != nil {
				return nil, err
			}
			if n < 1 {
				return nil, hearth.InvalidRequest(k, hearth.CodeIntegerBelowMinValue,
					fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", k, n))
			}
			if k == "max_completion_tokens" || req.MaxOutputTokens == nil {
				req.MaxOutputTokens = &n
			}
		}
	}
	if raw, ok := get("stop"); ok {
		if req.Stop, err = decodeStop(raw); err != nil {
			return nil, err
		}
	}
	if raw, ok := get("seed"); ok {
		n, err := integer(raw, "seed")
		if err != nil {
			return nil, err
		}
		req.Seed = &n
	}
	return out, nil
}

func decodeStop(raw json.RawMessage) ([]string, error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return nil, typeError("stop", "a string or an array of strings")
	}
	if len(many) > maxStops {
		return nil, hearth.InvalidRequest("stop", hearth.CodeArrayAboveMaxLength,
			fmt.Sprintf("Invalid 'stop': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", maxStops, len(many)))
	}
	var out []string
	for i, s := range many {
		if s == "" {
			return nil, hearth.InvalidRequest(fmt.Sprintf("stop[%d]", i), hearth.CodeEmptyString,
				fmt.Sprintf("Invalid 'stop[%d]': empty string.", i))
		}
		out = append(out, s)
	}
	return out, nil
}

// roles are the roles a message may have.
var roles = []string{"system", "developer", "user", "assistant", "tool"}

// decodeMessages turns messages into hearth input items, and names the message
// each item came from.
func decodeMessages(raw json.RawMessage) ([]map[string]any, []string, error) {
	var msgs []json.RawMessage
	if json.Unmarshal(raw, &msgs) != nil {
		return nil, nil, typeError("messages", "an array of messages")
	}
	if len(msgs) == 0 {
		return nil, nil, hearth.InvalidRequest("messages", hearth.CodeEmptyArray,
			"Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	var items []map[string]any
	var paths []string
	add := func(path string, it map[string]any) {
		items = append(items, it)
		paths = append(paths, path)
	}
	for i, m := range msgs {
		p := fmt.Sprintf("messages[%d]", i)
		var o map[string]json.RawMessage
		if json.Unmarshal(m, &o) != nil || o == nil {
			return nil, nil, typeError(p, "an object")
		}
		var role string
		rawRole, ok := o["role"]
		if !ok || isNull(rawRole) {
			return nil, nil, hearth.InvalidRequest(p+".role", hearth.CodeMissingRequiredParameter,
				fmt.Sprintf("Missing required parameter: '%s.role'.", p))
		}
		if json.Unmarshal(rawRole, &role) != nil {
			return nil, nil, typeError(p+".role", "a string")
		}
		if !slices.Contains(roles, role) {
			return nil, nil, hearth.InvalidRequest(p+".role", hearth.CodeInvalidValue,
				fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", cutName(role), quoted(roles)))
		}
		content, hasContent := o["content"]
		if hasContent && isNull(content) {
			hasContent = false
		}
		switch role {
		case "system", "developer", "user":
			if !hasContent {
				return nil, nil, hearth.InvalidRequest(p+".content", hearth.CodeMissingRequiredParameter,
					fmt.Sprintf("Missing required parameter: '%s.content'.", p))
			}
			parts, err := decodeContent(content, p+".content", role == "user")
			if err != nil {
				return nil, nil, err
			}
			add(p, map[string]any{"type": "message", "role": role, "content": parts})
		case "assistant":
			if rc, ok := o["reasoning_content"]; ok && !isNull(rc) {
				var text string
				if json.Unmarshal(rc, &text) != nil {
					return nil, nil, typeError(p+".reasoning_content", "a string")
				}
				if text != "" {
					add(p+".reasoning_content", map[string]any{"type": "reasoning", "summary": []any{},
						"content": []any{map[string]any{"type": "reasoning_text", "text": text}}})
				}
			}
			calls, hasCalls := o["tool_calls"]
			hasCalls = hasCalls && !isNull(calls)
			if !hasContent && !hasCalls {
				return nil, nil, hearth.InvalidRequest(p+".content", hearth.CodeMissingRequiredParameter,
					fmt.Sprintf("Missing required parameter: '%s.content' (an assistant message without tool_calls needs content).", p))
			}
			if hasContent {
				parts, err := decodeAssistantContent(content, p+".content")
				if err != nil {
					return nil, nil, err
				}
				if len(parts) > 0 {
					add(p, map[string]any{"type": "message", "role": "assistant", "content": parts})
				}
			}
			if hasCalls {
				var list []json.RawMessage
				if json.Unmarshal(calls, &list) != nil {
					return nil, nil, typeError(p+".tool_calls", "an array of tool calls")
				}
				for j, c := range list {
					cp := fmt.Sprintf("%s.tool_calls[%d]", p, j)
					it, err := decodeToolCall(c, cp)
					if err != nil {
						return nil, nil, err
					}
					add(cp, it)
				}
			}
		case "tool":
			var id string
			rawID, ok := o["tool_call_id"]
			if !ok || isNull(rawID) {
				return nil, nil, hearth.InvalidRequest(p+".tool_call_id", hearth.CodeMissingRequiredParameter,
					fmt.Sprintf("Missing required parameter: '%s.tool_call_id'.", p))
			}
			if json.Unmarshal(rawID, &id) != nil {
				return nil, nil, typeError(p+".tool_call_id", "a string")
			}
			if !hasContent {
				return nil, nil, hearth.InvalidRequest(p+".content", hearth.CodeMissingRequiredParameter,
					fmt.Sprintf("Missing required parameter: '%s.content'.", p))
			}
			parts, err := decodeContent(content, p+".content", false)
			if err != nil {
				return nil, nil, err
			}
			var text strings.Builder
			for _, part := range parts {
				text.WriteString(part["text"].(string))
			}
			add(p, map[string]any{"type": "function_call_output", "call_id": id, "output": text.String()})
		}
	}
	return items, paths, nil
}

// decodeContent reads a message's content: a string, or parts (text; image_url and
// file for a user), as hearth's input parts.
func decodeContent(raw json.RawMessage, path string, user bool) ([]map[string]any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []map[string]any{{"type": "input_text", "text": s}}, nil
	}
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, typeError(path, "a string or an array of content parts")
	}
	allowed := []string{"text"}
	if user {
		allowed = []string{"text", "image_url", "file"}
	}
	var out []map[string]any
	for i, part := range list {
		pp := fmt.Sprintf("%s[%d]", path, i)
		typ, err := partType(part, pp, allowed)
		if err != nil {
			return nil, err
		}
		switch typ {
		case "text":
			text, err := requiredString(part, "text", pp)
			if err != nil {
				return nil, err
			}
			out = append(out, map[string]any{"type": "input_text", "text": text})
		case "image_url":
			var img struct {
				URL    *string `json:"url"`
				Detail string  `json:"detail"`
			}
			if json.Unmarshal(part["image_url"], &img) != nil || img.URL == nil {
				return nil, hearth.InvalidRequest(pp+".image_url.url", hearth.CodeMissingRequiredParameter,
					fmt.Sprintf("Missing required parameter: '%s.image_url.url'.", pp))
			}
			// An input_image: the core reads data: URLs and fetches http ones under
			// the same rules as on /v1/responses.
			it := map[string]any{"type": "input_image", "image_url": *img.URL}
			if img.Detail != "" {
				it["detail"] = img.Detail
			}
			out = append(out, it)
		case "file":
			var f struct {
				FileID   string `json:"file_id"`
				FileData string `json:"file_data"`
				Filename string `json:"filename"`
			}
			if json.Unmarshal(part["file"], &f) != nil {
				return nil, typeError(pp+".file", "an object")
			}
			it := map[string]any{"type": "input_file"}
			for k, v := range map[string]string{"file_id": f.FileID, "file_data": f.FileData, "filename": f.Filename} {
				if v != "" {
					it[k] = v
				}
			}
			out = append(out, it)
		}
	}
	return out, nil
}

// decodeAssistantContent reads an assistant message's content as output parts.
func decodeAssistantContent(raw json.RawMessage, path string) ([]map[string]any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []map[string]any{{"type": "output_text", "text": s}}, nil
	}
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, typeError(path, "a string or an array of content parts")
	}
	var out []map[string]any
	for i, part := range list {
		pp := fmt.Sprintf("%s[%d]", path, i)
		typ, err := partType(part, pp, []string{"text", "refusal"})
		if err != nil {
			return nil, err
		}
		text, err := requiredString(part, typ, pp)
		if err != nil {
			return nil, err
		}
		if typ == "refusal" {
			out = append(out, map[string]any{"type": "refusal", "refusal": text})
		} else {
			out = append(out, map[string]any{"type": "output_text", "text": text})
		}
	}
	return out, nil
}

func decodeToolCall(raw json.RawMessage, path string) (map[string]any, error) {
	var c struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function *struct {
			Name      string  `json:"name"`
			Arguments *string `json:"arguments"`
		} `json:"function"`
		Custom *struct {
			Name  string `json:"name"`
			Input string `json:"input"`
		} `json:"custom"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return nil, typeError(path, "a tool call object")
	}
	if c.ID == "" {
		return nil, hearth.InvalidRequest(path+".id", hearth.CodeMissingRequiredParameter,
			fmt.Sprintf("Missing required parameter: '%s.id'.", path))
	}
	switch c.Type {
	case "function", "":
		if c.Function == nil || c.Function.Name == "" {
			return nil, hearth.InvalidRequest(path+".function.name", hearth.CodeMissingRequiredParameter,
				fmt.Sprintf("Missing required parameter: '%s.function.name'.", path))
		}
		args := "{}"
		if c.Function.Arguments != nil {
			args = *c.Function.Arguments
		}
		return map[string]any{"type": "function_call", "call_id": c.ID, "name": c.Function.Name, "arguments": args}, nil
	case "custom":
		if c.Custom == nil || c.Custom.Name == "" {
			return nil, hearth.InvalidRequest(path+".custom.name", hearth.CodeMissingRequiredParameter,
				fmt.Sprintf("Missing required parameter: '%s.custom.name'.", path))
		}
		return map[string]any{"type": "custom_tool_call", "call_id": c.ID, "name": c.Custom.Name, "input": c.Custom.Input}, nil
	}
	return nil, hearth.InvalidRequest(path+".type", hearth.CodeInvalidValue,
		fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function' and 'custom'.", cutName(c.Type)))
}

// decodeTools reads tools ({"type":"function","function":{...}}, or custom) as
// hearth's tools.
func decodeTools(raw json.RawMessage) ([]any, error) {
	var list []map[string]json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, typeError("tools", "an array of tools")
	}
	out := make([]any, 0, len(list))
	for i, t := range list {
		p := fmt.Sprintf("tools[%d]", i)
		typ, err := partType(t, p, []string{"function", "custom"})
		if err != nil {
			return nil, err
		}
		var def map[string]json.RawMessage
		if json.Unmarshal(t[typ], &def) != nil || def == nil {
			return nil, hearth.InvalidRequest(p+"."+typ, hearth.CodeMissingRequiredParameter,
				fmt.Sprintf("Missing required parameter: '%s.%s'.", p, typ))
		}
		tool := map[string]any{"type": typ}
		for k, v := range def {
			tool[k] = v
		}
		out = append(out, tool)
	}
	return out, nil
}

// decodeToolChoice reads tool_choice as hearth's: the modes as they are, a named
// function or custom tool, or the allowed_tools form.
func decodeToolChoice(raw json.RawMessage) (any, error) {
	var mode string
	if json.Unmarshal(raw, &mode) == nil {
		return mode, nil // the decoder checks the value
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil || o == nil {
		return nil, typeError("tool_choice", "a string or an object")
	}
	typ, err := partType(o, "tool_choice", []string{"function", "custom", "allowed_tools"})
	if err != nil {
		return nil, err
	}
	switch typ {
	case "function", "custom":
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(o[typ], &named) != nil || named.Name == "" {
			return nil, hearth.InvalidRequest("tool_choice."+typ+".name", hearth.CodeMissingRequiredParameter,
				"Missing required parameter: 'tool_choice."+typ+".name'.")
		}
		return map[string]any{"type": typ, "name": named.Name}, nil
	}
	var allowed struct {
		Mode  json.RawMessage              `json:"mode"`
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if json.Unmarshal(o["allowed_tools"], &allowed) != nil {
		return nil, typeError("tool_choice.allowed_tools", "an object with mode and tools")
	}
	refs := make([]map[string]any, 0, len(allowed.Tools))
	for i, t := range allowed.Tools {
		p := fmt.Sprintf("tool_choice.allowed_tools.tools[%d]", i)
		typ, err := partType(t, p, []string{"function", "custom"})
		if err != nil {
			return nil, err
		}
		var named struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(t[typ], &named) != nil || named.Name == "" {
			return nil, hearth.InvalidRequest(p+"."+typ+".name", hearth.CodeMissingRequiredParameter,
				"Missing required parameter: '"+p+"."+typ+".name'.")
		}
		refs = append(refs, map[string]any{"type": typ, "name": named.Name})
	}
	out := map[string]any{"type": "allowed_tools", "tools": refs}
	if len(allowed.Mode) > 0 {
		out["mode"] = allowed.Mode
	}
	return out, nil
}

// decodeResponseFormat reads response_format as hearth's text.format.
func decodeResponseFormat(raw json.RawMessage) (any, error) {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil || o == nil {
		return nil, typeError("response_format", "an object")
	}
	typ, err := partType(o, "response_format", []string{"text", "json_object", "json_schema"})
	if err != nil {
		return nil, err
	}
	if typ != "json_schema" {
		return map[string]any{"type": typ}, nil
	}
	var js map[string]json.RawMessage
	if json.Unmarshal(o["json_schema"], &js) != nil || js == nil {
		return nil, hearth.InvalidRequest("response_format.json_schema", hearth.CodeMissingRequiredParameter,
			"Missing required parameter: 'response_format.json_schema'.")
	}
	format := map[string]any{"type": "json_schema"}
	for k, v := range js {
		format[k] = v
	}
	return format, nil
}

// partType is the type of a part, tool or choice object, checked against allowed.
func partType(o map[string]json.RawMessage, path string, allowed []string) (string, error) {
	raw, ok := o["type"]
	if !ok || isNull(raw) {
		return "", hearth.InvalidRequest(path+".type", hearth.CodeMissingRequiredParameter,
			fmt.Sprintf("Missing required parameter: '%s.type'.", path))
	}
	var typ string
	if json.Unmarshal(raw, &typ) != nil {
		return "", typeError(path+".type", "a string")
	}
	if !slices.Contains(allowed, typ) {
		return "", hearth.InvalidRequest(path+".type", hearth.CodeInvalidValue,
			fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", cutName(typ), quoted(allowed)))
	}
	return typ, nil
}

func requiredString(o map[string]json.RawMessage, key, path string) (string, error) {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return "", hearth.InvalidRequest(path+"."+key, hearth.CodeMissingRequiredParameter,
			fmt.Sprintf("Missing required parameter: '%s.%s'.", path, key))
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", typeError(path+"."+key, "a string")
	}
	return s, nil
}

func integer(raw json.RawMessage, path string) (int, error) {
	var n int
	if json.Unmarshal(raw, &n) != nil {
		return 0, typeError(path, "an integer")
	}
	return n, nil
}

func typeError(path, want string) error {
	return hearth.InvalidRequest(path, hearth.CodeInvalidType, fmt.Sprintf("Invalid type for '%s': expected %s.", path, want))
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func quoted(vs []string) string {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

// cutName bounds a client's string in an error or header.
func cutName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
