package scriptmodel

import (
	"fmt"
	"strings"

	"hearth/toolgrammar"
)

// Template is a hermes-style chat template (the shape Qwen 2.5/3 use: tools listed in
// the system turn, calls as <tool_call> JSON, results as <tool_response>) whose last
// token picks the script: EntryAnswer after tool results, EntryAssistant otherwise. One
// model can therefore call tools on the first turn and answer once the results are in.
const Template = `{{- if or .System .Tools }}<|system|>
{{- if .System }}{{ .System }}{{ end }}
{{- if .Tools }}
# Tools
You may call one or more functions to assist with the user query.
<tools>
{{- range .Tools }}
{"type": "function", "function": {{ json .Function }}}
{{- end }}
</tools>
For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call>
{{- end }}<|end|>
{{ end }}
{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 -}}
{{- if eq .Role "user" }}<|user|>{{ .Content }}<|end|>
{{ else if eq .Role "assistant" }}<|assistant|>
{{- if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}
{{- if .Content }}{{ .Content }}{{ end }}
{{- range .ToolCalls }}<tool_call>
{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
</tool_call>
{{- end }}<|end|>
{{ else if eq .Role "tool" }}<|tool|><tool_response>
{{ .Content }}
</tool_response><|end|>
{{ end }}
{{- if and $last (ne .Role "assistant") }}{{ if eq .Role "tool" }}` + EntryAnswer + `{{ else }}` + EntryAssistant + `{{ end }}{{ end }}
{{- end }}`

// Entry tokens of Template.
const (
	EntryAssistant = "<|assistant|>"
	EntryAnswer    = "<|answer|>"
)

// Stop strings of the catalogue models.
var Stop = []string{"<|end|>"}

// The texts the catalogue's models write. Tests compare against Model.Text and
// Model.Pieces rather than these constants, so the counts come from the model itself.
const (
	PlainText = "Hello from hearth. This reply comes from a script model."

	ReasoningText = "<think>The user says hello. A short greeting back is right.</think>" +
		"Hello! I thought about it first."

	ToolsText = "<think>I need the weather and the local time.</think>" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"Europe/Paris\"}}\n</tool_call>"
	ToolsAnswerText = "It is sunny in Paris, and the local time is noon."

	// CodexText is one call of Codex CLI's shell tool, exec_command, whose command
	// leaves a file behind, so a test can see that Codex ran what the model asked.
	CodexText = "<think>The user wants proof on disk. I will write a file.</think>" +
		"<tool_call>\n{\"name\": \"exec_command\", \"arguments\": {\"cmd\": \"echo hearth-codex > proof.txt\"}}\n</tool_call>"
	CodexAnswerText = "Wrote proof.txt through hearth."

	// AgentText is one call of one function tool, for agent loops (the OpenAI Agents
	// SDK) that run a tool and feed its result back. It is spelled as HermesCall
	// spells calls: the Agents SDK makes its tools strict, so hearth generates the
	// call under the tool's JSON grammar, which the script's tokens must pass.
	AgentText       = "<tool_call>{\"name\": \"lookup_capital\", \"arguments\": {\"country\": \"France\"}}</tool_call>"
	AgentAnswerText = "The capital of France is Paris, says the tool."

	// StepsText, StepsNextText and ToolsAnswerText are a tool loop of three steps, for
	// agent libraries that run one step per response (the AI SDK's stopWhen): the
	// weather first, then, after its result, the time, then the answer.
	StepsText = "<think>First the weather in Paris.</think>" +
		"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	StepsNextText = "<think>Now the local time there.</think>" +
		"<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"Europe/Paris\"}}\n</tool_call>"
	// RepeatText is ToolsText's two calls spelled as HermesCall spells them, so each
	// passes the tool grammar token for token. Its tokens make a model that repeats
	// itself: the closer "</tool_call>" is one token, followed by "\n<tool_call>", so a
	// call closed by hearth's own closer is followed by another opener, and the call
	// after that opener is the second one again (see RepeatModel).
	RepeatText = "<think>I need the weather and the local time.</think>" +
		"<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}</tool_call>\n" +
		"<tool_call>{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"Europe/Paris\"}}</tool_call>"

	// MCPText calls the echo tool of the MCP project's reference server
	// (@modelcontextprotocol/server-everything), spelled as HermesCall spells calls so
	// that it passes the tool's grammar when hearth constrains it; MCPAnswerText is the
	// answer after its result.
	MCPText       = `<tool_call>{"name": "echo", "arguments": {"message": "hello from hearth"}}</tool_call>`
	MCPAnswerText = "The echo tool answered: hello from hearth."
	// MCPSlowText calls server-everything's trigger-long-running-operation for 20
	// seconds: a call that is still running when a test kills the server or leaves.
	MCPSlowText       = `<tool_call>{"name": "trigger-long-running-operation", "arguments": {"duration": 20, "steps": 1}}</tool_call>`
	MCPSlowAnswerText = "The operation has a result now."

	// WebSearchText calls hearth's web_search function (a request's web_search tool
	// on a hearth with a search configured); WebSearchAnswerText is the answer after
	// the results, citing a page of the test search server's corpus (mcp/mcptest).
	WebSearchText       = `<tool_call>{"name": "web_search", "arguments": {"query": "hearth local server"}}</tool_call>`
	WebSearchAnswerText = "hearth runs models on your own machine: https://hearth.example/docs/overview"

	CustomToolName       = "apply_patch"
	CustomToolInput      = "*** Begin Patch\n*** Add File: hello.txt\n+Hello from hearth.\n*** End Patch\n"
	CustomToolAnswerText = "I added hello.txt, which says hello."

	LongText = "Once upon a time there was a small server that lived on a laptop. " +
		"Every morning it woke up, loaded its models, and waited for questions. " +
		"People asked it about the weather, about code, about history and about food. " +
		"It answered each one carefully, counting every token it wrote, and it never " +
		"forgot where a conversation had left off, even after a restart."
)

