// Package chatparser reads a model's output for the embedded runtime's own chat
// (/api/chat, reached through hearth's /api passthrough) with hearth's formats, the
// toolgrammar formats of models.json that read it for the Responses API.
//
// The runtime (Ollama's server in-process) reads a chat answer with the output parser
// its model names (PARSER), looked up in its parser registry before its built-in
// parsers. A format lists in chat_parsers the names it reads: families whose parser
// the runtime lacks (without one, chat returns the raw markup as content and the model
// lists neither "tools" nor "thinking") and families whose prompts, rendered by hearth,
// make a model write what the runtime's own parser of that name misreads. Importing
// this package registers one Parser per such name; there is no code per family.
package chatparser

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/parsers"

	"hearth"
	"hearth/toolgrammar"
)

func init() {
	r, err := toolgrammar.LoadFormats(hearth.ModelsJSON)
	if err != nil {
		// The built-in models.json is checked by tests before any release.
		panic(fmt.Sprintf("chatparser: embedded models.json: %v", err))
	}
	Register(r)
}

// Register registers with the runtime's parser registry a Parser for each name the
// formats of r list in chat_parsers, the later format winning a name listed twice. It
// must run before the runtime serves: the registry is not safe for concurrent use.
func Register(r *toolgrammar.Registry) {
	for _, name := range Names(r) {
		f, cp := lookup(r, name)
		parsers.Register(name, func() parsers.Parser { return New(f, cp.Thinking) })
	}
}

// Names lists the parser names the formats of r read, in registry order.
func Names(r *toolgrammar.Registry) []string {
	var names []string
	seen := map[string]bool{}
	for _, f := range r.Formats() {
		for _, cp := range f.ChatParsers {
			if !seen[cp.Name] {
				seen[cp.Name] = true
				names = append(names, cp.Name)
			}
		}
	}
	return names
}

// lookup is the format that reads the parser name (the last to list it) and its entry.
func lookup(r *toolgrammar.Registry, name string) (*toolgrammar.Format, toolgrammar.ChatParser) {
	var (
		found *toolgrammar.Format
		entry toolgrammar.ChatParser
	)
	for _, f := range r.Formats() {
		for _, cp := range f.ChatParsers {
			if cp.Name == name {
				found, entry = f, cp
			}
		}
	}
	return found, entry
}

// Parser is the runtime's parsers.Parser over a toolgrammar parser of one format:
// reasoning becomes the message's thinking, message text its content, and each call
// a tool call whose arguments keep the order and the numbers the model wrote.
type Parser struct {
	f        *toolgrammar.Format
	thinking bool
	p        *toolgrammar.Parser
	closed   bool
}

// New returns a Parser of format f; thinking is what it reports as thinking support
// (the runtime's "thinking" capability of a model that names it).
func New(f *toolgrammar.Format, thinking bool) *Parser {
	return &Parser{f: f, thinking: thinking}
}

// HasToolSupport: the format reads calls. Said true, the runtime leaves tool calls to
// this parser (and lists the model as capable of "tools").
func (p *Parser) HasToolSupport() bool { return p.f.Tools.Kind != "" }

// HasThinkingSupport is the chat_parsers entry's thinking.
func (p *Parser) HasThinkingSupport() bool { return p.thinking }

// Init starts a generation. The runtime calls it before it renders the prompt, so
// whether the prompt opened reasoning comes from what models.json says of the
// family's template (Format.StartInReasoningAfter) for the request's think value and
// the conversation's last message, as the Responses API decides it from the
// rendered prompt. The tools are returned as given.
func (p *Parser) Init(tools []api.Tool, lastMessage *api.Message, think *api.ThinkValue) []api.Tool {
	lastRole := ""
	if lastMessage != nil {
		lastRole = lastMessage.Role
	}
	requested := p.thinking && think != nil && think.Bool()
	p.p = toolgrammar.NewParser(p.f, toolgrammar.Options{
		Tools:            grammarTools(tools),
		StartInReasoning: p.f.StartInReasoningAfter(lastRole, requested),
	})
	p.closed = false
	return tools
}

// grammarTools is what the toolgrammar parser needs of the request's tools: names
// (bare calls may name only these) and parameter schemas (XML values are typed by
// them).
func grammarTools(tools []api.Tool) []toolgrammar.Tool {
	out := make([]toolgrammar.Tool, 0, len(tools))
	for _, t := range tools {
		params, err := json.Marshal(t.Function.Parameters)
		if err != nil {
			params = nil
		}
		out = append(out, toolgrammar.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	return out
}

// Add parses the next piece of output; done ends it, releasing what was held back
// (a possible delimiter's start) and closing unterminated reasoning.
func (p *Parser) Add(s string, done bool) (content, thinking string, calls []api.ToolCall, err error) {
	if p.p == nil {
		// The runtime always calls Init first; a caller that does not gets the
		// format's defaults rather than a nil dereference.
		p.Init(nil, nil, nil)
	}
	if p.closed {
		return "", "", nil, nil
	}
	var text, reasoning strings.Builder
	apply := func(events []toolgrammar.Event) error {
		for _, ev := range events {
			switch ev.Kind {
			case toolgrammar.TextDelta:
				text.WriteString(ev.Text)
			case toolgrammar.ReasoningDelta:
				reasoning.WriteString(ev.Text)
			case toolgrammar.CallEnd:
				args, err := arguments(ev.Text)
				if err != nil {
					return fmt.Errorf("tool call %s: %w", ev.Name, err)
				}
				calls = append(calls, api.ToolCall{Function: api.ToolCallFunction{Index: ev.Index, Name: ev.Name, Arguments: args}})
			}
		}
		return nil
	}
	if err := apply(p.p.Feed(s)); err != nil {
		return "", "", nil, err
	}
	if done {
		p.closed = true
		if err := apply(p.p.Close()); err != nil {
			return "", "", nil, err
		}
	}
	return text.String(), reasoning.String(), calls, nil
}

// arguments reads a call's canonical JSON object into the runtime's ordered map, the
// keys in the model's order and each value its JSON text (nested keys in their order,
// numbers as written), so that the arguments chat returns are the text the Responses
// API returns. The runtime only marshals them.
func arguments(canonical string) (api.ToolCallFunctionArguments, error) {
	args := api.NewToolCallFunctionArguments()
	dec := json.NewDecoder(strings.NewReader(canonical))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return args, fmt.Errorf("arguments are not a JSON object: %.80q", canonical)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return args, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return args, err
		}
		args.Set(key, v)
	}
	if _, err := dec.Token(); err != nil {
		return args, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return args, fmt.Errorf("arguments: text after the object: %.80q", canonical)
	}
	return args, nil
}

var _ parsers.Parser = (*Parser)(nil)
