package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	modeltypes "github.com/ollama/ollama/types/model"

	"hearth"
	"hearth/internal/testenv"
	"hearth/scriptmodel"
)

// Templates of the extra parity models, beside scriptmodel.Template (hermes
// style). Each is close to the template Ollama's library ships for that
// family, so parity covers the shapes real models use.
const (
	// qwen3ParityTemplate is Ollama's qwen3 template: ChatML, tools in the
	// system turn, thinking kept only after the last user message, /think and
	// /no_think switches, an empty <think></think> when thinking is off.
	qwen3ParityTemplate = `{{- $lastUserIdx := -1 -}}
{{- range $idx, $msg := .Messages -}}
{{- if eq $msg.Role "user" }}{{ $lastUserIdx = $idx }}{{ end -}}
{{- end }}
{{- if or .System .Tools }}<|im_start|>system
{{ if .System }}
{{ .System }}
{{- end }}
{{- if .Tools }}

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{{- range .Tools }}
{"type": "function", "function": {{ .Function }}}
{{- end }}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>
{{- end -}}
<|im_end|>
{{ end }}
{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 -}}
{{- if eq .Role "user" }}<|im_start|>user
{{ .Content }}
{{- if and $.IsThinkSet (eq $i $lastUserIdx) }}
   {{- if $.Think -}}
      {{- " "}}/think
   {{- else -}}
      {{- " "}}/no_think
   {{- end -}}
{{- end }}<|im_end|>
{{ else if eq .Role "assistant" }}<|im_start|>assistant
{{ if (and $.IsThinkSet (and .Thinking (or $last (gt $i $lastUserIdx)))) -}}
<think>{{ .Thinking }}</think>
{{ end -}}
{{ if .Content }}{{ .Content }}
{{- else if .ToolCalls }}<tool_call>
{{- range .ToolCalls }}
{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
{{- end }}</tool_call>
{{- end }}{{ if not $last }}<|im_end|>
{{ end }}
{{- else if eq .Role "tool" }}<|im_start|>user
<tool_response>
{{ .Content }}
</tool_response><|im_end|>
{{ end }}
{{- if and (ne .Role "assistant") $last }}<|im_start|>assistant
{{ if and $.IsThinkSet (not $.Think) -}}
<think>

</think>

{{ end -}}
{{ end }}
{{- end }}`

	// llama31ParityTemplate is shaped like Ollama's llama3.1 template: tools
	// in the last user turn, calls as bare JSON, results in the ipython role,
	// a date from a template function, no thinking.
	llama31ParityTemplate = `{{- if or .System .Tools }}<|start_header_id|>system<|end_header_id|>
{{- if .System }}

{{ .System }}
{{- end }}
{{- if .Tools }}

Cutting Knowledge Date: December 2023

When you receive a tool call response, use the output to format an answer to the orginal user question.

You are a helpful assistant with tool calling capabilities.
{{- end }}<|eot_id|>
{{- end }}
{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 }}
{{- if eq .Role "user" }}<|start_header_id|>user<|end_header_id|>
{{- if and $.Tools $last }}

Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.

Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.

{{ range $.Tools }}
{{- . }}
{{ end }}
{{ .Content }}<|eot_id|>
{{- else }}

{{ .Content }}<|eot_id|>
{{- end }}{{ if $last }}<|start_header_id|>assistant<|end_header_id|>

{{ end }}
{{- else if eq .Role "assistant" }}<|start_header_id|>assistant<|end_header_id|>
{{- if .ToolCalls }}
{{ range .ToolCalls }}
{"name": "{{ .Function.Name }}", "parameters": {{ .Function.Arguments }}}{{ end }}
{{- else }}

{{ .Content }}
{{- end }}{{ if not $last }}<|eot_id|>{{ end }}
{{- else if eq .Role "tool" }}<|start_header_id|>ipython<|end_header_id|>

{{ .Content }}<|eot_id|>{{ if $last }}<|start_header_id|>assistant<|end_header_id|>

{{ end }}
{{- end }}
{{- end }}`

	// legacyParityTemplate predates .Messages: the runtime replays the
	// conversation through .System/.Prompt/.Response.
	legacyParityTemplate = `{{ if .System }}<|system|>{{ .System }}<|end|>
{{ end }}{{ if .Prompt }}<|user|>{{ .Prompt }}<|end|>
{{ end }}<|assistant|>{{ .Response }}<|end|>
`
)

// parityModel is a model of the parity test and the think values it is
// rendered with.
type parityModel struct {
	name   string
	create *api.CreateRequest // nil for a catalogue model
	thinks []*api.ThinkValue
}

func thinkValue(v any) *api.ThinkValue { return &api.ThinkValue{Value: v} }

