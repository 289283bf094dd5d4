package schematest

// customToolSchemas are OpenAI's definitions of custom (freeform) tools, which the
// Open Responses document lacks, written in the document's style. Their shapes follow
// OpenAI's API reference (CustomTool, ResponseCustomToolCall(Item),
// ResponseCustomToolCallOutput, ResponseCustomToolCallInputDelta/DoneEvent): an item
// of a response carries id and status, as every item there does.
const customToolSchemas = `{
  "CustomToolParam": {
    "type": "object",
    "required": ["type", "name"],
    "properties": {
      "type": {"type": "string", "enum": ["custom"]},
      "name": {"type": "string", "minLength": 1},
      "description": {"type": "string"},
      "format": {"oneOf": [
        {"type": "object", "required": ["type"], "properties": {"type": {"type": "string", "enum": ["text"]}}},
        {"type": "object", "required": ["type", "syntax", "definition"], "properties": {
          "type": {"type": "string", "enum": ["grammar"]},
          "syntax": {"type": "string", "enum": ["lark", "regex"]},
          "definition": {"type": "string"}
        }}
      ]}
    }
  },
  "SpecificCustomToolParam": {
    "type": "object",
    "required": ["type", "name"],
    "properties": {
      "type": {"type": "string", "enum": ["custom"]},
      "name": {"type": "string"}
    }
  },
  "CustomToolCall": {
    "type": "object",
    "required": ["type", "id", "call_id", "name", "input", "status"],
    "properties": {
      "type": {"type": "string", "enum": ["custom_tool_call"]},
      "id": {"type": "string"},
      "call_id": {"type": "string"},
      "name": {"type": "string"},
      "namespace": {"type": "string"},
      "input": {"type": "string"},
      "status": {"type": "string", "enum": ["in_progress", "completed", "incomplete"]}
    }
  },
  "CustomToolCallOutput": {
    "type": "object",
    "required": ["type", "call_id", "output"],
    "properties": {
      "type": {"type": "string", "enum": ["custom_tool_call_output"]},
      "id": {"type": "string"},
      "call_id": {"type": "string"},
      "output": {"$ref": "#/components/schemas/FunctionCallOutput/properties/output"},
      "status": {"type": "string", "enum": ["in_progress", "completed", "incomplete"]}
    }
  },
  "CustomToolCallItemParam": {
    "type": "object",
    "required": ["type", "call_id", "name", "input"],
    "properties": {
      "type": {"type": "string", "enum": ["custom_tool_call"]},
      "id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "call_id": {"type": "string", "minLength": 1},
      "name": {"type": "string", "minLength": 1},
      "input": {"type": "string"}
    }
  },
  "CustomToolCallOutputItemParam": {
    "type": "object",
    "required": ["type", "call_id", "output"],
    "properties": {
      "type": {"type": "string", "enum": ["custom_tool_call_output"]},
      "id": {"anyOf": [{"type": "string"}, {"type": "null"}]},
      "call_id": {"type": "string", "minLength": 1},
      "output": {"$ref": "#/components/schemas/FunctionCallOutputItemParam/properties/output"}
    }
  },
  "ResponseCustomToolCallInputDeltaStreamingEvent": {
    "type": "object",
    "required": ["type", "sequence_number", "item_id", "output_index", "delta"],
    "properties": {
      "type": {"type": "string", "enum": ["response.custom_tool_call_input.delta"]},
      "sequence_number": {"type": "integer"},
      "item_id": {"type": "string"},
      "output_index": {"type": "integer"},
      "delta": {"type": "string"}
    }
  },
  "ResponseCustomToolCallInputDoneStreamingEvent": {
    "type": "object",
    "required": ["type", "sequence_number", "item_id", "output_index", "input"],
    "properties": {
      "type": {"type": "string", "enum": ["response.custom_tool_call_input.done"]},
      "sequence_number": {"type": "integer"},
      "item_id": {"type": "string"},
      "output_index": {"type": "integer"},
      "input": {"type": "string"}
    }
  }
}`

// customToolEvents maps the custom tool events to their schemas in CustomTools.
var customToolEvents = map[string]string{
	"response.custom_tool_call_input.delta": "ResponseCustomToolCallInputDeltaStreamingEvent",
	"response.custom_tool_call_input.done":  "ResponseCustomToolCallInputDoneStreamingEvent",
}

// customToolUnions lists the unions (oneOf) the new schemas join, by their path under
// components.schemas: items, tools, and the tool_choice a response echoes.
var customToolUnions = []union{
	{[]string{"ItemField"}, []string{"CustomToolCall", "CustomToolCallOutput"}},
	{[]string{"ItemParam"}, []string{"CustomToolCallItemParam", "CustomToolCallOutputItemParam"}},
	{[]string{"ResponsesToolParam"}, []string{"CustomToolParam"}},
	{[]string{"SpecificToolChoiceParam"}, []string{"SpecificCustomToolParam"}},
	{[]string{"ResponseResource", "properties", "tool_choice"}, []string{"SpecificCustomToolParam"}},
	{[]string{"AllowedToolChoice", "properties", "tools", "items"}, []string{"SpecificCustomToolParam"}},
}

func addCustomTools(schemas map[string]any) error {
	return addSchemas(schemas, customToolSchemas, customToolUnions)
}
