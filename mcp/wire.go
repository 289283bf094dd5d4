package mcp

import (
	"encoding/json"
	"fmt"
	"slices"

	"hearth"
)

// MCP (Model Context Protocol) servers as hosted tools: OpenAI's `mcp` tool. hearth
// lists a configured server's tools, offers them to the model, runs the calls the
// model makes and feeds the results back, all inside one response. The Open
// Responses schema has none of this; the shapes below are OpenAI's. The kind
// declares them to the root package when it is imported (init, below).
const (
	ToolMCP = "mcp"

	ItemMCPListTools        = "mcp_list_tools"
	ItemMCPCall             = "mcp_call"
	ItemMCPApprovalRequest  = "mcp_approval_request"
	ItemMCPApprovalResponse = "mcp_approval_response"

	PrefixMCPListTools        = "mcpl"
	PrefixMCPCall             = "mcp"
	PrefixMCPApprovalRequest  = "mcpr"
	PrefixMCPApprovalResponse = "mcpa"
)

// OpenAI's streaming events of MCP tools.
const (
	EventMCPListToolsInProgress = "response.mcp_list_tools.in_progress"
	EventMCPListToolsCompleted  = "response.mcp_list_tools.completed"
	EventMCPListToolsFailed     = "response.mcp_list_tools.failed"
	EventMCPCallArgumentsDelta  = "response.mcp_call_arguments.delta"
	EventMCPCallArgumentsDone   = "response.mcp_call_arguments.done"
	EventMCPCallInProgress      = "response.mcp_call.in_progress"
	EventMCPCallCompleted       = "response.mcp_call.completed"
	EventMCPCallFailed          = "response.mcp_call.failed"
)

// Values of require_approval's plain form.
const (
	ApprovalAlways = "always"
	ApprovalNever  = "never"
)

// MCPTool is what a request's {"type": "mcp"} tool asks for.
type MCPTool struct {
	ServerLabel string
	// ServerURL is a server the request names itself; the operator decides whether
	// hearth may reach it (a configured label needs none).
	ServerURL string
	Headers   map[string]string
	// AllowedTools limits the server's tools the model is offered; nil offers all.
	AllowedTools []string
	// AllowedReadOnly (allowed_tools {"read_only": true}) offers only the tools
	// whose annotations say readOnlyHint.
	AllowedReadOnly bool
	// Approval says which calls need the client's approval first.
	Approval MCPApproval
}

// MCPApproval is require_approval.
type MCPApproval struct {
	// Mode is "always" or "never" for the plain form, "" for the filter form.
	Mode   string
	Always []string
	Never  []string
	// NeverReadOnly ({"never": {"read_only": true}}) lets the tools whose
	// annotations say readOnlyHint run without approval.
	NeverReadOnly bool
}

// Allows reports whether allowed_tools lets the model be offered tool t.
func (m *MCPTool) Allows(t MCPToolInfo) bool {
	if m.AllowedTools != nil && !slices.Contains(m.AllowedTools, t.Name) {
		return false
	}
	return !m.AllowedReadOnly || t.ReadOnly()
}

// Required reports whether a call of tool t needs the client's approval. OpenAI's
// default, when require_approval is not given, is to ask for every call.
func (a MCPApproval) Required(t MCPToolInfo) bool {
	switch a.Mode {
	case ApprovalNever:
		return false
	case ApprovalAlways:
		return true
	}
	// The filter form: tools under never run at once, every other tool asks (as
	// OpenAI does; always only restates the default).
	return !slices.Contains(a.Never, t.Name) && !(a.NeverReadOnly && t.ReadOnly())
}

// MCPToolInfo is one tool of an mcp_list_tools item.
type MCPToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// ReadOnly reports whether the server marks the tool read-only (MCP's readOnlyHint
// annotation: it does not change its environment).
func (t MCPToolInfo) ReadOnly() bool {
	var a struct {
		ReadOnlyHint bool `json:"readOnlyHint"`
	}
	return len(t.Annotations) > 0 && json.Unmarshal(t.Annotations, &a) == nil && a.ReadOnlyHint
}