var parityModels = []parityModel{
	{name: scriptmodel.ToolsModel, thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true), thinkValue("high")}},
	{name: "parity-qwen3:latest", create: &api.CreateRequest{Template: qwen3ParityTemplate},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	// think=true on a model without thinking: the runtime refuses, hearth
	// renders it as unset (see RenderPrompt); compared against nil below.
	{name: "parity-llama31:latest", create: &api.CreateRequest{Template: llama31ParityTemplate},
		thinks: []*api.ThinkValue{nil, thinkValue(false)}},
	{name: "parity-legacy:latest", create: &api.CreateRequest{Template: legacyParityTemplate},
		thinks: []*api.ThinkValue{nil}},
	// The model's own SYSTEM and MESSAGEs come before the conversation.
	{name: "parity-system:latest", create: &api.CreateRequest{Template: scriptmodel.Template,
		System:   "You are a script model.",
		Messages: []api.Message{{Role: "user", Content: "Example?"}, {Role: "assistant", Content: "Example!"}}},
		thinks: []*api.ThinkValue{nil, thinkValue(false)}},
	// A built-in output parser that rewrites tool names (harmony's
	// FunctionNameMap) must rewrite them in hearth's prompt too.
	{name: "parity-harmony:latest", create: &api.CreateRequest{Template: scriptmodel.Template, Parser: "harmony"},
		thinks: []*api.ThinkValue{nil, thinkValue(false)}},
	// Renderer models: Go renderers instead of a template; they place images
	// themselves.
	{name: "parity-qwen3coder:latest", create: &api.CreateRequest{Renderer: "qwen3-coder", Parser: "qwen3-coder"},
		thinks: []*api.ThinkValue{nil}},
	{name: "parity-qwen3vl:latest", create: &api.CreateRequest{Renderer: "qwen3-vl-thinking", Parser: "qwen3-vl-thinking"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
}

// parityConversation is one request's context.
type parityConversation struct {
	name         string
	instructions string
	history      []hearth.Item
	input        []hearth.Item
	tools        []hearth.Tool
}

func parityConversations(t *testing.T) []parityConversation {
	img := func(shade uint8) hearth.ContentPart {
		return hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: testDataURL(testPNG(t, shade))}
	}
	weather := testFunctionTool("get_weather", `{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}`)
	clock := testFunctionTool("get-time", `{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}`)
	toolTurn := []hearth.Item{
		itUser("Weather and time in Paris?"),
		itReasoning("I need the weather and the local time."),
		itCall("call_1", "get_weather", `{"city": "Paris", "unit": "c"}`),
		itCall("call_2", "get-time", `{"timezone":"Europe/Paris"}`),
		itOutput("call_1", `{"sky":"sunny","temp":21}`),
		itOutput("call_2", "12:00"),
	}
	return []parityConversation{
		{name: "plain", input: []hearth.Item{itUser("Hello!")}},
		{
			name:         "system and developer",
			instructions: "Answer in French.",
			input:        []hearth.Item{itDeveloper("You are Codex, a coding agent."), itDeveloper("<permissions>none</permissions>"), itUser("Hi")},
		},
		{
			name:    "multi-turn with reasoning",
			history: []hearth.Item{itUser("One?"), itReasoning("Count."), itAssistant("One."), itUser("Two?"), itReasoning("Count again."), itAssistant("Two.")},
			input:   []hearth.Item{itUser("Three?")},
		},
		{
			name:  "tool results pending an answer",
			input: toolTurn,
			tools: []hearth.Tool{weather, clock},
		},
		{
			name:    "tool loop then follow-up",
			history: append(append([]hearth.Item{}, toolTurn...), itReasoning("Both known."), itAssistant("Sunny, 21C, noon.")),
			input:   []hearth.Item{itUser("And tomorrow?")},
			tools:   []hearth.Tool{weather, clock},
		},
		{
			name:  "text before parallel calls",
			input: []hearth.Item{itUser("Go"), itReasoning("Plan."), itAssistant("Let me check."), itCall("c1", "get_weather", `{"city":"Oslo"}`), itCall("c2", "get_weather", `{"city":"Rome"}`)},
			tools: []hearth.Tool{weather},
		},
		{
			name:  "namespace and custom tools",
			input: []hearth.Item{itUser("Spawn a helper"), {Type: hearth.ItemFunctionCall, CallID: "c1", Name: "spawn_agent", Namespace: "multi_agent_v1", Arguments: `{"task":"look"}`}, itOutput("c1", "spawned"), {Type: hearth.ItemCustomToolCall, CallID: "c2", Name: "apply_patch", Input: "*** Begin Patch\n*** End Patch"}, {Type: hearth.ItemCustomToolCallOutput, CallID: "c2", Output: hearth.ToolOutput{Text: "ok"}}},
			tools: []hearth.Tool{
				{Type: hearth.ToolNamespace, Name: "multi_agent_v1", Tools: []hearth.Tool{
					testFunctionTool("spawn_agent", `{"type":"object","properties":{"task":{"type":"string"}},"required":["task"],"additionalProperties":false}`),
				}},
				{Type: hearth.ToolCustom, Name: "apply_patch", Description: "Apply a patch."},
				{Type: "web_search", Raw: json.RawMessage(`{"type":"web_search"}`)},
			},
		},
		{
			name: "images",
			input: []hearth.Item{
				itMsg(hearth.RoleUser, itPart(hearth.PartInputText, "Compare these."), img(10), img(20)),
				itAssistant("They differ."),
				itMsg(hearth.RoleUser, itPart(hearth.PartInputText, "Is [img] darker than [img]?"), img(30), img(40), img(50)),
				itCall("c1", "view_image", `{"path":"x.png"}`),
				{Type: hearth.ItemFunctionCallOutput, CallID: "c1", Output: hearth.ToolOutput{Parts: []hearth.ContentPart{itPart(hearth.PartInputText, "x.png:"), img(60)}}},
			},
		},
		{
			name:  "ends with assistant text",
			input: []hearth.Item{itUser("Finish: the quick brown"), itAssistant("fox")},
		},
		{
			name:  "think tags in old assistant content",
			input: []hearth.Item{itUser("a"), itAssistant("<think>old</think>visible"), itUser("b")},
		},
	}
}

// runtimeRender asks the runtime for the prompt of an /api/chat request.
// A model whose template shows no tools refuses requests with tools; its
// prompt cannot show them anyway, so it is asked without (the engine gives
// such models tools by other means).
func runtimeRender(ctx context.Context, t *testing.T, client *api.Client, show *api.ShowResponse, model string, conv *Conversation, think *api.ThinkValue) (string, int) {
	t.Helper()
	stream, truncate := false, false
	tools := conv.Tools
	if !slices.Contains(show.Capabilities, modeltypes.CapabilityTools) {
		tools = nil
	}
	req := &api.ChatRequest{
		Model:           model,
		Messages:        conv.Messages,
		Tools:           tools,
		Think:           think,
		Stream:          &stream,
		Truncate:        &truncate,
		DebugRenderOnly: true,
	}
	var resp api.ChatResponse
	if err := client.Chat(ctx, req, func(r api.ChatResponse) error { resp = r; return nil }); err != nil {
		t.Fatalf("runtime render: %v", err)
	}
	if resp.DebugInfo == nil {
		t.Fatalf("runtime returned no _debug_info")
	}
	return resp.DebugInfo.RenderedTemplate, resp.DebugInfo.ImageCount
}

// TestRenderPromptParity compares RenderPrompt with the prompt the real
// runtime renders for /api/chat with "_debug_render_only": true, for every
// parity model, conversation and think value.
func TestRenderPromptParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the runtime")
	}
	rt := testenv.Runtime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, m := range parityModels {
		if m.create == nil {
			continue
		}
		req := *m.create
		req.Model, req.From = m.name, scriptmodel.PlainModel
		if err := rt.Client.Create(ctx, &req, func(api.ProgressResponse) error { return nil }); err != nil {
			t.Fatalf("create %s: %v", m.name, err)
		}
	}
	convs := parityConversations(t)
	for _, m := range parityModels {
		show, err := rt.Client.Show(ctx, &api.ShowRequest{Model: m.name})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range convs {
			conv, err := BuildConversation(c.instructions, c.history, c.input, c.tools)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for _, think := range m.thinks {
				t.Run(fmt.Sprintf("%s/%s/think=%v", strings.TrimSuffix(m.name, ":latest"), c.name, thinkString(think)), func(t *testing.T) {
					got, err := RenderPrompt(show, conv, think)
					if err != nil {
						t.Fatal(err)
					}
					want, images := runtimeRender(ctx, t, rt.Client, show, m.name, conv, think)
					if got != want {
						t.Errorf("prompt differs from the runtime's\n--- hearth\n%s\n--- runtime\n%s", got, want)
					}
					if images != len(conv.Images) {
						t.Errorf("runtime counts %d images, conversation has %d", images, len(conv.Images))
					}
				})
			}
		}
	}
}

// TestRenderPromptRelaxesThink: think=true on a model that cannot think
// renders as unset where the runtime would refuse the request.
func TestRenderPromptRelaxesThink(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the runtime")
	}
	rt := testenv.Runtime(t)
	ctx := context.Background()
	if err := rt.Client.Create(ctx, &api.CreateRequest{Model: "parity-nothink:latest", From: scriptmodel.PlainModel, Template: llama31ParityTemplate}, func(api.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	show, err := rt.Client.Show(ctx, &api.ShowRequest{Model: "parity-nothink:latest"})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := BuildConversation("", nil, []hearth.Item{itUser("Hi")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RenderPrompt(show, conv, thinkValue(true))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := runtimeRender(ctx, t, rt.Client, show, "parity-nothink:latest", conv, nil)
	if got != want {
		t.Errorf("think=true on a non-thinking model:\n%s\nwant (think unset):\n%s", got, want)
	}
}

func thinkString(v *api.ThinkValue) string {
	if v == nil {
		return "unset"
	}
	return fmt.Sprint(v.Value)
}
