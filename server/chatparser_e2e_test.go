package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// chatToolsJSON is toolsJSON in /api/chat's shape.
const chatToolsJSON = `"tools":[
 {"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
 {"type":"function","function":{"name":"get_time","description":"Local time","parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}}]`

// chatCall is a tool call of an /api/chat message: its name and its arguments as
// compact JSON, keys in the order chat returned them.
type chatCall struct{ Name, Arguments string }

// chatReply is what an /api/chat answer's message says, streamed or not.
type chatReply struct {
	Thinking, Content string
	Calls             []chatCall
}

// chatMessage is one /api/chat message (a whole answer, or one streamed chunk's).
type chatMessage struct {
	Content   string `json:"content"`
	Thinking  string `json:"thinking"`
	ToolCalls []struct {
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (r *chatReply) add(t *testing.T, m chatMessage) {
	t.Helper()
	r.Thinking += m.Thinking
	r.Content += m.Content
	for _, c := range m.ToolCalls {
		var b bytes.Buffer
		if err := json.Compact(&b, c.Function.Arguments); err != nil {
			t.Fatalf("tool call arguments %s: %v", c.Function.Arguments, err)
		}
		r.Calls = append(r.Calls, chatCall{c.Function.Name, b.String()})
	}
}

// apiChat sends body to hearth's /api/chat (the embedded runtime's own chat), not
// streamed and streamed, and returns each reply, failing unless both say the same.
func apiChat(t *testing.T, srvURL, body string) chatReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var replies [2]chatReply
	for i, stream := range []bool{false, true} {
		b := strings.Replace(body, `{`, `{"stream":`+map[bool]string{false: "false", true: "true"}[stream]+`,`, 1)
		st, _, out := call(t, ctx, "POST", srvURL+"/api/chat", "", b)
		if st != 200 {
			t.Fatalf("/api/chat (stream %v): %d %s", stream, st, out)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		lines := 0
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) == 0 {
				continue
			}
			var chunk struct {
				Message chatMessage `json:"message"`
				Error   string      `json:"error"`
			}
			if err := json.Unmarshal(sc.Bytes(), &chunk); err != nil || chunk.Error != "" {
				t.Fatalf("/api/chat (stream %v): %v %s", stream, err, sc.Bytes())
			}
			replies[i].add(t, chunk.Message)
			lines++
		}
		if !stream && lines != 1 {
			t.Fatalf("/api/chat without streaming: %d objects: %s", lines, out)
		}
	}
	if !equalReplies(replies[0], replies[1]) {
		t.Fatalf("/api/chat streamed %+v, not streamed %+v", replies[1], replies[0])
	}
	return replies[0]
}

func equalReplies(a, b chatReply) bool {
	return a.Thinking == b.Thinking && a.Content == b.Content && slices.Equal(a.Calls, b.Calls)
}

// replyOfItems is what the Responses API's output items say, as a chat reply: the
// reasoning items' text, the messages' text, the function calls.
func replyOfItems(items []item) chatReply {
	var r chatReply
	for _, it := range items {
		switch it.Type {
		case "reasoning":
			r.Thinking += it.Text
		case "message":
			r.Content += it.Text
		case "function_call":
			r.Calls = append(r.Calls, chatCall{it.Name, it.Arguments})
		}
	}
	return r
}

