package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
)

// The Anthropic Messages door (/v1/messages, /v1/messages/count_tokens) over the real
// runtime with the script models: every answer is the core's, mapped to Messages.

// anthropicTools are the script models' tools as Claude Code declares tools: JSON
// Schema 2020-12 with $schema and additionalProperties false.
const anthropicTools = `"tools":[
 {"name":"get_weather","description":"Weather in a city","input_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}},
 {"name":"get_time","description":"Local time","input_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"],"additionalProperties":false},"cache_control":{"type":"ephemeral"}}]`

type anthropicMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []map[string]any `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// promptTokens is the whole prompt's count a message reports: Anthropic's
// input_tokens leave out what the cache read.
func (m anthropicMessage) promptTokens() int {
	return m.Usage.InputTokens + m.Usage.CacheReadInputTokens
}

// anthropicCall posts body to path with Anthropic's headers (x-api-key when key is
// set) and returns the status, headers and body.
func anthropicCall(t *testing.T, url, key, body string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("anthropic-version", "2023-06-01")
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// createMessage posts a Messages request and returns the message (status 200 required).
func createMessage(t *testing.T, srv *httptest.Server, body string) anthropicMessage {
	t.Helper()
	status, h, b := anthropicCall(t, srv.URL+"/v1/messages", "", body)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, b)
	}
	if h.Get("request-id") == "" {
		t.Error("no request-id header")
	}
	var m anthropicMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(m.ID, "msg_") || m.Type != "message" || m.Role != "assistant" {
		t.Errorf("message head %s %s %s", m.ID, m.Type, m.Role)
	}
	if m.Usage.CacheCreationInputTokens != 0 {
		t.Errorf("cache_creation_input_tokens %d", m.Usage.CacheCreationInputTokens)
	}
	return m
}

func countTokens(t *testing.T, srv *httptest.Server, body string) int {
	t.Helper()
	status, _, b := anthropicCall(t, srv.URL+"/v1/messages/count_tokens", "", body)
	if status != http.StatusOK {
		t.Fatalf("count_tokens status %d: %s", status, b)
	}
	var c struct {
		InputTokens *int `json:"input_tokens"`
	}
	if err := json.Unmarshal(b, &c); err != nil || c.InputTokens == nil {
		t.Fatalf("count_tokens body %s", b)
	}
	return *c.InputTokens
}

func blockTypes(m anthropicMessage) []string {
	var out []string
	for _, b := range m.Content {
		out = append(out, b["type"].(string))
	}
	return out
}

func msgBody(model string, extra string) string {
	return `{"model":"` + model + `","max_tokens":1024,` + extra + `}`
}

func TestMessagesE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	a := scriptmodel.EntryAssistant
	body := msgBody(scriptmodel.PlainModel, `"system":"Be brief.","messages":[{"role":"user","content":"hi"}]`)
	m := createMessage(t, srv, body)
	if got := strings.Join(blockTypes(m), ","); got != "text" || m.Content[0]["text"] != plain.Text(a) {
		t.Fatalf("content %v, want one text block %q", m.Content, plain.Text(a))
	}
	if m.StopReason != "end_turn" || m.StopSequence != nil || m.Model != scriptmodel.PlainModel {
		t.Errorf("stop_reason %q stop_sequence %v model %q", m.StopReason, m.StopSequence, m.Model)
	}
	if m.Usage.OutputTokens != plain.EvalCount(a) || m.promptTokens() <= 0 {
		t.Errorf("usage %+v, want output_tokens %d", m.Usage, plain.EvalCount(a))
	}
	// count_tokens counts the prompt the run evaluates: the same number.
	if n := countTokens(t, srv, body); n != m.promptTokens() {
		t.Errorf("count_tokens %d, the run's prompt %d (input %d + cache read %d)", n, m.promptTokens(), m.Usage.InputTokens, m.Usage.CacheReadInputTokens)
	}
	// Run again: the prompt comes from the runtime's cache, and says so.
	again := createMessage(t, srv, body)
	if again.promptTokens() != m.promptTokens() || again.Usage.CacheReadInputTokens == 0 {
		t.Errorf("second run usage %+v, want the same prompt read from the cache", again.Usage)
	}
}

func TestMessagesToolLoopE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer
	user := `{"role":"user","content":[{"type":"text","text":"weather and time in Paris?"}]}`
	first := createMessage(t, srv, msgBody(scriptmodel.ToolsModel, `"messages":[`+user+`],`+anthropicTools))
	if got := strings.Join(blockTypes(first), ","); got != "thinking,tool_use,tool_use" {
		t.Fatalf("content %s: %v", got, first.Content)
	}
	if first.Content[0]["thinking"] != "I need the weather and the local time." || first.Content[0]["signature"] == "" {
		t.Errorf("thinking block %v", first.Content[0])
	}
	wantCalls := []struct{ name, input string }{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{"timezone":"Europe/Paris"}`}}
	var results []string
	for i, w := range wantCalls {
		b := first.Content[i+1]
		in, _ := json.Marshal(b["input"])
		id, _ := b["id"].(string)
		if b["name"] != w.name || string(in) != w.input || id == "" {
			t.Errorf("tool_use %d: %v", i, b)
		}
		results = append(results, fmt.Sprintf(`{"type":"tool_result","tool_use_id":%q,"content":%q}`, id, []string{"sunny", "12:00"}[i]))
	}
	if first.StopReason != "tool_use" || first.Usage.OutputTokens != tools.EvalCount(a) {
		t.Errorf("stop_reason %q usage %+v, want tool_use and %d output tokens", first.StopReason, first.Usage, tools.EvalCount(a))
	}
	// The assistant turn goes back as it came (thinking with its signature), then the
	// tool results, one as blocks and marked as an error.
	assistant, _ := json.Marshal(map[string]any{"role": "assistant", "content": first.Content})
	results[1] = fmt.Sprintf(`{"type":"tool_result","tool_use_id":%q,"content":[{"type":"text","text":"12:00"}],"is_error":true}`, first.Content[2]["id"])
	second := createMessage(t, srv, msgBody(scriptmodel.ToolsModel, `"messages":[`+user+`,`+string(assistant)+
		`,{"role":"user","content":[`+strings.Join(results, ",")+`]}],`+anthropicTools))
	if got := strings.Join(blockTypes(second), ","); got != "text" || second.Content[0]["text"] != tools.Text(ans) {
		t.Fatalf("final answer %v, want %q", second.Content, tools.Text(ans))
	}
	if second.StopReason != "end_turn" || second.Usage.OutputTokens != tools.EvalCount(ans) {
		t.Errorf("stop_reason %q usage %+v", second.StopReason, second.Usage)
	}
	if second.promptTokens() <= first.promptTokens() {
		t.Errorf("second prompt %d tokens, not above the first's %d", second.promptTokens(), first.promptTokens())
	}

	// disable_parallel_tool_use: the first call passes and the output ends after it.
	one := createMessage(t, srv, msgBody(scriptmodel.ToolsModel, `"messages":[`+user+`],`+anthropicTools+
		`,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`))
	if got := strings.Join(blockTypes(one), ","); got != "thinking,tool_use" || one.Content[1]["name"] != "get_weather" || one.StopReason != "tool_use" {
		t.Errorf("disable_parallel_tool_use: %v stop %q", one.Content, one.StopReason)
	}
}

