package schematest

import "maps"

// WebSearch is MCP plus OpenAI's definitions of web search as a hosted tool: the
// web_search and web_search_preview tools and tool_choice {"type":"web_search"}, the
// web_search_call item and the response.web_search_call.* events. hearth sends those
// only for requests with a web_search tool, on a hearth with a search configured.
var WebSearch = &Doc{extend: func(schemas map[string]any) error {
	if err := addCustomTools(schemas); err != nil {
		return err
	}
	if err := addSchemas(schemas, mcpSchemas, mcpUnions); err != nil {
		return err
	}
	return addSchemas(schemas, webSearchSchemas, webSearchUnions)
}, suffix: "+web-search", extraEvents: webSearchEvents()}

// webSearchSchemas follow the openai npm package (src/resources/responses/
// responses.ts: WebSearchTool, WebSearchPreviewTool, ToolChoiceTypes,
// ResponseFunctionWebSearch with its Search action and Source, and the
// ResponseWebSearchCall{InProgress,Searching,Completed}Event).
const webSearchSchemas = `{
  "WebSearchToolParam": {
    "type": "object",
    "required": ["type"],
    "properties": {
      "type": {"type": "string", "enum": ["web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11"]},
      "search_context_size": {"type": "string", "enum": ["low", "medium", "high"]},
      "external_web_access": {"type": "boolean"}
    }
  },
  "WebSearchToolChoice": {
    "type": "object",
    "required": ["type"],
    "properties": {
      "type": {"type": "string", "enum": ["web_search", "web_search_preview", "web_search_preview_2025_03_11"]}
    }
  },
  "WebSearchCall": {
    "type": "object",
    "required": ["type", "id", "status", "action"],
    "properties": {
      "type": {"type": "string", "enum": ["web_search_call"]},
      "id": {"type": "string"},
      "status": {"type": "string", "enum": ["in_progress", "searching", "completed", "failed", "incomplete"]},
      "action": {
        "type": "object",
        "required": ["type"],
        "properties": {
          "type": {"type": "string", "enum": ["search", "open_page", "find_in_page"]},
          "query": {"type": "string"},
          "queries": {"type": "array", "items": {"type": "string"}},
          "sources": {"type": "array", "items": {
            "type": "object",
            "required": ["type", "url"],
            "additionalProperties": false,
            "properties": {"type": {"type": "string", "enum": ["url"]}, "url": {"type": "string"}}
          }}
        }
      }
    },
    "additionalProperties": false
  },
  "ResponseWebSearchCallStreamingEvent": {
    "type": "object",
    "required": ["type", "sequence_number", "item_id", "output_index"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": [
        "response.web_search_call.in_progress", "response.web_search_call.searching", "response.web_search_call.completed"
      ]},
      "sequence_number": {"type": "integer"},
      "item_id": {"type": "string"},
      "output_index": {"type": "integer"}
    }
  }
}`

var webSearchUnions = []union{
	{[]string{"ItemField"}, []string{"WebSearchCall"}},
	{[]string{"ItemParam"}, []string{"WebSearchCall"}},
	{[]string{"ResponsesToolParam"}, []string{"WebSearchToolParam"}},
	{[]string{"SpecificToolChoiceParam"}, []string{"WebSearchToolChoice"}},
	{[]string{"ResponseResource", "properties", "tool_choice"}, []string{"WebSearchToolChoice"}},
}

func webSearchEvents() map[string]string {
	m := maps.Clone(mcpEvents)
	for _, e := range []string{"in_progress", "searching", "completed"} {
		m["response.web_search_call."+e] = "ResponseWebSearchCallStreamingEvent"
	}
	return m
}