// TestEmbeddedChatReadsFamiliesE2E: the embedded runtime's own chat (/api/chat through
// hearth's /api passthrough) reads each family's output with the family's models.json
// format (engine/ollama/chatparser, registered under the parser names the formats list
// in chat_parsers): the thinking, content and tool calls are exact, streamed or not,
// and the same as the items /v1/responses makes of the same turn. The families are
// those whose parser the runtime (Ollama v0.24.0) lacks, which returned the raw markup
// as content (ornith, nemotron-3.5-nano, poolside-v1, cohere, glimmer), and those whose
// runtime parser does not read what their prompts make the model write (laguna, whose
// prompt opens the reasoning; gemma4, whose prompt after a tool result opens the
// thought channel; lfm2 and lfm2-thinking).
func TestEmbeddedChatReadsFamiliesE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "a stock ollama serve reads chat output with its own parsers; hearth registers its formats in its own process")
	thought := chatReply{Thinking: "The user wants the weather in Paris.", Content: "Let me check.",
		Calls: []chatCall{{"get_weather", `{"city":"Paris"}`}}}
	const user = `"messages":[{"role":"user","content":"Weather in Paris?"}]`
	cases := []struct {
		family string
		spec   scriptmodel.Spec
		think  string // the request's think, "" for unset
		want   chatReply
	}{
		{"laguna", scriptmodel.Spec{Renderer: "laguna", Parser: "laguna", Stop: []string{"</assistant>", "<user>"},
			Scripts: []scriptmodel.Script{{Entry: lagunaThinkingEntry, Text: lagunaCallText}}}, "true", thought},
		{"poolside-v1", scriptmodel.Spec{Renderer: "poolside-v1", Parser: "poolside-v1", Stop: []string{"</assistant>", "<user>"},
			Scripts: []scriptmodel.Script{{Entry: poolsideThinkingEntry, Text: poolsideCallText}}}, "", thought},
		{"ornith", scriptmodel.Spec{Renderer: "ornith", Parser: "ornith", Stop: []string{"<|im_end|>"},
			Scripts: []scriptmodel.Script{{Entry: qwen35ThinkingEntry, Text: qwen35CallText}}}, "", thought},
		{"nemotron-3.5-nano", scriptmodel.Spec{Renderer: "nemotron-3.5-nano", Parser: "nemotron-3.5-nano", Stop: []string{"<|im_end|>"},
			Scripts: []scriptmodel.Script{{Entry: nemotron35ThinkingEntry, Text: nemotron35CallText}}}, `"high"`, thought},
		{"gemma4", scriptmodel.Spec{Renderer: "gemma4", Parser: "gemma4", Stop: []string{"<turn|>", "<|tool_response>"},
			Scripts: []scriptmodel.Script{{Entry: gemma4TurnEntry, Text: gemma4CallText}}}, "true", thought},
		{"lfm2", scriptmodel.Spec{Renderer: "lfm2", Parser: "lfm2", Stop: []string{"<|im_end|>"},
			Scripts: []scriptmodel.Script{{Entry: lfm2TurnEntry, Text: lfm2CallText}}}, "",
			chatReply{Content: "Let me check.", Calls: []chatCall{{"get_weather", `{"city":"Paris, France"}`}}}},
		{"lfm2-thinking", scriptmodel.Spec{Renderer: "lfm2-thinking", Parser: "lfm2-thinking", Stop: []string{"<|im_end|>"},
			Scripts: []scriptmodel.Script{{Entry: lfm2TurnEntry, Text: lfm2ThinkingCallText}}}, "true",
			chatReply{Thinking: "The user wants the weather in Paris.", Content: "Let me check.", Calls: []chatCall{{"get_weather", `{"city":"Paris, France"}`}}}},
		{"cohere", scriptmodel.Spec{Renderer: "cohere", Parser: "cohere", Stop: []string{"<|END_OF_TURN_TOKEN|>"},
			Scripts: []scriptmodel.Script{{Entry: cohereTurnEntry, Text: cohereCallText}}}, "",
			chatReply{Thinking: "The user wants the weather in Paris.", Calls: []chatCall{{"get_weather", `{"city":"Paris"}`}}}},
		{"glimmer", scriptmodel.Spec{Renderer: "glimmer", Parser: "glimmer", Stop: []string{"<|eot|>"},
			Scripts: []scriptmodel.Script{{Entry: glimmerTurnEntry, Text: glimmerCallText}}}, "",
			chatReply{Thinking: "The user wants the weather in Paris.", Calls: []chatCall{{"get_weather", `{"city":"Paris, France"}`}}}},
	}
	srv := newHearthWithDB(t)
	for _, c := range cases {
		t.Run(c.family, func(t *testing.T) {
			model := "hearth-script-chat-" + c.family + ":latest"
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, c.spec); err != nil {
				t.Fatal(err)
			}
			think := ""
			if c.think != "" {
				think = `"think":` + c.think + `,`
			}
			got := apiChat(t, srv.URL, `{"model":"`+model+`",`+think+`"options":{"temperature":0},`+user+`,`+chatToolsJSON+`}`)
			if !equalReplies(got, c.want) {
				t.Errorf("/api/chat message\n got  %+v\n want %+v", got, c.want)
			}
			// The same turn through the Responses API, reasoning as chat asked for it.
			effort := ""
			switch c.think {
			case "true":
				effort = `"reasoning":{"effort":"medium"},`
			case `"high"`:
				effort = `"reasoning":{"effort":"high"},`
			}
			resp := createJSON(t, srv, reqBody(model, false, effort+weatherRequest))
			if fromItems := replyOfItems(summarize(resp.Output)); !equalReplies(got, fromItems) {
				t.Errorf("/api/chat message %+v, /v1/responses items say %+v", got, fromItems)
			}
		})
	}

	// Gemma 4's prompt after a tool result opens the thought channel when thinking: the
	// answer starts in reasoning, which chat returns as thinking.
	t.Run("gemma4 after a tool result", func(t *testing.T) {
		const model = "hearth-script-chat-gemma4-answer:latest"
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model, scriptmodel.Spec{
			Renderer: "gemma4", Parser: "gemma4", Stop: []string{"<turn|>", "<|tool_response>"},
			Scripts: []scriptmodel.Script{{Entry: gemma4ThoughtEntry, Text: gemma4ThoughtAnswerText}},
		}); err != nil {
			t.Fatal(err)
		}
		got := apiChat(t, srv.URL, `{"model":"`+model+`","think":true,"options":{"temperature":0},"messages":[`+
			`{"role":"user","content":"Weather in Paris?"},`+
			`{"role":"assistant","content":"Let me check.","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},`+
			`{"role":"tool","tool_name":"get_weather","content":"sunny, 21C"}],`+chatToolsJSON+`}`)
		if want := (chatReply{Thinking: "The tool says sunny.", Content: gemma4AnswerText}); !equalReplies(got, want) {
			t.Errorf("/api/chat message\n got  %+v\n want %+v", got, want)
		}
	})
}