// TestMessagesToolChoiceE2E: any and tool are enforced by grammar: the plain script
// model, which answers in prose, calls the tool.
func TestMessagesToolChoiceE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	testenv.Model(t, scriptmodel.PlainModel)
	user := `"messages":[{"role":"user","content":"weather and time in Paris?"}],"temperature":0,` + anthropicTools
	cases := []struct{ choice, name, input string }{
		// Of the two tools the models' ranking picks get_time ('t' before 'w'), and the
		// timezone string closes at once.
		{`{"type":"any"}`, "get_time", `{"timezone":""}`},
		{`{"type":"tool","name":"get_weather"}`, "get_weather", `{"city":""}`},
	}
	for _, tc := range cases {
		m := createMessage(t, srv, msgBody(scriptmodel.PlainModel, user+`,"tool_choice":`+tc.choice))
		if len(m.Content) != 1 || m.Content[0]["type"] != "tool_use" || m.Content[0]["name"] != tc.name || m.StopReason != "tool_use" {
			t.Errorf("%s: content %v stop %q", tc.choice, m.Content, m.StopReason)
			continue
		}
		if in, _ := json.Marshal(m.Content[0]["input"]); string(in) != tc.input {
			t.Errorf("%s: input %s, want %s", tc.choice, in, tc.input)
		}
	}
	// none: the prose answer, no call.
	m := createMessage(t, srv, msgBody(scriptmodel.PlainModel, user+`,"tool_choice":{"type":"none"}`))
	if strings.Join(blockTypes(m), ",") != "text" || m.StopReason != "end_turn" {
		t.Errorf("none: %v stop %q", m.Content, m.StopReason)
	}
}

