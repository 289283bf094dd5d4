package hearth

import (
	"encoding/json"
	"fmt"
	"slices"
)

// MCP (Model Context Protocol) servers as hosted tools: OpenAI's `mcp` tool. hearth
// lists a configured server's tools, offers them to the model, runs the calls the
// model makes and feeds the results back, all inside one response. The Open
// Responses schema has none of this; the shapes below are OpenAI's.
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

// marshalMCPItem writes the MCP item types; ok is false for any other type.
func marshalMCPItem(it Item) (data []byte, ok bool, err error) {
	switch it.Type {
	case ItemMCPListTools:
		tools := it.MCPTools
		if tools == nil {
			tools = []MCPToolInfo{}
		}
		data, err = json.Marshal(mcpListToolsJSON{it.Type, it.ID, it.ServerLabel, tools, nullable(it.Error), it.Status})
	case ItemMCPCall:
		// The output is null until the call returned, and when it failed.
		var output *string
		if it.Status != StatusInProgress && it.Error == "" {
			output = &it.Output.Text
		}
		data, err = json.Marshal(mcpCallJSON{it.Type, it.ID, it.ServerLabel, it.Name, it.Arguments,
			output, nullable(it.Error), it.Status, nullable(it.ApprovalRequestID)})
	case ItemMCPApprovalRequest:
		data, err = json.Marshal(mcpApprovalRequestJSON{it.Type, it.ID, it.ServerLabel, it.Name, it.Arguments, it.Status})
	case ItemMCPApprovalResponse:
		approve := it.Approve != nil && *it.Approve
		data, err = json.Marshal(mcpApprovalResponseJSON{it.Type, it.ID, it.ApprovalRequestID, approve, nullable(it.Reason)})
	default:
		return nil, false, nil
	}
	return data, true, err
}

// decodeMCPItem reads the fields of the MCP item types into it (type, id and status
// are read already); ok is false for any other type.
func decodeMCPItem(o object, it *Item) (ok bool, err error) {
	switch it.Type {
	case ItemMCPListTools:
		if it.ServerLabel, err = o.requiredString("server_label"); err != nil {
			return true, err
		}
		if err = o.decodeStd("tools", &it.MCPTools, "an array of tools"); err != nil {
			return true, err
		}
		it.Error, err = o.nullableString("error")
	case ItemMCPCall, ItemMCPApprovalRequest:
		if it.ServerLabel, err = o.requiredString("server_label"); err != nil {
			return true, err
		}
		if it.Name, err = o.requiredString("name"); err != nil {
			return true, err
		}
		if it.Name == "" {
			return true, emptyString(o.at("name"))
		}
		if it.Arguments, err = o.requiredString("arguments"); err != nil {
			return true, err
		}
		if it.Type == ItemMCPCall {
			if it.Output.Text, err = o.nullableString("output"); err != nil {
				return true, err
			}
			if it.Error, err = o.nullableString("error"); err != nil {
				return true, err
			}
			it.ApprovalRequestID, err = o.nullableString("approval_request_id")
		}
	case ItemMCPApprovalResponse:
		if it.ApprovalRequestID, err = o.requiredString("approval_request_id"); err != nil {
			return true, err
		}
		if it.ApprovalRequestID == "" {
			return true, emptyString(o.at("approval_request_id"))
		}
		if it.Approve, err = o.boolean("approve"); err != nil {
			return true, err
		}
		if it.Approve == nil {
			return true, missing(o.at("approve"))
		}
		it.Reason, err = o.nullableString("reason")
	default:
		return false, nil
	}
	return true, err
}

// nullableString reads an optional string that may also be null ("" for both).
func (o object) nullableString(key string) (string, error) {
	raw, ok := o.get(key)
	if !ok || kindOf(raw) == kindNull {
		return "", nil
	}
	s, _, err := o.string(key)
	return s, err
}

// decodeMCPTool reads the fields of a {"type": "mcp"} tool.
func decodeMCPTool(o object) (*MCPTool, error) {
	m := &MCPTool{}
	var err error
	if m.ServerLabel, err = o.toolName("server_label"); err != nil {
		return nil, err
	}
	if m.ServerURL, _, err = o.string("server_url"); err != nil {
		return nil, err
	}
	if o.has("connector_id") {
		return nil, InvalidRequest(o.at("connector_id"), "unsupported_parameter",
			fmt.Sprintf("Invalid '%s': hearth has no connectors; configure the MCP server and name it by server_label.", o.at("connector_id")))
	}
	if hs, ok, err := o.object("headers"); err != nil {
		return nil, err
	} else if ok {
		m.Headers = map[string]string{}
		for _, k := range hs.keys() {
			v, _, err := hs.string(k)
			if err != nil {
				return nil, err
			}
			m.Headers[k] = v
		}
	}
	if raw, ok := o.get("allowed_tools"); ok && kindOf(raw) != kindNull {
		p := o.at("allowed_tools")
		var names []json.RawMessage
		switch kindOf(raw) {
		case kindArray:
			names, _ = asArray(raw, p)
		case kindObject:
			f, _ := asObject(raw, p)
			var has bool
			if names, has, err = f.array("tool_names"); err != nil {
				return nil, err
			}
			ro, err := f.boolean("read_only")
			if err != nil {
				return nil, err
			}
			m.AllowedReadOnly = ro != nil && *ro
			if !has {
				break // read_only alone filters; no names filter
			}
			p = f.at("tool_names")
			m.AllowedTools = []string{}
		default:
			return nil, typeError(p, "an array of tool names or an object with tool_names and read_only", raw)
		}
		if kindOf(raw) == kindArray {
			m.AllowedTools = []string{}
		}
		for i, n := range names {
			s, err := asString(n, indexPath(p, i))
			if err != nil {
				return nil, err
			}
			m.AllowedTools = append(m.AllowedTools, s)
		}
	}
	if raw, ok := o.get("require_approval"); ok && kindOf(raw) != kindNull {
		p := o.at("require_approval")
		switch kindOf(raw) {
		case kindString:
			s, _ := asString(raw, p)
			if s != ApprovalAlways && s != ApprovalNever {
				return nil, invalidEnum(p, s, []string{ApprovalAlways, ApprovalNever})
			}
			m.Approval.Mode = s
		case kindObject:
			f, _ := asObject(raw, p)
			for _, which := range []string{ApprovalAlways, ApprovalNever} {
				w, ok, err := f.object(which)
				if err != nil || !ok {
					if err != nil {
						return nil, err
					}
					continue
				}
				elems, _, err := w.array("tool_names")
				if err != nil {
					return nil, err
				}
				ro, err := w.boolean("read_only")
				if err != nil {
					return nil, err
				}
				if which == ApprovalNever && ro != nil && *ro {
					m.Approval.NeverReadOnly = true
				}
				var names []string
				for i, e := range elems {
					s, err := asString(e, indexPath(w.at("tool_names"), i))
					if err != nil {
						return nil, err
					}
					names = append(names, s)
				}
				if which == ApprovalAlways {
					m.Approval.Always = append([]string{}, names...)
				} else {
					m.Approval.Never = append([]string{}, names...)
				}
			}
		default:
			return nil, typeError(p, `"always", "never" or an object`, raw)
		}
	} else {
		m.Approval.Mode = ApprovalAlways
	}
	return m, nil
}
