package schematest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// MCP is CustomTools plus OpenAI's definitions of what the document lacks for MCP
// servers as hosted tools: the mcp tool and tool_choice {"type":"mcp"}, the
// mcp_list_tools, mcp_call, mcp_approval_request and mcp_approval_response items, and
// the response.mcp_list_tools.* / response.mcp_call_arguments.* / response.mcp_call.*
// events. hearth sends those only for requests with mcp tools.
var MCP = &Doc{extend: func(schemas map[string]any) error {
	if err := addCustomTools(schemas); err != nil {
		return err
	}
	return addSchemas(schemas, mcpSchemas, mcpUnions)
}, suffix: "+mcp", extraEvents: mcpEvents}

// mcpSchemas follow OpenAI's API reference (MCPTool, ResponseOutputItem.McpListTools,
// McpCall, McpApprovalRequest, McpApprovalResponse, and the MCP streaming events).
// Items of a response carry a status, as every item of a stream does in hearth.
const mcpSchemas = `{
  "MCPToolParam": {
    "type": "object",
    "required": ["type", "server_label"],
    "properties": {
      "type": {"type": "string", "enum": ["mcp"]},
      "server_label": {"type": "string"},
      "server_url": {"type": "string"},
      "server_description": {"type": "string"},
      "headers": {"anyOf": [{"type": "object", "additionalProperties": {"type": "string"}}, {"type": "null"}]},
      "allowed_tools": {"anyOf": [
        {"type": "array", "items": {"type": "string"}},
        {"type": "object", "properties": {"tool_names": {"type": "array", "items": {"type": "string"}}, "read_only": {"type": "boolean"}}},
        {"type": "null"}
      ]},
      "require_approval": {"anyOf": [
        {"type": "string", "enum": ["always", "never"]},
        {"type": "object", "properties": {
          "always": {"type": "object", "properties": {"tool_names": {"type": "array", "items": {"type": "string"}}}},
          "never": {"type": "object", "properties": {"tool_names": {"type": "array", "items": {"type": "string"}}}}
        }},
        {"type": "null"}
      ]}
    }
  },
  "SpecificMCPToolChoice": {
    "type": "object",
    "required": ["type", "server_label"],
    "properties": {
      "type": {"type": "string", "enum": ["mcp"]},
      "server_label": {"type": "string"},
      "name": {"anyOf": [{"type": "string"}, {"type": "null"}]}
    }
  },
  "MCPListTools": {
    "type": "object",
    "required": ["type", "id", "server_label", "tools"],
    "properties": {
      "type": {"type": "string", "enum": ["mcp_list_tools"]},
      "id": {"type": "string"},
      "server_label": {"type": "string"},
      "tools": {"type": "array", "items": {
        "type": "object",
        "required": ["name", "input_schema"],
        "properties": {
          "name": {"type": "string"},
          "description": {"anyOf": [{"type": "string"}, {"type": "null"}]},
          "input_schema": {},
          "annotations": {}
        }
      }},
      "error": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "status": {"type": "string", "enum": ["in_progress", "completed", "incomplete"]}
    }
  },
  "MCPCall": {
    "type": "object",
    "required": ["type", "id", "server_label", "name", "arguments"],
    "properties": {
      "type": {"type": "string", "enum": ["mcp_call"]},
      "id": {"type": "string"},
      "server_label": {"type": "string"},
      "name": {"type": "string"},
      "arguments": {"type": "string"},
      "output": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "error": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "status": {"type": "string", "enum": ["in_progress", "completed", "incomplete", "calling", "failed"]},
      "approval_request_id": {"anyOf": [{"type": "string"}, {"type": "null"}]}
    }
  },
  "MCPApprovalRequest": {
    "type": "object",
    "required": ["type", "id", "server_label", "name", "arguments"],
    "properties": {
      "type": {"type": "string", "enum": ["mcp_approval_request"]},
      "id": {"type": "string"},
      "server_label": {"type": "string"},
      "name": {"type": "string"},
      "arguments": {"type": "string"},
      "status": {"type": "string", "enum": ["in_progress", "completed", "incomplete"]}
    }
  },
  "MCPApprovalResponse": {
    "type": "object",
    "required": ["type", "approval_request_id", "approve"],
    "properties": {
      "type": {"type": "string", "enum": ["mcp_approval_response"]},
      "id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "approval_request_id": {"type": "string"},
      "approve": {"type": "boolean"},
      "reason": {"anyOf": [{"type": "string"}, {"type": "null"}]}
    }
  },
  "ResponseMCPItemStreamingEvent": {
    "type": "object",
    "required": ["type", "sequence_number", "item_id", "output_index"],
    "properties": {
      "type": {"type": "string", "enum": [
        "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.mcp_list_tools.failed",
        "response.mcp_call.in_progress", "response.mcp_call.completed", "response.mcp_call.failed"
      ]},
      "sequence_number": {"type": "integer"},
      "item_id": {"type": "string"},
      "output_index": {"type": "integer"}
    }
  },
  "ResponseMCPCallArgumentsDeltaStreamingEvent": {
    "type": "object",
    "required": ["type", "sequence_number", "item_id", "output_index", "delta"],
    "properties": {
      "type": {"type": "string", "enum": ["response.mcp_call_arguments.delta"]},
      "sequence_number": {"type": "integer"},
      "item_id": {"type": "string"},
      "output_index": {"type": "integer"},
      "delta": {"type": "string"}
    }
  },
  "ResponseMCPCallArgumentsDoneStreamingEvent": {
    "type": "object",
    "required": ["type", "sequence_number", "item_id", "output_index", "arguments"],
    "properties": {
      "type": {"type": "string", "enum": ["response.mcp_call_arguments.done"]},
      "sequence_number": {"type": "integer"},
      "item_id": {"type": "string"},
      "output_index": {"type": "integer"},
      "arguments": {"type": "string"}
    }
  }
}`

