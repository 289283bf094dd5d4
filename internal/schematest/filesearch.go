package schematest

import "maps"

// FileSearch is MCP plus OpenAI's definitions of file search as a hosted tool: the
// file_search tool and tool_choice {"type":"file_search"}, the file_search_call item,
// the response.file_search_call.* events and the file_citation annotation. hearth
// sends those only for requests with a file_search tool.
var FileSearch = &Doc{extend: func(schemas map[string]any) error {
	if err := addCustomTools(schemas); err != nil {
		return err
	}
	if err := addSchemas(schemas, mcpSchemas, mcpUnions); err != nil {
		return err
	}
	return addSchemas(schemas, fileSearchSchemas, fileSearchUnions)
}, suffix: "+file-search", extraEvents: fileSearchEvents()}

// fileSearchSchemas follow the openai npm package (src/resources/responses/
// responses.ts: FileSearchTool, ToolChoiceTypes, ResponseFileSearchToolCall with its
// Result, ResponseOutputText.FileCitation and the
// ResponseFileSearchCall{InProgress,Searching,Completed}Event).
const fileSearchSchemas = `{
  "FileSearchToolParam": {
    "type": "object",
    "required": ["type", "vector_store_ids"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": ["file_search"]},
      "vector_store_ids": {"type": "array", "items": {"type": "string"}},
      "max_num_results": {"type": "integer", "minimum": 1, "maximum": 50},
      "filters": {"type": ["object", "null"]},
      "ranking_options": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "ranker": {"type": "string", "enum": ["auto", "default-2024-11-15"]},
          "score_threshold": {"type": "number", "minimum": 0, "maximum": 1},
          "hybrid_search": {"type": "object"}
        }
      }
    }
  },
  "FileSearchToolChoice": {
    "type": "object",
    "required": ["type"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": ["file_search"]}
    }
  },
  "FileSearchCall": {
    "type": "object",
    "required": ["type", "id", "status", "queries"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": ["file_search_call"]},
      "id": {"type": "string"},
      "status": {"type": "string", "enum": ["in_progress", "searching", "completed", "incomplete", "failed"]},
      "queries": {"type": "array", "items": {"type": "string"}},
      "results": {"type": ["array", "null"], "items": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "file_id": {"type": "string"},
          "filename": {"type": "string"},
          "score": {"type": "number"},
          "text": {"type": "string"},
          "attributes": {"type": ["object", "null"], "additionalProperties": {"type": ["string", "number", "boolean"]}}
        }
      }}
    }
  },
  "FileCitationBody": {
    "type": "object",
    "required": ["type", "file_id", "filename", "index"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": ["file_citation"]},
      "file_id": {"type": "string"},
      "filename": {"type": "string"},
      "index": {"type": "integer"}
    }
  },
  "ResponseFileSearchCallStreamingEvent": {
    "type": "object",
    "required": ["type", "sequence_number", "item_id", "output_index"],
    "additionalProperties": false,
    "properties": {
      "type": {"type": "string", "enum": [
        "response.file_search_call.in_progress", "response.file_search_call.searching", "response.file_search_call.completed"
      ]},
      "sequence_number": {"type": "integer"},
      "item_id": {"type": "string"},
      "output_index": {"type": "integer"}
    }
  }
}`

var fileSearchUnions = []union{
	{[]string{"ItemField"}, []string{"FileSearchCall"}},
	{[]string{"ItemParam"}, []string{"FileSearchCall"}},
	{[]string{"ResponsesToolParam"}, []string{"FileSearchToolParam"}},
	{[]string{"SpecificToolChoiceParam"}, []string{"FileSearchToolChoice"}},
	{[]string{"ResponseResource", "properties", "tool_choice"}, []string{"FileSearchToolChoice"}},
	{[]string{"Annotation"}, []string{"FileCitationBody"}},
	// allowed_tools may name the file_search tool by its type.
	{[]string{"AllowedToolChoice", "properties", "tools", "items"}, []string{"FileSearchToolChoice"}},
}

func fileSearchEvents() map[string]string {
	m := maps.Clone(mcpEvents)
	for _, e := range []string{"in_progress", "searching", "completed"} {
		m["response.file_search_call."+e] = "ResponseFileSearchCallStreamingEvent"
	}
	return m
}
