package chattemplate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ardanlabs/jinja"
)

// Inputs are the variables Hugging Face's apply_chat_template hands a template.
type Inputs struct {
	Messages []Message `json:"messages"`
	// Tools are in OpenAI's function shape; nil renders as `tools = none`, as HF passes
	// it when a request has no tools.
	Tools []Tool `json:"tools,omitempty"`
	// Documents are the retrieval documents (objects); nil renders as none.
	Documents           []json.RawMessage `json:"documents,omitempty"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	BOSToken            string            `json:"bos_token"`
	EOSToken            string            `json:"eos_token"`
	// EnableThinking, ReasoningEffort and BuiltinTools are defined for the template only
	// when set: templates test `enable_thinking is defined` to tell "not asked" apart.
	EnableThinking  *bool    `json:"enable_thinking,omitempty"`
	ReasoningEffort string   `json:"reasoning_effort,omitempty"`
	BuiltinTools    []string `json:"builtin_tools,omitempty"`
	// Extra are further variables (a family's own switches), JSON-shaped values.
	Extra map[string]any `json:"extra,omitempty"`
	// Now is strftime_now's clock; zero means the time of the render.
	Now time.Time `json:"-"`
}

// Message is one message as HF's chat format has it. Keys are handed to the template
// only when set, as a client's message dict would carry them.
type Message struct {
	Role    string  `json:"role"`
	Content Content `json:"content"`
	// ReasoningContent and Thinking are the reasoning of an assistant turn, under the two
	// names templates read.
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	Thinking         *string    `json:"thinking,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	Name             string     `json:"name,omitempty"`
}

// Content is a message's content: a string, a list of parts, or null.
type Content struct {
	Text  string
	Parts []Part
	// IsParts says the content is the list Parts (even empty); Null that it is null.
	IsParts, Null bool
}

// Part is one part of a multi-part content: {"type": "text", "text": ...},
// {"type": "image"}, {"type": "image_url", "image_url": {"url": ...}} and the like;
// Fields are the part's keys after type, in order.
type Part struct {
	Type   string
	Fields []Field
}

// Field is one key of an object, kept in order.
type Field struct {
	Key   string
	Value json.RawMessage
}

// ToolCall is one call of an assistant turn; Arguments is a JSON object (templates
// read its keys and tojson it) or, as some clients send it, a JSON string.
type ToolCall struct {
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// Tool is one tool in OpenAI's function shape.
type Tool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// UnmarshalJSON reads a string, a list of parts, or null.
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		c.Null = true
		return nil
	case len(b) > 0 && b[0] == '"':
		return json.Unmarshal(b, &c.Text)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("content: a string, a list of parts or null: %w", err)
	}
	c.IsParts = true
	for _, r := range raw {
		fields, err := objectFields(r)
		if err != nil {
			return fmt.Errorf("content part: %w", err)
		}
		var p Part
		for _, f := range fields {
			if f.Key == "type" {
				if err := json.Unmarshal(f.Value, &p.Type); err != nil {
					return fmt.Errorf("content part type: %w", err)
				}
				continue
			}
			p.Fields = append(p.Fields, f)
		}
		c.Parts = append(c.Parts, p)
	}
	return nil
}

// objectFields splits a JSON object into its keys, in order.
func objectFields(b []byte) ([]Field, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var fields []Field
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		fields = append(fields, Field{Key: k.(string), Value: v})
	}
	return fields, nil
}

// values are the template's variables; shared says the messages' and tools' values may
// come from (and go to) the cache of converted values.
func (in Inputs) values(shared bool) map[string]jinja.Value {
	vars := make(map[string]jinja.Value, 16)
	msgs := make([]jinja.Value, len(in.Messages))
	for i, m := range in.Messages {
		if shared {
			msgs[i] = cachedValue(m.cacheKey(), m.value)
		} else {
			msgs[i] = m.value()
		}
	}
	vars["messages"] = jinja.NewList(msgs)
	vars["tools"] = jinja.None()
	if in.Tools != nil {
		tools := make([]jinja.Value, len(in.Tools))
		for i, t := range in.Tools {
			if shared {
				tools[i] = cachedValue(t.cacheKey(), t.value)
			} else {
				tools[i] = t.value()
			}
		}
		vars["tools"] = jinja.NewList(tools)
	}
	vars["documents"] = jinja.None()
	if in.Documents != nil {
		docs := make([]jinja.Value, len(in.Documents))
		for i, d := range in.Documents {
			docs[i] = jsonValue(d)
		}
		vars["documents"] = jinja.NewList(docs)
	}
	vars["add_generation_prompt"] = jinja.NewBool(in.AddGenerationPrompt)
	vars["bos_token"] = jinja.NewString(in.BOSToken)
	vars["eos_token"] = jinja.NewString(in.EOSToken)
	if in.EnableThinking != nil {
		vars["enable_thinking"] = jinja.NewBool(*in.EnableThinking)
	}
	if in.ReasoningEffort != "" {
		vars["reasoning_effort"] = jinja.NewString(in.ReasoningEffort)
	}
	if in.BuiltinTools != nil {
		bt := make([]jinja.Value, len(in.BuiltinTools))
		for i, b := range in.BuiltinTools {
			bt[i] = jinja.NewString(b)
		}
		vars["builtin_tools"] = jinja.NewList(bt)
	}
	for k, v := range in.Extra {
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		vars[k] = jsonValue(b)
	}
	return vars
}

