package hearth

import (
	"encoding/json"
	"fmt"
	"slices"
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
// only response.output_item.added and .done.
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

// toolSearchFields are the fields a tool_search tool may have: any other is a
// mistake worth a 400 (the tool decides what the model sees).
var toolSearchFields = []string{"type", "execution", "description", "parameters"}

// decodeToolSearchTool reads a tool_search tool (its type is read already).
func decodeToolSearchTool(o object) (*ToolSearch, error) {
	for _, k := range o.keys() {
		if !slices.Contains(toolSearchFields, k) {
			return nil, InvalidRequest(o.at(k), "unknown_parameter",
				fmt.Sprintf("Unknown parameter: '%s'. A tool_search tool has the fields %v.", o.at(k), toolSearchFields))
		}
	}
	s := &ToolSearch{}
	var err error
	if s.Execution, err = o.enum("execution", enumExecution); err != nil {
		return nil, err
	}
	if s.Execution == "" {
		s.Execution = ExecutionServer
	}
	if raw, ok := o.get("description"); ok && kindOf(raw) != kindNull {
		if s.Description, err = asString(raw, o.at("description")); err != nil {
			return nil, err
		}
	}
	if raw, ok := o.get("parameters"); ok && kindOf(raw) != kindNull {
		if kindOf(raw) != kindObject {
			return nil, typeError(o.at("parameters"), "a JSON Schema object", raw)
		}
		s.Parameters = compact(raw)
	}
	return s, nil
}

// checkDeferred validates defer_loading across a request's tools: only function and
// custom tools, and the functions of a namespace, can be deferred (a namespace
// itself cannot: OpenAI defers its functions), and a tool_search tool needs
// something to search. It reports whether the request searches (has a tool_search
// tool), in which case its deferred tools are honoured rather than ignored.
func checkDeferred(tools []Tool) (searches bool, err error) {
	deferred, search := 0, -1
	for i, t := range tools {
		switch {
		case t.Type == ToolToolSearch:
			if search >= 0 {
				p := indexPath("tools", i)
				return false, InvalidRequest(p, CodeInvalidValue, fmt.Sprintf(
					"Invalid '%s': only one tool_search tool may be given (another is tools[%d]).", p, search))
			}
			search = i
		case t.Type == ToolNamespace:
			if t.DeferLoading {
				p := indexPath("tools", i) + ".defer_loading"
				return false, InvalidRequest(p, CodeInvalidValue, fmt.Sprintf(
					"Invalid '%s': a namespace cannot be deferred; set defer_loading on the functions inside it.", p))
			}
			for _, c := range t.Tools {
				if c.DeferLoading {
					deferred++
				}
			}
		case t.DeferLoading:
			deferred++
		case t.Hosted() && rawDefers(t.Raw):
			p := indexPath("tools", i) + ".defer_loading"
			return false, InvalidRequest(p, CodeInvalidValue, fmt.Sprintf(
				"Invalid '%s': hearth can defer function and custom tools (and the functions of a namespace), not '%s' tools.", p, t.Type))
		}
	}
	if search >= 0 && deferred == 0 {
		p := indexPath("tools", search)
		return false, InvalidRequest(p, CodeInvalidValue, fmt.Sprintf(
			"Invalid '%s': a tool_search tool needs deferred tools to search; mark some function tools (or functions of a namespace) with \"defer_loading\": true.", p))
	}
	return search >= 0, nil
}

// rawDefers reports whether a tool kept as sent asks to be deferred.
func rawDefers(raw json.RawMessage) bool {
	var f struct {
		DeferLoading bool `json:"defer_loading"`
	}
	return json.Unmarshal(raw, &f) == nil && f.DeferLoading
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
	Type      string  `json:"type"`
	ID        string  `json:"id"`
	CallID    *string `json:"call_id"`
	Execution string  `json:"execution"`
	Status    string  `json:"status"`
	Tools     []Tool  `json:"tools"`
}

// marshalToolSearchItem writes a tool_search_call or tool_search_output; ok is false
// for any other type.
func marshalToolSearchItem(it Item) (data []byte, ok bool, err error) {
	if it.Type != ItemToolSearchCall && it.Type != ItemToolSearchOutput {
		return nil, false, nil
	}
	status, exec := it.Status, it.Execution
	if status == "" {
		status = StatusCompleted
	}
	if exec == "" {
		exec = ExecutionServer
	}
	var callID *string
	if it.CallID != "" {
		callID = &it.CallID
	}
	if it.Type == ItemToolSearchCall {
		data, err = json.Marshal(toolSearchCallJSON{it.Type, it.ID, callID, exec, status, ToolSearchArguments(it.Arguments)})
		return data, true, err
	}
	tools := it.LoadedTools
	if tools == nil {
		tools = []Tool{}
	}
	data, err = json.Marshal(toolSearchOutputJSON{it.Type, it.ID, callID, exec, status, tools})
	return data, true, err
}

// ToolSearchArguments is a tool_search_call's arguments as the item carries them: the
// JSON the model wrote, a JSON string of its text when that is not JSON, {} before
// it wrote any.
func ToolSearchArguments(text string) json.RawMessage {
	switch {
	case text == "":
		return json.RawMessage(`{}`)
	case json.Valid([]byte(text)):
		return compact(json.RawMessage(text))
	}
	s, _ := json.Marshal(text)
	return s
}

// decodeToolSearchItem reads a tool_search_call or tool_search_output (type, id and
// status are read already); ok is false for any other type. call_id may be null, as
// OpenAI's params allow.
func decodeToolSearchItem(o object, it *Item) (ok bool, err error) {
	if it.Type != ItemToolSearchCall && it.Type != ItemToolSearchOutput {
		return false, nil
	}
	if raw, has := o.get("call_id"); has && kindOf(raw) != kindNull {
		if it.CallID, err = asString(raw, o.at("call_id")); err != nil {
			return true, err
		}
	}
	if raw, has := o.get("execution"); has && kindOf(raw) != kindNull {
		if it.Execution, err = o.enum("execution", enumExecution); err != nil {
			return true, err
		}
	}
	if it.Execution == "" {
		it.Execution = ExecutionServer
	}
	if it.Type == ItemToolSearchCall {
		raw, has := o.get("arguments")
		if !has {
			return true, missing(o.at("arguments"))
		}
		it.Arguments = string(compact(raw))
		return true, nil
	}
	elems, has, err := o.array("tools")
	if err != nil {
		return true, err
	}
	if !has {
		return true, missing(o.at("tools"))
	}
	it.LoadedTools = []Tool{}
	for i, e := range elems {
		t, err := decodeTool(e, indexPath(o.at("tools"), i), false)
		if err != nil {
			return true, err
		}
		it.LoadedTools = append(it.LoadedTools, t)
	}
	return true, nil
}

// StartToolSearchCall completes the open item, if any, and starts a tool_search_call
// (execution says who runs the search): output_item.added. The model's arguments
// (ArgumentsDelta) fill the item's arguments; OpenAI streams no events of them.
func (b *Builder) StartToolSearchCall(execution string) error {
	return b.startItem(Item{Type: ItemToolSearchCall, ID: NewID(PrefixToolSearchCall), CallID: NewID(PrefixCallID), Execution: execution})
}

// EndToolSearchCall ends the open tool_search_call, completed: output_item.done.
func (b *Builder) EndToolSearchCall() error {
	if b.state == stateFinished {
		return ErrFinished
	}
	if b.cur < 0 || b.resp.Output[b.cur].Type != ItemToolSearchCall {
		return fmt.Errorf("hearth: no tool_search_call open")
	}
	b.closeItem(StatusCompleted)
	return nil
}

// AddToolSearchOutput reports the result of a search hearth ran, whole: a
// tool_search_output answering call callID, with the tools it loaded
// (output_item.added, then .done).
func (b *Builder) AddToolSearchOutput(callID string, tools []Tool) error {
	if tools == nil {
		tools = []Tool{}
	}
	it := Item{Type: ItemToolSearchOutput, ID: NewID(PrefixToolSearchOutput), CallID: callID, Execution: ExecutionServer, LoadedTools: tools}
	if err := b.startItem(it); err != nil {
		return err
	}
	b.closeItem(StatusCompleted)
	return nil
}

// ReemitToolSearchItem reports a stored tool_search_call or tool_search_output as the
// live stream did: added (in progress), then done, with its stored id and fields.
func (b *Builder) ReemitToolSearchItem(stored Item) error {
	if stored.Type != ItemToolSearchCall && stored.Type != ItemToolSearchOutput {
		return fmt.Errorf("hearth: cannot reemit a %s item as a tool search item", stored.Type)
	}
	it := stored.Clone()
	if err := b.startItem(it); err != nil {
		return err
	}
	status := stored.Status
	if status == "" {
		status = StatusCompleted
	}
	b.closeItem(status)
	return nil
}