// Fields are an MCP item's own fields (hearth.Item.Hosted), by type:
//
//	mcp_list_tools         ServerLabel, MCPTools, Error
//	mcp_call               ServerLabel, Error, ApprovalRequestID (and the item's Name, Arguments, Output text)
//	mcp_approval_request   ServerLabel (and the item's Name, Arguments)
//	mcp_approval_response  ApprovalRequestID, Approve, Reason
type Fields struct {
	ServerLabel       string
	MCPTools          []MCPToolInfo
	Error             string
	ApprovalRequestID string
	Approve           *bool
	Reason            string
}

// CloneHosted copies the fields, the tools list too.
func (f *Fields) CloneHosted() hearth.HostedData {
	c := *f
	if c.MCPTools != nil {
		c.MCPTools = append([]MCPToolInfo{}, c.MCPTools...)
	}
	return &c
}

// Of returns an item's MCP fields (zero ones for an item of another kind).
func Of(it hearth.Item) Fields {
	if f, ok := it.Hosted.(*Fields); ok && f != nil {
		return *f
	}
	return Fields{}
}

// fields returns the MCP fields of it to change in place, giving it some first.
func fields(it *hearth.Item) *Fields {
	if f, ok := it.Hosted.(*Fields); ok && f != nil {
		return f
	}
	f := &Fields{}
	it.Hosted = f
	return f
}

// ToolOf returns what a request's mcp tool asks for (nil for a tool of another type).
func ToolOf(t *hearth.Tool) *MCPTool {
	m, _ := t.Spec.(*MCPTool)
	return m
}

// Choice is what a tool_choice {"type": "mcp"} names beyond the tool (its Name): the
// server.
type Choice struct {
	ServerLabel string
}

// ChoiceLabel is the server a tool_choice of type mcp names.
func ChoiceLabel(c hearth.ToolChoice) string {
	if ch, ok := c.Spec.(*Choice); ok && ch != nil {
		return ch.ServerLabel
	}
	return ""
}

// hearth's MCP items carry a status, as every other item of a stream does, so the
// item lifecycle (added in_progress, done completed) reads the same for all of them.
type mcpListToolsJSON struct {
	Type        string        `json:"type"`
	ID          string        `json:"id"`
	ServerLabel string        `json:"server_label"`
	Tools       []MCPToolInfo `json:"tools"`
	Error       *string       `json:"error"`
	Status      string        `json:"status,omitempty"`
}

type mcpCallJSON struct {
	Type              string  `json:"type"`
	ID                string  `json:"id"`
	ServerLabel       string  `json:"server_label"`
	Name              string  `json:"name"`
	Arguments         string  `json:"arguments"`
	Output            *string `json:"output"`
	Error             *string `json:"error"`
	Status            string  `json:"status,omitempty"`
	ApprovalRequestID *string `json:"approval_request_id"`
}

type mcpApprovalRequestJSON struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	ServerLabel string `json:"server_label"`
	Name        string `json:"name"`
	Arguments   string `json:"arguments"`
	Status      string `json:"status,omitempty"`
}

type mcpApprovalResponseJSON struct {
	Type              string  `json:"type"`
	ID                string  `json:"id,omitempty"`
	ApprovalRequestID string  `json:"approval_request_id"`
	Approve           bool    `json:"approve"`
	Reason            *string `json:"reason,omitempty"`
}

