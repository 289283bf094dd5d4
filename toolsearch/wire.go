package toolsearch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"hearth"
)

// Deferred tools and tool search: OpenAI's `defer_loading` on function and custom
// tools (and on the functions of a namespace) keeps a tool out of the model's prompt
// until a `tool_search` tool loads it. The search runs on the server (hearth searches
// the deferred tools' names and descriptions: package toolsearch) or on the client
// (execution "client": the model's call goes to the client, whose tool_search_output
// item in the next request's input names the tools to load). Either way the loaded
// tools are in a tool_search_output item of the conversation, and from there they
// join the tools of every later turn. The Open Responses schema has none of this;
// the shapes are OpenAI's (the openai npm package, src/resources/responses/
// responses.ts: ToolSearchTool, ResponseToolSearchCall, ResponseToolSearchOutputItem
// and their input params). OpenAI streams no events of their own for these items:
// only response.output_item.added and .done. The kind declares them to the root
// package when it is imported (init, below).
const (
	ToolToolSearch = "tool_search"

	ItemToolSearchCall   = "tool_search_call"
	ItemToolSearchOutput = "tool_search_output"

	PrefixToolSearchCall   = "tsc"
	PrefixToolSearchOutput = "tso"

	// Where a tool search runs: ExecutionServer (hearth's search, the default) or
	// ExecutionClient.
	ExecutionServer = "server"
	ExecutionClient = "client"
)

// ToolSearch is what a tool_search tool asks for. Description and Parameters are
// what the model is offered for a client-executed search (the client reads the
// arguments); hearth's own search has its own.
type ToolSearch struct {
	Execution   string
	Description string
	Parameters  json.RawMessage
}

var enumExecution = []string{ExecutionServer, ExecutionClient}

// ToolOf returns what a request's tool_search tool asks for (nil for a tool of
// another type).
func ToolOf(t *hearth.Tool) *ToolSearch {
	s, _ := t.Spec.(*ToolSearch)
	return s
}

// Fields are a tool search item's own fields (hearth.Item.Hosted): who ran the
// search (ExecutionServer or ExecutionClient), and for a tool_search_output the tools
// it loaded. A tool_search_call's arguments (JSON text) and either item's call_id are
// the item's Arguments and CallID.
type Fields struct {
	Execution   string
	LoadedTools []hearth.Tool
}

// CloneHosted copies the fields, the tools list too.
func (f *Fields) CloneHosted() hearth.HostedData {
	c := *f
	if c.LoadedTools != nil {
		c.LoadedTools = append([]hearth.Tool{}, c.LoadedTools...)
	}
	return &c
}

// Of returns a tool search item's fields (zero ones for an item of another kind).
func Of(it hearth.Item) Fields {
	if f, ok := it.Hosted.(*Fields); ok && f != nil {
		return *f
	}
	return Fields{}
}

// toolSearchFields are the fields a tool_search tool may have: any other is a
// mistake worth a 400 (the tool decides what the model sees).
var toolSearchFields = []string{"type", "execution", "description", "parameters"}

// decodeTool reads a tool_search tool (its type is read already).
func decodeTool(o hearth.Object) (any, error) {
	for _, k := range o.Keys() {
		if !slices.Contains(toolSearchFields, k) {
			return nil, hearth.InvalidRequest(o.At(k), "unknown_parameter",
				fmt.Sprintf("Unknown parameter: '%s'. A tool_search tool has the fields %v.", o.At(k), toolSearchFields))
		}
	}
	s := &ToolSearch{}
	var err error
	if s.Execution, err = o.Enum("execution", enumExecution); err != nil {
		return nil, err
	}
	s.Execution = cmp.Or(s.Execution, ExecutionServer)
	if raw, ok := o.Get("description"); ok {
		if s.Description, err = hearth.AsString(raw, o.At("description")); err != nil {
			return nil, err
		}
	}
	if raw, ok := o.Get("parameters"); ok {
		if hearth.JSONType(raw) != "object" {
			return nil, hearth.TypeError(o.At("parameters"), "a JSON Schema object", raw)
		}
		s.Parameters = hearth.CompactJSON(raw)
	}
	return s, nil
}

type toolSearchCallJSON struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	CallID    *string         `json:"call_id"`
	Execution string          `json:"execution"`
	Status    string          `json:"status"`
	Arguments json.RawMessage `json:"arguments"`
}

type toolSearchOutputJSON struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	CallID    *string       `json:"call_id"`
	Execution string        `json:"execution"`
	Status    string        `json:"status"`
	Tools     []hearth.Tool `json:"tools"`
}