func (m Message) value() jinja.Value {
	d := jinja.NewDict()
	dd := d.AsDict()
	dd.Set("role", jinja.NewString(m.Role))
	dd.Set("content", m.Content.value())
	if m.ReasoningContent != nil {
		dd.Set("reasoning_content", jinja.NewString(*m.ReasoningContent))
	}
	if m.Thinking != nil {
		dd.Set("thinking", jinja.NewString(*m.Thinking))
	}
	if m.ToolCalls != nil {
		calls := make([]jinja.Value, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i] = c.value()
		}
		dd.Set("tool_calls", jinja.NewList(calls))
	}
	if m.ToolCallID != "" {
		dd.Set("tool_call_id", jinja.NewString(m.ToolCallID))
	}
	if m.Name != "" {
		dd.Set("name", jinja.NewString(m.Name))
	}
	return d
}

func (c Content) value() jinja.Value {
	switch {
	case c.Null:
		return jinja.None()
	case !c.IsParts:
		return jinja.NewString(c.Text)
	}
	parts := make([]jinja.Value, len(c.Parts))
	for i, p := range c.Parts {
		d := jinja.NewDict()
		d.AsDict().Set("type", jinja.NewString(p.Type))
		for _, f := range p.Fields {
			d.AsDict().Set(f.Key, jsonValue(f.Value))
		}
		parts[i] = d
	}
	return jinja.NewList(parts)
}

func (c ToolCall) value() jinja.Value {
	d := jinja.NewDict()
	dd := d.AsDict()
	if c.ID != "" {
		dd.Set("id", jinja.NewString(c.ID))
	}
	if c.Type != "" {
		dd.Set("type", jinja.NewString(c.Type))
	}
	fn := jinja.NewDict()
	fn.AsDict().Set("name", jinja.NewString(c.Function.Name))
	fn.AsDict().Set("arguments", jsonValue(c.Function.Arguments))
	dd.Set("function", fn)
	return d
}

func (t Tool) value() jinja.Value {
	d := jinja.NewDict()
	d.AsDict().Set("type", jinja.NewString(t.Type))
	fn := jinja.NewDict()
	fn.AsDict().Set("name", jinja.NewString(t.Function.Name))
	if t.Function.Description != "" {
		fn.AsDict().Set("description", jinja.NewString(t.Function.Description))
	}
	if t.Function.Parameters != nil {
		fn.AsDict().Set("parameters", jsonValue(t.Function.Parameters))
	}
	d.AsDict().Set("function", fn)
	return d
}

// jsonValue is a JSON document as template values, objects keeping their key order (as
// Python's json.loads does, which tojson then writes back in that order). Invalid JSON
// is undefined.
func jsonValue(b []byte) jinja.Value {
	if len(bytes.TrimSpace(b)) == 0 {
		return jinja.Undefined()
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined()
	}
	return v
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	t, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch v := t.(type) {
	case json.Delim:
		if v == '[' {
			items := []jinja.Value{}
			for dec.More() {
				item, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, item)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		}
		d := jinja.NewDict()
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return jinja.Undefined(), err
			}
			item, err := decodeValue(dec)
			if err != nil {
				return jinja.Undefined(), err
			}
			d.AsDict().Set(k.(string), item)
		}
		_, err := dec.Token()
		return d, err
	case json.Number:
		// Python keeps 1 and 1.0 apart, and tojson writes them back so.
		return jinja.FromGoValue(v), nil
	default:
		return jinja.FromGoValue(v), nil
	}
}
