package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"hearth"
	"hearth/internal/schemaguard"
	"hearth/toolgrammar"
)

// toolPolicy is what tool_choice, allowed_tools, strict tools, parallel_tool_calls and
// max_tool_calls ask of one response, in the model's tool names. The engine enforces it
// while generating, with the tools still in the prompt: removing them would change the
// prompt prefix and throw the runtime's KV cache away.
type toolPolicy struct {
	// mode is none, auto or required (hearth.ToolChoice.EffectiveMode).
	mode string
	// allowed are the tools the model may call, in request order.
	allowed []toolgrammar.Tool
	// constrain: every call is generated under a grammar of the allowed tools, because
	// the model alone could call a tool it may not (allowed_tools is a strict subset,
	// or a named function), or a tool is strict.
	constrain bool
	// maxCalls caps the calls of the response; 0 means no cap.
	maxCalls int
	// schemas validate arguments, by model tool name; a tool whose schema does not
	// compile has none (the grammar still shapes its calls).
	schemas map[string]*jsonschema.Schema
	// freeforms check the raw input of custom tool calls, by model tool name.
	freeforms map[string]*toolgrammar.Freeform
}

// safetyMaxCalls stops a model that loops on calls when nothing else would: an
// enforced continuation ends each call with the closer, and a script or a confused
// model may open the next one for ever.
const safetyMaxCalls = 128

// newToolPolicy derives the policy of req over the conversation's tools. It returns
// nil when there is nothing to enforce, so Run keeps its single-request fast path.
func newToolPolicy(req *hearth.CreateResponseRequest, conv *Conversation, tools []toolgrammar.Tool) *toolPolicy {
	if len(tools) == 0 {
		return nil
	}
	// The grammar and the validation both use the schemas as the client sent them:
	// the prompt's copy went through the runtime's tool type, which keeps only the
	// keywords templates show (no bounds, patterns or lengths).
	tools = withRequestSchemas(req.Tools, conv, tools)
	c := req.ToolChoice
	p := &toolPolicy{mode: c.EffectiveMode()}
	// A custom tool's grammar is a hard constraint, as a strict function's schema is.
	strict := strictTools(req.Tools)
	switch {
	case p.mode == hearth.ToolChoiceNone:
		// No calls at all; the prompt keeps the tools (cache).
	case c.Type == hearth.ToolFunction || c.Type == hearth.ToolCustom:
		p.allowed = pickTools(conv, tools, []hearth.ToolRef{{Type: c.Type, Name: c.Name}})
	case c.Type == "allowed_tools":
		p.allowed = pickTools(conv, tools, c.Allowed)
	default:
		p.allowed = tools
	}
	if p.mode != hearth.ToolChoiceNone {
		p.constrain = len(p.allowed) < len(tools) || p.mode == hearth.ToolChoiceRequired
		for _, t := range p.allowed {
			if ref, ok := conv.ToolNames[t.Name]; ok && strict[ref] {
				p.constrain = true
			}
		}
	}
	if !req.ParallelToolCallsEnabled() {
		p.maxCalls = 1
	}
	if req.MaxToolCalls != nil && (p.maxCalls == 0 || *req.MaxToolCalls < p.maxCalls) {
		p.maxCalls = *req.MaxToolCalls
	}
	if p.mode == hearth.ToolChoiceAuto && !p.constrain && p.maxCalls == 0 {
		return nil
	}
	if p.mode != hearth.ToolChoiceNone && len(p.allowed) == 0 {
		// allowed_tools named only tools the model cannot see (hosted ones are not
		// shown): no call can be made.
		p.mode = hearth.ToolChoiceNone
	}
	p.schemas = map[string]*jsonschema.Schema{}
	p.freeforms = map[string]*toolgrammar.Freeform{}
	for _, t := range p.allowed {
		if f, ok := conv.Freeform(t.Name); ok {
			// The grammar's schema has the input's JSON-text pattern, which is not a
			// pattern of the input itself: validate the shape, then the input.
			t.Parameters = toolgrammar.FreeformParameters
			p.freeforms[t.Name] = f
		}
		if s, err := compileArgsSchema(t); err == nil {
			p.schemas[t.Name] = s
		}
	}
	return p
}

