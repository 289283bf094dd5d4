package toolgrammar

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// Template excerpts: what each family's template renders around .ToolCalls
// and .Thinking (abridged from the sources named in models.json).
const (
	tmplQwen25 = `{{- if .Tools }}<|im_start|>system
# Tools
You are provided with function signatures within <tools></tools> XML tags:
<tools>{{- range .Tools }}{"type": "function", "function": {{ .Function }}}{{- end }}</tools>
For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>{{ end }}
{{- range .ToolCalls }}<tool_call>
{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}
</tool_call>{{ end }}`
	tmplQwen3 = tmplQwen25 + `{{- if and $.IsThinkSet (not $.Think) }}<think>

</think>{{ end }}{{ if .Thinking }}<think>{{ .Thinking }}</think>{{ end }}`
	tmplGranite4 = `<|start_of_role|>system<|end_of_role|>You are a helpful assistant with access to the following tools. For each tool call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|end_of_text|>`
	tmplLlama31 = `<|start_header_id|>system<|end_header_id|>
Environment: ipython
Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.
Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.
{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "parameters": {{ .Function.Arguments }}}{{ end }}<|eot_id|>`
	tmplMistralV3  = `{{- if .Tools }}[AVAILABLE_TOOLS] {{ $.Tools }}[/AVAILABLE_TOOLS]{{ end }}[INST] {{ .Content }}[/INST]{{ if .ToolCalls }}[TOOL_CALLS] [{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}{{ end }}]</s>{{ end }}`
	tmplMistralV11 = `[AVAILABLE_TOOLS]{{ $.Tools }}[/AVAILABLE_TOOLS][INST]{{ .Content }}[/INST]{{ range .ToolCalls }}[TOOL_CALLS]{{ .Function.Name }}[ARGS]{{ .Function.Arguments }}{{ end }}</s>`
	tmplDeepSeek   = `{{ range .Messages }}<｜User｜>{{ .Content }}<｜Assistant｜>{{ if .ToolCalls }}<｜tool▁calls▁begin｜>{{ range .ToolCalls }}<｜tool▁call▁begin｜>function<｜tool▁sep｜>{{ .Function.Name }}
` + "```json\n{{ .Function.Arguments }}\n```" + `<｜tool▁call▁end｜>{{ end }}<｜tool▁calls▁end｜>{{ end }}{{ end }}`
	tmplHarmony   = `<|start|>system<|message|>Reasoning: {{ .ThinkLevel }}<|end|>{{ range .ToolCalls }}<|start|>assistant<|channel|>commentary to=functions.{{ .Function.Name }} <|constrain|>json<|message|>{{ .Function.Arguments }}<|call|>{{ end }}<|start|>assistant`
	tmplCommandR7 = `<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>{{ if .ToolCalls }}<|START_ACTION|>[{{ range .ToolCalls }}{"tool_call_id": "0", "tool_name": "{{ .Function.Name }}", "parameters": {{ .Function.Arguments }}}{{ end }}]<|END_ACTION|>{{ end }}`
	tmplGranite3  = `<|start_of_role|>assistant<|end_of_role|>{{ if .ToolCalls }}<|tool_call|>{{ .ToolCalls }}{{ end }}`
)