// Names of the catalogue models as created in a runtime.
const (
	PlainModel     = "hearth-script-plain:latest"
	ReasoningModel = "hearth-script-think:latest"
	ToolsModel     = "hearth-script-tools:latest"
	LongModel      = "hearth-script-long:latest"
	// CustomToolModel calls the custom tool CustomToolName with CustomToolInput, then
	// answers CustomToolAnswerText after the tool result (see CustomToolSpec).
	CustomToolModel = "hearth-script-custom:latest"
	// SmallContextModel writes PlainText with a context window of SmallContext
	// tokens, for tests of context_length_exceeded and truncation.
	SmallContextModel = "hearth-script-smallctx:latest"
	// CodexModel calls Codex's exec_command (CodexText), then answers CodexAnswerText
	// after the tool result. Its context is CodexContext tokens: Codex's first request
	// alone renders to about 37k tokens of a script model (one per byte).
	CodexModel = "hearth-script-codex:latest"
	// AgentModel calls one function tool (AgentText), then answers AgentAnswerText.
	AgentModel = "hearth-script-agent:latest"
	// StepsModel calls get_weather (StepsText); after a get_weather result, get_time
	// (StepsNextText, entry EntryNextStep); after any other tool result it answers
	// ToolsAnswerText. See StepsTemplate.
	StepsModel = "hearth-script-steps:latest"
	// VisionModel accepts images and names their dominant colour (see VisionSpec).
	VisionModel = "hearth-script-vision:latest"
	// RepeatModel writes RepeatText, then answers ToolsAnswerText after the tool
	// results. Left to itself it makes the two calls and ends; when hearth generates
	// the calls under a grammar and writes the closer itself, the continuation after
	// every call reopens a call, the second one, for ever: the loop of a small or
	// repetitive model, made exact.
	RepeatModel = "hearth-script-repeat:latest"
	// MCPModel calls an MCP server's echo tool (MCPText), then answers MCPAnswerText.
	MCPModel = "hearth-script-mcp:latest"
	// MCPSlowModel calls a long-running MCP tool (MCPSlowText), then answers
	// MCPSlowAnswerText, whatever the result.
	MCPSlowModel = "hearth-script-mcp-slow:latest"
	// WebSearchModel calls web_search (WebSearchText), then answers
	// WebSearchAnswerText, whatever the results.
	WebSearchModel = "hearth-script-web-search:latest"
)

// The vision model's scripts: VisionText, then the token of the colour it sees
// (an entry of its own, picked by the image), then that colour's script.
const (
	VisionText = "Looking at the picture, I would call it"

	VisionRed, VisionRedText     = " red", ", like a ripe tomato."
	VisionGreen, VisionGreenText = " green", ", like fresh spring grass."
	VisionBlue, VisionBlueText   = " blue", ", like a clear summer sky."
	VisionNone, VisionNoneText   = " nothing", " at all: I was sent no image."
)

