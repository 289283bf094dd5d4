// Command ollamacheck32 compares toolgrammar's fixtures of the formats taken from Ollama
// v0.32.15 (renderers the embedded module, v0.24.0, lacks, and those v0.32.15 corrected)
// with what v0.32.15's own
// parsers read from the same text, fed 3 bytes at a time: content and reasoning modulo
// whitespace, calls by name and arguments. It is a module of its own, because hearth
// requires v0.24.0 of the same module:
//
//	cd toolgrammar/testdata/ollamacheck32 && go run . ../fixtures
//
// ../ollamacheck does the same for the formats of v0.24.0's parsers.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/parsers"
)

type ev struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
	Name string `json:"name"`
}

func canon(name, args string) string {
	var v any
	_ = json.Unmarshal([]byte(args), &v)
	b, _ := json.Marshal(v)
	return name + string(b)
}

func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

func main() {
	dir := os.Args[1]
	var tools []api.Tool
	for _, s := range []string{
		`{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},"required":["location"]}}`,
		`{"name":"search","parameters":{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"filters":{"type":"object"},"exact":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}}},"required":["query"]}}`,
		`{"name":"write_file","parameters":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}}`,
		`{"name":"get_time","parameters":{"type":"object","properties":{}}}`,
	} {
		var f api.ToolFunction
		if err := json.Unmarshal([]byte(s), &f); err != nil {
			panic(err)
		}
		tools = append(tools, api.Tool{Type: "function", Function: f})
	}
	agree, total := 0, 0
	// The fixture directories (format ids of models.json) whose v0.32.15 parser, of the
	// same name, is read beside them: the renderers v0.24.0 lacks, and those whose
	// renderer hearth renders from its template instead of v0.24.0's (render_register.go).
	for _, format := range []string{"cohere", "glimmer", "laguna", "lfm2", "lfm2-thinking", "gemma4", "nemotron-3-nano", "qwen3.5"} {
		files, _ := filepath.Glob(filepath.Join(dir, format, "*.txt"))
		for _, f := range files {
			in, _ := os.ReadFile(f)
			gold, _ := os.ReadFile(strings.TrimSuffix(f, ".txt") + ".golden.json")
			var evs []ev
			_ = json.Unmarshal(gold, &evs)
			var oc, ot string
			var ocalls []string
			for _, e := range evs {
				switch e.Kind {
				case "text":
					oc += e.Text
				case "reasoning":
					ot += e.Text
				case "call_end":
					ocalls = append(ocalls, canon(e.Name, e.Text))
				}
			}
			p := parsers.ParserForName(format)
			// Thinking as the fixture assumes: the prompt opened it, or the family is
			// asked to reason (the model opens it itself, or not: lfm2-thinking).
			think := &api.ThinkValue{Value: format == "glimmer" || format == "gemma4" || format == "lfm2-thinking" || strings.Contains(f, "prompt-think")}
			p.Init(tools, nil, think)
			s := string(in)
			var tc, tt, errText string
			var tcalls []string
			for i := 0; i < len(s); i += 3 {
				j := min(i+3, len(s))
				c, th, calls, err := p.Add(s[i:j], j == len(s))
				if err != nil {
					errText = err.Error()
					break
				}
				tc += c
				tt += th
				for _, call := range calls {
					b, _ := json.Marshal(call.Function.Arguments)
					tcalls = append(tcalls, canon(call.Function.Name, string(b)))
				}
			}
			total++
			if errText == "" && norm(oc) == norm(tc) && norm(ot) == norm(tt) && reflect.DeepEqual(ocalls, tcalls) {
				agree++
				continue
			}
			fmt.Printf("%s/%s\n  hearth: content %q thinking %q calls %v\n  ollama: content %q thinking %q calls %v %s\n", format, filepath.Base(f), oc, ot, ocalls, tc, tt, tcalls, errText)
		}
	}
	fmt.Printf("\nagree on %d of %d fixtures\n", agree, total)
}
