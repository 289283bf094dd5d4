package hearth_test

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/internal/schematest"
)

func decode(t *testing.T, body string) (*hearth.CreateResponseRequest, []string) {
	t.Helper()
	req, ignored, err := hearth.DecodeCreateRequest([]byte(body))
	if err != nil {
		t.Fatalf("DecodeCreateRequest(%s): %v", body, err)
	}
	return req, ignored
}

func TestDecodeStringInputIsAUserMessage(t *testing.T) {
	req, ignored := decode(t, `{"model":"m","input":"hello"}`)
	want := []hearth.Item{{Type: "message", Role: "user", Content: []hearth.ContentPart{{Type: "input_text", Text: "hello"}}}}
	if !reflect.DeepEqual(req.Input, want) {
		t.Errorf("input = %+v, want %+v", req.Input, want)
	}
	if len(ignored) != 0 {
		t.Errorf("ignored = %v", ignored)
	}
}

func TestDecodeNullMeansAbsent(t *testing.T) {
	req, _ := decode(t, `{"model":"m","input":null,"instructions":null,"tools":null,"tool_choice":null,
		"temperature":null,"max_output_tokens":null,"text":null,"reasoning":null,"metadata":null,
		"store":null,"stream":null,"previous_response_id":null,"prompt_cache_key":null}`)
	want := &hearth.CreateResponseRequest{Model: "m"}
	if !reflect.DeepEqual(req, want) {
		t.Errorf("got %+v, want %+v", req, want)
	}
}

// TestDecodeIgnoredFields: the top-level fields OpenAI takes and hearth does not model
// are accepted and named, as are hosted tools hearth cannot run; any other unknown
// top-level field is refused (TestDecodeUnknownParameter).
func TestDecodeIgnoredFields(t *testing.T) {
	_, ignored := decode(t, `{"model":"m","client_metadata":{},"prompt":{"id":"pmpt_1"},
		"tools":[{"type":"function","name":"f"},{"type":"file_search","vector_store_ids":["vs_1"]},{"type":"acme:search"}]}`)
	want := []string{"client_metadata", "prompt", "tools[1] (file_search)", "tools[2] (acme:search)"}
	if !reflect.DeepEqual(ignored, want) {
		t.Errorf("ignored = %q, want %q", ignored, want)
	}
}

// TestDecodeUnknownParameter: a top-level field hearth neither decodes nor tolerates is
// a 400 unknown_parameter naming it (the first, sorted, when there are several), as
// OpenAI answers: a misspelt field must not run a request other than the one meant.
// Every property of the schema's CreateResponseBody stays accepted.
func TestDecodeUnknownParameter(t *testing.T) {
	for _, tc := range []struct{ body, param string }{
		{`{"model":"m","inputs":"hi"}`, "inputs"},
		{`{"model":"m","input":"hi","max_tokens":10}`, "max_tokens"},
		{`{"model":"m","input":"hi","zeta":1,"text_extra":"c"}`, "text_extra"},
		// A client's name comes back bounded.
		{`{"model":"m","` + strings.Repeat("a", 100<<10) + `":1}`, strings.Repeat("a", 64) + "..."},
	} {
		_, _, err := hearth.DecodeCreateRequest([]byte(tc.body))
		var e *hearth.Error
		if !errors.As(err, &e) || e.Param != tc.param || e.Code != hearth.CodeUnknownParameter || e.Status != 400 ||
			e.Message != "Unknown parameter: '"+tc.param+"'." {
			t.Errorf("%s: %v, want unknown_parameter on %s", tc.body, err, tc.param)
		}
	}
	schemaFields := []string{"background", "frequency_penalty", "include", "input", "instructions", "max_output_tokens",
		"max_tool_calls", "metadata", "model", "parallel_tool_calls", "presence_penalty", "previous_response_id",
		"prompt_cache_key", "reasoning", "safety_identifier", "service_tier", "store", "stream", "stream_options",
		"temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p", "truncation",
		// OpenAI's API beyond the Open Responses schema.
		"conversation", "user", "prompt_cache_retention", "context_management", "prompt", "client_metadata"}
	for _, f := range schemaFields {
		if !hearth.KnownRequestField(f) {
			t.Errorf("%s is not accepted", f)
		}
	}
}