// marshalItem writes the MCP item types.
func marshalItem(it hearth.Item) ([]byte, error) {
	f := Of(it)
	switch it.Type {
	case ItemMCPListTools:
		tools := f.MCPTools
		if tools == nil {
			tools = []MCPToolInfo{}
		}
		return json.Marshal(mcpListToolsJSON{it.Type, it.ID, f.ServerLabel, tools, hearth.Nullable(f.Error), it.Status})
	case ItemMCPCall:
		// The output is null until the call returned, and when it failed.
		var output *string
		if it.Status != hearth.StatusInProgress && f.Error == "" {
			output = &it.Output.Text
		}
		return json.Marshal(mcpCallJSON{it.Type, it.ID, f.ServerLabel, it.Name, it.Arguments,
			output, hearth.Nullable(f.Error), it.Status, hearth.Nullable(f.ApprovalRequestID)})
	case ItemMCPApprovalRequest:
		return json.Marshal(mcpApprovalRequestJSON{it.Type, it.ID, f.ServerLabel, it.Name, it.Arguments, it.Status})
	case ItemMCPApprovalResponse:
		approve := f.Approve != nil && *f.Approve
		return json.Marshal(mcpApprovalResponseJSON{it.Type, it.ID, f.ApprovalRequestID, approve, hearth.Nullable(f.Reason)})
	}
	return nil, fmt.Errorf("mcp: cannot marshal item of type %q", it.Type)
}

// decodeItem reads the fields of the MCP item types into it (type, id and status are
// read already).
func decodeItem(o hearth.Object, it *hearth.Item) (err error) {
	f := &Fields{}
	it.Hosted = f
	switch it.Type {
	case ItemMCPListTools:
		if f.ServerLabel, err = o.RequiredString("server_label"); err != nil {
			return err
		}
		if err = o.DecodeStd("tools", &f.MCPTools, "an array of tools"); err != nil {
			return err
		}
		f.Error, err = o.NullableString("error")
	case ItemMCPCall, ItemMCPApprovalRequest:
		if f.ServerLabel, err = o.RequiredString("server_label"); err != nil {
			return err
		}
		if it.Name, err = o.RequiredString("name"); err != nil {
			return err
		}
		if it.Name == "" {
			return hearth.EmptyString(o.At("name"))
		}
		if it.Arguments, err = o.RequiredString("arguments"); err != nil {
			return err
		}
		if it.Type == ItemMCPCall {
			if it.Output.Text, err = o.NullableString("output"); err != nil {
				return err
			}
			if f.Error, err = o.NullableString("error"); err != nil {
				return err
			}
			f.ApprovalRequestID, err = o.NullableString("approval_request_id")
		}
	case ItemMCPApprovalResponse:
		if f.ApprovalRequestID, err = o.RequiredString("approval_request_id"); err != nil {
			return err
		}
		if f.ApprovalRequestID == "" {
			return hearth.EmptyString(o.At("approval_request_id"))
		}
		if f.Approve, err = o.Boolean("approve"); err != nil {
			return err
		}
		if f.Approve == nil {
			return hearth.Missing(o.At("approve"))
		}
		f.Reason, err = o.NullableString("reason")
	}
	return err
}

