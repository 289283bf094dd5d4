package ollama

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	modeltypes "github.com/ollama/ollama/types/model"

	"hearth"
	"hearth/engine"
	"hearth/engine/chattemplate"
	"hearth/scriptmodel"
)

// renderFamily is one way the runtime renders prompts: a template, or a built-in
// renderer (with its output parser, which may rewrite the tools).
type renderFamily struct {
	name string
	show api.ShowResponse
	// incremental: the family's prompts must actually be spliced (the test fails if
	// every render was whole), for the templates hearth's own models use.
	incremental bool
}

var (
	capsPlain    = []modeltypes.Capability{modeltypes.CapabilityCompletion, modeltypes.CapabilityTools}
	capsThinking = []modeltypes.Capability{modeltypes.CapabilityCompletion, modeltypes.CapabilityTools, modeltypes.CapabilityThinking}
)

// renderFamilies: the script models' templates, the parity templates, every template
// Ollama ships (its template directory) and every built-in renderer.
func renderFamilies(t *testing.T) []renderFamily {
	fams := []renderFamily{
		{name: "script", show: api.ShowResponse{Template: scriptmodel.Template, Capabilities: capsThinking}, incremental: true},
		{name: "script-steps", show: api.ShowResponse{Template: scriptmodel.StepsTemplate, Capabilities: capsThinking}, incremental: true},
		{name: "script-system-messages", show: api.ShowResponse{Template: scriptmodel.Template, Capabilities: capsPlain,
			System: "You are a script model.", Messages: []api.Message{{Role: "user", Content: "Example?"}, {Role: "assistant", Content: "Example!"}}}, incremental: true},
		{name: "script-harmony", show: api.ShowResponse{Template: scriptmodel.Template, Capabilities: capsPlain,
			Modelfile: "FROM x\nPARSER harmony\n"}},
		{name: "qwen3", show: api.ShowResponse{Template: qwen3ParityTemplate, Capabilities: capsThinking,
			Details: api.ModelDetails{Family: "qwen3"}}, incremental: true},
		{name: "llama31", show: api.ShowResponse{Template: llama31ParityTemplate, Capabilities: capsPlain}, incremental: true},
		{name: "legacy", show: api.ShowResponse{Template: legacyParityTemplate, Capabilities: capsPlain}},
	}
	// qwen3's template as a GGUF carries it, in Jinja: it drops the reasoning of the
	// turns before the last user message, so its prompts splice from that message.
	qwen3Jinja, ok := chattemplate.Builtin("qwen3.jinja")
	if !ok {
		t.Fatal("no built-in qwen3.jinja")
	}
	fams = append(fams, renderFamily{name: "qwen3-jinja", show: api.ShowResponse{ModelInfo: map[string]any{chatTemplateKey: qwen3Jinja},
		Capabilities: capsThinking}, incremental: true})
	for _, r := range []string{"qwen3-coder", "qwen3-vl-instruct", "qwen3-vl-thinking", "qwen3.5", "cogito", "deepseek3.1",
		"olmo3", "olmo3.1", "olmo3-think", "olmo3-32b-think", "nemotron-3-nano", "functiongemma", "glm-4.7", "lfm2", "lfm2-thinking",
		"gemma4", "gemma4-small", "gemma4-large", "laguna"} {
		fams = append(fams, renderFamily{name: "renderer-" + r, show: api.ShowResponse{Renderer: r, Capabilities: capsThinking}})
	}
	// Renderer names the module lacks, rendered by their family's Jinja template
	// (render_register.go).
	for _, r := range []string{"qwen3.8", "ornith", "nemotron-3.5-nano", "poolside-v1", "cohere", "glimmer"} {
		fams = append(fams, renderFamily{name: "renderer-" + r, show: api.ShowResponse{Renderer: r, Capabilities: capsThinking}})
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/ollama/ollama").Output()
	if err != nil {
		t.Fatalf("find the ollama module: %v", err)
	}
	files, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(out)), "template", "*.gotmpl"))
	if err != nil || len(files) < 20 {
		t.Fatalf("ollama's templates: %d files, %v", len(files), err)
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fams = append(fams, renderFamily{name: "ollama-" + strings.TrimSuffix(filepath.Base(f), ".gotmpl"),
			show: api.ShowResponse{Template: string(text), Capabilities: capsPlain}})
	}
	return fams
}