func TestMessagesMaxTokensE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	pieces := plain.Pieces(scriptmodel.EntryAssistant)
	for _, budget := range []int{1, 5} {
		m := createMessage(t, srv, fmt.Sprintf(`{"model":%q,"max_tokens":%d,"top_k":1,"messages":[{"role":"user","content":"hi"}]}`, scriptmodel.PlainModel, budget))
		want := strings.Join(pieces[:budget], "")
		if m.StopReason != "max_tokens" || m.Usage.OutputTokens != budget || len(m.Content) != 1 || m.Content[0]["text"] != want {
			t.Errorf("max_tokens %d: stop %q usage %+v content %v, want text %q", budget, m.StopReason, m.Usage, m.Content, want)
		}
	}
}

// TestMessagesThinkingE2E: a thinking block's signature is hearth's sealed reasoning:
// sent back, with or without its text, it restores the thinking exactly (the prompt
// is the same to the token); a signature hearth did not make is a 400.
func TestMessagesThinkingE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	testenv.Model(t, scriptmodel.ReasoningModel)
	m := createMessage(t, srv, msgBody(scriptmodel.ReasoningModel, `"thinking":{"type":"enabled","budget_tokens":512},"messages":[{"role":"user","content":"hello"}]`))
	if got := strings.Join(blockTypes(m), ","); got != "thinking,text" {
		t.Fatalf("content %v", m.Content)
	}
	thinking, sig := m.Content[0]["thinking"].(string), m.Content[0]["signature"].(string)
	if thinking != "The user says hello. A short greeting back is right." || sig == "" || strings.Contains(sig, "greeting") {
		t.Fatalf("thinking block %v", m.Content[0])
	}
	next := func(block string) string {
		return msgBody(scriptmodel.ReasoningModel, `"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":[`+block+
			`,{"type":"text","text":"Hello! I thought about it first."}]},{"role":"user","content":"again"}]`)
	}
	withText := countTokens(t, srv, next(fmt.Sprintf(`{"type":"thinking","thinking":%q,"signature":%q}`, thinking, sig)))
	sealedOnly := countTokens(t, srv, next(fmt.Sprintf(`{"type":"thinking","thinking":"","signature":%q}`, sig)))
	redacted := countTokens(t, srv, next(fmt.Sprintf(`{"type":"redacted_thinking","data":%q}`, sig)))
	plainText := countTokens(t, srv, next(fmt.Sprintf(`{"type":"thinking","thinking":%q}`, thinking)))
	if withText != sealedOnly || sealedOnly != redacted || redacted != plainText {
		t.Errorf("prompt tokens: with text %d, signature alone %d, redacted %d, text alone %d: want all equal", withText, sealedOnly, redacted, plainText)
	}
	// The same turn runs with the signature alone.
	r := createMessage(t, srv, next(fmt.Sprintf(`{"type":"thinking","thinking":"","signature":%q}`, sig)))
	if r.promptTokens() != sealedOnly {
		t.Errorf("run prompt %d, count %d", r.promptTokens(), sealedOnly)
	}
	// display omitted: the signature without the text.
	o := createMessage(t, srv, msgBody(scriptmodel.ReasoningModel, `"thinking":{"type":"adaptive","display":"omitted"},"messages":[{"role":"user","content":"hello"}]`))
	if o.Content[0]["thinking"] != "" || o.Content[0]["signature"] == "" {
		t.Errorf("omitted display: %v", o.Content[0])
	}
	// A foreign signature (another server's, or Anthropic's) is refused, not a crash.
	status, _, b := anthropicCall(t, srv.URL+"/v1/messages", "", next(`{"type":"thinking","thinking":"x","signature":"EqQBCkgIARABGAIiQL"}`))
	if status != http.StatusBadRequest || !strings.Contains(string(b), `"invalid_request_error"`) {
		t.Errorf("foreign signature: %d %s", status, b)
	}
}

// sseEvent is one event of an Anthropic stream.
type sseEvent struct {
	name string
	data map[string]any
}

