package main

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine/chattemplate"
	"hearth/scriptmodel"
)

// TestShowTemplateE2E: `hearth show MODEL` says which template renders each model of a
// running hearth, and --template prints it: the GGUF's own template, a RENDERER model's
// family template from models.json, the Modelfile's Go template, and the module's
// renderer for a name hearth does not render as a template.
func TestShowTemplateE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hearth")
	}
	dir := t.TempDir()
	h := startHearth(t, dir)
	// The CLI reads the models' GGUF files from the same models directory.
	t.Setenv("OLLAMA_MODELS", filepath.Join(dir, "models"))
	u, _ := url.Parse(h.base)
	client := api.NewClient(u, http.DefaultClient)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const published = "{%- for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}<|assistant|>"
	// Each model's own answer, so that no two GGUF files are the same blob.
	scripts := func(text string) []scriptmodel.Script {
		return []scriptmodel.Script{{Entry: "<|assistant|>", Text: text}}
	}
	plain := scriptmodel.Catalog()[scriptmodel.PlainModel]
	ornith, _ := chattemplate.Builtin("ornith.jinja")
	for _, c := range []struct {
		name     string
		spec     scriptmodel.Spec
		source   string
		template string
	}{
		{"hearth-show-gguf:latest", scriptmodel.Spec{Template: plain.Template, ChatTemplate: published, Scripts: scripts("From the GGUF.")}, "gguf", published},
		{"hearth-show-ornith:latest", scriptmodel.Spec{Renderer: "ornith", Parser: "ornith", Scripts: scripts("From models.json.")}, "models.json:ornith", ornith},
		{"hearth-show-go:latest", plain, "Modelfile template", plain.Template},
		{"hearth-show-coder:latest", scriptmodel.Spec{Renderer: "qwen3-coder", Parser: "qwen3-coder", Scripts: scripts("From the module.")}, "module renderer qwen3-coder", ""},
	} {
		if _, err := scriptmodel.Create(ctx, client, c.name, c.spec); err != nil {
			t.Fatal(err)
		}
		out, _, err := runCLI(t, "show", c.name, "--host", h.base)
		if err != nil || !regexp.MustCompile(`(?m)^template\s+`+regexp.QuoteMeta(c.source)+`$`).MatchString(out) {
			t.Errorf("hearth show %s: %v, want template %s:\n%s", c.name, err, c.source, out)
		}
		out, _, err = runCLI(t, "show", c.name, "--template", "--host", h.base)
		if c.template == "" {
			if err == nil || !strings.Contains(err.Error(), "no template text") {
				t.Errorf("hearth show %s --template: %v, want an error saying the renderer has no template text", c.name, err)
			}
			continue
		}
		if err != nil || out != c.template {
			t.Errorf("hearth show %s --template: %v\n got %q\nwant %q", c.name, err, out, c.template)
		}
	}
}
