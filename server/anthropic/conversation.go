package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"
)

// decodeConversation maps messages to Responses input items (as JSON values, which
// the Responses decoder then checks):
//
//	user text, image              a user message (input_text, input_image)
//	user tool_result              a function_call_output, before the message
//	assistant text                an assistant message (output_text)
//	assistant tool_use            a function_call (input as JSON arguments)
//	assistant thinking            a reasoning item; its signature is encrypted_content
//	assistant redacted_thinking   a reasoning item of encrypted_content alone
//	system (mid-conversation)     a system message at that place
//
// It also returns the tools the client's own tool search loaded: the tool_reference
// blocks of its tool results (Anthropic's client-side tool search, which Claude Code's
// ToolSearch tool is).
func decodeConversation(raw json.RawMessage) ([]any, []string, error) {
	var loaded []string
	msgs, err := arr(raw, "messages")
	if err != nil {
		return nil, nil, err
	}
	var items []any
	for i, m := range msgs {
		p := at("messages", i)
		o, err := obj(m, p)
		if err != nil {
			return nil, nil, err
		}
		if err := only(o, p, "role", "content"); err != nil {
			return nil, nil, err
		}
		role, err := str(o["role"], p+".role")
		if err != nil {
			return nil, nil, invalid(p+".role", "Field required")
		}
		content, ok := o["content"]
		if !ok || isNull(content) {
			return nil, nil, invalid(p+".content", "Field required")
		}
		var more []any
		switch role {
		case "user":
			more, err = userItems(content, p+".content", &loaded)
		case "assistant":
			more, err = assistantItems(content, p+".content")
		case "system":
			// Claude Code puts a system entry among the messages: a system message
			// at that place in the conversation.
			var text string
			if text, err = systemText(content, p+".content"); err == nil {
				more = []any{message("system", []any{part("input_text", text)})}
			}
		default:
			return nil, nil, invalid(p+".role", "Input should be 'user' or 'assistant'")
		}
		if err != nil {
			return nil, nil, err
		}
		items = append(items, more...)
	}
	if len(items) == 0 {
		return nil, nil, invalid("messages", "at least one message is required")
	}
	return items, loaded, nil
}

func message(role string, parts []any) map[string]any {
	return map[string]any{"type": "message", "role": role, "content": parts}
}

func part(typ, text string) map[string]any { return map[string]any{"type": typ, "text": text} }

// blocks reads content: a string is one text block.
func blocks(raw json.RawMessage, path string) ([]map[string]json.RawMessage, error) {
	if isString(raw) {
		s, _ := str(raw, path)
		t, _ := json.Marshal(s)
		return []map[string]json.RawMessage{{"type": json.RawMessage(`"text"`), "text": t}}, nil
	}
	list, err := arr(raw, path)
	if err != nil {
		return nil, invalid(path, "Input should be a string or an array of content blocks")
	}
	out := make([]map[string]json.RawMessage, len(list))
	for i, b := range list {
		if out[i], err = obj(b, at(path, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func blockType(b map[string]json.RawMessage, path string) (string, error) {
	t, err := str(b["type"], path+".type")
	if err != nil {
		return "", invalid(path+".type", "Field required")
	}
	return t, nil
}

// userItems maps a user message: its tool results (function_call_output items, which
// answer the assistant's calls and so come first), then its text and images as one
// user message.
func userItems(raw json.RawMessage, path string, loaded *[]string) ([]any, error) {
	bs, err := blocks(raw, path)
	if err != nil {
		return nil, err
	}
	var items, parts []any
	for i, b := range bs {
		p := at(path, i)
		t, err := blockType(b, p)
		if err != nil {
			return nil, err
		}
		switch t {
		case "text":
			s, err := textOf(b, p)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part("input_text", s))
		case "image":
			img, err := imagePart(b, p)
			if err != nil {
				return nil, err
			}
			parts = append(parts, img)
		case "tool_result":
			it, err := toolResult(b, p, loaded)
			if err != nil {
				return nil, err
			}
			items = append(items, it)
		default:
			return nil, invalid(p+".type", "hearth does not accept %q blocks in a user message (text, image and tool_result only)", t)
		}
	}
	if len(parts) > 0 {
		items = append(items, message("user", parts))
	}
	return items, nil
}

func textOf(b map[string]json.RawMessage, path string) (string, error) {
	if err := only(b, path, "type", "text", "cache_control", "citations"); err != nil {
		return "", err
	}
	return str(b["text"], path+".text")
}

// imagePart is an input_image of a base64 or url source.
func imagePart(b map[string]json.RawMessage, path string) (map[string]any, error) {
	if err := only(b, path, "type", "source", "cache_control"); err != nil {
		return nil, err
	}
	src, err := obj(b["source"], path+".source")
	if err != nil {
		return nil, err
	}
	typ, _ := str(src["type"], path+".source.type")
	switch typ {
	case "base64":
		mt, err := str(src["media_type"], path+".source.media_type")
		if err != nil {
			return nil, err
		}
		data, err := str(src["data"], path+".source.data")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "input_image", "image_url": "data:" + mt + ";base64," + data}, nil
	case "url":
		u, err := str(src["url"], path+".source.url")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "input_image", "image_url": u}, nil
	}
	return nil, invalid(path+".source.type", "Input should be 'base64' or 'url'")
}

// toolResult is a function_call_output. An error result (is_error) reaches the model
// as its content with "Error: " before it: the Responses item has no error flag, and
// the words are what a model reads.
//
// A tool_reference block (the result of the client's own tool search) loads the tool
// it names: the tool is shown to the model from then on, and the result says so.
func toolResult(b map[string]json.RawMessage, path string, loaded *[]string) (map[string]any, error) {
	if err := only(b, path, "type", "tool_use_id", "content", "is_error", "cache_control"); err != nil {
		return nil, err
	}
	id, err := str(b["tool_use_id"], path+".tool_use_id")
	if err != nil || id == "" {
		return nil, invalid(path+".tool_use_id", "Field required")
	}
	isError := false
	if raw, ok := b["is_error"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &isError); err != nil {
			return nil, invalid(path+".is_error", "Input should be a valid boolean")
		}
	}
	var output any = ""
	if raw, ok := b["content"]; ok && !isNull(raw) {
		bs, err := blocks(raw, path+".content")
		if err != nil {
			return nil, err
		}
		var parts []any
		var texts []string
		images := false
		for i, cb := range bs {
			p := at(path+".content", i)
			t, err := blockType(cb, p)
			if err != nil {
				return nil, err
			}
			switch t {
			case "text":
				s, err := textOf(cb, p)
				if err != nil {
					return nil, err
				}
				texts = append(texts, s)
				parts = append(parts, part("input_text", s))
			case "image":
				img, err := imagePart(cb, p)
				if err != nil {
					return nil, err
				}
				images = true
				parts = append(parts, img)
			case "tool_reference":
				if err := only(cb, p, "type", "tool_name", "cache_control"); err != nil {
					return nil, err
				}
				name, err := str(cb["tool_name"], p+".tool_name")
				if err != nil || name == "" {
					return nil, invalid(p+".tool_name", "Field required")
				}
				*loaded = append(*loaded, name)
				s := "Tool " + name + " loaded: it can be called now."
				texts = append(texts, s)
				parts = append(parts, part("input_text", s))
			default:
				return nil, invalid(p+".type", "hearth does not accept %q blocks in a tool_result (text, image and tool_reference only)", t)
			}
		}
		if images {
			if isError {
				parts = append([]any{part("input_text", "Error:")}, parts...)
			}
			output = parts
		} else {
			output = strings.Join(texts, "\n")
		}
	}
	if s, ok := output.(string); ok && isError {
		output = "Error: " + s
	}
	return map[string]any{"type": "function_call_output", "call_id": id, "output": output}, nil
}

