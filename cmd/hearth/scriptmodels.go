package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"hearth/engine/ollama"
	"hearth/internal/cpubuild"
	"hearth/scriptmodel"
)

func scriptModelsCommand() *cobra.Command {
	var modelsDir, ollamaURL string
	cmd := &cobra.Command{
		Use:   "script-models",
		Short: "Write hearth's deterministic script models into a models directory, offline",
		Long: `Write the script-model catalogue (hearth-script-*) into an Ollama models directory, so
hearth and its clients can be tried without network access or a downloaded model.

Script models are tiny GGUF files whose next token is a function of the current one:
each writes a fixed text, reasoning or tool calls, and answers after tool results. They
are test models, not language models: they ignore what you say. hearth's own end-to-end
tests use them to assert exact output and token counts.

With --models (or $OLLAMA_MODELS, else ~/.ollama/models) the command starts the embedded
runtime on that directory for as long as it takes to create them; with --ollama it
creates them in an Ollama server you run. Models of the same names are replaced.`,
		Example: `  hearth script-models --models /tmp/models && hearth serve --models /tmp/models
  hearth script-models --ollama http://127.0.0.1:11434`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			var rt *ollama.Runtime
			if ollamaURL != "" {
				var err error
				if rt, err = ollama.Connect(ollamaURL); err != nil {
					return fmt.Errorf("--ollama: %w", err)
				}
				readyCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				if err := rt.WaitReady(readyCtx); err != nil {
					return fmt.Errorf("Ollama at %s does not answer: %w", rt.URL, err)
				}
			} else {
				if err := cpubuild.Check(); err != nil {
					return err
				}
				// The runtime's output (its request log on stdout, which belongs to
				// the list of models here, its log and the loader's lines on
				// stderr) is not this command's: it prints the models it made, and
				// an error says what failed.
				if err := ollama.CaptureOutput(slog.New(slog.DiscardHandler)); err != nil {
					return err
				}
				startCtx, cancel := context.WithTimeout(ctx, time.Minute)
				defer cancel()
				var err error
				if rt, err = ollama.StartEmbedded(startCtx, ollama.EmbeddedConfig{ModelsDir: modelsDir}); err != nil {
					return fmt.Errorf("start embedded runtime: %w", err)
				}
			}
			return createScriptModels(ctx, rt, c.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&modelsDir, "models", "", "models directory to write them into (default $OLLAMA_MODELS or ~/.ollama/models)")
	cmd.Flags().StringVar(&ollamaURL, "ollama", "", "URL of a running Ollama to create them in, instead of a directory")
	cmd.MarkFlagsMutuallyExclusive("models", "ollama")
	bindEnv(cmd)
	return cmd
}

// createScriptModels creates every catalogue model in rt through the runtime's own
// create API, so the models directory holds exactly what `ollama create` writes, and
// prints one line per model.
func createScriptModels(ctx context.Context, rt *ollama.Runtime, out io.Writer) error {
	cat := scriptmodel.Catalog()
	names := make([]string, 0, len(cat))
	for name := range cat {
		names = append(names, name)
	}
	slices.Sort(names)
	where := rt.URL.String()
	if rt.Embedded {
		where = rt.ModelsDir
	}
	fmt.Fprintf(out, "Creating %d script models in %s:\n", len(names)+1, where)
	for _, name := range names {
		if _, err := scriptmodel.Create(ctx, rt.Client, name, cat[name]); err != nil {
			return err
		}
		fmt.Fprintf(out, "  %-32s %s\n", name, scriptmodel.Describe(name))
	}
	// The embedding model is a model of its own kind (scriptmodel.Embedder).
	if err := scriptmodel.CreateEmbedder(ctx, rt.Client, scriptmodel.EmbedModel, scriptmodel.NewEmbedder(scriptmodel.DefaultEmbedWords)); err != nil {
		return err
	}
	fmt.Fprintf(out, "  %-32s %s\n", scriptmodel.EmbedModel, scriptmodel.Describe(scriptmodel.EmbedModel))
	return nil
}
