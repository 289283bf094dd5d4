package scriptmodel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/ollama/ollama/api"
)

// Create builds the model, uploads it to the runtime behind client as a blob and creates
// the model name from it with the spec's template and stop strings, as `ollama create`
// does. The GGUF is written to a temporary file that is removed afterwards.
func Create(ctx context.Context, client *api.Client, name string, spec Spec) (*Model, error) {
	m, err := Build(spec)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "scriptmodel-*.gguf")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := m.WriteGGUF(f); err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if err := client.CreateBlob(ctx, digest, f); err != nil {
		return nil, fmt.Errorf("upload %s: %w", name, err)
	}
	params := map[string]any{
		// A repeat penalty would scale the logits of recent tokens and could reorder the
		// preference ranking under grammars; script models are exact without it.
		"repeat_penalty": 1.0,
		"num_ctx":        m.ContextLength,
	}
	if len(spec.Stop) > 0 {
		params["stop"] = spec.Stop
	}
	for k, v := range spec.Parameters {
		params[k] = v
	}
	req := &api.CreateRequest{
		Model:      name,
		Files:      map[string]string{"model.gguf": digest},
		Template:   spec.Template,
		Renderer:   spec.Renderer,
		Parser:     spec.Parser,
		Parameters: params,
	}
	if err := client.Create(ctx, req, func(api.ProgressResponse) error { return nil }); err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	return m, nil
}
