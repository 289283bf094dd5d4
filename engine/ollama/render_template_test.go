package ollama

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"hearth/engine"
	"hearth/scriptmodel"
	"hearth/toolgrammar"
)

// TestTemplateSources: which template renders a model, one case per rule.
func TestTemplateSources(t *testing.T) {
	const jinja = "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
	gguf := map[string]any{chatTemplateKey: jinja, bosTextKey: "<s>", eosTextKey: "</s>"}
	for _, c := range []struct {
		name string
		show api.ShowResponse
		want []string
	}{
		// a. The GGUF's template first, whatever else the model has.
		{"gguf over Modelfile template", api.ShowResponse{Template: "{{ .Prompt }}", ModelInfo: gguf},
			[]string{"gguf", "Modelfile template"}},
		{"gguf over renderer", api.ShowResponse{Renderer: "ornith", ModelInfo: gguf},
			[]string{"gguf", "models.json:ornith", "module renderer ornith"}},
		// b. A renderer model without one: its models.json format's template, then the
		// renderer itself.
		{"renderer with a format", api.ShowResponse{Renderer: "qwen3.8", Parser: "qwen3.5"},
			[]string{"models.json:qwen3.8", "module renderer qwen3.8"}},
		{"renderer from the Modelfile", api.ShowResponse{Modelfile: "FROM x\nRENDERER cohere\nPARSER cohere\n"},
			[]string{"models.json:cohere", "module renderer cohere"}},
		// A renderer of the module that hearth does not render as a template.
		{"module renderer", api.ShowResponse{Renderer: "qwen3-coder", Parser: "qwen3-coder"},
			[]string{"module renderer qwen3-coder"}},
		// c. Neither: the module's renderer, or the Modelfile's Go template.
		{"unknown renderer", api.ShowResponse{Renderer: "my-renderer"}, []string{"module renderer my-renderer"}},
		{"Modelfile template", api.ShowResponse{Template: "{{ .Prompt }}"}, []string{"Modelfile template"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sources, err := TemplateSources(&c.show)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range sources {
				got = append(got, s.String())
			}
			if strings.Join(got, " | ") != strings.Join(c.want, " | ") {
				t.Fatalf("sources %q, want %q", got, c.want)
			}
			if sources[0].Kind == SourceGGUF && (sources[0].Text != jinja || sources[0].BOS != "<s>" || sources[0].EOS != "</s>") {
				t.Errorf("gguf source %+v", sources[0])
			}
		})
	}
}

// TestTemplateFallback: a template that does not compile, or raises on the conversation,
// gives way to the next source with one warning line (not one per request); only when
// no source renders does the render fail.
func TestTemplateFallback(t *testing.T) {
	var logs bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	defer slog.SetDefault(old)
	conv := &engine.Conversation{Messages: []engine.Message{{Role: "user", Content: "Hi"}}}
	for _, c := range []struct {
		name, jinja string
	}{
		{"does not compile", "{% for m in messages %}{{ m.content }"},
		{"raises", "{{ raise_exception('no ' + messages[0].role + ' here') }}"},
	} {
		logs.Reset()
		show := &api.ShowResponse{Template: "{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}",
			ModelInfo: map[string]any{chatTemplateKey: c.jinja}}
		for range 3 {
			got, err := RenderPrompt(show, conv, nil)
			if err != nil || got != "<user>Hi" {
				t.Fatalf("%s: %q, %v; want the Modelfile template's prompt", c.name, got, err)
			}
		}
		if n := strings.Count(logs.String(), "chat template: rendering with the next source"); n != 1 {
			t.Errorf("%s: %d warnings, want 1:\n%s", c.name, n, logs.String())
		}
	}
	// The last source failing is the render's error.
	show := &api.ShowResponse{Renderer: "no-such-renderer", ModelInfo: map[string]any{chatTemplateKey: "{{ raise_exception('refused') }}"}}
	if _, err := RenderPrompt(show, conv, nil); err == nil {
		t.Fatal("no source renders, yet no error")
	}
}

// TestJinjaRendersGGUFTemplate: a model whose GGUF carries a template renders from it,
// with the tokenizer's BOS text, the think value and the calls' arguments as objects.
func TestJinjaRendersGGUFTemplate(t *testing.T) {
	tmpl := "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content }}" +
		"{% for c in m.tool_calls or [] %}{{ c.function.name }}{{ c.function.arguments | tojson }}{{ c.function.arguments.city }}{% endfor %}" +
		"{% if m.reasoning_content %}({{ m.reasoning_content }}){% endif %}{% endfor %}" +
		"{% if add_generation_prompt %}<assistant>{% if enable_thinking is defined %}think={{ enable_thinking }}{% endif %}{% if reasoning_effort is defined %}/{{ reasoning_effort }}{% endif %}{% endif %}"
	show := &api.ShowResponse{Capabilities: []model.Capability{model.CapabilityCompletion, model.CapabilityThinking}, ModelInfo: map[string]any{chatTemplateKey: tmpl, bosTextKey: "<s>"}}
	conv := &engine.Conversation{Messages: []engine.Message{
		{Role: "user", Content: "Weather?"},
		{Role: "assistant", Thinking: "use the tool", ToolCalls: []engine.ToolCall{{Name: "get_weather", Arguments: json.RawMessage(`{"city":"Lyon","days":2}`)}}},
		{Role: "tool", Content: "sunny", ToolName: "get_weather"},
	}}
	got, err := RenderPrompt(show, conv, &api.ThinkValue{Value: "low"})
	if err != nil {
		t.Fatal(err)
	}
	want := `<s><user>Weather?<assistant>get_weather{"city": "Lyon", "days": 2}Lyon(use the tool)<tool>sunny<assistant>think=True/low`
	if got != want {
		t.Fatalf("prompt\n got %q\nwant %q", got, want)
	}
}

