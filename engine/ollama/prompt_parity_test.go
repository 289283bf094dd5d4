package ollama_test

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
	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
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
	{name: "parity-qwen3:latest", create: &api.CreateRequest{Template: ollama.Qwen3ParityTemplate},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	// think=true on a model without thinking: the runtime refuses, hearth
	// renders it as unset (see ollama.RenderPrompt); compared against nil below.
	{name: "parity-llama31:latest", create: &api.CreateRequest{Template: ollama.Llama31ParityTemplate},
		thinks: []*api.ThinkValue{nil, thinkValue(false)}},
	{name: "parity-legacy:latest", create: &api.CreateRequest{Template: ollama.LegacyParityTemplate},
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
	// v0.24.0's gemma4 renderer, which the runtime resolves to gemma4-small for a
	// model of this name and size, and to gemma4-large (an empty thought block when
	// not thinking) for a 26b/31b name or >= 16B parameters (ResolveRenderer).
	{name: "parity-gemma4:latest", create: &api.CreateRequest{Renderer: "gemma4", Parser: "gemma4"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	{name: "parity-gemma4-31b:latest", create: &api.CreateRequest{Renderer: "gemma4", Parser: "gemma4"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	{name: "parity-functiongemma:latest", create: &api.CreateRequest{Renderer: "functiongemma", Parser: "functiongemma"},
		thinks: []*api.ThinkValue{nil}},
	{name: "parity-olmo3:latest", create: &api.CreateRequest{Renderer: "olmo3", Parser: "olmo3"},
		thinks: []*api.ThinkValue{nil}},
	{name: "parity-olmo31:latest", create: &api.CreateRequest{Renderer: "olmo3.1", Parser: "olmo3"},
		thinks: []*api.ThinkValue{nil}},
	{name: "parity-lfm2:latest", create: &api.CreateRequest{Renderer: "lfm2", Parser: "lfm2"},
		thinks: []*api.ThinkValue{nil}},
	{name: "parity-lfm2thinking:latest", create: &api.CreateRequest{Renderer: "lfm2-thinking", Parser: "lfm2-thinking"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	// The cohere and glimmer templates, registered with the module's registry: the
	// embedded runtime renders them with the same template.
	{name: "parity-cohere:latest", create: &api.CreateRequest{Renderer: "cohere", Parser: "cohere"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	{name: "parity-glimmer:latest", create: &api.CreateRequest{Renderer: "glimmer", Parser: "glimmer"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true), thinkValue("low")}},
	// Renderers the module has too; laguna, nemotron-3-nano and qwen3.5 (like gemma4
	// and lfm2 above) are rendered from their templates, which replace the module's
	// renderers in the registry the embedded runtime renders through as well.
	{name: "parity-qwen35:latest", create: &api.CreateRequest{Renderer: "qwen3.5", Parser: "qwen3.5"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	{name: "parity-nemotron3nano:latest", create: &api.CreateRequest{Renderer: "nemotron-3-nano", Parser: "nemotron-3-nano"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	{name: "parity-laguna:latest", create: &api.CreateRequest{Renderer: "laguna", Parser: "laguna"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	{name: "parity-glmocr:latest", create: &api.CreateRequest{Renderer: "glm-ocr", Parser: "glm-ocr"},
		thinks: []*api.ThinkValue{nil}},
	{name: "parity-deepseek31:latest", create: &api.CreateRequest{Renderer: "deepseek3.1", Parser: "deepseek3"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	// Renderer names the module lacks, rendered from their templates, which the
	// embedded runtime renders through the same registry.
	{name: "parity-qwen38:latest", create: &api.CreateRequest{Renderer: "qwen3.8", Parser: "qwen3.5"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true), thinkValue("low"), thinkValue("high")}},
	{name: "parity-ornith:latest", create: &api.CreateRequest{Renderer: "ornith", Parser: "ornith"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true)}},
	{name: "parity-nemotron35nano:latest", create: &api.CreateRequest{Renderer: "nemotron-3.5-nano", Parser: "nemotron-3.5-nano"},
		thinks: []*api.ThinkValue{nil, thinkValue(false), thinkValue(true), thinkValue("medium")}},
	{name: "parity-poolside:latest", create: &api.CreateRequest{Renderer: "poolside-v1", Parser: "poolside-v1"},
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
		return hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: ollama.TestDataURL(ollama.TestPNG(t, shade))}
	}
	weather := ollama.TestFunctionTool("get_weather", `{"type":"object","properties":{"city":{"type":"string","description":"City name"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}`)
	clock := ollama.TestFunctionTool("get-time", `{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}`)
	toolTurn := []hearth.Item{
		ollama.ItUser("Weather and time in Paris?"),
		ollama.ItReasoning("I need the weather and the local time."),
		ollama.ItCall("call_1", "get_weather", `{"city": "Paris", "unit": "c"}`),
		ollama.ItCall("call_2", "get-time", `{"timezone":"Europe/Paris"}`),
		ollama.ItOutput("call_1", `{"sky":"sunny","temp":21}`),
		ollama.ItOutput("call_2", "12:00"),
	}
	return []parityConversation{
		{name: "plain", input: []hearth.Item{ollama.ItUser("Hello!")}},
		{
			name:         "system and developer",
			instructions: "Answer in French.",
			input:        []hearth.Item{ollama.ItDeveloper("You are Codex, a coding agent."), ollama.ItDeveloper("<permissions>none</permissions>"), ollama.ItUser("Hi")},
		},
		{
			name:    "multi-turn with reasoning",
			history: []hearth.Item{ollama.ItUser("One?"), ollama.ItReasoning("Count."), ollama.ItAssistant("One."), ollama.ItUser("Two?"), ollama.ItReasoning("Count again."), ollama.ItAssistant("Two.")},
			input:   []hearth.Item{ollama.ItUser("Three?")},
		},
		{
			name:  "tool results pending an answer",
			input: toolTurn,
			tools: []hearth.Tool{weather, clock},
		},
		{
			name:    "tool loop then follow-up",
			history: append(append([]hearth.Item{}, toolTurn...), ollama.ItReasoning("Both known."), ollama.ItAssistant("Sunny, 21C, noon.")),
			input:   []hearth.Item{ollama.ItUser("And tomorrow?")},
			tools:   []hearth.Tool{weather, clock},
		},
		{
			name:  "text before parallel calls",
			input: []hearth.Item{ollama.ItUser("Go"), ollama.ItReasoning("Plan."), ollama.ItAssistant("Let me check."), ollama.ItCall("c1", "get_weather", `{"city":"Oslo"}`), ollama.ItCall("c2", "get_weather", `{"city":"Rome"}`)},
			tools: []hearth.Tool{weather},
		},
		{
			name:  "namespace and custom tools",
			input: []hearth.Item{ollama.ItUser("Spawn a helper"), {Type: hearth.ItemFunctionCall, CallID: "c1", Name: "spawn_agent", Namespace: "multi_agent_v1", Arguments: `{"task":"look"}`}, ollama.ItOutput("c1", "spawned"), {Type: hearth.ItemCustomToolCall, CallID: "c2", Name: "apply_patch", Input: "*** Begin Patch\n*** End Patch"}, {Type: hearth.ItemCustomToolCallOutput, CallID: "c2", Output: hearth.ToolOutput{Text: "ok"}}},
			tools: []hearth.Tool{
				{Type: hearth.ToolNamespace, Name: "multi_agent_v1", Tools: []hearth.Tool{
					ollama.TestFunctionTool("spawn_agent", `{"type":"object","properties":{"task":{"type":"string"}},"required":["task"],"additionalProperties":false}`),
				}},
				{Type: hearth.ToolCustom, Name: "apply_patch", Description: "Apply a patch."},
				{Type: "web_search", Raw: json.RawMessage(`{"type":"web_search"}`)},
			},
		},
		{
			name: "images",
			input: []hearth.Item{
				ollama.ItMsg(hearth.RoleUser, ollama.ItPart(hearth.PartInputText, "Compare these."), img(10), img(20)),
				ollama.ItAssistant("They differ."),
				ollama.ItMsg(hearth.RoleUser, ollama.ItPart(hearth.PartInputText, "Is [img] darker than [img]?"), img(30), img(40), img(50)),
				ollama.ItCall("c1", "view_image", `{"path":"x.png"}`),
				{Type: hearth.ItemFunctionCallOutput, CallID: "c1", Output: hearth.ToolOutput{Parts: []hearth.ContentPart{ollama.ItPart(hearth.PartInputText, "x.png:"), img(60)}}},
			},
		},
		{
			name:  "ends with assistant text",
			input: []hearth.Item{ollama.ItUser("Finish: the quick brown"), ollama.ItAssistant("fox")},
		},
		{
			name:  "think tags in old assistant content",
			input: []hearth.Item{ollama.ItUser("a"), ollama.ItAssistant("<think>old</think>visible"), ollama.ItUser("b")},
		},
	}
}

// runtimeRender asks the runtime for the prompt of an /api/chat request.
// A model whose template shows no tools refuses requests with tools; its
// prompt cannot show them anyway, so it is asked without (the engine gives
// such models tools by other means).
func runtimeRender(ctx context.Context, t *testing.T, client *api.Client, show *api.ShowResponse, model string, conv *engine.Conversation, think *api.ThinkValue) (string, int) {
	t.Helper()
	stream, truncate := false, false
	messages, tools := ollama.ChatMessages(t, conv)
	if !slices.Contains(show.Capabilities, modeltypes.CapabilityTools) {
		tools = nil
	}
	req := &api.ChatRequest{
		Model:           model,
		Messages:        messages,
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
		if m.create != nil && testenv.External() && slices.Contains(ollama.JinjaRegistered(), m.create.Renderer) {
			// A stock `ollama serve` of the module's release renders this name with its
			// own v0.24.0 renderer, or knows no such renderer: hearth's registrations of
			// v0.32.15's renderers live in hearth's process only.
			t.Run(strings.TrimSuffix(m.name, ":latest"), func(t *testing.T) {
				t.Skipf("%s=external: renderer %q is Ollama v0.32.15's in hearth, the server's is its own", testenv.RuntimeEnv, m.create.Renderer)
			})
			continue
		}
		show, err := rt.Client.Show(ctx, &api.ShowRequest{Model: m.name})
		if err != nil {
			t.Fatal(err)
		}
		// As the seam does: the runtime picks gemma4's renderer by the name.
		if show, err = ollama.ResolveRenderer(m.name, show); err != nil {
			t.Fatal(err)
		}
		for _, c := range convs {
			conv, err := engine.BuildConversation(c.instructions, c.history, c.input, c.tools, ollama.NewRenderer(show))
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			for _, think := range m.thinks {
				t.Run(fmt.Sprintf("%s/%s/think=%v", strings.TrimSuffix(m.name, ":latest"), c.name, thinkString(think)), func(t *testing.T) {
					got, err := ollama.RenderPrompt(show, conv, think)
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
	if err := rt.Client.Create(ctx, &api.CreateRequest{Model: "parity-nothink:latest", From: scriptmodel.PlainModel, Template: ollama.Llama31ParityTemplate}, func(api.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	show, err := rt.Client.Show(ctx, &api.ShowRequest{Model: "parity-nothink:latest"})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := engine.BuildConversation("", nil, []hearth.Item{ollama.ItUser("Hi")}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ollama.RenderPrompt(show, conv, thinkValue(true))
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
