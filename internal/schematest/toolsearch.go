package schematest

// ToolSearch is CustomTools plus OpenAI's definitions of tool search: the
// tool_search tool, function tools with defer_loading, and the tool_search_call and
// tool_search_output items. OpenAI streams no events of their own for these items
// (only response.output_item.added and .done), so the events are the document's.
// hearth sends those items only for requests with a tool_search tool.
var ToolSearch = &Doc{extend: func(schemas map[string]any) error {
	if err := addCustomTools(schemas); err != nil {
		return err
	}
	return addSchemas(schemas, toolSearchSchemas, toolSearchUnions)
}, suffix: "+tool-search"}

// toolSearchSchemas follow the openai npm package (src/resources/responses/
// responses.ts: ToolSearchTool, ResponseToolSearchCall, ResponseToolSearchOutputItem,
// ResponseInputItem.ToolSearchCall and ResponseToolSearchOutputItemParam). The items
// of a response carry all their fields; the input params may leave out id, call_id,
// execution and status (and give null for call_id and status).
const toolSearchSchemas = `{
  "ToolSearchToolParam": {
    "type": "object",
    "required": ["type"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": ["tool_search"]},
      "execution": {"type": "string", "enum": ["server", "client"]},
      "description": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "parameters": {}
    }
  },
  "ToolSearchCall": {
    "type": "object",
    "required": ["type", "id", "call_id", "execution", "status", "arguments"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": ["tool_search_call"]},
      "id": {"type": "string"},
      "call_id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "execution": {"type": "string", "enum": ["server", "client"]},
      "status": {"type": "string", "enum": ["in_progress", "completed", "incomplete"]},
      "arguments": {},
      "created_by": {"type": "string"}
    }
  },
  "ToolSearchOutput": {
    "type": "object",
    "required": ["type", "id", "call_id", "execution", "status", "tools"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": ["tool_search_output"]},
      "id": {"type": "string"},
      "call_id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "execution": {"type": "string", "enum": ["server", "client"]},
      "status": {"type": "string", "enum": ["in_progress", "completed", "incomplete"]},
      "tools": {"type": "array", "items": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}},
      "created_by": {"type": "string"}
    }
  },
  "ToolSearchCallParam": {
    "type": "object",
    "required": ["type", "arguments"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": ["tool_search_call"]},
      "id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "call_id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "execution": {"type": "string", "enum": ["server", "client"]},
      "status": {"anyOf": [{"type": "string", "enum": ["in_progress", "completed", "incomplete"]}, {"type": "null"}]},
      "arguments": {}
    }
  },
  "ToolSearchOutputParam": {
    "type": "object",
    "required": ["type", "tools"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": ["tool_search_output"]},
      "id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "call_id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "execution": {"type": "string", "enum": ["server", "client"]},
      "status": {"anyOf": [{"type": "string", "enum": ["in_progress", "completed", "incomplete"]}, {"type": "null"}]},
      "tools": {"type": "array", "items": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}}
    }
  }
}`

var toolSearchUnions = []union{
	{[]string{"ItemField"}, []string{"ToolSearchCall", "ToolSearchOutput"}},
	{[]string{"ItemParam"}, []string{"ToolSearchCallParam", "ToolSearchOutputParam"}},
	{[]string{"ResponsesToolParam"}, []string{"ToolSearchToolParam"}},
}