// TestReadGGUFChat: the chat template and BOS/EOS texts come from the model's GGUF,
// found through its manifest in the models directory; cached by manifest digest.
func TestReadGGUFChat(t *testing.T) {
	dir := t.TempDir()
	const tmpl = "{% for m in messages %}{{ m.content }}{% endfor %}"
	m, err := scriptmodel.Build(scriptmodel.Spec{Template: "{{ .Prompt }}", ChatTemplate: tmpl, BOS: "<|bos-x|>",
		Scripts: []scriptmodel.Script{{Entry: "<go>", Text: "ok"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(dir, "gguf")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.WriteGGUF(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	raw, _ := os.ReadFile(f.Name())
	sum := sha256.Sum256(raw)
	blob := "sha256:" + hex.EncodeToString(sum[:])
	if err := os.Rename(f.Name(), filepath.Join(dir, "blobs", "sha256-"+hex.EncodeToString(sum[:]))); err != nil {
		t.Fatal(err)
	}
	manifest := `{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"` + blob + `","size":1}]}`
	mdir := filepath.Join(dir, "manifests", "registry.ollama.ai", "library", "chatty")
	if err := os.MkdirAll(mdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mdir, "latest"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := readGGUFChat(dir, "chatty")
	if err != nil {
		t.Fatal(err)
	}
	msum := sha256.Sum256([]byte(manifest))
	if c.Template != tmpl || c.BOS != "<|bos-x|>" || c.EOS != scriptmodel.EOS || c.Digest != hex.EncodeToString(msum[:]) {
		t.Fatalf("read %+v", c)
	}
	if _, err := readGGUFChat(dir, "absent"); !os.IsNotExist(err) {
		t.Fatalf("a model the directory lacks: %v", err)
	}
}

// TestJinjaImagesTagged: a Jinja template sees each image as an [img-N] tag in its
// message's text, N counting across the prompt (replacing an "[img]" placeholder where
// the text has one), which is where the runtime puts the image; the caller's messages
// are not changed.
func TestJinjaImagesTagged(t *testing.T) {
	show := &api.ShowResponse{ModelInfo: map[string]any{chatTemplateKey: "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"}}
	conv := &engine.Conversation{Messages: []engine.Message{
		{Role: "user", Content: "What is this?", Images: [][]byte{[]byte("a")}},
		{Role: "assistant", Content: "A cat."},
		{Role: "user", Content: "And [img] versus this?", Images: [][]byte{[]byte("b"), []byte("c")}},
	}}
	got, err := RenderPrompt(show, conv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<user>[img-0]What is this?<assistant>A cat.<user>[img-2]And [img-1] versus this?"; got != want {
		t.Fatalf("prompt\n got %q\nwant %q", got, want)
	}
	if conv.Messages[0].Content != "What is this?" {
		t.Fatalf("the conversation was changed: %q", conv.Messages[0].Content)
	}
}

// TestReplacedRenderersFromModelsJSON: the renderer names rendered from templates come
// from models.json alone (a new family adds no Go), and a format marked
// replaces_renderer without a template or a renderer name is refused at start.
func TestReplacedRenderersFromModelsJSON(t *testing.T) {
	names, err := replacedRenderers(builtinFormats().Formats())
	if err != nil {
		t.Fatal(err)
	}
	// This year's families: names Ollama v0.24.0 lacks, and names it renders otherwise
	// than the families' chat templates.
	want := []string{"qwen3.5", "qwen3.8", "ornith", "nemotron-3-nano", "nemotron-3.5-nano", "laguna", "poolside-v1",
		"gemma4", "gemma4-small", "gemma4-large", "lfm2", "lfm2-thinking", "glimmer", "cohere"}
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("replaced renderers %v, want %v", names, want)
	}
	for _, f := range []*toolgrammar.Format{
		{ID: "no-template", ReplacesRenderer: true, Match: toolgrammar.MatchRules{Renderers: []string{"x"}}},
		{ID: "no-name", ReplacesRenderer: true, Template: "qwen3.jinja"},
		{ID: "missing-template", ReplacesRenderer: true, Template: "nope.jinja", Match: toolgrammar.MatchRules{Renderers: []string{"x"}}},
	} {
		if _, err := replacedRenderers([]*toolgrammar.Format{f}); err == nil || !strings.Contains(err.Error(), f.ID) {
			t.Errorf("%s: err %v, want one naming the format", f.ID, err)
		}
	}
}
