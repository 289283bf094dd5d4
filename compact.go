package hearth

import (
	"encoding/json"
	"sort"
	"strings"
)

// ObjectCompaction is the object type of a compaction result.
const ObjectCompaction = "response.compaction"

// CompactResponse is the body POST /v1/responses/compact answers with (the schema's
// CompactResource): the compacted window of items, which a client sends as input in
// place of the conversation it compacted, and the usage of the summarising pass.
type CompactResponse struct {
	ID        string `json:"id"`
	Object    string `json:"object"`
	CreatedAt int64  `json:"created_at"`
	Output    []Item `json:"output"`
	Usage     Usage  `json:"usage"`
}

// compactFields are the create fields a compaction uses: the schema's compact body
// (model, input, previous_response_id, instructions, prompt_cache_key) plus those that
// shape the summarising generation.
var compactFields = map[string]bool{
	"model": true, "input": true, "previous_response_id": true, "instructions": true, "prompt_cache_key": true,
	"reasoning": true, "max_output_tokens": true, "temperature": true, "top_p": true,
	"presence_penalty": true, "frequency_penalty": true, "truncation": true,
	"service_tier": true, "safety_identifier": true, "user": true,
}

// DecodeCompactRequest decodes and validates the body of POST /v1/responses/compact.
// Clients send it create-shaped (Codex adds its tools and settings), so it is decoded
// and validated as a create request, with the same errors; ignored lists the fields a
// compaction has no use for (tools, stream, store, ...) along with unknown ones.
func DecodeCompactRequest(body []byte) (req *CreateResponseRequest, ignored []string, err error) {
	req, ignored, err = DecodeCreateRequest(body)
	if err != nil {
		return nil, nil, err
	}
	var fields map[string]json.RawMessage
	json.Unmarshal(body, &fields) // parsed once already
	for k := range fields {
		if knownRequestFields[k] && !compactFields[k] {
			ignored = append(ignored, k)
		}
	}
	// Hosted tools were reported one by one; the whole tools field is ignored now.
	kept := ignored[:0]
	for _, f := range ignored {
		if !strings.HasPrefix(f, "tools[") {
			kept = append(kept, f)
		}
	}
	sort.Strings(kept)
	return req, kept, nil
}
