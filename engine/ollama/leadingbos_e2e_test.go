package ollama_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestRendererBOSOnceE2E: a model whose template writes its BOS token as text (LFM2's
// {{ bos_token }}, the GGUF's <|startoftext|>, here the script model's BOS token)
// reaches the runtime with one BOS token. When the tokenizer adds its own, hearth's
// prompt leaves the text out: the template's prompt as it is counts one token more, the
// second BOS. When the tokenizer adds none, the text stays and is the prompt's only BOS.
// The embedded runtime's own chat renders the same template through the module's
// registry, which hands it no tokenizer: its prompt has no BOS text.
func TestRendererBOSOnceE2E(t *testing.T) {
	const bos = "<|startoftext|>"
	rt := testenv.Runtime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seam := rt.Seam()
	count := func(name, prompt string) int {
		t.Helper()
		n := -1
		req := &engine.GenerateRequest{Model: name, Prompt: prompt, Options: engine.Options{MaxTokens: 1}}
		if err := seam.Generate(ctx, req, func(c engine.Chunk) error {
			if c.Done {
				n = c.PromptEvalCount
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, adds := range []bool{true, false} {
		name := fmt.Sprintf("hearth-bos-lfm2-%t:latest", adds)
		spec := scriptmodel.Spec{Renderer: "lfm2", Parser: "lfm2", BOS: bos, AddBOS: adds, Stop: []string{"<|im_end|>"},
			Scripts: []scriptmodel.Script{{Entry: "?<|im_end|>\n<|im_start|>assistant\n", Text: "Hi."}}}
		if _, err := scriptmodel.Create(ctx, rt.Client, name, spec); err != nil {
			t.Fatal(err)
		}
		show, err := rt.Client.Show(ctx, &api.ShowRequest{Model: name})
		if err != nil {
			t.Fatal(err)
		}
		info, err := seam.Model(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		conv := &engine.Conversation{Messages: []engine.Message{{Role: "user", Content: "Hello?"}}}
		// The GGUF's template and BOS text, as the seam reads them (show lacks them).
		show = ollama.ShowOf(info)
		rendered, err := ollama.RenderPrompt(show, conv, nil)
		if err != nil {
			t.Fatal(err)
		}
		prompt, err := info.Prompt.RenderPrompt(conv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(rendered, bos) {
			t.Fatalf("the renderer's prompt does not start with %s: %.60q", bos, rendered)
		}
		bare := strings.TrimPrefix(rendered, bos)
		// The runtime's own chat of the same conversation: the registered template
		// without a BOS text.
		chat := -1
		stream := false
		if err := rt.Client.Chat(ctx, &api.ChatRequest{Model: name, Stream: &stream, Options: map[string]any{"num_predict": 1},
			Messages: []api.Message{{Role: "user", Content: "Hello?"}}}, func(r api.ChatResponse) error {
			if r.Done {
				chat = r.PromptEvalCount
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if want := count(name, bare); chat != want {
			t.Errorf("the runtime's chat counts %d prompt tokens, want %d (the template's prompt without a BOS text)", chat, want)
		}
		if adds {
			if prompt != bare {
				t.Errorf("tokenizer adds BOS: hearth's prompt starts %.60q, want the renderer's without %s", prompt, bos)
			}
			if got, want := count(name, rendered), count(name, prompt)+1; got != want {
				t.Errorf("the renderer's prompt counts %d tokens, want %d (its BOS text and the tokenizer's)", got, want)
			}
		} else {
			if prompt != rendered {
				t.Errorf("tokenizer adds no BOS: hearth's prompt starts %.60q, want the renderer's", prompt)
			}
			if got, want := count(name, prompt), count(name, bare)+1; got != want {
				t.Errorf("hearth's prompt counts %d tokens, want %d (its BOS text the only BOS)", got, want)
			}
		}
	}
}