// mcpEvents maps the MCP events to their schemas in MCP.
var mcpEvents = map[string]string{
	"response.mcp_list_tools.in_progress": "ResponseMCPItemStreamingEvent",
	"response.mcp_list_tools.completed":   "ResponseMCPItemStreamingEvent",
	"response.mcp_list_tools.failed":      "ResponseMCPItemStreamingEvent",
	"response.mcp_call.in_progress":       "ResponseMCPItemStreamingEvent",
	"response.mcp_call.completed":         "ResponseMCPItemStreamingEvent",
	"response.mcp_call.failed":            "ResponseMCPItemStreamingEvent",
	"response.mcp_call_arguments.delta":   "ResponseMCPCallArgumentsDeltaStreamingEvent",
	"response.mcp_call_arguments.done":    "ResponseMCPCallArgumentsDoneStreamingEvent",
}

// mcpUnions lists the unions the MCP schemas join.
var mcpUnions = []union{
	{[]string{"ItemField"}, []string{"MCPListTools", "MCPCall", "MCPApprovalRequest"}},
	{[]string{"ItemParam"}, []string{"MCPListTools", "MCPCall", "MCPApprovalRequest", "MCPApprovalResponse"}},
	{[]string{"ResponsesToolParam"}, []string{"MCPToolParam"}},
	{[]string{"SpecificToolChoiceParam"}, []string{"SpecificMCPToolChoice"}},
	{[]string{"ResponseResource", "properties", "tool_choice"}, []string{"SpecificMCPToolChoice"}},
}

type union struct {
	path    []string
	members []string
}

// addSchemas adds the schemas of text to the document and their names to unions.
func addSchemas(schemas map[string]any, text string, unions []union) error {
	// Numbers stay json.Number, as the validator's own reader leaves them.
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var add map[string]any
	if err := dec.Decode(&add); err != nil {
		return err
	}
	for name, s := range add {
		if _, exists := schemas[name]; exists {
			return fmt.Errorf("the document already defines %s", name)
		}
		schemas[name] = s
	}
	for _, u := range unions {
		node, ok := lookup(schemas, u.path...).(map[string]any)
		if !ok {
			return fmt.Errorf("the document has no %s", strings.Join(u.path, "."))
		}
		oneOf, ok := node["oneOf"].([]any)
		if !ok {
			return fmt.Errorf("%s is not a oneOf", strings.Join(u.path, "."))
		}
		for _, m := range u.members {
			oneOf = append(oneOf, map[string]any{"$ref": "#/components/schemas/" + m})
		}
		node["oneOf"] = oneOf
	}
	return nil
}