func streamMessage(t *testing.T, srv *httptest.Server, body string) []sseEvent {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages?beta=true", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var events []sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			if d["type"] != name {
				t.Errorf("event %q carries type %v", name, d["type"])
			}
			events = append(events, sseEvent{name, d})
		}
	}
	return events
}

// shape is the stream's sequence of events, runs of the same delta as one, pings
// (timed heartbeats) left out.
func shape(events []sseEvent) string {
	var out []string
	for _, e := range events {
		s := e.name
		switch e.name {
		case "ping":
			continue
		case "content_block_start":
			s += "(" + e.data["content_block"].(map[string]any)["type"].(string) + ")"
		case "content_block_delta":
			s = e.data["delta"].(map[string]any)["type"].(string)
		}
		if len(out) > 0 && out[len(out)-1] == s && strings.HasSuffix(s, "_delta") {
			continue
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestMessagesStreamE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	a := scriptmodel.EntryAssistant

	events := streamMessage(t, srv, msgBody(scriptmodel.PlainModel, `"stream":true,"messages":[{"role":"user","content":"hi"}]`))
	if got, want := shape(events), "message_start content_block_start(text) text_delta content_block_stop message_delta message_stop"; got != want {
		t.Fatalf("plain stream:\n got %s\nwant %s", got, want)
	}
	var text strings.Builder
	for _, e := range events {
		if e.name == "content_block_delta" {
			text.WriteString(e.data["delta"].(map[string]any)["text"].(string))
		}
	}
	last := events[len(events)-2].data
	usage := last["usage"].(map[string]any)
	if text.String() != plain.Text(a) || last["delta"].(map[string]any)["stop_reason"] != "end_turn" ||
		int(usage["output_tokens"].(float64)) != plain.EvalCount(a) || usage["input_tokens"].(float64)+usage["cache_read_input_tokens"].(float64) <= 0 {
		t.Errorf("plain stream text %q, message_delta %v", text.String(), last)
	}

	events = streamMessage(t, srv, msgBody(scriptmodel.ToolsModel, `"stream":true,"messages":[{"role":"user","content":"weather and time in Paris?"}],`+anthropicTools))
	want := "message_start content_block_start(thinking) thinking_delta signature_delta content_block_stop " +
		"content_block_start(tool_use) input_json_delta content_block_stop " +
		"content_block_start(tool_use) input_json_delta content_block_stop message_delta message_stop"
	if got := shape(events); got != want {
		t.Fatalf("tools stream:\n got %s\nwant %s", got, want)
	}
	// Each block's index, its deltas adding up to the JSON input.
	inputs := map[float64]*strings.Builder{}
	for _, e := range events {
		if e.name == "content_block_delta" {
			d := e.data["delta"].(map[string]any)
			if d["type"] == "input_json_delta" {
				i := e.data["index"].(float64)
				if inputs[i] == nil {
					inputs[i] = &strings.Builder{}
				}
				inputs[i].WriteString(d["partial_json"].(string))
			}
		}
	}
	if inputs[1] == nil || inputs[1].String() != `{"city":"Paris"}` || inputs[2] == nil || inputs[2].String() != `{"timezone":"Europe/Paris"}` {
		t.Errorf("input_json_delta by index: %v", inputs)
	}
	end := events[len(events)-2].data
	if end["delta"].(map[string]any)["stop_reason"] != "tool_use" || int(end["usage"].(map[string]any)["output_tokens"].(float64)) != tools.EvalCount(a) {
		t.Errorf("message_delta %v", end)
	}
}

// TestResponsesInputTokensE2E: /v1/responses/input_tokens counts what the same
// request reports as its input tokens.
func TestResponsesInputTokensE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	testenv.Model(t, scriptmodel.ToolsModel)
	body := reqBody(scriptmodel.ToolsModel, false, `"instructions":"Be brief.","input":"weather and time in Paris?",`+toolsJSON)
	count := strings.Replace(body, `"stream":false,`, "", 1)
	resp, b := post(t, srv.URL+"/v1/responses/input_tokens", count)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var c struct {
		Object      string `json:"object"`
		InputTokens int    `json:"input_tokens"`
	}
	json.Unmarshal(b, &c)
	r := createJSON(t, srv, body)
	if c.Object != "response.input_tokens" || c.InputTokens != r.Usage.InputTokens || c.InputTokens <= 0 {
		t.Errorf("input_tokens %+v, the run's usage %+v", c, r.Usage)
	}
}

func TestMessagesErrorsE2E(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const key = "sk-anthropic-door"
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db, APIKeys: []string{key}}))
	t.Cleanup(srv.Close)
	testenv.Model(t, scriptmodel.PlainModel)
	hi := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name, path, key, body string
		status                int
		typ, mention          string
	}{
		{"missing max_tokens", "/v1/messages", key, `{"model":"` + scriptmodel.PlainModel + `",` + hi + `}`, 400, "invalid_request_error", "max_tokens"},
		{"bad role", "/v1/messages", key, msgBody(scriptmodel.PlainModel, `"messages":[{"role":"robot","content":"hi"}]`), 400, "invalid_request_error", "messages.0.role"},
		{"unknown field", "/v1/messages", key, msgBody(scriptmodel.PlainModel, hi+`,"frobnicate":true`), 400, "invalid_request_error", "frobnicate"},
		{"blank stop sequence", "/v1/messages", key, msgBody(scriptmodel.PlainModel, hi+`,"stop_sequences":["x"," "]`), 400, "invalid_request_error", "stop_sequences.1"},
		{"too many stop sequences", "/v1/messages", key, msgBody(scriptmodel.PlainModel, hi+`,"stop_sequences":["x"`+strings.Repeat(`,"x"`, 1024)+`]`), 400, "invalid_request_error", "at most 1024 stop sequences"},
		{"server tool", "/v1/messages", key, msgBody(scriptmodel.PlainModel, hi+`,"tools":[{"type":"web_search_20250305","name":"web_search"}]`), 400, "invalid_request_error", "tools.0.type"},
		{"wrong x-api-key", "/v1/messages", "sk-wrong", msgBody(scriptmodel.PlainModel, hi), 401, "authentication_error", "API key"},
		{"no key", "/v1/messages/count_tokens", "", `{"model":"x",` + hi + `}`, 401, "authentication_error", "API key"},
		{"unknown model", "/v1/messages", key, msgBody("no-such-model:latest", hi), 404, "not_found_error", "no-such-model"},
		{"doubled /v1", "/v1/v1/messages?beta=true", key, msgBody(scriptmodel.PlainModel, hi), 404, "not_found_error", "without the /v1"},
		{"malformed JSON", "/v1/messages", key, `{"model":`, 400, "invalid_request_error", "JSON"},
	}
	for _, tc := range cases {
		status, h, b := anthropicCall(t, srv.URL+tc.path, tc.key, tc.body)
		var env struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(b, &env)
		if status != tc.status || env.Type != "error" || env.Error.Type != tc.typ || !strings.Contains(env.Error.Message, tc.mention) {
			t.Errorf("%s: %d %s, want %d %s mentioning %q", tc.name, status, b, tc.status, tc.typ, tc.mention)
		}
		if h.Get("request-id") == "" {
			t.Errorf("%s: no request-id header", tc.name)
		}
	}
	// The right key in x-api-key works, here and on /v1/responses.
	if status, _, b := anthropicCall(t, srv.URL+"/v1/messages", key, msgBody(scriptmodel.PlainModel, hi)); status != 200 {
		t.Errorf("x-api-key: %d %s", status, b)
	}
	if status, _, b := anthropicCall(t, srv.URL+"/v1/responses", key, reqBody(scriptmodel.PlainModel, false, `"input":"hi"`)); status != 200 {
		t.Errorf("x-api-key on /v1/responses: %d %s", status, b)
	}
}

