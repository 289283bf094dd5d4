package ollama

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth"
	"hearth/engine"
)

// TestToolSchemasAsOllamaShowsThem: a function tool's schema reaches the template as
// Ollama's tool type holds it (other keywords dropped, an object without properties
// when there is none), and a schema that type cannot hold is a 400 naming the tool.
func TestToolSchemasAsOllamaShowsThem(t *testing.T) {
	r := NewRenderer(&api.ShowResponse{Template: "{{ .Prompt }}"})
	tools := []hearth.Tool{
		testFunctionTool("exec_command", `{"type":"object","properties":{"cmd":{"type":"string","description":"Command"},"tty":{"type":"boolean"}},"required":["cmd"],"additionalProperties":false}`),
		{Type: hearth.ToolFunction, Name: "no_params"},
	}
	conv, err := engine.BuildConversation("", nil, []hearth.Item{itUser("go")}, tools, r)
	if err != nil {
		t.Fatal(err)
	}
	// The schema as the template will print it.
	exec, _ := json.Marshal(conv.Tools[0])
	if want := `{"name":"exec_command","description":"exec_command does things","parameters":{"type":"object","required":["cmd"],"properties":{"cmd":{"type":"string","description":"Command"},"tty":{"type":"boolean"}}}}`; string(exec) != want {
		t.Errorf("exec_command:\n%s\nwant\n%s", exec, want)
	}
	// A nested object keeps its required list (Ollama's property type has it since
	// v0.24.0; v0.17.4 dropped it); its other keywords are dropped as at the top.
	nested, err := engine.BuildConversation("", nil, []hearth.Item{itUser("go")},
		[]hearth.Tool{testFunctionTool("move", `{"type":"object","properties":{"to":{"type":"object","properties":{"x":{"type":"integer","minimum":0},"y":{"type":"integer"}},"required":["x"],"additionalProperties":false}},"required":["to"]}`)}, r)
	if err != nil {
		t.Fatal(err)
	}
	move, _ := json.Marshal(nested.Tools[0].Parameters)
	if want := `{"type":"object","required":["to"],"properties":{"to":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x"]}}}`; string(move) != want {
		t.Errorf("move parameters:\n%s\nwant\n%s", move, want)
	}
	noParams, _ := json.Marshal(conv.Tools[1].Parameters)
	if want := `{"type":"object","properties":{}}`; string(noParams) != want {
		t.Errorf("no_params parameters %s, want %s", noParams, want)
	}

	_, err = engine.BuildConversation("", nil, []hearth.Item{itUser("a")},
		[]hearth.Tool{testFunctionTool("ok", `{}`), testFunctionTool("f", `{"type":"object","properties":[]}`)}, r)
	var herr *hearth.Error
	if !errors.As(err, &herr) || herr.Status != 400 || herr.Param != "tools[1].parameters" || herr.Code != hearth.CodeInvalidValue ||
		!strings.Contains(herr.Message, "not a JSON Schema the model's template can show") {
		t.Errorf("bad schema: %v, want a 400 at tools[1].parameters", err)
	}
}

// TestRenderPromptLeavesConversation: the template layer merges consecutive
// messages in place and image tags rewrite content; none of that may leak
// into the caller's conversation, which is rendered again next turn.
func TestRenderPromptLeavesConversation(t *testing.T) {
	conv, err := engine.BuildConversation("sys", nil, []hearth.Item{
		itDeveloper("dev"),
		itMsg(hearth.RoleUser, itPart(hearth.PartInputText, "see [img]"), hearth.ContentPart{Type: hearth.PartInputImage, ImageURL: testDataURL(testPNG(t, 1))}),
		itUser("again"),
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(conv.Messages)
	show := &api.ShowResponse{Template: "{{ range .Messages }}[{{ .Role }}: {{ .Content }}]{{ end }}"}
	first, err := RenderPrompt(show, conv, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := RenderPrompt(show, conv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "[system: sys\n\ndev][user: see [img-0]\n\nagain]"; first != want || second != want {
		t.Errorf("renders %q then %q, want %q", first, second, want)
	}
	if after, _ := json.Marshal(conv.Messages); string(after) != string(before) {
		t.Errorf("conversation changed:\n%s\nwas\n%s", after, before)
	}
}

// TestRenderPromptQwen3CutsOldThinkTags: the runtime strips <think> blocks
// from assistant content before the last user message of qwen3-family
// models (server.filterThinkTags); the parity models cannot be of that
// family, so this checks it directly.
func TestRenderPromptQwen3CutsOldThinkTags(t *testing.T) {
	conv, err := engine.BuildConversation("", nil, []hearth.Item{
		itUser("a"), itAssistant("<think>old</think>visible"), itUser("b"), itAssistant("<think>new</think>kept"),
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	show := &api.ShowResponse{Template: "{{ range .Messages }}[{{ .Role }}: {{ .Content }}]{{ end }}"}
	for family, want := range map[string]string{
		"qwen3": "[user: a][assistant: visible][user: b][assistant: <think>new</think>kept]",
		"llama": "[user: a][assistant: <think>old</think>visible][user: b][assistant: <think>new</think>kept]",
	} {
		show.Details.Family = family
		got, err := RenderPrompt(show, conv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: %q, want %q", family, got, want)
		}
	}
}
