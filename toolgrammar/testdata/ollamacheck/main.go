// Command ollamacheck checks toolgrammar against the Ollama runtime it
// serves (the github.com/ollama/ollama version in go.mod). It lives under testdata so the
// toolgrammar package itself stays standard-library only; it needs the cgo
// build of llama.cpp (see scripts/cgo-headers.sh):
//
//	CGO_CPPFLAGS="-I$HOME/.cache/hearth/cgo-include/malgo-v0.11.24 -I/usr/include" go run ./toolgrammar/testdata/ollamacheck grammar
//	CGO_CPPFLAGS="-I$HOME/.cache/hearth/cgo-include/malgo-v0.11.24 -I/usr/include" go run ./toolgrammar/testdata/ollamacheck baseline toolgrammar/testdata/fixtures
//
// "grammar" converts every constraint schema with the runtime's own
// json-schema-to-grammar (llama.SchemaToGrammar) and fails if one is
// rejected. "baseline" runs Ollama's built-in output parsers over the
// fixtures and prints where they differ from toolgrammar's golden events.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/model/parsers"

	"hearth"
	"hearth/toolgrammar"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ollamacheck grammar | baseline <fixtures dir>")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "grammar":
		grammar()
	case "baseline":
		baseline(os.Args[2])
	}
}

func grammar() {
	reg, err := toolgrammar.LoadFormats(hearth.ModelsJSON)
	if err != nil {
		panic(err)
	}
	tools := []toolgrammar.Tool{
		{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string","description":"City","minLength":1},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer","minimum":1,"maximum":7},"when":{"type":"string","format":"date-time"},"anything":{"description":"untyped"},"maybe":{"type":["string","null"]}},"required":["location"],"additionalProperties":false}`)},
		{Name: "get_time"},
		{Name: "plan", Parameters: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"array","items":{"$ref":"#/$defs/step"},"minItems":1}},"required":["steps"],"$defs":{"step":{"type":"object","properties":{"do":{"type":"string"},"then":{"$ref":"#/definitions/next"}}}},"definitions":{"next":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`)},
		{Name: "tree", Parameters: json.RawMessage(`{"type":"object","properties":{"value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#"}}}}`)},
		{Name: "exec_command", Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"},"workdir":{"type":"string"},"yield_time_ms":{"type":"number"},"sandbox_permissions":{"type":"string","enum":["use_default","require_escalated"]},"prefix_rule":{"type":"array","items":{"type":"string"}}},"required":["cmd"],"additionalProperties":false}`)},
	}
	fail := 0
	check := func(what string, schema []byte, err error) {
		if err != nil {
			fmt.Printf("%-40s ERROR %v\n", what, err)
			fail++
			return
		}
		g := llama.SchemaToGrammar(schema)
		if g == nil {
			fmt.Printf("%-40s REJECTED %s\n", what, schema)
			fail++
			return
		}
		root := ""
		for _, l := range strings.Split(string(g), "\n") {
			if strings.HasPrefix(l, "root ::=") {
				root = l
			}
		}
		if len(root) > 110 {
			root = root[:110] + "..."
		}
		fmt.Printf("%-40s ok %5d bytes  %s\n", what, len(g), root)
	}
	for _, f := range reg.Formats() {
		if f.Plan() == toolgrammar.PlanCall {
			s, err := toolgrammar.CallSchema(f, tools, true)
			check(f.ID+" CallSchema", s, err)
		}
	}
	s, err := toolgrammar.NameSchema(tools)
	check("NameSchema", s, err)
	for _, t := range tools {
		s, err := toolgrammar.ArgumentsSchema(t)
		check("ArgumentsSchema "+t.Name, s, err)
	}
	if fail > 0 {
		os.Exit(1)
	}
}

type ev struct {
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Name   string `json:"name"`
	Index  int    `json:"index"`
	Offset int    `json:"offset"`
}

// evsUntil keeps the golden events of output cut at n bytes: decision
// points carry offsets, deltas before them belong to them.
func evsUntil(evs []ev, n int) []ev {
	var out []ev
	for _, e := range evs {
		if e.Kind != "text" && e.Kind != "reasoning" && e.Kind != "arguments" && e.Offset > n {
			break
		}
		out = append(out, e)
	}
	return out
}

type result struct {
	content, thinking string
	calls             []string
}

func (r result) String() string {
	return fmt.Sprintf("content=%q thinking=%q calls=%v", r.content, r.thinking, r.calls)
}

func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

func canon(name, args string) string {
	var v any
	_ = json.Unmarshal([]byte(args), &v)
	b, _ := json.Marshal(v)
	return name + string(b)
}