// VisionSpec is VisionModel: Template's user turn with the images tagged in it, an
// answer that names the dominant colour of the images in context (Model.Answer), and
// the image geometry of ImageTokens.
func VisionSpec() Spec {
	return Spec{Template: Template, Stop: Stop,
		Scripts: []Script{
			{Entry: EntryAssistant, Text: VisionText},
			{Entry: VisionNone, Text: VisionNoneText},
			{Entry: VisionRed, Text: VisionRedText},
			{Entry: VisionGreen, Text: VisionGreenText},
			{Entry: VisionBlue, Text: VisionBlueText},
		},
		Vision: &Vision{After: EntryAssistant, Options: [4]string{VisionNone, VisionRed, VisionGreen, VisionBlue}},
	}
}

// EntryNextStep is StepsTemplate's entry token after a get_weather result.
const EntryNextStep = "<|next|>"

// StepsTemplate is Template with one more situation: after a get_weather result the
// last token is EntryNextStep, so the model calls its second tool in a step of its own
// before it answers (the runtime names a tool message's tool from its call).
var StepsTemplate = strings.Replace(Template,
	`{{ if eq .Role "tool" }}`+EntryAnswer+`{{ else }}`,
	`{{ if and (eq .Role "tool") (eq .ToolName "get_weather") }}`+EntryNextStep+
		`{{ else if eq .Role "tool" }}`+EntryAnswer+`{{ else }}`, 1)

// SmallContext is the context length of SmallContextModel: a few short turns fit,
// a long one does not.
const SmallContext = 256

// CodexContext is the context length of CodexModel: room for Codex CLI's instructions
// and tools, a tool round trip and its output.
const CodexContext = 65536

// Catalog returns the specs of the standard script models by name: plain text;
// reasoning then text; reasoning then two parallel tool calls, then an answer after the
// tool results; a long text (well over 40 tokens) for budgets; a small context; and the
// one-call models of the client tests (Codex CLI, the Agents SDK).
func Catalog() map[string]Spec {
	one := func(text string) Spec {
		return Spec{Template: Template, Stop: Stop, Scripts: []Script{{Entry: EntryAssistant, Text: text}}}
	}
	call := func(text, answer string) Spec {
		return Spec{Template: Template, Stop: Stop, Scripts: []Script{
			{Entry: EntryAssistant, Text: text},
			{Entry: EntryAnswer, Text: answer},
		}}
	}
	codex := call(CodexText, CodexAnswerText)
	codex.ContextLength = CodexContext
	// One attention head: the runtime's CPU attention over Codex's long prompt is
	// what a first turn costs (measured with the compiler's default kernels: 15.5k
	// prompt tokens in 43 s with one head, 348 s with the default eight), and a
	// script model's attention adds nothing.
	codex.Heads = 1
	return map[string]Spec{
		PlainModel:      one(PlainText),
		ReasoningModel:  one(ReasoningText),
		ToolsModel:      call(ToolsText, ToolsAnswerText),
		LongModel:       one(LongText),
		CustomToolModel: CustomToolSpec(CustomToolName, CustomToolInput, CustomToolAnswerText),
		SmallContextModel: func() Spec {
			s := one(PlainText)
			s.ContextLength = SmallContext
			return s
		}(),
		CodexModel:   codex,
		AgentModel:   call(AgentText, AgentAnswerText),
		RepeatModel:  call(RepeatText, ToolsAnswerText),
		MCPModel:     call(MCPText, MCPAnswerText),
		MCPSlowModel: call(MCPSlowText, MCPSlowAnswerText),
		WebSearchModel: func() Spec {
			// Codex CLI's test runs it too: Codex's context window and one head
			// (see codex above).
			s := call(WebSearchText, WebSearchAnswerText)
			s.ContextLength, s.Heads = CodexContext, 1
			return s
		}(),
		StepsModel: {Template: StepsTemplate, Stop: Stop, Scripts: []Script{
			{Entry: EntryAssistant, Text: StepsText},
			{Entry: EntryNextStep, Text: StepsNextText},
			{Entry: EntryAnswer, Text: ToolsAnswerText},
		}},
		VisionModel: VisionSpec(),
	}
}

