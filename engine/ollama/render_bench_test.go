package ollama

import (
	"fmt"
	"os"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth"
	"hearth/engine"
	"hearth/engine/chattemplate"
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

// BenchmarkRenderContinuation: the render of turn 1,000 of a chain whose previous
// turn's prompt was rendered (what the renderer pays for a continuation, spliced),
// and the same conversation rendered whole, with no tools and with Codex's tools, the
// script and qwen3 templates.
//
//	go test ./engine/ollama -run '^$' -bench RenderContinuation -benchmem
func BenchmarkRenderContinuation(b *testing.B) {
	raw, err := os.ReadFile("../../testdata/codex_request.json")
	if err != nil {
		b.Fatal(err)
	}
	req, _, err := hearth.DecodeCreateRequest(raw)
	if err != nil {
		b.Fatal(err)
	}
	var history []hearth.Item
	for i := range 1000 {
		history = append(history, itUser(fmt.Sprintf("Question %d: what route would you suggest through the south of France?", i)),
			itAssistant(fmt.Sprintf("Answer %d: go from Nice to Marseille along the coast, then inland to Avignon.", i)))
	}
	for _, tc := range benchShows() {
		for _, tools := range []bool{false, true} {
			name := tc.name
			reqTools := []hearth.Tool(nil)
			if tools {
				name, reqTools = name+"-codex-tools", req.Tools
			}
			b.Run(name, func(b *testing.B) {
				show := tc.show
				r := NewRenderer(show)
				parent, err := engine.BuildConversation("", history[:len(history)-1], nil, reqTools, r)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := r.RenderPrompt(parent, nil); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				n := 0
				for b.Loop() {
					// A new question every time, so that every render splices.
					b.StopTimer()
					n++
					input := []hearth.Item{itUser(fmt.Sprintf("Follow-up %d?", n))}
					conv, err := engine.BuildConversation("", history, input, reqTools, r)
					if err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					if _, err := r.RenderPrompt(conv, nil); err != nil {
						b.Fatal(err)
					}
				}
				if s := ReadPromptCacheStats(); s.Incremental == 0 {
					b.Fatalf("nothing spliced: %+v", s)
				}
			})
			// The same render whole, as every turn rendered before splicing.
			b.Run(name+"-whole", func(b *testing.B) {
				show := tc.show
				conv, err := engine.BuildConversation("", history, []hearth.Item{itUser("Follow-up?")}, reqTools, NewRenderer(show))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := RenderPrompt(show, conv, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			// After a restart: nothing kept in memory, and the prompt saved with the
			// chain's checkpoint 31 turns back (engine.SavedPrompt) to splice onto.
			b.Run(name+"-resumed", func(b *testing.B) {
				defer func(p *promptCache) { prompts = p }(prompts)
				show := tc.show
				r := NewRenderer(show)
				checkpoint, err := engine.BuildConversation("", history[:len(history)-62], nil, reqTools, r)
				if err != nil {
					b.Fatal(err)
				}
				p, err := r.RenderPrompt(checkpoint, nil)
				if err != nil {
					b.Fatal(err)
				}
				digest, _ := r.(engine.PromptDigester).PromptDigest(checkpoint, nil)
				saved := engine.SavedPrompt{Prompt: p, Messages: len(checkpoint.Messages), Digest: digest}
				conv, err := engine.BuildConversation("", history, []hearth.Item{itUser("Follow-up?")}, reqTools, r)
				if err != nil {
					b.Fatal(err)
				}
				conv.Resume = &saved
				b.ReportAllocs()
				for b.Loop() {
					b.StopTimer()
					prompts = newPromptCache(promptCacheBudget)
					b.StartTimer()
					if _, err := r.RenderPrompt(conv, nil); err != nil {
						b.Fatal(err)
					}
				}
				if s := ReadPromptCacheStats(); s.Resumed == 0 || s.Full != 0 {
					b.Fatalf("not resumed: %+v", s)
				}
			})
		}
	}
}

// benchShows are the models the render benchmarks render for: the script and qwen3 Go
// templates, and Jinja templates (qwen3's as a GGUF would carry it, qwen3.5's as its
// RENDERER names it).
func benchShows() []struct {
	name string
	show *api.ShowResponse
} {
	qwen3, _ := chattemplate.Builtin("qwen3.jinja")
	return []struct {
		name string
		show *api.ShowResponse
	}{
		{"script", &api.ShowResponse{Template: scriptmodel.Template}},
		{"qwen3", &api.ShowResponse{Template: qwen3ParityTemplate}},
		{"qwen3-jinja", &api.ShowResponse{ModelInfo: map[string]any{chatTemplateKey: qwen3}}},
		{"qwen3.5-jinja", &api.ShowResponse{Renderer: "qwen3.5", Parser: "qwen3.5"}},
	}
}

// BenchmarkCodexToolPrompt: how much of Codex's first prompt its tool list takes, the
// share that deferred tools (defer_loading, loaded by tool_search) could keep out of
// the prompt: the prompt's bytes with Codex's tools, with none, and with exec_command
// alone, under the script and qwen3 templates (a script model's tokens are about its
// bytes; a real tokenizer makes about a quarter as many).
//
//	go test ./engine/ollama -run '^$' -bench CodexToolPrompt
func BenchmarkCodexToolPrompt(b *testing.B) {
	raw, err := os.ReadFile("../../testdata/codex_request.json")
	if err != nil {
		b.Fatal(err)
	}
	req, _, err := hearth.DecodeCreateRequest(raw)
	if err != nil {
		b.Fatal(err)
	}
	var execOnly []hearth.Tool
	for _, t := range req.Tools {
		if t.Name == "exec_command" {
			execOnly = append(execOnly, t)
		}
	}
	for _, tc := range []struct{ name, tmpl string }{{"script", scriptmodel.Template}, {"qwen3", qwen3ParityTemplate}} {
		for _, set := range []struct {
			name  string
			tools []hearth.Tool
		}{{"all-tools", req.Tools}, {"exec-only", execOnly}, {"no-tools", nil}} {
			b.Run(tc.name+"-"+set.name, func(b *testing.B) {
				show := &api.ShowResponse{Template: tc.tmpl}
				conv, err := engine.BuildConversation(req.Instructions, nil, req.Input, set.tools, NewRenderer(show))
				if err != nil {
					b.Fatal(err)
				}
				var prompt string
				for range b.N {
					if prompt, err = RenderPrompt(show, conv, nil); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(prompt)), "prompt-bytes")
			})
		}
	}
}