var toolsJSON = []string{
	`{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},"required":["location"]}}`,
	`{"name":"search","parameters":{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"filters":{"type":"object"},"exact":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}}},"required":["query"]}}`,
	`{"name":"write_file","parameters":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}}`,
	`{"name":"get_time","parameters":{"type":"object","properties":{}}}`,
}

func baseline(dir string) {
	var tools []api.Tool
	for _, s := range toolsJSON {
		var f api.ToolFunction
		if err := json.Unmarshal([]byte(s), &f); err != nil {
			panic(err)
		}
		tools = append(tools, api.Tool{Type: "function", Function: f})
	}
	byFormat := map[string]string{"qwen3": "qwen3-thinking", "qwq": "qwen3-thinking", "qwen3-coder": "qwen3-coder", "glm4-moe": "glm-4.7", "deepseek": "deepseek3", "mistral-v11": "ministral", "gpt-oss": "harmony",
		"functiongemma": "functiongemma", "olmo3": "olmo3",
		// gemma4, lfm2 and lfm2-thinking (like laguna, nemotron-3-nano and qwen3.5) are
		// compared with v0.32.15's parsers, whose renderers hearth takes: ../ollamacheck32.
		// Families of Ollama v0.32.15 whose parsers v0.24.0 has under another name (or the
		// same: Qwen 3.8's models name qwen3.5's); poolside-v1's LagunaV8Parser is not in
		// v0.24.0 (its laguna parser does not start in reasoning), so it is not compared.
		"qwen3.8": "qwen3.5", "ornith": "qwen3.5", "nemotron-3.5-nano": "nemotron-3-nano"}
	agree, total := 0, 0
	for format, pname := range byFormat {
		files, _ := filepath.Glob(filepath.Join(dir, format, "*.txt"))
		for _, f := range files {
			in, _ := os.ReadFile(f)
			gold, _ := os.ReadFile(strings.TrimSuffix(f, ".txt") + ".golden.json")
			var evs []ev
			_ = json.Unmarshal(gold, &evs)
			var ours result
			for _, e := range evs {
				switch e.Kind {
				case "text":
					ours.content += e.Text
				case "reasoning":
					ours.thinking += e.Text
				case "call_end":
					ours.calls = append(ours.calls, canon(e.Name, e.Text))
				}
			}
			var theirs result
			errText := ""
			func() {
				defer func() {
					if r := recover(); r != nil {
						errText = fmt.Sprint("panic: ", r)
					}
				}()
				p := parsers.ParserForName(pname)
				// Thinking as the fixture assumes: the prompt opened it, or
				// (Qwen) the model opens it itself.
				think := &api.ThinkValue{Value: strings.Contains(f, "prompt-think") || format == "qwen3" || format == "qwq" || format == "gemma4" || strings.Contains(f, "prompt-think")}
				p.Init(tools, nil, think)
				s := string(in)
				if format == "gpt-oss" {
					// <|call|> and <|return|> are stop tokens: the runtime
					// ends the generation there and never passes them on.
					for _, stop := range []string{"<|call|>", "<|return|>"} {
						if i := strings.Index(s, stop); i >= 0 {
							s = s[:i]
						}
					}
					ours = result{}
					evs = evsUntil(evs, len(s))
					for _, e := range evs {
						switch e.Kind {
						case "text":
							ours.content += e.Text
						case "reasoning":
							ours.thinking += e.Text
						case "call_end":
							ours.calls = append(ours.calls, canon(e.Name, e.Text))
						}
					}
				}
				for i := 0; i < len(s); i += 3 {
					j := min(i+3, len(s))
					c, th, calls, err := p.Add(s[i:j], j == len(s))
					if err != nil {
						errText = err.Error()
						return
					}
					theirs.content += c
					theirs.thinking += th
					for _, tc := range calls {
						b, _ := json.Marshal(tc.Function.Arguments)
						theirs.calls = append(theirs.calls, canon(tc.Function.Name, string(b)))
					}
				}
			}()
			total++
			same := errText == "" && norm(ours.content) == norm(theirs.content) && norm(ours.thinking) == norm(theirs.thinking) && reflect.DeepEqual(ours.calls, theirs.calls)
			if same {
				agree++
				continue
			}
			fmt.Printf("%s/%s (ollama %s)\n  hearth: %v\n  ollama: %v %s\n", format, filepath.Base(f), pname, ours, theirs, errText)
		}
	}
	fmt.Printf("\nagree on %d of %d fixtures (content and reasoning compared modulo whitespace, calls by name and arguments)\n", agree, total)
}