// assistantItems maps an assistant message, block by block in order: thinking to
// reasoning, text to an assistant message, tool_use to a function_call.
func assistantItems(raw json.RawMessage, path string) ([]any, error) {
	bs, err := blocks(raw, path)
	if err != nil {
		return nil, err
	}
	var items, parts []any
	flush := func() {
		if len(parts) > 0 {
			items = append(items, message("assistant", parts))
			parts = nil
		}
	}
	for i, b := range bs {
		p := at(path, i)
		t, err := blockType(b, p)
		if err != nil {
			return nil, err
		}
		switch t {
		case "text":
			s, err := textOf(b, p)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part("output_text", s))
		case "thinking":
			flush()
			if err := only(b, p, "type", "thinking", "signature", "cache_control"); err != nil {
				return nil, err
			}
			text, err := str(b["thinking"], p+".thinking")
			if err != nil {
				return nil, err
			}
			it := map[string]any{"type": "reasoning", "summary": []any{}}
			if text != "" {
				it["content"] = []any{part("reasoning_text", text)}
			}
			if raw, ok := b["signature"]; ok && !isNull(raw) {
				sig, err := str(raw, p+".signature")
				if err != nil {
					return nil, err
				}
				if sig != "" {
					// hearth's sealed reasoning: opened, it restores the thinking exactly
					// as the model wrote it; a signature hearth cannot open is a 400.
					it["encrypted_content"] = sig
				}
			}
			if it["content"] == nil && it["encrypted_content"] == nil {
				continue // an empty thinking block shows the model nothing
			}
			items = append(items, it)
		case "redacted_thinking":
			flush()
			if err := only(b, p, "type", "data", "cache_control"); err != nil {
				return nil, err
			}
			data, err := str(b["data"], p+".data")
			if err != nil || data == "" {
				return nil, invalid(p+".data", "Field required")
			}
			items = append(items, map[string]any{"type": "reasoning", "summary": []any{}, "encrypted_content": data})
		case "tool_use":
			flush()
			if err := only(b, p, "type", "id", "name", "input", "cache_control", "caller"); err != nil {
				return nil, err
			}
			id, err := str(b["id"], p+".id")
			if err != nil || id == "" {
				return nil, invalid(p+".id", "Field required")
			}
			name, err := str(b["name"], p+".name")
			if err != nil || name == "" {
				return nil, invalid(p+".name", "Field required")
			}
			input := b["input"]
			if isNull(input) {
				input = json.RawMessage(`{}`)
			}
			if _, err := obj(input, p+".input"); err != nil {
				return nil, err
			}
			items = append(items, map[string]any{"type": "function_call", "call_id": id, "name": name,
				"arguments": string(compactJSON(input))})
		default:
			return nil, invalid(p+".type", "hearth does not accept %q blocks in an assistant message (text, thinking, redacted_thinking and tool_use only)", t)
		}
	}
	flush()
	return items, nil
}

// compactJSON is raw without insignificant space, its keys in their order: the
// arguments render as the model wrote them.
func compactJSON(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