// HermesCall is how a model of Template writes one call: the opener, the call's JSON,
// the closer. Nothing comes between the opener and the JSON, and the JSON has single
// spaces only after colons and commas, as llama.cpp's JSON-schema grammar allows: when
// hearth constrains a call (stopping at the opener and continuing under a grammar), the
// script's own tokens then pass the grammar, and a call that obeys the constraint comes
// out unchanged. argsJSON is the arguments object as JSON text.
func HermesCall(name, argsJSON string) string {
	return `<tool_call>{"name": "` + name + `", "arguments": ` + argsJSON + `}</tool_call>`
}

// CustomCall is the HermesCall of custom tool name with the raw input: hearth shows a
// custom tool to the model as a function of one string argument, "input". The input is
// spelled as the patterns that constrain custom tool inputs expect it
// (toolgrammar.JSONStringSpelling).
func CustomCall(name, input string) string {
	return HermesCall(name, `{"input": "`+toolgrammar.JSONStringSpelling(input)+`"}`)
}

// CustomToolSpec is a script model that calls custom tool name with input when a user
// speaks, and answers answer after a tool result: CustomToolModel's shape, for tests
// with a tool and input of their own (such as Codex's apply_patch on a file the test
// created). The input must not repeat the script's own markup.
func CustomToolSpec(name, input, answer string) Spec {
	return Spec{Template: Template, Stop: Stop, Scripts: []Script{
		{Entry: EntryAssistant, Text: CustomCall(name, input)},
		{Entry: EntryAnswer, Text: answer},
	}}
}

// Bench turns spec into its benchmark variant: the same scripts and template, with
// several hundred million (zero, Q4_0) parameters so prompt processing and decoding cost
// what a small real model costs.
func Bench(spec Spec) Spec {
	spec.Layers, spec.Width, spec.FFN, spec.Quantized = BenchLayers, BenchWidth, BenchWidth*11/4, true
	return spec
}

// The benchmark variant's size: about 0.4 billion parameters.
const BenchLayers, BenchWidth = 8, 2048

// BenchSized is Bench with layers and width of its own (0 keeps Bench's), for machines
// that a small model leaves idle, such as a GPU: 32 layers of width 4096 cost about what
// a 7-billion-parameter model costs. The width is a multiple of the head size (64), and
// the feed-forward width keeps Bench's ratio to it.
func BenchSized(spec Spec, layers, width int) (Spec, error) {
	spec = Bench(spec)
	if layers < 0 || width < 0 || width%headDim != 0 {
		return spec, fmt.Errorf("scriptmodel: bench size %d layers, width %d: want positive numbers, the width a multiple of %d", layers, width, headDim)
	}
	if layers > 0 {
		spec.Layers = layers
	}
	if width > 0 {
		spec.Width, spec.FFN = width, width*11/4
	}
	return spec, nil
}

// Describe says in a line what catalogue model name does, for people choosing one to
// try (hearth script-models); it is empty for a name outside the catalogue.
func Describe(name string) string {
	return map[string]string{
		PlainModel:        "writes one fixed sentence",
		ReasoningModel:    "reasons, then writes a sentence",
		ToolsModel:        "reasons, calls get_weather and get_time, answers after the results",
		LongModel:         "writes a long paragraph (for max_output_tokens)",
		CustomToolModel:   "calls the custom tool " + CustomToolName + ", answers after the result",
		SmallContextModel: "writes one sentence, with a 256-token context window",
		CodexModel:        "calls Codex CLI's exec_command, answers after the result",
		AgentModel:        "calls lookup_capital, answers after the result",
		StepsModel:        "calls get_weather, then get_time after its result, then answers",
		VisionModel:       "accepts images (PNG, JPEG), names their dominant colour: red, green or blue",
		RepeatModel:       "calls get_weather and get_time; reopens a call after each call hearth closes",
		MCPModel:          "calls the echo tool of an MCP server (server-everything), answers after the result",
		WebSearchModel:    "calls web_search, answers citing a URL of the results",
		MCPSlowModel:      "calls server-everything's trigger-long-running-operation (20 s), answers after the result",
		EmbedModel:        "an embedding model (/v1/embeddings): a text's vector is its words' counts, normalised",
	}[name]
}
