package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/ollama/ollama/api"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
)

func pullCommand() *cobra.Command {
	var (
		o     clientOptions
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "pull NAME",
		Short: "Download a model through a running hearth, with a progress bar",
		Long: `Download a model from the Ollama registry into the runtime of a running hearth (--host),
as 'ollama pull' does. Without network access it fails at once and says so.`,
		Example: `  hearth pull qwen3:0.6b
  hearth pull --host http://gpu-box:8080 --api-key $KEY gpt-oss:20b`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			hc, err := o.client()
			if err != nil {
				return err
			}
			out := c.ErrOrStderr()
			p := newPullProgress(out, quiet || !isTerminal(out))
			err = hc.api.Pull(c.Context(), &api.PullRequest{Model: args[0]}, p.update)
			p.finish()
			if err == nil && p.status != "success" {
				// Ollama's client ends quietly when the stream breaks off; only the
				// runtime's closing "success" says the model is all there.
				err = errors.New("the download stopped before the runtime reported success")
			}
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return errors.New("pull interrupted")
				}
				return fmt.Errorf("pull %s: %w", args[0], offlineHint(hc.explain(err)))
			}
			fmt.Fprintf(c.OutOrStdout(), "Pulled %s.\n", args[0])
			return nil
		},
	}
	o.addFlags(cmd)
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print status lines instead of a progress bar")
	bindEnv(cmd)
	return cmd
}

// offlineHint names the usual cause of a registry that cannot be reached.
func offlineHint(err error) error {
	var se api.StatusError
	if errors.As(err, &se) {
		return fmt.Errorf("%s (is this machine offline? the registry must be reachable from the machine hearth runs on)", se.ErrorMessage)
	}
	return err
}

// pullProgress draws one bar per layer being downloaded and prints other statuses
// as lines.
type pullProgress struct {
	out    io.Writer
	plain  bool
	bar    *progressbar.ProgressBar
	digest string
	status string
}

func newPullProgress(out io.Writer, plain bool) *pullProgress {
	return &pullProgress{out: out, plain: plain}
}

func (p *pullProgress) update(r api.ProgressResponse) error {
	if r.Digest != "" && r.Total > 0 {
		if p.plain {
			if r.Digest != p.digest {
				p.digest = r.Digest
				fmt.Fprintf(p.out, "pulling %s (%s)\n", short(r.Digest), humanBytes(r.Total))
			}
			return nil
		}
		if r.Digest != p.digest {
			p.finish()
			p.digest = r.Digest
			p.bar = progressbar.NewOptions64(r.Total,
				progressbar.OptionSetWriter(p.out),
				progressbar.OptionSetDescription("pulling "+short(r.Digest)),
				progressbar.OptionShowBytes(true),
				progressbar.OptionSetWidth(30),
				progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionShowCount(),
				progressbar.OptionClearOnFinish(),
			)
		}
		p.bar.Set64(r.Completed)
		return nil
	}
	if r.Status != p.status {
		p.finish()
		p.status = r.Status
		fmt.Fprintln(p.out, r.Status)
	}
	return nil
}

func (p *pullProgress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		fmt.Fprintf(p.out, "pulled %s\n", short(p.digest))
		p.bar = nil
	}
}

func short(digest string) string {
	if len(digest) > 19 {
		return digest[:19]
	}
	return digest
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