// withRequestSchemas returns tools with each function's parameters as the request
// wrote them.
func withRequestSchemas(reqTools []hearth.Tool, conv *Conversation, tools []toolgrammar.Tool) []toolgrammar.Tool {
	orig := map[string]json.RawMessage{}
	add := func(ref ToolRef, params json.RawMessage) {
		if name, ok := conv.ModelToolName(ref); ok {
			orig[name] = params
		}
	}
	for _, t := range reqTools {
		switch t.Type {
		case hearth.ToolFunction:
			add(ToolRef{Type: hearth.ToolFunction, Name: t.Name}, t.Parameters)
		case hearth.ToolCustom:
			if name, ok := conv.ModelToolName(ToolRef{Type: hearth.ToolCustom, Name: t.Name}); ok {
				f, _ := conv.Freeform(name)
				orig[name] = f.InputSchema()
			}
		case hearth.ToolNamespace:
			for _, f := range t.Tools {
				add(ToolRef{Type: hearth.ToolFunction, Namespace: t.Name, Name: f.Name}, f.Parameters)
			}
		}
	}
	out := make([]toolgrammar.Tool, len(tools))
	for i, t := range tools {
		if params, ok := orig[t.Name]; ok {
			t.Parameters = params
		}
		out[i] = t
	}
	return out
}

// strictTools lists the function tools that asked for strict arguments and the custom
// tools with a grammar.
func strictTools(tools []hearth.Tool) map[ToolRef]bool {
	out := map[ToolRef]bool{}
	for _, t := range tools {
		switch t.Type {
		case hearth.ToolCustom:
			if t.Format.Type == "grammar" {
				out[ToolRef{Type: hearth.ToolCustom, Name: t.Name}] = true
			}
		case hearth.ToolFunction:
			if t.Strict != nil && *t.Strict {
				out[ToolRef{Type: hearth.ToolFunction, Name: t.Name}] = true
			}
		case hearth.ToolNamespace:
			for _, f := range t.Tools {
				if f.Strict != nil && *f.Strict {
					out[ToolRef{Type: hearth.ToolFunction, Namespace: t.Name, Name: f.Name}] = true
				}
			}
		}
	}
	return out
}

// pickTools returns the tools (model names) that refs name. A ref names a function by
// its plain name, so it also matches functions nested in namespaces (the decoder checks
// names the same way).
func pickTools(conv *Conversation, tools []toolgrammar.Tool, refs []hearth.ToolRef) []toolgrammar.Tool {
	var out []toolgrammar.Tool
	for _, t := range tools {
		ref, ok := conv.ToolNames[t.Name]
		if !ok {
			continue
		}
		for _, r := range refs {
			if r.Type == ref.Type && r.Name == ref.Name {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

func (p *toolPolicy) tool(name string) (toolgrammar.Tool, bool) {
	for _, t := range p.allowed {
		if t.Name == name {
			return t, true
		}
	}
	return toolgrammar.Tool{}, false
}

// names returns the names of the allowed tools (none under tool_choice none).
func (p *toolPolicy) names() []string {
	names := make([]string, 0, len(p.allowed))
	for _, t := range p.allowed {
		names = append(names, t.Name)
	}
	return names
}

// capReached reports whether a response that has made calls calls may make no more.
func (p *toolPolicy) capReached(calls int) bool {
	if p.maxCalls > 0 && calls >= p.maxCalls {
		return true
	}
	return calls >= safetyMaxCalls
}

// check validates a finished call: an allowed name and arguments that satisfy the
// tool's whole JSON schema, including the keywords the grammar cannot express
// (numeric bounds on non-integers, most formats, dependent schemas, ...).
func (p *toolPolicy) check(name, args string) error {
	if _, ok := p.tool(name); !ok {
		return fmt.Errorf("the model called '%s', which is not an allowed tool", name)
	}
	s := p.schemas[name]
	if s == nil {
		if !json.Valid([]byte(args)) {
			return fmt.Errorf("the arguments of '%s' are not valid JSON", name)
		}
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		return fmt.Errorf("the arguments of '%s' are not valid JSON: %v", name, err)
	}
	if err := s.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return fmt.Errorf("the arguments of '%s' do not match its schema: %s", name, firstLine(ve.Error()))
		}
		return fmt.Errorf("the arguments of '%s' do not match its schema: %v", name, err)
	}
	if f := p.freeforms[name]; f != nil {
		input, err := toolgrammar.FreeformInput(args)
		if err != nil {
			return fmt.Errorf("the call of custom tool '%s' is malformed: %v", name, err)
		}
		if err := f.Check(input); err != nil {
			return fmt.Errorf("the input of custom tool '%s' does not match its format: %v", name, err)
		}
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		rest := strings.TrimSpace(s[i+1:])
		s = s[:i]
		if rest != "" {
			s += " " + strings.Join(strings.Fields(rest), " ")
		}
	}
	return s
}

// noLoader refuses every external $ref: a tool schema must be self-contained, and
// hearth never fetches anything while serving.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %s not loaded", url)
}

// compileArgsSchema compiles a tool's parameters for validation. An empty schema
// means an object of anything.
func compileArgsSchema(t toolgrammar.Tool) (*jsonschema.Schema, error) {
	raw := bytes.TrimSpace(t.Parameters)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte(`{"type":"object"}`)
	}
	// The compiler's cost grows with the square of the nesting: bound it first.
	if err := schemaguard.CheckShape(raw); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	const loc = "hearth:tool-parameters.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}