// decodeTool reads the fields of a {"type": "mcp"} tool.
func decodeTool(o hearth.Object) (any, error) {
	m := &MCPTool{}
	var err error
	if m.ServerLabel, err = o.ToolName("server_label"); err != nil {
		return nil, err
	}
	if m.ServerURL, _, err = o.String("server_url"); err != nil {
		return nil, err
	}
	if o.Has("connector_id") {
		return nil, hearth.InvalidRequest(o.At("connector_id"), "unsupported_parameter",
			fmt.Sprintf("Invalid '%s': hearth has no connectors; configure the MCP server and name it by server_label.", o.At("connector_id")))
	}
	if hs, ok, err := o.Object("headers"); err != nil {
		return nil, err
	} else if ok {
		m.Headers = map[string]string{}
		for _, k := range hs.Keys() {
			v, _, err := hs.String(k)
			if err != nil {
				return nil, err
			}
			m.Headers[k] = v
		}
	}
	if raw, ok := o.Get("allowed_tools"); ok {
		p := o.At("allowed_tools")
		var names []json.RawMessage
		has := true
		switch hearth.JSONType(raw) {
		case "array":
			names, _ = hearth.AsArray(raw, p)
		case "object":
			f, _ := hearth.AsObject(raw, p)
			if names, has, err = f.Array("tool_names"); err != nil {
				return nil, err
			}
			ro, err := f.Boolean("read_only")
			if err != nil {
				return nil, err
			}
			m.AllowedReadOnly = ro != nil && *ro
			p = f.At("tool_names")
		default:
			return nil, hearth.TypeError(p, "an array of tool names or an object with tool_names and read_only", raw)
		}
		// read_only alone filters: no names filter.
		if has {
			if m.AllowedTools, err = hearth.Strings(names, p); err != nil {
				return nil, err
			}
		}
	}
	if raw, ok := o.Get("require_approval"); ok {
		p := o.At("require_approval")
		switch hearth.JSONType(raw) {
		case "string":
			s, _ := hearth.AsString(raw, p)
			if s != ApprovalAlways && s != ApprovalNever {
				return nil, hearth.InvalidEnum(p, s, []string{ApprovalAlways, ApprovalNever})
			}
			m.Approval.Mode = s
		case "object":
			f, _ := hearth.AsObject(raw, p)
			for _, which := range []string{ApprovalAlways, ApprovalNever} {
				w, ok, err := f.Object(which)
				if err != nil || !ok {
					if err != nil {
						return nil, err
					}
					continue
				}
				elems, _, err := w.Array("tool_names")
				if err != nil {
					return nil, err
				}
				ro, err := w.Boolean("read_only")
				if err != nil {
					return nil, err
				}
				if which == ApprovalNever && ro != nil && *ro {
					m.Approval.NeverReadOnly = true
				}
				names, err := hearth.Strings(elems, w.At("tool_names"))
				if err != nil {
					return nil, err
				}
				if which == ApprovalAlways {
					m.Approval.Always = names
				} else {
					m.Approval.Never = names
				}
			}
		default:
			return nil, hearth.TypeError(p, `"always", "never" or an object`, raw)
		}
	} else {
		m.Approval.Mode = ApprovalAlways
	}
	return m, nil
}

// enumCallStatus: an mcp_call item's status also has OpenAI's "calling" and "failed"
// (a call that ended in an error): a stateless client sends hearth's failed calls back.
var enumCallStatus = []string{hearth.StatusInProgress, hearth.StatusCompleted, hearth.StatusIncomplete, "calling", hearth.StatusFailed}

func init() {
	hearth.RegisterKind(hearth.Kind{
		Name:  "mcp",
		Order: 1,
		Items: []hearth.ItemType{
			{Type: ItemMCPListTools, Decode: decodeItem, Marshal: marshalItem},
			{Type: ItemMCPCall, Statuses: enumCallStatus, Decode: decodeItem, Marshal: marshalItem,
				Call: true, Arguments: true, ArgumentsEvent: EventMCPCallArgumentsDelta, Close: closeCall},
			// OpenAI streams no arguments of an approval request, and its id is
			// made from them (the plan's approval ids): it is added whole as it ends.
			{Type: ItemMCPApprovalRequest, Decode: decodeItem, Marshal: marshalItem,
				Call: true, Arguments: true, AddedAtEnd: true, Close: closeApprovalRequest},
			{Type: ItemMCPApprovalResponse, InputIDPrefix: PrefixMCPApprovalResponse, Decode: decodeItem, Marshal: marshalItem},
		},
		Tools: []hearth.ToolType{{
			Types:  []string{ToolMCP},
			Decode: decodeTool,
			Runs:   true,
			Unique: func(t *hearth.Tool) (string, string) {
				if m := ToolOf(t); m != nil {
					return ".server_label", m.ServerLabel
				}
				return ".server_label", ""
			},
			Forced:        true,
			ChoiceDecode:  decodeChoice,
			ChoiceCheck:   checkChoice,
			ChoiceMarshal: marshalChoice,
		}},
		Events: []hearth.EventType{
			{Type: EventMCPListToolsInProgress}, {Type: EventMCPListToolsCompleted}, {Type: EventMCPListToolsFailed},
			{Type: EventMCPCallArgumentsDelta, Shape: hearth.EventItemDelta},
			{Type: EventMCPCallArgumentsDone, Shape: hearth.EventItemArguments},
			{Type: EventMCPCallInProgress}, {Type: EventMCPCallCompleted}, {Type: EventMCPCallFailed},
		},
	})
}

