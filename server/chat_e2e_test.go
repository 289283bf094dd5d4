package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/internal/admission"
	"hearth/scriptmodel"
	"hearth/server"
)

// chatCompletion is what the tests read of a chat.completion.
type chatCompletion struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		Index   int `json:"index"`
		Message struct {
			Role             string          `json:"role"`
			Content          *string         `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			ToolCalls        []chatToolCall  `json:"tool_calls"`
			Refusal          json.RawMessage `json:"refusal"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token       string            `json:"token"`
				Logprob     float64           `json:"logprob"`
				TopLogprobs []json.RawMessage `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage chatUsage `json:"usage"`
}

type chatToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// chatTools are toolsJSON's tools in Chat Completions' shape.
const chatTools = `"tools":[
 {"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
 {"type":"function","function":{"name":"get_time","description":"Local time","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}}]`

func chatBody(model string, extra string) string {
	s := `{"model":"` + model + `"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// chat posts a non-streaming chat completion and returns it, failing on any status
// but 200.
func chat(t *testing.T, srv *httptest.Server, body string) *chatCompletion {
	t.Helper()
	resp, b := post(t, srv.URL+"/v1/chat/completions", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var c chatCompletion
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if !strings.HasPrefix(c.ID, "chatcmpl-") || c.Object != "chat.completion" || c.Created == 0 ||
		c.SystemFingerprint != "fp_hearth" || len(c.Choices) != 1 || c.Choices[0].Message.Role != "assistant" {
		t.Errorf("completion envelope: %s", b)
	}
	if u := c.Usage; u.PromptTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v", u)
	}
	return &c
}

// chatStream posts a streaming chat completion and returns the data of its frames in
// order ("[DONE]" included), checking that nothing but data frames and comments
// comes.
func chatStream(t *testing.T, srv *httptest.Server, body string) []string {
	t.Helper()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var frames []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "data: "):
			frames = append(frames, strings.TrimPrefix(line, "data: "))
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return frames
}

// streamChunk is what the tests read of a chat.completion.chunk.
type streamChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role             string         `json:"role"`
			Content          *string        `json:"content"`
			ReasoningContent string         `json:"reasoning_content"`
			ToolCalls        []chatToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage `json:"usage"`
}

func parseChunks(t *testing.T, frames []string) []streamChunk {
	t.Helper()
	if len(frames) == 0 || frames[len(frames)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", frames)
	}
	var out []streamChunk
	for _, f := range frames[:len(frames)-1] {
		var c streamChunk
		if err := json.Unmarshal([]byte(f), &c); err != nil {
			t.Fatalf("%v: %s", err, f)
		}
		if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.ID != out0(out, c).ID {
			t.Errorf("chunk envelope: %s", f)
		}
		out = append(out, c)
	}
	return out
}

func out0(cs []streamChunk, c streamChunk) streamChunk {
	if len(cs) > 0 {
		return cs[0]
	}
	return c
}

// TestChatCompletionsE2E: a plain answer with its exact text and counts, reasoning as
// reasoning_content, two parallel calls, and the tool loop's answer once the results
// come back in tool messages after an assistant message of calls (content null).
func TestChatCompletionsE2E(t *testing.T) {
	srv := newHearth(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	think := testenv.Model(t, scriptmodel.ReasoningModel)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer

	c := chat(t, srv, chatBody(scriptmodel.PlainModel, `"messages":[{"role":"system","content":"Be brief."},{"role":"developer","content":[{"type":"text","text":"Greet."}]},{"role":"user","content":"hi"}]`))
	if got := c.Choices[0].Message.Content; got == nil || *got != plain.Text(a) || c.Choices[0].FinishReason != "stop" {
		t.Errorf("plain: content %v finish %s, want %q stop", got, c.Choices[0].FinishReason, plain.Text(a))
	}
	if c.Usage.CompletionTokens != plain.EvalCount(a) || c.Model != scriptmodel.PlainModel {
		t.Errorf("plain: completion_tokens %d model %s, want %d", c.Usage.CompletionTokens, c.Model, plain.EvalCount(a))
	}

	c = chat(t, srv, chatBody(scriptmodel.ReasoningModel, `"messages":[{"role":"user","content":"hello"}],"reasoning_effort":"medium"`))
	m := c.Choices[0].Message
	if m.ReasoningContent == nil || *m.ReasoningContent != "The user says hello. A short greeting back is right." ||
		m.Content == nil || *m.Content != "Hello! I thought about it first." {
		t.Errorf("reasoning: %+v", m)
	}
	if c.Usage.CompletionTokens != think.EvalCount(a) || c.Usage.CompletionTokensDetails.ReasoningTokens <= 0 ||
		c.Usage.CompletionTokensDetails.ReasoningTokens >= c.Usage.CompletionTokens {
		t.Errorf("reasoning: usage %+v, want %d completion tokens, some of them reasoning", c.Usage, think.EvalCount(a))
	}

	ask := `{"role":"user","content":"weather and time in Paris?"}`
	c = chat(t, srv, chatBody(scriptmodel.ToolsModel, `"messages":[`+ask+`],`+chatTools))
	m = c.Choices[0].Message
	if c.Choices[0].FinishReason != "tool_calls" || m.Content != nil || len(m.ToolCalls) != 2 {
		t.Fatalf("calls: finish %s message %+v", c.Choices[0].FinishReason, m)
	}
	for i, want := range [][2]string{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{"timezone":"Europe/Paris"}`}} {
		tc := m.ToolCalls[i]
		if tc.ID == "" || tc.Type != "function" || tc.Function.Name != want[0] || tc.Function.Arguments != want[1] || tc.Index != nil {
			t.Errorf("call %d: %+v, want %s %s", i, tc, want[0], want[1])
		}
	}
	if c.Usage.CompletionTokens != tools.EvalCount(a) {
		t.Errorf("calls: completion_tokens %d, want %d", c.Usage.CompletionTokens, tools.EvalCount(a))
	}
	// The loop's next turn: the calls as the client got them, their results.
	calls, _ := json.Marshal(m.ToolCalls)
	c = chat(t, srv, chatBody(scriptmodel.ToolsModel, `"messages":[`+ask+`,
		{"role":"assistant","content":null,"tool_calls":`+string(calls)+`},
		{"role":"tool","tool_call_id":"`+m.ToolCalls[0].ID+`","content":"sunny"},
		{"role":"tool","tool_call_id":"`+m.ToolCalls[1].ID+`","content":[{"type":"text","text":"12:00"}]}],`+chatTools))
	if got := c.Choices[0].Message.Content; got == nil || *got != tools.Text(ans) || c.Choices[0].FinishReason != "stop" {
		t.Errorf("answer: content %v finish %s, want %q", got, c.Choices[0].FinishReason, tools.Text(ans))
	}
	if c.Usage.CompletionTokens != tools.EvalCount(ans) {
		t.Errorf("answer: completion_tokens %d, want %d", c.Usage.CompletionTokens, tools.EvalCount(ans))
	}
}

// TestChatToolChoiceE2E: tool_choice required and a named function are enforced by
// grammar over Chat Completions as on /v1/responses: the plain script, which answers
// in prose, calls a tool; the tools script calls the named one, not its own first;
// the allowed_tools form and parallel_tool_calls false hold too.
func TestChatToolChoiceE2E(t *testing.T) {
	srv := newHearth(t)
	testenv.Model(t, scriptmodel.PlainModel)
	testenv.Model(t, scriptmodel.ToolsModel)
	common := `"messages":[{"role":"user","content":"weather and time in Paris?"}],"temperature":0,` + chatTools
	cases := []struct {
		name, model, extra string
		want               [][2]string
	}{
		{"required on a text answer", scriptmodel.PlainModel, `"tool_choice":"required"`, [][2]string{{"get_time", forcedTime}}},
		{"named function", scriptmodel.ToolsModel, `"tool_choice":{"type":"function","function":{"name":"get_time"}}`, [][2]string{{"get_time", forcedTime}}},
		{"allowed_tools", scriptmodel.ToolsModel,
			`"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"get_time"}}]}}`,
			[][2]string{{"get_time", forcedTime}}},
		{"parallel_tool_calls false", scriptmodel.ToolsModel, `"parallel_tool_calls":false`, [][2]string{{"get_weather", `{"city":"Paris"}`}}},
	}
	for _, tc := range cases {
		c := chat(t, srv, chatBody(tc.model, common+","+tc.extra))
		m := c.Choices[0].Message
		var got [][2]string
		for _, call := range m.ToolCalls {
			got = append(got, [2]string{call.Function.Name, call.Function.Arguments})
		}
		if c.Choices[0].FinishReason != "tool_calls" || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: finish %s calls %v content %v, want %v", tc.name, c.Choices[0].FinishReason, got, m.Content, tc.want)
		}
	}
	// none: the script's calls are cut at the opener; what is left is its reasoning.
	c := chat(t, srv, chatBody(scriptmodel.ToolsModel, common+`,"tool_choice":"none"`))
	if m := c.Choices[0].Message; len(m.ToolCalls) != 0 || c.Choices[0].FinishReason != "stop" {
		t.Errorf("none: %+v finish %s", m, c.Choices[0].FinishReason)
	}
}

// TestChatBudgetsE2E: max_tokens and max_completion_tokens end the choice in
// "length" with exactly that many completion tokens (below /v1/responses' least
// too), and stop ends it where the model writes the string.
func TestChatBudgetsE2E(t *testing.T) {
	srv := newHearth(t)
	long := testenv.Model(t, scriptmodel.LongModel)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	pieces := long.Pieces(scriptmodel.EntryAssistant)
	for _, tc := range []struct {
		field  string
		budget int
	}{{"max_tokens", 16}, {"max_completion_tokens", 16}, {"max_tokens", 3}} {
		c := chat(t, srv, chatBody(scriptmodel.LongModel, `"messages":[{"role":"user","content":"tell me a story"}],"`+tc.field+`":`+itoa(tc.budget)))
		want := strings.Join(pieces[:tc.budget], "")
		if got := c.Choices[0].Message.Content; got == nil || *got != want || c.Choices[0].FinishReason != "length" || c.Usage.CompletionTokens != tc.budget {
			t.Errorf("%s %d: content %q finish %s completion_tokens %d, want %q length %d",
				tc.field, tc.budget, deref(got), c.Choices[0].FinishReason, c.Usage.CompletionTokens, want, tc.budget)
		}
	}
	text := plain.Text(scriptmodel.EntryAssistant)
	for _, stop := range []string{`"script"`, `["nothing here","script"]`} {
		c := chat(t, srv, chatBody(scriptmodel.PlainModel, `"messages":[{"role":"user","content":"hi"}],"stop":`+stop))
		// Without the stop string, and without the space before it: hearth ends a
		// message's text without trailing whitespace, as on /v1/responses.
		want := strings.TrimRight(text[:strings.Index(text, "script")], " ")
		if got := c.Choices[0].Message.Content; got == nil || *got != want || c.Choices[0].FinishReason != "stop" {
			t.Errorf("stop %s: content %q finish %s, want %q stop", stop, deref(got), c.Choices[0].FinishReason, want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// TestChatResponseFormatE2E: a strict json_schema response_format constrains the
// content to the schema, whatever the script would write.
func TestChatResponseFormatE2E(t *testing.T) {
	srv := newHearth(t)
	testenv.Model(t, scriptmodel.PlainModel)
	c := chat(t, srv, chatBody(scriptmodel.PlainModel, `"messages":[{"role":"user","content":"hi"}],"temperature":0,"max_tokens":200,
		"response_format":{"type":"json_schema","json_schema":{"name":"greeting","strict":true,"schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}}}`))
	var v map[string]any
	content := deref(c.Choices[0].Message.Content)
	if err := json.Unmarshal([]byte(content), &v); err != nil || len(v) != 1 {
		t.Fatalf("content %q is not the schema's object: %v", content, err)
	}
	if _, ok := v["ok"].(bool); !ok || c.Choices[0].FinishReason != "stop" {
		t.Errorf("content %q finish %s", content, c.Choices[0].FinishReason)
	}
}

// TestChatStreamE2E: the stream's chunks in OpenAI's order: the role chunk, the
// content deltas, the finish chunk, the usage chunk (include_usage), [DONE]; and for
// calls, the reasoning deltas, then each call's head (index, id, type, name) and its
// argument fragments, then finish_reason tool_calls.
func TestChatStreamE2E(t *testing.T) {
	srv := newHearth(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	testenv.Model(t, scriptmodel.ToolsModel)
	a := scriptmodel.EntryAssistant

	chunks := parseChunks(t, chatStream(t, srv, chatBody(scriptmodel.PlainModel, `"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}`)))
	if len(chunks) < 4 {
		t.Fatalf("%d chunks", len(chunks))
	}
	first, finish, last := chunks[0], chunks[len(chunks)-2], chunks[len(chunks)-1]
	if len(first.Choices) != 1 || first.Choices[0].Delta.Role != "assistant" || deref(first.Choices[0].Delta.Content) != "" || first.Choices[0].FinishReason != nil {
		t.Errorf("first chunk: %+v", first)
	}
	var text strings.Builder
	for i, c := range chunks[1 : len(chunks)-2] {
		d := c.Choices[0].Delta
		if d.Role != "" || d.Content == nil || *d.Content == "" || c.Choices[0].FinishReason != nil || c.Usage != nil {
			t.Errorf("content chunk %d: %+v", i+1, c)
		}
		text.WriteString(deref(d.Content))
	}
	if text.String() != plain.Text(a) {
		t.Errorf("streamed text %q, want %q", text.String(), plain.Text(a))
	}
	if len(finish.Choices) != 1 || finish.Choices[0].FinishReason == nil || *finish.Choices[0].FinishReason != "stop" || finish.Choices[0].Delta.Content != nil {
		t.Errorf("finish chunk: %+v", finish)
	}
	if len(last.Choices) != 0 || last.Usage == nil || last.Usage.CompletionTokens != plain.EvalCount(a) || last.Usage.PromptTokens <= 0 {
		t.Errorf("usage chunk: %+v", last)
	}

	// Calls: without include_usage no usage chunk.
	chunks = parseChunks(t, chatStream(t, srv, chatBody(scriptmodel.ToolsModel, `"messages":[{"role":"user","content":"weather and time in Paris?"}],"stream":true,`+chatTools)))
	var kinds []string
	var reasoning strings.Builder
	args := map[int]string{}
	var heads []chatToolCall
	for _, c := range chunks[1:] {
		if len(c.Choices) != 1 || c.Usage != nil {
			t.Fatalf("chunk %+v", c)
		}
		d := c.Choices[0].Delta
		switch {
		case c.Choices[0].FinishReason != nil:
			kinds = append(kinds, "finish:"+*c.Choices[0].FinishReason)
		case d.ReasoningContent != "":
			reasoning.WriteString(d.ReasoningContent)
			kinds = appendKind(kinds, "reasoning")
		case len(d.ToolCalls) == 1 && d.ToolCalls[0].ID != "":
			heads = append(heads, d.ToolCalls[0])
			kinds = append(kinds, "call")
		case len(d.ToolCalls) == 1 && d.ToolCalls[0].Index != nil:
			args[*d.ToolCalls[0].Index] += d.ToolCalls[0].Function.Arguments
			kinds = appendKind(kinds, "arguments")
		default:
			t.Errorf("unexpected chunk %+v", c)
		}
	}
	if want := []string{"reasoning", "call", "arguments", "call", "arguments", "finish:tool_calls"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("chunk order %v, want %v", kinds, want)
	}
	if reasoning.String() != "I need the weather and the local time." {
		t.Errorf("reasoning %q", reasoning.String())
	}
	for i, want := range [][2]string{{"get_weather", `{"city":"Paris"}`}, {"get_time", `{"timezone":"Europe/Paris"}`}} {
		if i >= len(heads) {
			break
		}
		h := heads[i]
		if h.Index == nil || *h.Index != i || h.Type != "function" || h.Function.Name != want[0] || h.Function.Arguments != "" || args[i] != want[1] {
			t.Errorf("call %d: head %+v arguments %q, want %s %s", i, h, args[i], want[0], want[1])
		}
	}
}

// appendKind adds kind unless it is the last one already.
func appendKind(kinds []string, kind string) []string {
	if len(kinds) > 0 && kinds[len(kinds)-1] == kind {
		return kinds
	}
	return append(kinds, kind)
}

// TestChatErrorsE2E: refusals in OpenAI's error shape, naming the field as the client
// wrote it.
func TestChatErrorsE2E(t *testing.T) {
	srv := newHearth(t)
	testenv.Model(t, scriptmodel.PlainModel)
	user := `{"role":"user","content":"hi"}`
	cases := []struct {
		name, body             string
		status                 int
		typ, code, param, text string
	}{
		{"n", chatBody(scriptmodel.PlainModel, `"messages":[`+user+`],"n":2`), 400, "invalid_request_error", "unsupported_value", "n", "n=2"},
		{"no messages", chatBody(scriptmodel.PlainModel, ``), 400, "invalid_request_error", "missing_required_parameter", "messages", "'messages'"},
		{"bad role", chatBody(scriptmodel.PlainModel, `"messages":[`+user+`,{"role":"robot","content":"x"}]`), 400, "invalid_request_error", "invalid_value", "messages[1].role", "'robot'"},
		{"tool without id", chatBody(scriptmodel.PlainModel, `"messages":[`+user+`,{"role":"tool","content":"x"}]`), 400, "invalid_request_error", "missing_required_parameter", "messages[1].tool_call_id", "tool_call_id"},
		{"unknown model", chatBody("hearth-absent:latest", `"messages":[`+user+`]`), 404, "invalid_request_error", "model_not_found", "model", "hearth-absent"},
		{"bad tool_choice", chatBody(scriptmodel.PlainModel, `"messages":[`+user+`],`+chatTools+`,"tool_choice":{"type":"function","function":{"name":"nope"}}`), 400, "invalid_request_error", "invalid_value", "tool_choice", "nope"},
		{"bad temperature", chatBody(scriptmodel.PlainModel, `"messages":[`+user+`],"temperature":3`), 400, "invalid_request_error", "decimal_above_max_value", "temperature", "temperature"},
		{"bad max_tokens", chatBody(scriptmodel.PlainModel, `"messages":[`+user+`],"max_tokens":0`), 400, "invalid_request_error", "integer_below_min_value", "max_tokens", "max_tokens"},
		{"bad schema", chatBody(scriptmodel.PlainModel, `"messages":[`+user+`],"response_format":{"type":"json_schema","json_schema":{"schema":{"type":"object"}}}`), 400, "invalid_request_error", "", "response_format.json_schema.name", "name"},
		{"not JSON", `{"model":`, 400, "invalid_request_error", "invalid_json", "", "parse"},
	}
	for _, tc := range cases {
		resp, b := post(t, srv.URL+"/v1/chat/completions", tc.body)
		var e map[string]map[string]any
		if err := json.Unmarshal(b, &e); err != nil || len(e) != 1 || len(e["error"]) != 4 {
			t.Errorf("%s: body %s is not OpenAI's error", tc.name, b)
			continue
		}
		got := e["error"]
		param, _ := got["param"].(string)
		code, _ := got["code"].(string)
		msg, _ := got["message"].(string)
		if resp.StatusCode != tc.status || got["type"] != tc.typ || param != tc.param || (tc.code != "" && code != tc.code) || !strings.Contains(msg, tc.text) {
			t.Errorf("%s: %d %s, want %d %s %s %s mentioning %q", tc.name, resp.StatusCode, b, tc.status, tc.typ, tc.code, tc.param, tc.text)
		}
	}
	// Unknown fields are said, not refused.
	resp, b := post(t, srv.URL+"/v1/chat/completions", chatBody(scriptmodel.PlainModel, `"messages":[`+user+`],"top_k":20`))
	if resp.StatusCode != 200 || resp.Header.Get("x-hearth-ignored") != "top_k" {
		t.Errorf("unknown field: %d %q %s", resp.StatusCode, resp.Header.Get("x-hearth-ignored"), b)
	}
}

// TestChatStoreE2E: a chat completion stores nothing unless the request says store:
// true; then it is the hearth response named by x-hearth-response-id, whose random
// part the completion's id shares.
func TestChatStoreE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	for _, store := range []bool{false, true} {
		extra := `"messages":[{"role":"user","content":"hi"}]`
		if store {
			extra += `,"store":true`
		}
		resp, b := post(t, srv.URL+"/v1/chat/completions", chatBody(scriptmodel.PlainModel, extra))
		id := resp.Header.Get("x-hearth-response-id")
		var c chatCompletion
		if err := json.Unmarshal(b, &c); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(id, "resp_") ||
			c.ID != "chatcmpl-"+strings.TrimPrefix(id, "resp_") {
			t.Fatalf("store %v: %d id %q %s", store, resp.StatusCode, id, b)
		}
		got, err := http.Get(srv.URL + "/v1/responses/" + id)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(got.Body)
		got.Body.Close()
		switch {
		case !store && got.StatusCode != http.StatusNotFound:
			t.Errorf("store false: GET %s: %d %s, want 404", id, got.StatusCode, body)
		case store && (got.StatusCode != http.StatusOK || !strings.Contains(string(body), plain.Text(scriptmodel.EntryAssistant))):
			t.Errorf("store true: GET %s: %d %s", id, got.StatusCode, body)
		}
	}
}

// TestChatVisionLogprobsE2E: an image_url part (a data: URL) reaches the vision
// model as an input_image (the answer names its colour; prompt_tokens count its
// tokens, and the same request again finds them cached); logprobs and top_logprobs
// come back per token of the content.
func TestChatVisionLogprobsE2E(t *testing.T) {
	srv := newHearth(t)
	m := testenv.Model(t, scriptmodel.VisionModel)
	img := testImage{64, 64, scriptmodel.Red, false}
	const question = "Which colour is this?"
	user, _ := json.Marshal(map[string]any{"role": "user", "content": []map[string]any{
		{"type": "image_url", "image_url": map[string]string{"url": img.dataURL(t)}},
		{"type": "text", "text": question},
	}})
	body := chatBody(scriptmodel.VisionModel, `"messages":[`+string(user)+`],"temperature":0,"logprobs":true,"top_logprobs":2`)
	text, outTokens := m.Answer(scriptmodel.Red)
	wantIn := m.CountTokens("<|user|>"+question+"<|end|>\n"+scriptmodel.EntryAssistant) + imageTokens([]testImage{img})
	for turn := range 2 {
		c := chat(t, srv, body)
		ch := c.Choices[0]
		if deref(ch.Message.Content) != text || c.Usage.CompletionTokens != outTokens || c.Usage.PromptTokens != wantIn {
			t.Errorf("turn %d: content %q usage %+v, want %q in %d out %d", turn, deref(ch.Message.Content), c.Usage, text, wantIn, outTokens)
		}
		if turn == 1 && c.Usage.PromptTokensDetails.CachedTokens != wantIn-1 {
			t.Errorf("turn %d: cached_tokens %d, want %d", turn, c.Usage.PromptTokensDetails.CachedTokens, wantIn-1)
		}
		if ch.Logprobs == nil {
			t.Fatalf("turn %d: no logprobs", turn)
		}
		var joined strings.Builder
		for i, lp := range ch.Logprobs.Content {
			joined.WriteString(lp.Token)
			if lp.Logprob > 0 || len(lp.TopLogprobs) != 2 {
				t.Errorf("turn %d: token %d %+v, want a logprob <= 0 and 2 alternatives", turn, i, lp)
			}
		}
		if joined.String() != text {
			t.Errorf("turn %d: logprob tokens make %q, want %q", turn, joined.String(), text)
		}
	}
}

// TestChatDisconnectE2E: a client that leaves a chat stream stops the generation, as
// on /v1/responses: the stored response (store true) ends incomplete, cut by the
// disconnect, with a strict prefix of the script.
func TestChatDisconnectE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m, long := testenv.BenchModel(t, scriptmodel.LongModel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions",
		strings.NewReader(chatBody(long, `"messages":[{"role":"user","content":"a long story"}],"stream":true,"store":true`)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var c streamChunk
		if json.Unmarshal([]byte(strings.TrimPrefix(sc.Text(), "data: ")), &c) != nil || len(c.Choices) == 0 {
			continue
		}
		id = "resp_" + strings.TrimPrefix(c.ID, "chatcmpl-")
		if deref(c.Choices[0].Delta.Content) != "" {
			break
		}
	}
	cancel() // the client leaves after the first content delta
	resp.Body.Close()
	if id == "" {
		t.Fatal("no chunk before the first content delta")
	}
	final := pollUntilDone(t, srv, id)
	if final.Status != hearth.StatusIncomplete || final.IncompleteDetails == nil ||
		final.IncompleteDetails.Reason != engine.IncompleteClientDisconnected {
		t.Fatalf("stored response after disconnect: status %s details %+v error %+v", final.Status, final.IncompleteDetails, final.Error)
	}
	full := m.Text(scriptmodel.EntryAssistant)
	if n := len(final.Output); n != 1 {
		t.Fatalf("stored output %+v, want one incomplete message", final.Output)
	}
	if got := final.Output[0].Text(hearth.PartOutputText); got == full || !strings.HasPrefix(full, got) {
		t.Errorf("stored text %q should be a strict prefix of the script", got)
	}
}

// TestChatRuntimeKilledMidStreamE2E: a generation that fails once the stream is open
// ends it with one error frame in OpenAI's shape (which OpenAI's clients raise), with
// no [DONE] after it.
func TestChatRuntimeKilledMidStreamE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "kills the embedded runtime's runners")
	srv := newHearth(t)
	_, long := testenv.BenchModel(t, scriptmodel.LongModel)
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(chatBody(long, `"messages":[{"role":"user","content":"tell me a story"}],"stream":true`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var frames []string
	killed := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		frames = append(frames, data)
		if !killed && strings.Contains(data, `"content":"`) && !strings.Contains(data, `"role"`) {
			testenv.KillRunners()
			killed = true
		}
	}
	if !killed || len(frames) < 2 {
		t.Fatalf("the stream ended before any content: %q", frames)
	}
	var e map[string]map[string]any
	last := frames[len(frames)-1]
	if err := json.Unmarshal([]byte(last), &e); err != nil || len(e) != 1 || e["error"]["type"] != "server_error" || e["error"]["message"] == "" {
		t.Errorf("last frame %s, want one OpenAI error", last)
	}
	for _, f := range frames[:len(frames)-1] {
		if f == "[DONE]" || strings.Contains(f, `"error"`) {
			t.Errorf("frame %s before the error", f)
		}
	}
}

// TestChatAdmissionE2E: Chat Completions is an authed route whose errors are OpenAI's,
// waits for a slot of its model like a response (the stream's role chunk comes while
// it waits), and counts in the metrics as one response per request.
func TestChatAdmissionE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, server.Config{APIKeys: []string{"k1"}, Admission: admission.Config{Slots: 1}})
	m := testenv.Model(t, plain)
	body := chatBody(plain, `"messages":[{"role":"user","content":"hi"}],"stream":true`)
	st, _, b := call(t, nil, "POST", srv.URL+"/v1/chat/completions", "", body)
	var e map[string]map[string]any
	if json.Unmarshal(b, &e); st != 401 || e["error"]["code"] != "invalid_api_key" || e["error"]["type"] != "invalid_request_error" {
		t.Errorf("without a key: %d %s", st, b)
	}
	release := server.HoldSlot(h, plain)
	// A bound against a hang only: a server that sent nothing while queued would
	// never be released.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var frames []string
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			frames = append(frames, data)
			if len(frames) == 1 {
				// The role chunk came while the only slot is held.
				if depth := metric(t, srv, "k1", "hearth_queue_depth", `model="`+plain+`"`); depth != 1 || !strings.Contains(data, `"role":"assistant"`) {
					t.Errorf("first frame %s with queue depth %v, want the role chunk while queued", data, depth)
				}
				release()
			}
		}
	}
	var text strings.Builder
	for _, c := range parseChunks(t, frames) {
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil {
			text.WriteString(*c.Choices[0].Delta.Content)
		}
	}
	if text.String() != m.Text(scriptmodel.EntryAssistant) {
		t.Errorf("streamed %q", text.String())
	}
	if n := metric(t, srv, "k1", "hearth_responses_total", `model="`+plain+`"`, `status="completed"`, `key="config-1"`); n != 1 {
		t.Errorf("hearth_responses_total = %v after one chat completion", n)
	}
	if n := metric(t, srv, "k1", "hearth_output_tokens_total", `model="`+plain+`"`, `key="config-1"`); n != float64(m.EvalCount(scriptmodel.EntryAssistant)) {
		t.Errorf("hearth_output_tokens_total = %v after one chat completion", n)
	}
}