func TestDetect(t *testing.T) {
	const cmdRPath = "/github.com/ollama/ollama@v0.24.0/template/command-r.gotmpl"
	cmdR, err := os.ReadFile(os.Getenv("GOMODCACHE") + cmdRPath)
	if err != nil {
		home, _ := os.UserHomeDir()
		cmdR, err = os.ReadFile(home + "/go/pkg/mod" + cmdRPath)
	}
	if err != nil {
		// The module cache is optional; the excerpt is enough.
		cmdR = []byte("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>\nAction: ```json\n[")
	}
	tests := []struct {
		name string
		info ModelInfo
		want string
		by   string
	}{
		{"qwen2.5 template", ModelInfo{Name: "anything", Template: tmplQwen25}, "hermes", "template"},
		{"qwen3 template beats hermes", ModelInfo{Template: tmplQwen3}, "qwen3", "template"},
		{"granite4 template beats hermes", ModelInfo{Template: tmplGranite4}, "granite4", "template"},
		{"template beats family", ModelInfo{Family: "qwen3", Template: tmplLlama31}, "llama3", "template"},
		{"mistral v3", ModelInfo{Template: tmplMistralV3}, "mistral-v3", "template"},
		{"mistral v11 beats v3", ModelInfo{Template: tmplMistralV11}, "mistral-v11", "template"},
		{"deepseek", ModelInfo{Template: tmplDeepSeek}, "deepseek", "template"},
		{"harmony", ModelInfo{Template: tmplHarmony}, "gpt-oss", "template"},
		{"command-r7b", ModelInfo{Template: tmplCommandR7}, "command-r7b", "template"},
		{"command-r (ollama's bundled template)", ModelInfo{Template: string(cmdR)}, "command-r", "template"},
		{"granite 3", ModelInfo{Template: tmplGranite3}, "granite3", "template"},
		{"renderer without template", ModelInfo{Name: "x", Renderer: "qwen3-coder", Parser: "qwen3-coder"}, "qwen3-coder", "renderer"},
		{"glm renderer", ModelInfo{Renderer: "glm-4.7"}, "glm4-moe", "renderer"},
		{"qwen3.5 renderer beats the qwen3 name", ModelInfo{Name: "qwen3.5:9b", Family: "qwen35", Renderer: "qwen3.5", Parser: "qwen3.5"}, "qwen3.5", "renderer"},
		{"qwen3.5 by name beats qwen3*", ModelInfo{Name: "qwen3.5:27b"}, "qwen3.5", "name"},
		{"qwen3-vl renderer", ModelInfo{Name: "qwen3-vl:8b", Renderer: "qwen3-vl-thinking", Parser: "qwen3-vl-thinking"}, "qwen3", "renderer"},
		{"qwen3 parser with a plain template", ModelInfo{Name: "x", Template: "{{ .Prompt }}", Parser: "qwen3-thinking"}, "qwen3", "renderer"},
		{"nemotron-3-nano renderer", ModelInfo{Name: "nemotron-3-nano:30b", Family: "nemotron_h_moe", Renderer: "nemotron-3-nano", Parser: "nemotron-3-nano"}, "nemotron-3-nano", "renderer"},
		{"laguna renderer", ModelInfo{Renderer: "laguna", Parser: "laguna"}, "laguna", "renderer"},
		{"qwen3.8 renderer beats its qwen3.5 parser", ModelInfo{Name: "qwen3.8:35b", Family: "qwen35moe", Renderer: "qwen3.8", Parser: "qwen3.5"}, "qwen3.8", "renderer"},
		{"the qwen3.5 parser alone is qwen3.5's", ModelInfo{Name: "x", Parser: "qwen3.5"}, "qwen3.5", "renderer"},
		{"qwen3.8 by name beats qwen3*", ModelInfo{Name: "qwen3.8:35b"}, "qwen3.8", "name"},
		{"ornith renderer", ModelInfo{Name: "ornith:latest", Renderer: "ornith", Parser: "ornith"}, "ornith", "renderer"},
		{"ornith parser", ModelInfo{Name: "x", Parser: "ornith"}, "ornith", "renderer"},
		{"nemotron-3.5-nano renderer", ModelInfo{Name: "nemotron-3.5-nano:30b", Family: "nemotron_h_moe", Renderer: "nemotron-3.5-nano", Parser: "nemotron-3.5-nano"}, "nemotron-3.5-nano", "renderer"},
		{"nemotron-3.5-nano by name", ModelInfo{Name: "nemotron-3.5-nano:30b"}, "nemotron-3.5-nano", "name"},
		{"poolside-v1 renderer beats the laguna family", ModelInfo{Name: "laguna-xs.2:latest", Family: "laguna", Renderer: "poolside-v1", Parser: "poolside-v1"}, "poolside-v1", "renderer"},
		{"glm-ocr renderer", ModelInfo{Renderer: "glm-ocr", Parser: "glm-ocr"}, "glm-ocr", "renderer"},
		{"deepseek3.1 renderer", ModelInfo{Name: "deepseek-v3.1:671b", Renderer: "deepseek3.1", Parser: "deepseek3"}, "deepseek", "renderer"},
		{"an unknown renderer is not guessed from family or name", ModelInfo{Name: "olmo3:32b-think", Family: "olmo3", Renderer: "olmo3-32b-think", Parser: "olmo3-think"}, "emulated-hermes", ByUnknownRenderer},
		{"lfm2 renderer", ModelInfo{Name: "lfm2:1.2b", Family: "lfm2", Renderer: "lfm2", Parser: "lfm2"}, "lfm2", "renderer"},
		{"lfm2-thinking renderer beats the lfm2 name", ModelInfo{Name: "lfm2:2.6b-thinking", Family: "lfm2", Renderer: "lfm2-thinking", Parser: "lfm2-thinking"}, "lfm2-thinking", "renderer"},
		{"olmo3-think has no format, though named olmo3", ModelInfo{Name: "olmo-3:7b-think", Renderer: "olmo3-think", Parser: "olmo3-think"}, "emulated-hermes", ByUnknownRenderer},
		{"olmo3 renderer", ModelInfo{Name: "olmo-3:7b-instruct", Renderer: "olmo3", Parser: "olmo3"}, "olmo3", "renderer"},
		{"olmo3.1 renderer", ModelInfo{Name: "x", Renderer: "olmo3.1", Parser: "olmo3"}, "olmo3", "renderer"},
		{"gemma4 renderer", ModelInfo{Name: "gemma4:e4b", Family: "gemma4", Renderer: "gemma4", Parser: "gemma4"}, "gemma4", "renderer"},
		{"gemma4-large renderer", ModelInfo{Name: "x", Renderer: "gemma4-large"}, "gemma4", "renderer"},
		{"gemma4-no-thinking parser", ModelInfo{Name: "x", Parser: "gemma4-no-thinking"}, "gemma4", "renderer"},
		{"gemma4 by family", ModelInfo{Name: "x", Family: "gemma4"}, "gemma4", "family"},
		{"gemma4 by name beats gemma3*", ModelInfo{Name: "gemma4:31b"}, "gemma4", "name"},
		{"functiongemma renderer", ModelInfo{Name: "functiongemma:270m", Family: "gemma3", Renderer: "functiongemma", Parser: "functiongemma"}, "functiongemma", "renderer"},
		{"cohere renderer beats the cohere2 family", ModelInfo{Name: "north-mini-code:latest", Family: "cohere2", Renderer: "cohere", Parser: "cohere"}, "cohere", "renderer"},
		{"cohere parser", ModelInfo{Name: "x", Parser: "cohere"}, "cohere", "renderer"},
		{"glimmer renderer", ModelInfo{Name: "x", Renderer: "glimmer", Parser: "glimmer"}, "glimmer", "renderer"},
		{"an unknown parser is not guessed from the name", ModelInfo{Name: "qwen3.7:9b", Parser: "qwen3.7"}, "emulated-hermes", ByUnknownRenderer},
		{"an unknown renderer falls back to the template fingerprint", ModelInfo{Name: "x", Renderer: "future", Template: tmplQwen3}, "qwen3", "template"},
		{"family", ModelInfo{Family: "gptoss"}, "gpt-oss", "family"},
		{"families list", ModelInfo{Family: "x", Families: []string{"qwen3moe"}}, "qwen3", "family"},
		{"family beats name", ModelInfo{Name: "llama3.1", Family: "qwen2"}, "hermes", "family"},
		{"longest name pattern", ModelInfo{Name: "registry.ollama.ai/library/qwen3-coder:30b"}, "qwen3-coder", "name"},
		{"name is case-insensitive", ModelInfo{Name: "Llama3.2:3B"}, "llama3", "name"},
		{"a template without tools gets the emulated format", ModelInfo{Name: "qwen2.5:7b", Template: "{{ range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>{{ end }}"}, "emulated-hermes", "default"},
		{"unknown model gets the emulated format", ModelInfo{Name: "phi", Family: "phi2", Template: "{{ .Prompt }}"}, "emulated-hermes", "default"},
	}
	reg := testRegistry(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := reg.Explain(tt.info)
			if d.Format == nil || d.Format.ID != tt.want || d.By != tt.by {
				id := "<nil>"
				if d.Format != nil {
					id = d.Format.ID
				}
				t.Fatalf("got %s by %s, want %s by %s", id, d.By, tt.want, tt.by)
			}
			if reg.Detect(tt.info) != d.Format {
				t.Fatal("Detect and Explain disagree")
			}
			if (d.By == ByUnknownRenderer) != (d.Unknown != "") {
				t.Fatalf("by %s, unknown %q", d.By, d.Unknown)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	base, err := os.ReadFile("../models.json")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := LoadFormats(base)
	if err != nil {
		t.Fatal(err)
	}
	n := len(reg.Formats())
	user := `{"formats": [
		{"id": "hermes", "source": "user", "match": {"names": ["qwen2.5*"]},
		 "tools": {"kind": "json_object", "open": ["<tool_call>"], "close": "</tool_call>"}, "stop": ["<|im_end|>", "<|custom|>"]},
		{"id": "my-model", "source": "user", "match": {"names": ["my-*"]},
		 "tools": {"kind": "name_json", "open": ["<<CALL>>"], "name_end": ["::"]}}
	]}`
	if err := reg.Merge([]byte(user)); err != nil {
		t.Fatal(err)
	}
	if len(reg.Formats()) != n+1 {
		t.Fatalf("%d formats after merge, want %d", len(reg.Formats()), n+1)
	}
	if got := reg.Lookup("hermes").Stop; len(got) != 2 || got[1] != "<|custom|>" {
		t.Fatalf("hermes not overridden: stop %v", got)
	}
	if f := reg.Detect(ModelInfo{Name: "my-llm:7b"}); f == nil || f.ID != "my-model" {
		t.Fatalf("user format not detected: %v", f)
	}
	evs := normalize(parseChunks(reg.Lookup("my-model"), Options{}, []string{"hi <<CALL>>get_time::{}"}))
	if len(evs) != 5 || evs[4].Kind != CallEnd || evs[4].Name != "get_time" {
		t.Fatalf("user format does not parse: %v", evs)
	}

	for _, bad := range []string{
		`{"formats": [{"source": "no id"}]}`,
		`{"formats": [{"id": "x", "tools": {"kind": "telepathy"}}]}`,
		`{"formats": [{"id": "x", "tools": {"kind": "json_object"}}]}`,
		`{"formats": [{"id": "x", "typo_field": 1}]}`,
		`{"default": "missing", "formats": []}`,
		`{"formats": [{"id": "x", "reasoning": {"open": "<think>"}}]}`,
		`not json`,
	} {
		if _, err := LoadFormats([]byte(bad)); err == nil {
			t.Errorf("LoadFormats(%s): want an error", bad)
		}
	}
}

func TestModelsJSONEntries(t *testing.T) {
	for _, f := range testRegistry(t).Formats() {
		if f.Source == "" {
			t.Errorf("%s: no source", f.ID)
		}
		if f.Tools.Kind == "" {
			t.Errorf("%s: no tool envelope", f.ID)
		}
		if len(f.Stop) == 0 && !f.Emulated {
			t.Errorf("%s: no stop strings", f.ID)
		}
	}
}

func TestPromptOpensReasoning(t *testing.T) {
	q := testFormat(t, "qwen3")
	if !q.PromptOpensReasoning("<|im_start|>assistant\n<think>\n") {
		t.Fatal("prompt ending in <think> opens reasoning")
	}
	if q.PromptOpensReasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n") {
		t.Fatal("a closed think block does not")
	}
	if testFormat(t, "hermes").PromptOpensReasoning("<think>") {
		t.Fatal("a format without reasoning never does")
	}
}

func TestEmulatedSystemPrompt(t *testing.T) {
	f := testFormat(t, "emulated-hermes")
	s := f.EmulatedSystemPrompt([]Tool{{Name: "get_time", Description: "Current <time>"}, testTools[0]})
	lines := strings.Split(s, "\n")
	var defs []string
	for _, l := range lines {
		if strings.HasPrefix(l, `{"type":"function"`) {
			defs = append(defs, l)
		}
	}
	if len(defs) != 2 {
		t.Fatalf("want one tool per line, got:\n%s", s)
	}
	for _, d := range defs {
		if !json.Valid([]byte(d)) {
			t.Fatalf("invalid tool line %s", d)
		}
	}
	if !strings.Contains(s, "<tool_call>") || strings.Contains(s, "{{tools}}") {
		t.Fatalf("bad prompt:\n%s", s)
	}
	if testFormat(t, "hermes").EmulatedSystemPrompt(testTools) != "" {
		t.Fatal("native formats inject nothing")
	}
}

func TestStartInReasoning(t *testing.T) {
	ds := testFormat(t, "deepseek")
	if !ds.StartInReasoning("<｜Assistant｜>", true) || ds.StartInReasoning("<｜Assistant｜>", false) {
		t.Fatal("deepseek may omit <think>: start in reasoning only when thinking was requested")
	}
	if !ds.StartInReasoning("<｜Assistant｜><think>\n", false) {
		t.Fatal("a prompt ending in <think> always opens reasoning")
	}
	if testFormat(t, "hermes").StartInReasoning("x", true) {
		t.Fatal("no reasoning in hermes")
	}
}