// randomTurn appends one turn to msgs: the client's input (a question, two, the
// results of the calls the model made, now and then a system message), and reports
// the model's output separately so the caller can render between them.
func randomTurn(r *rand.Rand, msgs []engine.Message, tools bool, turn int) (input, output []engine.Message) {
	var pending []engine.ToolCall
	if n := len(msgs); n > 0 {
		pending = msgs[n-1].ToolCalls
	}
	if len(pending) > 0 && r.IntN(5) > 0 {
		for _, c := range pending {
			input = append(input, engine.Message{Role: "tool", ToolName: c.Name, ToolCallID: c.ID, Content: fmt.Sprintf(`{"result":%d}`, turn)})
		}
	} else {
		if r.IntN(12) == 0 {
			input = append(input, engine.Message{Role: "system", Content: fmt.Sprintf("Now be brief (%d).", turn)})
		}
		input = append(input, engine.Message{Role: "user", Content: fmt.Sprintf("Question %d: what next?", turn)})
		if r.IntN(8) == 0 {
			input = append(input, engine.Message{Role: "user", Content: "And one more thing."})
		}
	}
	out := engine.Message{Role: "assistant"}
	if r.IntN(2) == 0 {
		out.Thinking = fmt.Sprintf("Let me think about %d.", turn)
	}
	switch k := r.IntN(6); {
	case tools && k < 3:
		for i := range 1 + r.IntN(2) {
			name := []string{"get_weather", "get_time"}[r.IntN(2)]
			out.ToolCalls = append(out.ToolCalls, engine.ToolCall{ID: fmt.Sprintf("call_%d_%d", turn, i), Index: i, Name: name,
				Arguments: []byte(fmt.Sprintf(`{"city":"Paris","n":%d}`, turn))})
		}
	case k == 3:
		out.Content = fmt.Sprintf("<think>Inline %d.</think>Answer %d.", turn, turn)
	default:
		out.Content = fmt.Sprintf("Answer %d.", turn)
	}
	return input, []engine.Message{out}
}