// decodeChoice reads tool_choice {"type": "mcp", "server_label": ..., "name": ...}:
// Name is then the server's tool, or "" for any of its tools.
func decodeChoice(o hearth.Object, c *hearth.ToolChoice) (err error) {
	ch := &Choice{}
	if ch.ServerLabel, err = o.RequiredString("server_label"); err != nil {
		return err
	}
	if c.Name, _, err = o.String("name"); err != nil {
		return err
	}
	c.Spec = ch
	return nil
}

// checkChoice: the server a tool_choice names must be one of the request's mcp tools.
// Whether the server has a tool of that name is the plan's to say: it lists the
// server's tools.
func checkChoice(c hearth.ToolChoice, tools []hearth.Tool) error {
	label := ChoiceLabel(c)
	for i := range tools {
		if m := ToolOf(&tools[i]); m != nil && m.ServerLabel == label {
			return nil
		}
	}
	return hearth.InvalidRequest("tool_choice.server_label", hearth.CodeInvalidValue,
		fmt.Sprintf("Tool choice 'mcp' names server '%s', which is not in 'tools'.", label))
}

func marshalChoice(c hearth.ToolChoice) ([]byte, error) {
	return json.Marshal(struct {
		Type        string `json:"type"`
		ServerLabel string `json:"server_label"`
		Name        string `json:"name,omitempty"`
	}{c.Type, ChoiceLabel(c), c.Name})
}

// builderState is what the kind keeps on one Builder: the id the plan gives an
// approval request, and which open call's arguments are done.
type builderState struct {
	approvalID func(hearth.Item) string
	argsDone   string // the id of the mcp_call whose arguments-done event went out
}

type stateKey struct{}

func stateOf(b *hearth.Builder) *builderState {
	return b.KindState(stateKey{}, func() any { return &builderState{} }).(*builderState)
}

// SetApprovalID has each mcp_approval_request b ends completed get its id from id,
// made from the whole item (its arguments included): hearth proves with it later
// that it issued this very request.
func SetApprovalID(b *hearth.Builder, id func(hearth.Item) string) { stateOf(b).approvalID = id }

func closeApprovalRequest(b *hearth.Builder, it *hearth.Item, status string) {
	if st := stateOf(b); status == hearth.StatusCompleted && st.approvalID != nil {
		it.ID = st.approvalID(it.Clone())
	}
}

// closeCall: a call cut short (the client left, the response failed) still ends its
// arguments, so every mcp_call of a stream has them whole.
func closeCall(b *hearth.Builder, it *hearth.Item, status string) {
	if stateOf(b).argsDone != it.ID {
		b.ItemEvent(hearth.Event{Type: EventMCPCallArgumentsDone, Arguments: it.Arguments})
	}
	if status == hearth.StatusIncomplete {
		b.ItemEvent(hearth.Event{Type: EventMCPCallFailed})
	}
}

// AddListTools reports a listing of an MCP server's tools, whole: the item (its id
// and server_label; tools and error are what the listing found) is added, in
// progress, then done, with response.mcp_list_tools.completed or, when it has an
// error, .failed between.
func AddListTools(b *hearth.Builder, listing hearth.Item) error {
	lf := Of(listing)
	it := hearth.Item{Type: ItemMCPListTools, ID: listing.ID, Hosted: &Fields{ServerLabel: lf.ServerLabel, MCPTools: []MCPToolInfo{}}}
	if it.ID == "" {
		it.ID = hearth.NewID(PrefixMCPListTools)
	}
	if err := b.OpenItem(it); err != nil {
		return err
	}
	b.ItemEvent(hearth.Event{Type: EventMCPListToolsInProgress})
	cur, err := b.Open(ItemMCPListTools)
	if err != nil {
		return err
	}
	f := fields(cur)
	if lf.MCPTools != nil {
		f.MCPTools = append([]MCPToolInfo{}, lf.MCPTools...)
	}
	f.Error = lf.Error
	typ := EventMCPListToolsCompleted
	if lf.Error != "" {
		typ = EventMCPListToolsFailed
	}
	b.ItemEvent(hearth.Event{Type: typ})
	return b.CloseItem(hearth.StatusCompleted)
}