// TestRequireInput: a request with nothing to answer is refused naming input; input,
// previous_response_id or conversation each give it something.
func TestRequireInput(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"model":"m"}`, false},
		{`{"model":"m","instructions":"Be brief."}`, false},
		{`{"model":"m","input":[]}`, false},
		{`{"model":"m","prompt":{"id":"pmpt_1"}}`, false},
		{`{"model":"m","input":"hi"}`, true},
		{`{"model":"m","previous_response_id":"resp_1"}`, true},
		{`{"model":"m","conversation":"conv_1"}`, true},
	} {
		req, ignored := decode(t, tc.body)
		err := hearth.RequireInput(req, ignored)
		var e *hearth.Error
		if tc.ok != (err == nil) || (err != nil && (!errors.As(err, &e) || e.Param != "input" || e.Code != hearth.CodeMissingRequiredParameter)) {
			t.Errorf("%s: %v", tc.body, err)
		}
		if err != nil && strings.Contains(tc.body, "prompt") != strings.Contains(err.Error(), "saved prompts") {
			t.Errorf("%s: %v", tc.body, err)
		}
	}
}

func TestDecodeItems(t *testing.T) {
	req, _ := decode(t, `{"model":"m","input":[
		{"role":"user","content":"plain"},
		{"role":"assistant","content":"said"},
		{"type":"message","role":"system","content":[{"type":"input_text","text":"sys"}]},
		{"type":"message","role":"user","id":"msg_1","content":[
			{"type":"input_text","text":"look"},
			{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"},
			{"type":"input_image","file_id":"file_1"},
			{"type":"input_file","filename":"a.txt","file_data":"aGk="}]},
		{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],
			"content":[{"type":"reasoning_text","text":"r"}],"encrypted_content":"enc","status":"completed"},
		{"type":"function_call","id":"fc_1","call_id":"call_1","name":"spawn_agent","namespace":"multi_agent_v1","arguments":"{}","status":"completed"},
		{"type":"function_call_output","call_id":"call_1","output":"ok"},
		{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"t"},{"type":"input_image","image_url":"https://x/y.png"}]},
		{"type":"custom_tool_call","call_id":"call_3","name":"apply_patch","input":"*** Begin Patch"},
		{"type":"custom_tool_call_output","call_id":"call_3","output":"done"},
		{"id":"msg_0"},
		{"type":"item_reference","id":"msg_00"},
		{"type":"compaction","id":"cmp_1","encrypted_content":"xyz"},
		{"type":"message","role":"assistant","phase":"final_answer","content":[
			{"type":"output_text","text":"a","annotations":[{"type":"url_citation","url":"https://e","title":"E","start_index":0,"end_index":1}]},
			{"type":"refusal","refusal":"no"}]}
	]}`)
	want := []hearth.Item{
		{Type: "message", Role: "user", Content: []hearth.ContentPart{{Type: "input_text", Text: "plain"}}},
		{Type: "message", Role: "assistant", Content: []hearth.ContentPart{{Type: "output_text", Text: "said"}}},
		{Type: "message", Role: "system", Content: []hearth.ContentPart{{Type: "input_text", Text: "sys"}}},
		{Type: "message", Role: "user", ID: "msg_1", Content: []hearth.ContentPart{
			{Type: "input_text", Text: "look"},
			{Type: "input_image", ImageURL: "data:image/png;base64,iVBORw0KGgo=", Detail: "low"},
			{Type: "input_image", FileID: "file_1", Detail: "auto"},
			{Type: "input_file", Filename: "a.txt", FileData: "aGk="}}},
		{Type: "reasoning", ID: "rs_1", Status: "completed", Summary: []hearth.ContentPart{{Type: "summary_text", Text: "s"}},
			Content: []hearth.ContentPart{{Type: "reasoning_text", Text: "r"}}, EncryptedContent: "enc"},
		{Type: "function_call", ID: "fc_1", Status: "completed", CallID: "call_1", Name: "spawn_agent", Namespace: "multi_agent_v1", Arguments: "{}"},
		{Type: "function_call_output", CallID: "call_1", Output: hearth.ToolOutput{Text: "ok"}},
		{Type: "function_call_output", CallID: "call_2", Output: hearth.ToolOutput{Parts: []hearth.ContentPart{
			{Type: "input_text", Text: "t"}, {Type: "input_image", ImageURL: "https://x/y.png", Detail: "auto"}}}},
		{Type: "custom_tool_call", CallID: "call_3", Name: "apply_patch", Input: "*** Begin Patch"},
		{Type: "custom_tool_call_output", CallID: "call_3", Output: hearth.ToolOutput{Text: "done"}},
		{Type: "item_reference", ID: "msg_0"},
		{Type: "item_reference", ID: "msg_00"},
		{Type: "compaction", ID: "cmp_1", EncryptedContent: "xyz"},
		{Type: "message", Role: "assistant", Phase: "final_answer", Content: []hearth.ContentPart{
			{Type: "output_text", Text: "a", Annotations: []hearth.Annotation{{Type: "url_citation", URL: "https://e", Title: "E", StartIndex: 0, EndIndex: 1}}},
			{Type: "refusal", Refusal: "no"}}},
	}
	if len(req.Input) != len(want) {
		t.Fatalf("got %d items, want %d", len(req.Input), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(req.Input[i], want[i]) {
			t.Errorf("input[%d] =\n  %+v\nwant\n  %+v", i, req.Input[i], want[i])
		}
	}
}

func TestDecodeSettings(t *testing.T) {
	req, _ := decode(t, `{"model":"m","instructions":"be brief","previous_response_id":"resp_1",
		"tools":[{"type":"function","name":"get_weather","description":"d","strict":true,
			"parameters":{"type":"object","properties":{"city":{"type":"string"}}}},
			{"type":"custom","name":"apply_patch","format":{"type":"grammar","syntax":"lark","definition":"start: \"x\""}}],
		"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"get_weather"}]},
		"parallel_tool_calls":false,"max_output_tokens":16,"max_tool_calls":3,"temperature":0,"top_p":0.5,
		"presence_penalty":-2,"frequency_penalty":2,"top_logprobs":20,
		"text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true},"verbosity":"low"},
		"reasoning":{"effort":"minimal","summary":"detailed"},"truncation":"auto","store":false,
		"metadata":{"k":"v"},"stream":true,"stream_options":{"include_obfuscation":false},"background":true,
		"service_tier":"flex","prompt_cache_key":"pck","safety_identifier":"sid","user":"u",
		"include":["reasoning.encrypted_content","message.output_text.logprobs"]}`)

	f, tr := false, true
	n16, n3, n20 := 16, 3, 20
	zero, half, m2, p2 := 0.0, 0.5, -2.0, 2.0
	want := &hearth.CreateResponseRequest{
		Model: "m", Instructions: "be brief", PreviousResponseID: "resp_1",
		Tools: []hearth.Tool{
			{Type: "function", Name: "get_weather", Description: "d", Strict: &tr,
				Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
			{Type: "custom", Name: "apply_patch", Format: hearth.CustomToolFormat{Type: "grammar", Syntax: "lark", Definition: `start: "x"`}},
		},
		ToolChoice:        hearth.ToolChoice{Type: "allowed_tools", Mode: "required", Allowed: []hearth.ToolRef{{Type: "function", Name: "get_weather"}}},
		ParallelToolCalls: &f, MaxOutputTokens: &n16, MaxToolCalls: &n3, Temperature: &zero, TopP: &half,
		PresencePenalty: &m2, FrequencyPenalty: &p2, TopLogprobs: &n20,
		Text:      hearth.TextConfig{Format: hearth.TextFormat{Type: "json_schema", Name: "out", Schema: json.RawMessage(`{"type":"object"}`), Strict: &tr}, Verbosity: "low"},
		Reasoning: hearth.Reasoning{Effort: "minimal", Summary: "detailed"}, Truncation: "auto", Store: &f,
		Metadata: map[string]string{"k": "v"}, Stream: true, StreamOptions: &hearth.StreamOptions{IncludeObfuscation: &f},
		Background: true, ServiceTier: "flex", PromptCacheKey: "pck", SafetyIdentifier: "sid", User: "u",
		Include: []string{"reasoning.encrypted_content", "message.output_text.logprobs"},
	}
	if !reflect.DeepEqual(req, want) {
		got, _ := json.Marshal(req)
		exp, _ := json.Marshal(want)
		t.Errorf("got  %s\nwant %s", got, exp)
	}
	if req.StoreEnabled() || req.ParallelToolCallsEnabled() || !req.Includes(hearth.IncludeReasoningEncryptedContent) {
		t.Errorf("helpers disagree with the fields")
	}
}

func TestDecodeToolChoiceForms(t *testing.T) {
	tools := `"tools":[{"type":"function","name":"f"},{"type":"custom","name":"c"},
		{"type":"namespace","name":"ns","tools":[{"type":"function","name":"g"}]}]`
	for _, tc := range []struct {
		choice string
		want   hearth.ToolChoice
		mode   string
	}{
		{`"none"`, hearth.ToolChoice{Mode: "none"}, "none"},
		{`"auto"`, hearth.ToolChoice{Mode: "auto"}, "auto"},
		{`"required"`, hearth.ToolChoice{Mode: "required"}, "required"},
		{`{"type":"function","name":"f"}`, hearth.ToolChoice{Type: "function", Name: "f"}, "required"},
		{`{"type":"function","name":"g"}`, hearth.ToolChoice{Type: "function", Name: "g"}, "required"},
		{`{"type":"custom","name":"c"}`, hearth.ToolChoice{Type: "custom", Name: "c"}, "required"},
		{`{"type":"allowed_tools","tools":[{"type":"function","name":"f"}]}`,
			hearth.ToolChoice{Type: "allowed_tools", Mode: "auto", Allowed: []hearth.ToolRef{{Type: "function", Name: "f"}}}, "auto"},
	} {
		req, _ := decode(t, `{"model":"m",`+tools+`,"tool_choice":`+tc.choice+`}`)
		if !reflect.DeepEqual(req.ToolChoice, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.choice, req.ToolChoice, tc.want)
		}
		if m := req.ToolChoice.EffectiveMode(); m != tc.mode {
			t.Errorf("%s: EffectiveMode = %q, want %q", tc.choice, m, tc.mode)
		}
	}
}

// TestDecodeCodexRequest decodes a first-turn body as Codex CLI sends it
// (clients-notes.md) and checks what the server and engine rely on.
func TestDecodeCodexRequest(t *testing.T) {
	body, err := os.ReadFile("testdata/codex_request.json")
	if err != nil {
		t.Fatal(err)
	}
	req, ignored, err := hearth.DecodeCreateRequest(body)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"client_metadata", "tools[8] (web_search)"}; !reflect.DeepEqual(ignored, want) {
		t.Errorf("ignored = %q, want %q", ignored, want)
	}
	if !req.Stream || req.StoreEnabled() || !req.ParallelToolCallsEnabled() || req.Reasoning.Summary != "auto" ||
		!req.Includes(hearth.IncludeReasoningEncryptedContent) || req.PromptCacheKey == "" || req.ToolChoice.EffectiveMode() != "auto" {
		t.Errorf("settings not decoded: %+v", req)
	}
	var roles []string
	for _, it := range req.Input {
		if it.ID == "" || it.Type != "message" {
			t.Errorf("input item %+v: want a message with an id", it)
		}
		roles = append(roles, it.Role)
	}
	if want := []string{"developer", "developer", "user", "user"}; !reflect.DeepEqual(roles, want) {
		t.Errorf("roles = %q, want %q", roles, want)
	}
	if got := req.Input[3].Text(); got != "List the Go files in this repository." {
		t.Errorf("user text = %q", got)
	}
	if len(req.Tools) != 9 {
		t.Fatalf("got %d tools, want 9", len(req.Tools))
	}
	ns := req.Tools[7]
	if ns.Type != "namespace" || ns.Name != "multi_agent_v1" || len(ns.Tools) != 2 || ns.Tools[0].Name != "spawn_agent" {
		t.Errorf("namespace tool = %+v", ns)
	}
	if !req.Tools[8].Hosted() || !strings.Contains(string(req.Tools[8].Raw), "external_web_access") {
		t.Errorf("web_search tool = %+v", req.Tools[8])
	}
	var params struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(req.Tools[0].Parameters, &params); err != nil || params.Required[0] != "cmd" {
		t.Errorf("exec_command parameters = %s", req.Tools[0].Parameters)
	}

	// The response to it echoes the seven functions and the two namespaced
	// ones, flat, and is valid.
	resp := hearth.NewResponse(hearth.NewID(hearth.PrefixResponse), req, time.Now())
	if len(resp.Tools) != 9 || resp.Tools[7].Namespace != "multi_agent_v1" {
		t.Errorf("echoed tools = %+v", resp.Tools)
	}
	schematest.Validate(t, "ResponseResource", resp)
}

// TestRequestRoundTrip: a decoded request marshals to a body that decodes
// to the same request (storage keeps requests this way).
func TestRequestRoundTrip(t *testing.T) {
	bodies := []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}],
			"tool_choice":{"type":"allowed_tools","tools":[{"type":"function","name":"f"}]},
			"tools":[{"type":"function","name":"f"}],"text":{"format":{"type":"json_object"}},
			"reasoning":{"effort":"high"},"metadata":{"a":"b"}}`,
	}
	codex, err := os.ReadFile("testdata/codex_request.json")
	if err != nil {
		t.Fatal(err)
	}
	bodies = append(bodies, string(codex))
	for _, body := range bodies {
		req, _ := decode(t, body)
		data, err := json.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := decode(t, string(data))
		if !reflect.DeepEqual(again, req) {
			t.Errorf("round trip changed the request:\n  %s", data)
		}
		// Plain encoding/json gives the same result (no validation).
		var plain hearth.CreateResponseRequest
		if err := json.Unmarshal(data, &plain); err != nil || !reflect.DeepEqual(&plain, req) {
			t.Errorf("json.Unmarshal: %v", err)
		}
	}
}

