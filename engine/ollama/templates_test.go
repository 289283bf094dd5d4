package ollama

// Templates of the extra parity models, beside scriptmodel.Template (hermes
// style). Each is close to the template Ollama's library ships for that
// family, so parity covers the shapes real models use.
const (
	// qwen3ParityTemplate is a Go template of the qwen3 family's format, written
	// here: ChatML, tools in the system turn, thinking kept only after the last
	// user message, /think and /no_think switches, an empty <think></think> when
	// thinking is off.
	qwen3ParityTemplate = `{{- $lastQuery := -1 }}
{{- range $i, $m := .Messages }}{{ if eq $m.Role "user" }}{{ $lastQuery = $i }}{{ end }}{{ end }}
{{- if or .System .Tools }}
{{- "<|im_start|>system\n" }}
{{- with .System }}{{ "\n" }}{{ . }}{{ end }}
{{- if .Tools }}
{{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
{{- range .Tools }}{{ "\n{\"type\": \"function\", \"function\": " }}{{ .Function }}{{ "}" }}{{ end }}
{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>" }}
{{- end }}
{{- "<|im_end|>\n" }}
{{- end }}
{{- range $i, $m := .Messages }}
{{- $last := slice $.Messages $i | len | eq 1 }}
{{- if eq .Role "user" }}
{{- "<|im_start|>user\n" }}{{ .Content }}
{{- if and $.IsThinkSet (eq $i $lastQuery) }}{{ if $.Think }} /think{{ else }} /no_think{{ end }}{{ end }}
{{- "<|im_end|>\n" }}
{{- else if eq .Role "assistant" }}
{{- "<|im_start|>assistant\n" }}
{{- if and $.IsThinkSet .Thinking (or $last (gt $i $lastQuery)) }}<think>{{ .Thinking }}</think>
{{ end }}
{{- if .Content }}{{ .Content }}
{{- else if .ToolCalls }}{{ "<tool_call>" }}
{{- range .ToolCalls }}{{ "\n" }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}{{ "}" }}{{ end }}
{{- "</tool_call>" }}
{{- end }}
{{- if not $last }}{{ "<|im_end|>\n" }}{{ end }}
{{- else if eq .Role "tool" }}
{{- "<|im_start|>user\n<tool_response>\n" }}{{ .Content }}{{ "\n</tool_response><|im_end|>\n" }}
{{- end }}
{{- if and $last (ne .Role "assistant") }}
{{- "<|im_start|>assistant\n" }}
{{- if and $.IsThinkSet (not $.Think) }}{{ "<think>\n\n</think>\n\n" }}{{ end }}
{{- end }}
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
