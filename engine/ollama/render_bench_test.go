package ollama

import (
	"fmt"
	"os"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth"
	"hearth/engine"
	"hearth/scriptmodel"
)

// BenchmarkRenderPrompt: one render of a long agent conversation (Codex's first
// request, its tools and instructions, after 40 turns of a call and its output), what
// every turn of an agent loop pays once (and again per truncation step), with the
// script template and the qwen3 template.
//
//	go test ./engine/ollama -run '^$' -bench RenderPrompt -benchmem
func BenchmarkRenderPrompt(b *testing.B) {
	raw, err := os.ReadFile("../../testdata/codex_request.json")
	if err != nil {
		b.Fatal(err)
	}
	req, _, err := hearth.DecodeCreateRequest(raw)
	if err != nil {
		b.Fatal(err)
	}
	var history []hearth.Item
	for i := range 40 {
		id := fmt.Sprintf("call_%d", i)
		history = append(history, itUser(fmt.Sprintf("Step %d: run the tests", i)), itReasoning("I should run the command."),
			itCall(id, "exec_command", `{"cmd":"go test ./...","workdir":"/tmp/x","yield_time_ms":1000}`),
			itOutput(id, "ok  \thearth/engine\t1.2s\nPASS"), itAssistant("The tests pass."))
	}
	for _, tc := range []struct{ name, tmpl string }{{"script", scriptmodel.Template}, {"qwen3", qwen3ParityTemplate}} {
		b.Run(tc.name, func(b *testing.B) {
			show := &api.ShowResponse{Template: tc.tmpl}
			conv, err := engine.BuildConversation(req.Instructions, history, req.Input, req.Tools, NewRenderer(show))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for range b.N {
				if _, err := RenderPrompt(show, conv, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
