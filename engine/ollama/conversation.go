package ollama

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/ollama/ollama/api"

	"hearth/engine"
	"hearth/internal/schemaguard"
)

// The engine's conversation in Ollama's chat types, as /api/chat would receive it.
// Tool schemas and call arguments are JSON texts in the engine; Ollama's types hold
// them parsed (in insertion order). A conversation is rendered again every turn, and
// again when truncation drops turns, with the same tools and mostly the same calls, so
// each text is parsed once (jsonCache) and a render does the template's work only.

// appendMessages appends msgs to dst as Ollama messages.
func appendMessages(dst []api.Message, msgs []engine.Message) ([]api.Message, error) {
	// One backing array for all calls and one for all images, not one per message.
	var nCalls, nImages int
	for _, m := range msgs {
		nCalls += len(m.ToolCalls)
		nImages += len(m.Images)
	}
	calls := make([]api.ToolCall, nCalls)
	images := make([]api.ImageData, nImages)
	for _, m := range msgs {
		am := api.Message{Role: m.Role, Content: m.Content, Thinking: m.Thinking, ToolName: m.ToolName, ToolCallID: m.ToolCallID}
		if n := len(m.Images); n > 0 {
			am.Images, images = images[:n:n], images[n:]
			for i, img := range m.Images {
				am.Images[i] = img
			}
		}
		if n := len(m.ToolCalls); n > 0 {
			am.ToolCalls, calls = calls[:n:n], calls[n:]
			for i, c := range m.ToolCalls {
				tc := api.ToolCall{ID: c.ID, Function: api.ToolCallFunction{Index: c.Index, Name: c.Name}}
				if len(c.Arguments) > 0 {
					args, err := parsedArguments.get(c.Arguments, parseArguments)
					if err != nil {
						return nil, fmt.Errorf("engine: the arguments of call %q: %w", c.Name, err)
					}
					tc.Function.Arguments = args
				}
				am.ToolCalls[i] = tc
			}
		}
		dst = append(dst, am)
	}
	return dst, nil
}

func parseArguments(text []byte) (api.ToolCallFunctionArguments, error) {
	var args api.ToolCallFunctionArguments
	err := json.Unmarshal(text, &args)
	return args, err
}

// apiTools returns tools as Ollama's function tools; nil when there are none, as the
// runtime has them for a request without tools.
func apiTools(tools []engine.Tool) (api.Tools, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	out := make(api.Tools, len(tools))
	for i, t := range tools {
		params, err := parsedParameters.get(t.Parameters, parseParameters)
		if err != nil {
			return nil, fmt.Errorf("engine: the parameters of tool %q: %w", t.Name, err)
		}
		out[i] = api.Tool{Type: "function", Function: api.ToolFunction{Name: t.Name, Description: t.Description, Parameters: params}}
	}
	return out, nil
}

func parseParameters(text []byte) (api.ToolFunctionParameters, error) {
	var p api.ToolFunctionParameters
	// Ollama's parameter type re-reads the levels inside each level it reads: its cost
	// is the square of the nesting, minutes for a schema thousands deep. Bound the
	// shape first.
	if err := schemaguard.CheckShape(text); err != nil {
		return p, err
	}
	if len(text) > 0 {
		if err := json.Unmarshal(text, &p); err != nil {
			return p, err
		}
	}
	if p.Type == "" {
		// A function without parameters takes none: say so rather than show
		// the model "type": "".
		p.Type = "object"
	}
	if p.Properties == nil {
		p.Properties = api.NewToolPropertiesMap()
	}
	return p, nil
}

// toolParameters is renderer.ToolParameters: the schema read into Ollama's parameter
// type and written back, which keeps only what that type holds.
func toolParameters(schema json.RawMessage) (json.RawMessage, error) {
	return shownParameters.get(schema, func(text []byte) (json.RawMessage, error) {
		p, err := parseParameters(text)
		if err != nil {
			return nil, err
		}
		shown, err := json.Marshal(p)
		// Requests share the text: no room to append into.
		return shown[:len(shown):len(shown)], err
	})
}

var (
	parsedArguments  jsonCache[api.ToolCallFunctionArguments]
	parsedParameters jsonCache[api.ToolFunctionParameters]
	// shownParameters maps a request's tool schema to what the prompt shows of it:
	// an agent sends the same tools every turn.
	shownParameters jsonCache[json.RawMessage]
)

// maxJSONCache bounds the text a jsonCache keeps; when full it starts over.
const maxJSONCache = 8 << 20

// jsonCache remembers values parsed from JSON texts. Renders share the values: the
// template layer, renderers and output parsers only read tools and arguments.
type jsonCache[T any] struct {
	mu    sync.Mutex
	m     map[string]T
	bytes int
}

func (c *jsonCache[T]) get(text []byte, parse func([]byte) (T, error)) (T, error) {
	c.mu.Lock()
	v, ok := c.m[string(text)]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := parse(text)
	if err != nil {
		return v, err
	}
	c.mu.Lock()
	if c.m == nil || c.bytes+len(text) > maxJSONCache {
		c.m, c.bytes = map[string]T{}, 0
	}
	if _, dup := c.m[string(text)]; !dup {
		c.m[string(text)] = v
		c.bytes += len(text)
	}
	c.mu.Unlock()
	return v, nil
}