// TestMessagesClaudeCodeBodyE2E: a body shaped as Claude Code sends it (system text
// blocks with cache_control, system-reminder user blocks, a system entry among the
// messages, tools with $schema and defer_loading, adaptive thinking, output_config,
// context_management, metadata.user_id; ?beta=true and the anthropic-beta header) is
// answered.
func TestMessagesClaudeCodeBodyE2E(t *testing.T) {
	srv, _ := newToolSearchHearth(t)
	testenv.Model(t, scriptmodel.ReasoningModel)
	body := `{"model":"` + scriptmodel.ReasoningModel + `","max_tokens":32000,
	"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.328"},{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
	"messages":[
	 {"role":"user","content":[{"type":"text","text":"<system-reminder>\nAs you answer, use the context.\n</system-reminder>"},{"type":"text","text":"say hi","cache_control":{"type":"ephemeral"}}]},
	 {"role":"assistant","content":[{"type":"text","text":"Hi."}]},
	 {"role":"system","content":"The user changed the working directory."},
	 {"role":"user","content":"hi"}],
	"tools":[
	 {"name":"Bash","description":"Run a command","input_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"},"description":{"type":"string"},"run_in_background":{"type":"boolean"}},"required":["command"],"additionalProperties":false}},
	 {"name":"ToolSearch","description":"Find tools","input_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"query":{"type":"string"},"max_results":{"type":"number"}},"required":["query"],"additionalProperties":false}},
	 {"name":"DeferredToolPlaceholder","description":"Deferred","input_schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{},"additionalProperties":false},"defer_loading":true}],
	"thinking":{"type":"adaptive","display":"omitted"},"output_config":{"effort":"high"},
	"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},
	"metadata":{"user_id":"{\"device_id\":\"abc\",\"session_id\":\"s1\"}"},"stream":false}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages?beta=true", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "anything")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,advanced-tool-use-2025-11-20,effort-2025-11-24")
	req.Header.Set("x-app", "cli")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var m anthropicMessage
	json.Unmarshal(b, &m)
	// Adaptive thinking at effort high: the model thinks; display omitted sends the
	// signature without the text.
	if strings.Join(blockTypes(m), ",") != "thinking,text" || m.Content[0]["thinking"] != "" || m.Content[0]["signature"] == "" ||
		m.Content[1]["text"] != "Hello! I thought about it first." || m.StopReason != "end_turn" {
		t.Errorf("answer %s", b)
	}
	// The same body streamed (Claude Code sends both).
	events := streamMessage(t, srv, strings.Replace(body, `"stream":false`, `"stream":true`, 1))
	if got := shape(events); !strings.HasPrefix(got, "message_start") || !strings.HasSuffix(got, "message_delta message_stop") {
		t.Errorf("stream %s", got)
	}
}

// TestMessagesDeferredToolsE2E: tools with defer_loading stay out of the prompt until
// the model loads them with hearth's tool_search, which runs on the server: the client
// sees the call of the loaded tool, and no search.
func TestMessagesDeferredToolsE2E(t *testing.T) {
	srv, _ := newToolSearchHearth(t)
	testenv.Model(t, scriptmodel.ToolSearchModel)
	tool := func(name, desc, props string, deferred bool) string {
		d := ""
		if deferred {
			d = `,"defer_loading":true`
		}
		return `{"name":"` + name + `","description":"` + desc + `","input_schema":{"type":"object","properties":` + props + `}` + d + `}`
	}
	tools := `"tools":[` + tool("get_weather", "Get the current weather of a city.", `{"city":{"type":"string"}}`, true) + `,` +
		tool("get_time", "Local time in a timezone.", `{"timezone":{"type":"string"}}`, true) + `,` +
		tool("read_file", "Read a file of the workspace.", `{"path":{"type":"string"}}`, false) + `]`
	body := msgBody(scriptmodel.ToolSearchModel, `"messages":[{"role":"user","content":"What is the weather in Paris?"}],`+tools)
	m := createMessage(t, srv, body)
	if len(m.Content) != 1 || m.Content[0]["name"] != "get_weather" || m.StopReason != "tool_use" {
		t.Fatalf("content %v stop %q, want one get_weather call", m.Content, m.StopReason)
	}
	if in, _ := json.Marshal(m.Content[0]["input"]); string(in) != `{"city":"Paris"}` {
		t.Errorf("input %s", in)
	}
	events := streamMessage(t, srv, strings.Replace(body, `"max_tokens":1024,`, `"max_tokens":1024,"stream":true,`, 1))
	if got, want := shape(events), "message_start content_block_start(tool_use) input_json_delta content_block_stop message_delta message_stop"; got != want {
		t.Errorf("stream:\n got %s\nwant %s", got, want)
	}

	// The client's own tool search (Claude Code's ToolSearch): a tool_reference in a
	// tool result loads the tool it names, so the prompt is that of the tool never
	// deferred.
	turns := func(result string) string {
		return `"messages":[{"role":"user","content":"What is the weather in Paris?"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"tools"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[` + result + `]}]}]`
	}
	loaded := countTokens(t, srv, msgBody(scriptmodel.ToolSearchModel, turns(`{"type":"tool_reference","tool_name":"get_weather"}`)+`,`+tools))
	shown := countTokens(t, srv, msgBody(scriptmodel.ToolSearchModel, turns(`{"type":"text","text":"Tool get_weather loaded: it can be called now."}`)+`,`+
		strings.Replace(tools, `"input_schema":{"type":"object","properties":{"city":{"type":"string"}}},"defer_loading":true`, `"input_schema":{"type":"object","properties":{"city":{"type":"string"}}}`, 1)))
	stillDeferred := countTokens(t, srv, msgBody(scriptmodel.ToolSearchModel, turns(`{"type":"text","text":"Tool get_weather loaded: it can be called now."}`)+`,`+tools))
	if loaded != shown || loaded == stillDeferred {
		t.Errorf("prompt tokens: loaded by tool_reference %d, never deferred %d, still deferred %d", loaded, shown, stillDeferred)
	}
}

// TestMessagesImageE2E: an image block of a base64 source reaches the vision model as
// its pixels (the script answers with the image's colour).
func TestMessagesImageE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m := testenv.Model(t, scriptmodel.VisionModel)
	url := testImage{32, 32, scriptmodel.Red, false}.dataURL(t)
	mediaType, data, _ := strings.Cut(strings.TrimPrefix(url, "data:"), ";base64,")
	block := fmt.Sprintf(`{"type":"image","source":{"type":"base64","media_type":%q,"data":%q}}`, mediaType, data)
	msg := createMessage(t, srv, msgBody(scriptmodel.VisionModel, `"messages":[{"role":"user","content":[`+block+`,{"type":"text","text":"Which colour is this?"}]}]`))
	want, outTokens := m.Answer(scriptmodel.Red)
	if len(msg.Content) != 1 || msg.Content[0]["text"] != want || msg.Usage.OutputTokens != outTokens {
		t.Errorf("content %v usage %+v, want %q", msg.Content, msg.Usage, want)
	}
}

// TestMessagesBrowserPreflightE2E: a page of an allowed origin may send Anthropic's
// headers (the SDK in a browser sends x-api-key and anthropic-version) and read
// request-id.
func TestMessagesBrowserPreflightE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{AllowOrigins: []string{"https://app.example"}})
	st, h, _ := send(t, "OPTIONS", srv.URL+"/v1/messages", "", map[string]string{
		"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "x-api-key,anthropic-version,anthropic-dangerous-direct-browser-access,content-type"})
	allowed := strings.ToLower(h.Get("Access-Control-Allow-Headers"))
	for _, want := range []string{"x-api-key", "anthropic-version", "anthropic-beta", "anthropic-dangerous-direct-browser-access"} {
		if st != 204 || !strings.Contains(allowed, want) {
			t.Errorf("preflight: %d, %s not in %q", st, want, allowed)
		}
	}
	testenv.Model(t, scriptmodel.PlainModel)
	st, h, b := send(t, "POST", srv.URL+"/v1/messages", msgBody(scriptmodel.PlainModel, `"messages":[{"role":"user","content":"hi"}]`),
		map[string]string{"Origin": "https://app.example", "Content-Type": "application/json"})
	if st != 200 || !strings.Contains(h.Get("Access-Control-Expose-Headers"), "request-id") {
		t.Errorf("request: %d %s %v", st, b, h)
	}
}

// TestMessagesStreamErrorE2E: a generation that fails after the stream started ends it
// with Anthropic's error event, {"type":"error","error":{...}}, and no message_stop.
func TestMessagesStreamErrorE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	_, long := testenv.BenchModel(t, scriptmodel.LongModel)
	createMessage(t, srv, `{"model":"`+long+`","max_tokens":16,"messages":[{"role":"user","content":"warm up"}]}`)
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json",
		strings.NewReader(`{"model":"`+long+`","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":"tell me a story"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw strings.Builder
	killed := false
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		raw.WriteString(line)
		if !killed && strings.Contains(line, `"type":"text_delta"`) {
			testenv.KillRunners()
			killed = true
		}
		if err != nil {
			break
		}
	}
	if !killed {
		t.Fatalf("the stream ended before any text: %s", raw.String())
	}
	s := strings.TrimSpace(raw.String())
	frames := strings.Split(s, "\n\n")
	last := frames[len(frames)-1]
	name, data, _ := strings.Cut(last, "\n")
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &e)
	if name != "event: error" || e.Type != "error" || e.Error.Type == "" || e.Error.Message == "" || strings.Contains(s, "message_stop") {
		t.Errorf("stream ended with %q; want an error event and no message_stop:\n%s", last, s)
	}
}