var testTools = []engine.Tool{
	{Name: "get_weather", Description: "Weather of a city", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer"}},"required":["city"]}`)},
	{Name: "get_time", Description: "Local time", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
}

// TestIncrementalRenderEqualsWhole: over long chains (calls and their results,
// reasoning, think tags, late system messages, consecutive user messages), every prompt
// the renderer returns, spliced or not, from the keys the previous turn's render kept
// or not, equals RenderPrompt's whole render byte for byte, for every family and think
// value; and the families hearth's models use are really spliced.
func TestIncrementalRenderEqualsWhole(t *testing.T) {
	turns := 40
	if testing.Short() {
		turns = 15
	}
	for _, fam := range renderFamilies(t) {
		t.Run(fam.name, func(t *testing.T) {
			thinks := []*api.ThinkValue{nil}
			if fam.show.Capabilities[len(fam.show.Capabilities)-1] == modeltypes.CapabilityThinking {
				thinks = append(thinks, &api.ThinkValue{Value: false}, &api.ThinkValue{Value: "high"})
			}
			spliced := 0
			var modesSeen []spliceMode
			for ti, think := range thinks {
				for chain := range 4 {
					withTools := chain%2 == 0
					show := fam.show
					r := NewRenderer(&show)
					rng := rand.New(rand.NewPCG(uint64(ti), uint64(7+chain/2)))
					var msgs []engine.Message
					if rng.IntN(2) == 0 || !withTools {
						msgs = append(msgs, engine.Message{Role: "system", Content: "You are helpful."})
					}
					if chain >= 2 {
						// Codex's start: several user messages before the task.
						msgs = append(msgs, engine.Message{Role: "user", Content: "AGENTS.md says: be careful."},
							engine.Message{Role: "user", Content: "<environment_context>cwd=/x</environment_context>"})
					}
					var tools []engine.Tool
					if withTools {
						tools = testTools
					}
					var et *engine.Think
					if think != nil {
						et = &engine.Think{Value: think.Value}
					}
					var prior any
					for turn := range turns {
						in, out := randomTurn(rng, msgs, withTools, turn)
						msgs = append(msgs, in...)
						// As the engine hands a turn over (engine/memo.go): the
						// messages copied, their strings the same, with what the last
						// render kept; now and then the last question changed in place
						// (a thinking switch), which the kept keys must not cover.
						conv := &engine.Conversation{Messages: slices.Clone(msgs), Tools: tools, Prior: prior, Stable: len(msgs)}
						if rng.IntN(4) == 0 {
							for i := len(conv.Messages) - 1; i >= 0; i-- {
								if conv.Messages[i].Role == "user" {
									conv.Messages[i].Content += " /no_think"
									break
								}
							}
						}
						before := ReadPromptCacheStats().Incremental
						got, err := r.RenderPrompt(conv, et)
						if err != nil {
							t.Skipf("the family does not render this conversation: %v", err)
						}
						if ReadPromptCacheStats().Incremental > before {
							spliced++
						}
						prior = conv.Rendered
						want, err := RenderPrompt(&show, &engine.Conversation{Messages: conv.Messages, Tools: tools}, think)
						if err != nil {
							t.Fatal(err)
						}
						if got != want {
							n := sharedPrefixLen(got, want)
							t.Fatalf("think %v tools %v turn %d: spliced prompt differs after %q\n--- got\n%s\n--- want\n%s",
								think, withTools, turn, tail(got[:n], 80), head(got[n:], 200), head(want[n:], 200))
						}
						msgs = append(msgs, out...)
					}
					modesSeen = append(modesSeen, detectMode(&show, think, withTools))
				}
			}
			t.Logf("%s: %d prompts spliced; splice modes %v (0 whole, 1 window, 2 to the last answer, 3 to the last question)", fam.name, spliced, modesSeen)
			if fam.incremental && spliced == 0 {
				t.Errorf("no prompt was spliced: the family's template was found not incremental")
			}
		})
	}
}

// FuzzSpliceRender: for conversations of any shape the fuzzer finds, a splice the
// detected mode allows equals the whole render. Probes decide a template's mode from
// a few shapes; this looks for a shape they miss.
func FuzzSpliceRender(f *testing.F) {
	f.Add([]byte("ututacacaucututacauauaua"), uint8(0))
	f.Add([]byte("sutatttacaucuttauacatttsua"), uint8(1))
	f.Add([]byte("uaaauuuccctttacaccuauaucucu"), uint8(2))
	shows := []*api.ShowResponse{
		{Template: scriptmodel.Template, Capabilities: capsThinking},
		{Template: qwen3ParityTemplate, Capabilities: capsThinking, Details: api.ModelDetails{Family: "qwen3"}},
		{Template: llama31ParityTemplate, Capabilities: capsPlain},
		{Renderer: "qwen3-coder", Capabilities: capsPlain},
	}
	f.Fuzz(func(t *testing.T, shape []byte, which uint8) {
		if len(shape) > 60 {
			shape = shape[:60]
		}
		show := shows[int(which)%len(shows)]
		var msgs []engine.Message
		for i, c := range shape {
			m := engine.Message{Content: fmt.Sprintf("m%d", i)}
			switch c % 7 {
			case 0, 1:
				m.Role = "user"
			case 2:
				m.Role, m.Thinking = "assistant", fmt.Sprintf("t%d", i)
			case 3:
				m.Role, m.Content = "assistant", fmt.Sprintf("<think>x%d</think>y", i)
			case 4:
				m.Role, m.Content = "assistant", ""
				m.ToolCalls = []engine.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "get_weather", Arguments: []byte(`{"city":"x"}`)}}
			case 5:
				m.Role, m.ToolName, m.ToolCallID = "tool", "get_weather", fmt.Sprintf("c%d", i-1)
			case 6:
				m.Role = "system"
			}
			msgs = append(msgs, m)
		}
		mode := detectMode(show, nil, true)
		if mode == modeWhole {
			return
		}
		whole := func(n int) string {
			p, err := RenderPrompt(show, &engine.Conversation{Messages: msgs[:n], Tools: testTools}, nil)
			if err != nil {
				t.Skip(err)
			}
			return p
		}
		for p := minSplicePrefix; p < len(msgs); p += 3 {
			prev := whole(p)
			for _, m := range []int{p + 1, p + 2, len(msgs)} {
				if m > len(msgs) {
					continue
				}
				got, ok, err := splice(show, nil, testTools, msgs[:m], p, prev, mode)
				if err != nil {
					t.Fatal(err)
				}
				if want := whole(m); ok && got != want {
					n := sharedPrefixLen(got, want)
					t.Fatalf("prefix %d of %d: splice differs after %q\n--- got\n%s\n--- want\n%s", p, m, tail(got[:n], 80), head(got[n:], 200), head(want[n:], 200))
				}
			}
		}
	})
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// TestIncrementalRenderCodexChain: Codex's own request (its instructions, developer
// and user messages and tools) continued as an agent loop, through BuildConversation as
// the engine builds it: every continuation is spliced, and equals the whole render.
func TestIncrementalRenderCodexChain(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/codex_request.json")
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := hearth.DecodeCreateRequest(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		show api.ShowResponse
	}{
		{"script", api.ShowResponse{Template: scriptmodel.Template, Capabilities: capsThinking}},
		{"qwen3", api.ShowResponse{Template: qwen3ParityTemplate, Capabilities: capsThinking, Details: api.ModelDetails{Family: "qwen3"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRenderer(&tc.show)
			history := slices.Clone(req.Input)
			var input []hearth.Item
			const turns = 12
			for i := range turns {
				conv, err := engine.BuildConversation(req.Instructions, history, input, req.Tools, r)
				if err != nil {
					t.Fatal(err)
				}
				before := ReadPromptCacheStats().Incremental
				got, err := r.RenderPrompt(conv, nil)
				if err != nil {
					t.Fatal(err)
				}
				// The first turns are too short to splice (the head alone is four
				// messages); from the fourth on, every turn is spliced.
				if spliced := ReadPromptCacheStats().Incremental > before; i >= 3 && !spliced {
					t.Errorf("turn %d (%d messages) rendered whole", i, len(conv.Messages))
				}
				whole, err := RenderPrompt(&tc.show, conv, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got != whole {
					n := sharedPrefixLen(got, whole)
					t.Fatalf("turn %d: differs after %q\n--- got\n%s\n--- want\n%s", i, tail(got[:n], 80), head(got[n:], 200), head(whole[n:], 200))
				}
				id := fmt.Sprintf("call_%d", i)
				history = append(append(history, input...), itReasoning("I should run the command."),
					itCall(id, "exec_command", `{"cmd":"go test ./...","workdir":"/tmp/x"}`))
				input = []hearth.Item{itOutput(id, "ok  \thearth/engine\t1.2s\nPASS")}
			}
		})
	}
}