// TestMarshalledRequestIsValid: a function-only request hearth marshals is a
// valid CreateResponseBody.
func TestMarshalledRequestIsValid(t *testing.T) {
	req, _ := decode(t, `{"model":"m","input":[{"role":"developer","content":"x"},{"role":"user","content":"y"},
		{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"1"}],
		"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"},
		"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"temperature":0.2,"max_output_tokens":100}`)
	schematest.Validate(t, "CreateResponseBody", req)
}

func TestDecodeErrors(t *testing.T) {
	long := strings.Repeat("a", 65)
	var pairs []string
	for i := range 17 {
		pairs = append(pairs, `"k`+strconv.Itoa(i)+`":"v"`)
	}
	many := "{" + strings.Join(pairs, ",") + "}"
	fn := `"tools":[{"type":"function","name":"f"}]`
	for _, tc := range []struct {
		name, body, param, code string
	}{
		{"malformed", `{"model":`, "", "invalid_json"},
		{"not an object", `[]`, "", "invalid_json"},
		{"null body", `null`, "", "invalid_json"},
		{"no model", `{}`, "model", "missing_required_parameter"},
		{"empty model", `{"model":""}`, "model", "empty_string"},
		{"model type", `{"model":1}`, "model", "invalid_type"},
		{"max_output_tokens min", `{"model":"m","max_output_tokens":15}`, "max_output_tokens", "integer_below_min_value"},
		{"max_output_tokens string", `{"model":"m","max_output_tokens":"16"}`, "max_output_tokens", "invalid_type"},
		{"max_output_tokens decimal", `{"model":"m","max_output_tokens":16.5}`, "max_output_tokens", "invalid_type"},
		{"max_tool_calls min", `{"model":"m","max_tool_calls":0}`, "max_tool_calls", "integer_below_min_value"},
		{"temperature max", `{"model":"m","temperature":2.5}`, "temperature", "decimal_above_max_value"},
		{"temperature min", `{"model":"m","temperature":-0.1}`, "temperature", "decimal_below_min_value"},
		{"temperature type", `{"model":"m","temperature":"hot"}`, "temperature", "invalid_type"},
		{"top_p max", `{"model":"m","top_p":1.01}`, "top_p", "decimal_above_max_value"},
		{"presence_penalty min", `{"model":"m","presence_penalty":-2.1}`, "presence_penalty", "decimal_below_min_value"},
		{"frequency_penalty max", `{"model":"m","frequency_penalty":3}`, "frequency_penalty", "decimal_above_max_value"},
		{"top_logprobs max", `{"model":"m","top_logprobs":21}`, "top_logprobs", "integer_above_max_value"},
		{"top_logprobs min", `{"model":"m","top_logprobs":-1}`, "top_logprobs", "integer_below_min_value"},
		{"truncation", `{"model":"m","truncation":"sometimes"}`, "truncation", "invalid_value"},
		{"service_tier", `{"model":"m","service_tier":"gold"}`, "service_tier", "invalid_value"},
		{"include value", `{"model":"m","include":["reasoning.encrypted_content","code_interpreter_call.outputs"]}`, "include[1]", "invalid_value"},
		{"include type", `{"model":"m","include":"reasoning.encrypted_content"}`, "include", "invalid_type"},
		{"reasoning effort", `{"model":"m","reasoning":{"effort":"extreme"}}`, "reasoning.effort", "invalid_value"},
		{"reasoning summary", `{"model":"m","reasoning":{"summary":"short"}}`, "reasoning.summary", "invalid_value"},
		{"reasoning type", `{"model":"m","reasoning":"high"}`, "reasoning", "invalid_type"},
		{"text format type", `{"model":"m","text":{"format":{"type":"xml"}}}`, "text.format.type", "invalid_value"},
		{"json_schema no name", `{"model":"m","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name", "missing_required_parameter"},
		{"json_schema bad name", `{"model":"m","text":{"format":{"type":"json_schema","name":"a b","schema":{}}}}`, "text.format.name", "invalid_value"},
		{"json_schema no schema", `{"model":"m","text":{"format":{"type":"json_schema","name":"n"}}}`, "text.format.schema", "missing_required_parameter"},
		{"json_schema schema type", `{"model":"m","text":{"format":{"type":"json_schema","name":"n","schema":"{}"}}}`, "text.format.schema", "invalid_type"},
		{"verbosity", `{"model":"m","text":{"verbosity":"loud"}}`, "text.verbosity", "invalid_value"},
		{"input type", `{"model":"m","input":5}`, "input", "invalid_type"},
		{"item type", `{"model":"m","input":["hi"]}`, "input[0]", "invalid_type"},
		{"image_url type at 2", `{"model":"m","input":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},
			{"role":"user","content":[{"type":"input_image","image_url":5}]}]}`, "input[2].content[0].image_url", "invalid_type"},
		{"image_url scheme", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"ftp://x/y.png"}]}]}`, "input[0].content[0].image_url", "invalid_value"},
		{"image_url not base64", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png,abc"}]}]}`, "input[0].content[0].image_url", "invalid_value"},
		{"image without source", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","detail":"high"}]}]}`, "input[0].content[0].image_url", "missing_required_parameter"},
		{"image detail", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"f","detail":"max"}]}]}`, "input[0].content[0].detail", "invalid_value"},
		{"file without source", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","filename":"a"}]}]}`, "input[0].content[0].file_data", "missing_required_parameter"},
		{"unknown item type", `{"model":"m","input":[{"type":"computer_call","id":"cu_1"}]}`, "input[0].type", "invalid_value"},
		{"web_search_call action without type", `{"model":"m","input":[{"type":"web_search_call","id":"ws_1","status":"completed","action":{"query":"q"}}]}`, "input[0].action.type", "missing_required_parameter"},
		{"web_search_call bad status", `{"model":"m","input":[{"type":"web_search_call","id":"ws_1","status":"done","action":{"type":"search","query":"q"}}]}`, "input[0].status", "invalid_value"},
		{"tool_choice web_search not in tools", `{"model":"m",` + fn + `,"tool_choice":{"type":"web_search"}}`, "tool_choice", "invalid_value"},
		{"tool_choice dated web_search not in tools", `{"model":"m","tools":[{"type":"web_search"}],"tool_choice":{"type":"web_search_2025_08_26"}}`, "tool_choice", "invalid_value"},
		{"no type or role", `{"model":"m","input":[{"content":"x"}]}`, "input[0].type", "missing_required_parameter"},
		{"role", `{"model":"m","input":[{"role":"robot","content":"x"}]}`, "input[0].role", "invalid_value"},
		{"no content", `{"model":"m","input":[{"role":"user"}]}`, "input[0].content", "missing_required_parameter"},
		{"content type", `{"model":"m","input":[{"role":"user","content":{"text":"x"}}]}`, "input[0].content", "invalid_type"},
		{"image in system message", `{"model":"m","input":[{"role":"system","content":[{"type":"input_image","file_id":"f"}]}]}`, "input[0].content[0].type", "invalid_value"},
		{"refusal from user", `{"model":"m","input":[{"role":"user","content":[{"type":"refusal","refusal":"no"}]}]}`, "input[0].content[0].type", "invalid_value"},
		{"part without text", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text"}]}]}`, "input[0].content[0].text", "missing_required_parameter"},
		{"phase", `{"model":"m","input":[{"role":"assistant","content":"x","phase":"draft"}]}`, "input[0].phase", "invalid_value"},
		{"item status", `{"model":"m","input":[{"role":"assistant","content":"x","status":"done"}]}`, "input[0].status", "invalid_value"},
		{"call output empty call_id", `{"model":"m","input":[{"type":"function_call_output","call_id":"","output":"x"}]}`, "input[0].call_id", "empty_string"},
		{"call output no call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id", "missing_required_parameter"},
		{"call output long call_id", `{"model":"m","input":[{"type":"function_call_output","call_id":"` + long + `","output":"x"}]}`, "input[0].call_id", "string_above_max_length"},
		{"call output no output", `{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, "input[0].output", "missing_required_parameter"},
		{"call output part", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"output_text","text":"x"}]}]}`, "input[0].output[0].type", "invalid_value"},
		{"call name", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"bad name","arguments":"{}"}]}`, "input[0].name", "invalid_value"},
		{"call arguments", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]}`, "input[0].arguments", "invalid_type"},
		{"reasoning summary part", `{"model":"m","input":[{"type":"reasoning","summary":[{"type":"output_text","text":"x"}]}]}`, "input[0].summary[0].type", "invalid_value"},
		{"compaction", `{"model":"m","input":[{"type":"compaction"}]}`, "input[0].encrypted_content", "missing_required_parameter"},
		{"tools type", `{"model":"m","tools":{}}`, "tools", "invalid_type"},
		{"tool without type", `{"model":"m","tools":[{"name":"f"}]}`, "tools[0].type", "missing_required_parameter"},
		{"parameters type", `{"model":"m","tools":[{"type":"function","name":"f","parameters":"{}"}]}`, "tools[0].parameters", "invalid_type"},
		{"parameters array", `{"model":"m","tools":[{"type":"function","name":"f","parameters":[]}]}`, "tools[0].parameters", "invalid_type"},
		{"strict type", `{"model":"m","tools":[{"type":"function","name":"f","strict":"yes"}]}`, "tools[0].strict", "invalid_type"},
		{"tool no name", `{"model":"m","tools":[{"type":"function"}]}`, "tools[0].name", "missing_required_parameter"},
		{"tool name pattern", `{"model":"m","tools":[{"type":"function","name":"get.weather"}]}`, "tools[0].name", "invalid_value"},
		{"tool name empty", `{"model":"m","tools":[{"type":"function","name":""}]}`, "tools[0].name", "empty_string"},
		{"tool name length", `{"model":"m","tools":[{"type":"function","name":"` + long + `"}]}`, "tools[0].name", "string_above_max_length"},
		{"duplicate tool", `{"model":"m","tools":[{"type":"function","name":"f"},{"type":"custom","name":"f"}]}`, "tools[1].name", "duplicate_tool_name"},
		{"duplicate in namespace", `{"model":"m","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"a"},{"type":"function","name":"a"}]}]}`, "tools[0].tools[1].name", "duplicate_tool_name"},
		{"custom in namespace", `{"model":"m","tools":[{"type":"namespace","name":"ns","tools":[{"type":"custom","name":"a"}]}]}`, "tools[0].tools[0].type", "invalid_value"},
		{"namespace without tools", `{"model":"m","tools":[{"type":"namespace","name":"ns"}]}`, "tools[0].tools", "missing_required_parameter"},
		{"grammar syntax", `{"model":"m","tools":[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"peg","definition":"x"}}]}`, "tools[0].format.syntax", "invalid_value"},
		{"grammar definition", `{"model":"m","tools":[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"regex"}}]}`, "tools[0].format.definition", "missing_required_parameter"},
		{"empty grammar definition", `{"model":"m","tools":[{"type":"custom","name":"c","format":{"type":"grammar","syntax":"lark","definition":""}}]}`, "tools[0].format.definition", "empty_string"},
		{"tool_choice value", `{"model":"m",` + fn + `,"tool_choice":"sometimes"}`, "tool_choice", "invalid_value"},
		{"tool_choice type", `{"model":"m",` + fn + `,"tool_choice":1}`, "tool_choice", "invalid_type"},
		{"tool_choice unknown function", `{"model":"m",` + fn + `,"tool_choice":{"type":"function","name":"nope"}}`, "tool_choice", "invalid_value"},
		{"tool_choice custom is not a function", `{"model":"m","tools":[{"type":"custom","name":"c"}],"tool_choice":{"type":"function","name":"c"}}`, "tool_choice", "invalid_value"},
		{"tool_choice function no name", `{"model":"m",` + fn + `,"tool_choice":{"type":"function"}}`, "tool_choice.name", "missing_required_parameter"},
		{"tool_choice hosted", `{"model":"m",` + fn + `,"tool_choice":{"type":"code_interpreter"}}`, "tool_choice.type", "invalid_value"},
		{"tool_choice file_search not in tools", `{"model":"m",` + fn + `,"tool_choice":{"type":"file_search"}}`, "tool_choice", "invalid_value"},
		{"allowed file_search not in tools", `{"model":"m",` + fn + `,"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"file_search"}]}}`, "tool_choice.tools[0]", "invalid_value"},
		{"file_search without stores", `{"model":"m","tools":[{"type":"file_search"}]}`, "tools[0].vector_store_ids", "missing_required_parameter"},
		{"file_search no stores", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":[]}]}`, "tools[0].vector_store_ids", "empty_array"},
		{"file_search store not a string", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":[1]}]}`, "tools[0].vector_store_ids[0]", "invalid_type"},
		{"file_search empty store", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":[""]}]}`, "tools[0].vector_store_ids[0]", "empty_string"},
		{"file_search store twice", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_1","vs_1"]}]}`, "tools[0].vector_store_ids[1]", "invalid_value"},
		{"file_search max results", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_1"],"max_num_results":51}]}`, "tools[0].max_num_results", "integer_above_max_value"},
		{"file_search max results zero", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_1"],"max_num_results":0}]}`, "tools[0].max_num_results", "integer_below_min_value"},
		{"file_search filters", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_1"],"filters":"team"}]}`, "tools[0].filters", "invalid_type"},
		{"file_search ranker", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_1"],"ranking_options":{"ranker":"best"}}]}`, "tools[0].ranking_options.ranker", "invalid_value"},
		{"file_search threshold", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_1"],"ranking_options":{"score_threshold":1.5}}]}`, "tools[0].ranking_options.score_threshold", "decimal_above_max_value"},
		{"file_search_call bad status", `{"model":"m","input":[{"type":"file_search_call","id":"fs_1","status":"done","queries":[]}]}`, "input[0].status", "invalid_value"},
		{"file_search_call query", `{"model":"m","input":[{"type":"file_search_call","id":"fs_1","status":"completed","queries":[1]}]}`, "input[0].queries[0]", "invalid_type"},
		{"file_search_call results", `{"model":"m","input":[{"type":"file_search_call","id":"fs_1","status":"completed","queries":[],"results":{}}]}`, "input[0].results", "invalid_type"},
		{"tool_choice required without tools", `{"model":"m","tool_choice":"required"}`, "tool_choice", "invalid_value"},
		{"tool_choice required with hosted only", `{"model":"m","tools":[{"type":"web_search"}],"tool_choice":"required"}`, "tool_choice", "invalid_value"},
		{"allowed_tools unknown", `{"model":"m",` + fn + `,"tool_choice":{"type":"allowed_tools","tools":[{"type":"function","name":"f"},{"type":"function","name":"g"}]}}`, "tool_choice.tools[1]", "invalid_value"},
		{"allowed_tools empty", `{"model":"m",` + fn + `,"tool_choice":{"type":"allowed_tools","tools":[]}}`, "tool_choice.tools", "empty_array"},
		{"allowed_tools mode", `{"model":"m",` + fn + `,"tool_choice":{"type":"allowed_tools","mode":"any","tools":[{"type":"function","name":"f"}]}}`, "tool_choice.mode", "invalid_value"},
		{"metadata count", `{"model":"m","metadata":` + many + `}`, "metadata", "object_above_max_properties"},
		{"metadata value length", `{"model":"m","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata.k", "string_above_max_length"},
		{"metadata key length", `{"model":"m","metadata":{"` + long + `":"v"}}`, "metadata." + long, "string_above_max_length"},
		{"metadata value type", `{"model":"m","metadata":{"k":1}}`, "metadata.k", "invalid_type"},
		{"prompt_cache_key length", `{"model":"m","prompt_cache_key":"` + long + `"}`, "prompt_cache_key", "string_above_max_length"},
		{"safety_identifier length", `{"model":"m","safety_identifier":"` + long + `"}`, "safety_identifier", "string_above_max_length"},
		{"stream type", `{"model":"m","stream":"yes"}`, "stream", "invalid_type"},
		{"stream_options type", `{"model":"m","stream_options":{"include_obfuscation":"no"}}`, "stream_options.include_obfuscation", "invalid_type"},
		{"parallel_tool_calls type", `{"model":"m","parallel_tool_calls":"true"}`, "parallel_tool_calls", "invalid_type"},
		{"store type", `{"model":"m","store":0}`, "store", "invalid_type"},
		{"instructions type", `{"model":"m","instructions":["x"]}`, "instructions", "invalid_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, ignored, err := hearth.DecodeCreateRequest([]byte(tc.body))
			var e *hearth.Error
			if !errors.As(err, &e) {
				t.Fatalf("got req=%+v ignored=%v err=%v, want a *hearth.Error", req, ignored, err)
			}
			if e.Param != tc.param || e.Code != tc.code || e.Status != 400 || e.Type != "invalid_request_error" {
				t.Errorf("got param=%q code=%q status=%d type=%q (%s), want param=%q code=%q",
					e.Param, e.Code, e.Status, e.Type, e.Message, tc.param, tc.code)
			}
			if req != nil || ignored != nil {
				t.Errorf("a failed decode returned req=%v ignored=%v", req, ignored)
			}
		})
	}
}