// StartCall completes the open item, if any, and starts a call of an MCP server's
// tool that hearth runs itself: output_item.added, then response.mcp_call.in_progress.
// Builder.ArgumentsDelta streams its arguments, ArgumentsDone ends them, EndCall ends
// the call with its result. approvalRequestID is the mcp_approval_request the client
// approved, or "".
func StartCall(b *hearth.Builder, serverLabel, name, approvalRequestID string) error {
	it := hearth.Item{Type: ItemMCPCall, ID: hearth.NewID(PrefixMCPCall), Name: name,
		Hosted: &Fields{ServerLabel: serverLabel, ApprovalRequestID: approvalRequestID}}
	if err := b.OpenItem(it); err != nil {
		return err
	}
	b.ItemEvent(hearth.Event{Type: EventMCPCallInProgress})
	return nil
}

// StartApprovalRequest completes the open item, if any, and starts a request for the
// client's approval of a call; Builder.ArgumentsDelta fills its arguments and
// Builder.EndItem ends it. Its output_item.added is sent when it ends, with its
// arguments and the id SetApprovalID gives it.
func StartApprovalRequest(b *hearth.Builder, serverLabel, name string) error {
	return b.OpenItem(hearth.Item{Type: ItemMCPApprovalRequest, ID: hearth.NewID(PrefixMCPApprovalRequest), Name: name,
		Hosted: &Fields{ServerLabel: serverLabel}})
}

// startFrom starts a call or approval request with the identity of a stored one (its
// id, server, tool and approval): a replay gives the client the ids it saw live.
func startFrom(b *hearth.Builder, stored hearth.Item) error {
	sf := Of(stored)
	it := hearth.Item{Type: stored.Type, ID: stored.ID, Name: stored.Name,
		Hosted: &Fields{ServerLabel: sf.ServerLabel, ApprovalRequestID: sf.ApprovalRequestID}}
	if err := b.OpenItem(it); err != nil {
		return err
	}
	if stored.Type == ItemMCPCall {
		b.ItemEvent(hearth.Event{Type: EventMCPCallInProgress})
	}
	return nil
}

// ArgumentsDone ends the open mcp_call's arguments (response.mcp_call_arguments.done):
// the call runs next.
func ArgumentsDone(b *hearth.Builder) error {
	it, err := b.Open(ItemMCPCall)
	if err != nil {
		if err == hearth.ErrFinished {
			return err
		}
		return fmt.Errorf("hearth: MCPArgumentsDone with no mcp_call open")
	}
	if st := stateOf(b); st.argsDone != it.ID {
		b.ItemEvent(hearth.Event{Type: EventMCPCallArgumentsDone, Arguments: it.Arguments})
		st.argsDone = it.ID
	}
	return nil
}

// EndCall ends the open mcp_call with the tool's output, or with errMsg when the call
// failed: response.mcp_call.completed (.failed), then output_item.done.
func EndCall(b *hearth.Builder, output, errMsg string) error {
	status := hearth.StatusCompleted
	if errMsg != "" {
		// OpenAI's mcp_call status has "failed" for a call that ended in an error.
		status = hearth.StatusFailed
	}
	return EndCallAs(b, output, errMsg, status)
}

// EndCallAs is EndCall with the item's final status given: a replay gives the stored
// one (calls stored before hearth said "failed" say "completed" with an error).
func EndCallAs(b *hearth.Builder, output, errMsg, status string) error {
	if err := ArgumentsDone(b); err != nil {
		return err
	}
	it, err := b.Open(ItemMCPCall)
	if err != nil {
		return err
	}
	it.Output = hearth.ToolOutput{Text: output}
	fields(it).Error = errMsg
	typ := EventMCPCallCompleted
	if errMsg != "" {
		typ = EventMCPCallFailed
	}
	b.ItemEvent(hearth.Event{Type: typ})
	return b.CloseItem(status)
}
