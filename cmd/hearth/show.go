package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"hearth/engine/ollama"
)

func showCommand() *cobra.Command {
	var (
		o            clientOptions
		showTemplate bool
	)
	cmd := &cobra.Command{
		Use:   "show MODEL",
		Short: "Say which chat template renders a model's prompts, or print it",
		Long: `Say which template hearth renders MODEL's prompts with, through a running hearth
(--host):

  gguf                      the chat template in the model's GGUF file
                            (tokenizer.chat_template), read from the models directory
                            ($OLLAMA_MODELS, else ~/.ollama/models) when the runtime lists
                            the model with the same manifest digest
  models.json:<id>          the template of the model's family in models.json
  module renderer <name>    the runtime module's built-in renderer
  Modelfile template        the Go template of the model's Modelfile

With --template the template's text is printed as it is (for a published template, the
model makers' own: what the published-template parity test takes, see docs/templates.md).`,
		Example: `  hearth show qwen3:8b
  hearth show qwen3:8b --template > qwen3.jinja`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			hc, err := o.client()
			if err != nil {
				return err
			}
			// The seam of an external runtime: the model's file counts only when the
			// runtime lists it with the manifest's digest, as the CLI may run elsewhere
			// than hearth, with another models directory.
			info, err := ollama.Seam(hc.api).Model(c.Context(), args[0])
			if err != nil {
				return hc.explain(err)
			}
			src, ok := ollama.ModelTemplate(info)
			if !ok {
				return fmt.Errorf("no template renders %s", args[0])
			}
			if showTemplate {
				if src.Text == "" {
					return fmt.Errorf("%s is rendered by the %s, which has no template text", args[0], src)
				}
				_, err := fmt.Fprint(c.OutOrStdout(), src.Text)
				return err
			}
			w := tabwriter.NewWriter(c.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintf(w, "model\t%s\n", args[0])
			fmt.Fprintf(w, "template\t%s\n", src)
			if src.BOS != "" || src.EOS != "" {
				fmt.Fprintf(w, "bos_token\t%q\neos_token\t%q\n", src.BOS, src.EOS)
			}
			return w.Flush()
		},
	}
	o.addFlags(cmd)
	cmd.Flags().BoolVar(&showTemplate, "template", false, "print the template's text")
	bindEnv(cmd)
	return cmd
}
