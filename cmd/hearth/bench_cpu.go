package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"hearth/cmd/hearth/bench"
	"hearth/engine/ollama"
	"hearth/internal/cpubuild"
)

type benchCPUOptions struct {
	cfg       bench.CPUConfig
	variants  string
	jsonOut   bool
	modelsDir string
	quiet     bool
}

// benchCPUCommand measures prompt processing with each build of the CPU kernels.
func benchCPUCommand() *cobra.Command {
	o := benchCPUOptions{cfg: bench.CPUDefault()}
	cmd := &cobra.Command{
		Use:   "cpu",
		Short: "Measure prompt processing with each build of the CPU kernels (the runner variants)",
		Long: `Process one long uncached prompt with each build of the runtime's CPU kernels this
CPU runs: the ones built into hearth and each runner variant in lib/hearth (make build,
docs/cpu.md), alternating between them within each of --runs runs. Each measurement
starts the model's runner under that variant (HEARTH_CPU_VARIANT), checks in /proc that
the runner is that variant's executable, and reports the runtime's prompt tokens per
second and the time to the first token. The model is the bench script model (the
compute of a small real model) in an embedded runtime with a temporary models directory.`,
		Example: `  hearth bench cpu                                  # docs/benchmarks.md's table
  hearth bench cpu --variants sse42,haswell --runs 1 --prompt-tokens 4096`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchCPU(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.variants, "variants", "", "comma-separated variants to measure, "+cpubuild.BuiltinName+" for hearth's own kernels (default: all this CPU runs)")
	f.IntVar(&o.cfg.Runs, "runs", o.cfg.Runs, "measurements of each variant")
	f.IntVar(&o.cfg.PromptTokens, "prompt-tokens", o.cfg.PromptTokens, "length of the prompt")
	f.IntVar(&o.cfg.Layers, "layers", 0, "layers of the bench model (default 8): fewer measure the same kernels in less time")
	f.BoolVar(&o.jsonOut, "json", false, "print the report as JSON instead of markdown")
	f.StringVar(&o.modelsDir, "models", "", "models directory of the embedded runtime (default: a temporary directory, removed afterwards)")
	f.BoolVar(&o.cfg.Tiny, "tiny-models", false, "use the tiny script model: checks the command works, measures nothing meaningful")
	f.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	bindEnv(cmd)
	return cmd
}

func runBenchCPU(cmd *cobra.Command, o benchCPUOptions) error {
	if o.variants != "" {
		o.cfg.Variants = strings.Split(o.variants, ",")
	}
	if !o.quiet {
		o.cfg.Progress = cmd.ErrOrStderr()
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ollama.LogRequestsTo(cmd.ErrOrStderr())
	rt, stop, err := startBenchRuntime(ctx, o.modelsDir, ollama.EmbeddedConfig{NoGPU: true})
	if err != nil {
		return err
	}
	defer stop()
	rep, err := bench.RunCPU(ctx, rt, o.cfg)
	if err != nil {
		return err
	}
	return printReport(cmd, o.jsonOut, rep)
}