// marshalItem writes a tool_search_call or tool_search_output.
func marshalItem(it hearth.Item) ([]byte, error) {
	f := Of(it)
	status, exec := cmp.Or(it.Status, hearth.StatusCompleted), cmp.Or(f.Execution, ExecutionServer)
	var callID *string
	if it.CallID != "" {
		callID = &it.CallID
	}
	if it.Type == ItemToolSearchCall {
		return json.Marshal(toolSearchCallJSON{it.Type, it.ID, callID, exec, status, Arguments(it.Arguments)})
	}
	tools := f.LoadedTools
	if tools == nil {
		tools = []hearth.Tool{}
	}
	return json.Marshal(toolSearchOutputJSON{it.Type, it.ID, callID, exec, status, tools})
}

// Arguments is a tool_search_call's arguments as the item carries them: the JSON the
// model wrote, a JSON string of its text when that is not JSON, {} before it wrote
// any.
func Arguments(text string) json.RawMessage {
	switch {
	case text == "":
		return json.RawMessage(`{}`)
	case json.Valid([]byte(text)):
		return hearth.CompactJSON(json.RawMessage(text))
	}
	s, _ := json.Marshal(text)
	return s
}

// decodeItem reads a tool_search_call or tool_search_output (type, id and status are
// read already). call_id may be null, as OpenAI's params allow.
func decodeItem(o hearth.Object, it *hearth.Item) (err error) {
	f := &Fields{}
	it.Hosted = f
	if raw, has := o.Get("call_id"); has {
		if it.CallID, err = hearth.AsString(raw, o.At("call_id")); err != nil {
			return err
		}
	}
	if o.Has("execution") {
		if f.Execution, err = o.Enum("execution", enumExecution); err != nil {
			return err
		}
	}
	f.Execution = cmp.Or(f.Execution, ExecutionServer)
	if it.Type == ItemToolSearchCall {
		raw, has := o.Get("arguments")
		if !has {
			return hearth.Missing(o.At("arguments"))
		}
		it.Arguments = string(hearth.CompactJSON(raw))
		return nil
	}
	elems, has, err := o.Array("tools")
	if err != nil {
		return err
	}
	if !has {
		return hearth.Missing(o.At("tools"))
	}
	f.LoadedTools = []hearth.Tool{}
	for i, e := range elems {
		t, err := hearth.DecodeTool(e, hearth.IndexPath(o.At("tools"), i))
		if err != nil {
			return err
		}
		f.LoadedTools = append(f.LoadedTools, t)
	}
	return nil
}

// StartCall completes the open item, if any, and starts a tool_search_call (execution
// says who runs the search): output_item.added. The model's arguments
// (Builder.ArgumentsDelta) fill the item's arguments; OpenAI streams no events of
// them.
func StartCall(b *hearth.Builder, execution string) error {
	return b.OpenItem(hearth.Item{Type: ItemToolSearchCall, ID: hearth.NewID(PrefixToolSearchCall), CallID: hearth.NewID(hearth.PrefixCallID),
		Hosted: &Fields{Execution: execution}})
}

// EndCall ends the open tool_search_call, completed: output_item.done.
func EndCall(b *hearth.Builder) error {
	if _, err := b.Open(ItemToolSearchCall); err != nil {
		return err
	}
	return b.CloseItem(hearth.StatusCompleted)
}

// AddOutput reports the result of a search hearth ran, whole: a tool_search_output
// answering call callID, with the tools it loaded (output_item.added, then .done).
func AddOutput(b *hearth.Builder, callID string, tools []hearth.Tool) error {
	if tools == nil {
		tools = []hearth.Tool{}
	}
	it := hearth.Item{Type: ItemToolSearchOutput, ID: hearth.NewID(PrefixToolSearchOutput), CallID: callID,
		Hosted: &Fields{Execution: ExecutionServer, LoadedTools: tools}}
	if err := b.OpenItem(it); err != nil {
		return err
	}
	return b.CloseItem(hearth.StatusCompleted)
}

// ReemitItem reports a stored tool_search_call or tool_search_output as the live
// stream did: added (in progress), then done, with its stored id and fields.
func ReemitItem(b *hearth.Builder, stored hearth.Item) error {
	if stored.Type != ItemToolSearchCall && stored.Type != ItemToolSearchOutput {
		return fmt.Errorf("hearth: cannot reemit a %s item as a tool search item", stored.Type)
	}
	if err := b.OpenItem(stored.Clone()); err != nil {
		return err
	}
	return b.CloseItem(cmp.Or(stored.Status, hearth.StatusCompleted))
}

func init() {
	hearth.RegisterKind(hearth.Kind{
		Name:  "tool_search",
		Order: 4,
		Items: []hearth.ItemType{
			// OpenAI streams no events of a tool search's own: the call's item
			// carries its arguments whole.
			{Type: ItemToolSearchCall, InputIDPrefix: PrefixToolSearchCall, Decode: decodeItem, Marshal: marshalItem, Call: true, Arguments: true},
			{Type: ItemToolSearchOutput, InputIDPrefix: PrefixToolSearchOutput, Decode: decodeItem, Marshal: marshalItem},
		},
		Tools: []hearth.ToolType{{Types: []string{ToolToolSearch}, Decode: decodeTool, Runs: true, LoadsDeferred: true}},
	})
}
