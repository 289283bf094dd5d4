package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"hearth/cmd/hearth/bench"
	"hearth/engine/ollama"
	"hearth/internal/cpubuild"
	"hearth/scriptmodel"
)

type benchOptions struct {
	cfg       bench.Config
	quick     bool
	jsonOut   bool
	ollamaURL string
	runtime   string
	modelsDir string
	quiet     bool
}

func benchCommand() *cobra.Command {
	o := benchOptions{cfg: bench.Default()}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure hearth against the runtime's own endpoints",
		Long: `Measure hearth's /v1/responses against the runtime it drives, side by side in one run:
(1) the runtime's raw /api/generate with the exact prompt hearth renders (the floor),
(2) the runtime's own /v1/responses (which ignores previous_response_id, so it gets the
whole history each turn), (3) hearth's /v1/responses, served in this process on a
loopback port with a temporary database.

Workloads: a single uncached question (time to first token, total time, decode rate);
a conversation of --turns turns; a tool call, also with tool_choice allowed_tools on
hearth; --concurrency simultaneous streams. Each is measured --runs times; (2) and (3)
are reported as ratios to (1) from the same run, median with min and max.

The models are deterministic script models with the compute cost of a small real model,
created for the run: in a temporary models directory of an embedded runtime (default,
--runtime embedded), or in the Ollama at --runtime URL (--ollama URL is the same), whose
own /api/generate is then the floor.`,
		Example: `  hearth bench                 # docs/benchmarks.md's table (several minutes on two cores)
  hearth bench --quick --json  # a smoke run, as JSON
  hearth bench --runtime http://gpu-box:11434   # hearth over that Ollama, against its own endpoints`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.cfg.Runs, "runs", o.cfg.Runs, "measurements of each workload")
	f.IntVar(&o.cfg.Turns, "turns", o.cfg.Turns, "turns of the conversation workload")
	f.IntVar(&o.cfg.Concurrency, "concurrency", o.cfg.Concurrency, "simultaneous streams of the concurrency workload")
	f.BoolVar(&o.quick, "quick", false, "a CI-sized smoke run: 1 run, 3 turns, 2 streams (explicit flags still win)")
	f.BoolVar(&o.jsonOut, "json", false, "print the report as JSON instead of markdown")
	f.StringVar(&o.runtime, "runtime", "embedded", "the runtime to measure: embedded, or the URL of an Ollama server (models are created there)")
	f.StringVar(&o.ollamaURL, "ollama", "", "URL of an Ollama server to measure: the same as --runtime URL")
	f.StringVar(&o.modelsDir, "models", "", "models directory of the embedded runtime (default: a temporary directory, removed afterwards)")
	f.BoolVar(&o.cfg.Tiny, "tiny-models", false, "use the tiny script models: checks the command works, measures nothing meaningful")
	f.IntVar(&o.cfg.Layers, "layers", 0, fmt.Sprintf("layers of the bench models (default %d); more keep a GPU busy", scriptmodel.BenchLayers))
	f.IntVar(&o.cfg.Width, "width", 0, fmt.Sprintf("width of the bench models, a multiple of 64 (default %d); 32 layers of 4096 cost what a 7B model costs", scriptmodel.BenchWidth))
	f.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	bindEnv(cmd)
	cmd.AddCommand(benchPoolCommand(), benchCPUCommand(), benchTableCommand())
	return cmd
}

func runBench(cmd *cobra.Command, o benchOptions) error {
	if o.quick {
		q := bench.Quick()
		for name, dst := range map[string]*int{"runs": &o.cfg.Runs, "turns": &o.cfg.Turns, "concurrency": &o.cfg.Concurrency} {
			if !cmd.Flags().Changed(name) {
				switch name {
				case "runs":
					*dst = q.Runs
				case "turns":
					*dst = q.Turns
				case "concurrency":
					*dst = q.Concurrency
				}
			}
		}
	}
	if !o.quiet {
		o.cfg.Progress = cmd.ErrOrStderr()
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}

	// The embedded runtime logs every request to stdout; the report owns stdout, so
	// --json stays parseable.
	ollama.LogRequestsTo(cmd.ErrOrStderr())

	switch {
	case o.ollamaURL != "" && cmd.Flags().Changed("runtime") && o.runtime != o.ollamaURL:
		return fmt.Errorf("--ollama %s and --runtime %s name two runtimes; the bench measures one", o.ollamaURL, o.runtime)
	case o.ollamaURL == "" && o.runtime != "embedded":
		if o.runtime == "" {
			return fmt.Errorf("--runtime: give embedded or an Ollama URL")
		}
		o.ollamaURL = o.runtime
	}
	var rt *ollama.Runtime
	if o.ollamaURL != "" {
		var err error
		if rt, err = ollama.Connect(o.ollamaURL); err != nil {
			return fmt.Errorf("--ollama: %w", err)
		}
		readyCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := rt.WaitReady(readyCtx); err != nil {
			return err
		}
	} else {
		// Keep runners loaded for the whole run: a reload would land in a measurement.
		if os.Getenv("OLLAMA_KEEP_ALIVE") == "" {
			os.Setenv("OLLAMA_KEEP_ALIVE", "-1")
		}
		var stop func()
		var err error
		if rt, stop, err = startBenchRuntime(ctx, o.modelsDir, ollama.EmbeddedConfig{}); err != nil {
			return err
		}
		defer stop()
	}

	o.cfg.OpenStore = openBenchStore
	rep, err := bench.Run(ctx, rt, o.cfg)
	if err != nil {
		return err
	}
	return printReport(cmd, o.jsonOut, rep)
}

type benchPoolOptions struct {
	cfg      bench.PoolConfig
	quick    bool
	jsonOut  bool
	runtimes []string
	quiet    bool
}

// benchPoolCommand measures several runtimes behind one hearth: the same concurrent
// conversations over one runtime, over all with hearth's placement, and over all with
// random routing.
func benchPoolCommand() *cobra.Command {
	o := benchPoolOptions{cfg: bench.PoolDefault()}
	cmd := &cobra.Command{
		Use:   "pool --runtime URL --runtime URL [--runtime URL...]",
		Short: "Measure hearth over several Ollama runtimes: scaling and chain affinity",
		Long: `Run --conversations conversations at once, each --turns turns chained with
previous_response_id, through hearth served in this process over (1) the first runtime
alone, (2) all of them with hearth's placement (a continuation goes to the runtime
whose KV cache holds its chain, a new conversation to the least loaded), and (3) all of
them with every response routed at random (bench only, to show what affinity is worth).
Reports the aggregate output (tokens/s over the workload's wall time) and the share of
input tokens found cached from turn 2, median over --runs.

The model is a deterministic script model with the compute of a small real model,
created in every runtime. Start each runtime with OLLAMA_NUM_PARALLEL at least
--slots (default: --conversations), so that each conversation keeps a KV cache slot;
to make two runtimes on one machine stand for two hosts, pin each to its own core
(taskset) and give the model one thread (--threads 1, the default).
scripts/pool-bench.sh does all of that with two local ollama serve processes.`,
		Example: `  scripts/pool-bench.sh                        # two pinned ollama serve, docs/benchmarks.md's table
  hearth bench pool --runtime http://box-a:11434 --runtime http://box-b:11434 --threads 0`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchPool(cmd, o) },
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.runtimes, "runtime", nil, "an Ollama server's URL (repeat: at least two)")
	f.IntVar(&o.cfg.Runs, "runs", o.cfg.Runs, "measurements of each setup")
	f.IntVar(&o.cfg.Conversations, "conversations", o.cfg.Conversations, "conversations at once")
	f.IntVar(&o.cfg.Turns, "turns", o.cfg.Turns, "turns of each conversation (at least 2)")
	f.IntVar(&o.cfg.Slots, "slots", 0, "generations at once per runtime (default: --conversations); the runtimes' OLLAMA_NUM_PARALLEL should be at least this")
	f.IntVar(&o.cfg.Threads, "threads", o.cfg.Threads, "num_thread of the model (0: the runtime's default)")
	f.BoolVar(&o.quick, "quick", false, "a CI-sized smoke run: 1 run, 4 conversations, 2 turns (explicit flags still win)")
	f.BoolVar(&o.jsonOut, "json", false, "print the report as JSON instead of markdown")
	f.BoolVar(&o.cfg.Tiny, "tiny-models", false, "use the tiny script model: checks the command works, measures nothing meaningful")
	f.BoolVar(&o.quiet, "quiet", false, "no progress lines on stderr")
	bindEnv(cmd)
	return cmd
}

func runBenchPool(cmd *cobra.Command, o benchPoolOptions) error {
	if o.quick {
		q := bench.PoolQuick()
		for name, v := range map[string]struct{ dst, val *int }{
			"runs": {&o.cfg.Runs, &q.Runs}, "conversations": {&o.cfg.Conversations, &q.Conversations}, "turns": {&o.cfg.Turns, &q.Turns},
		} {
			if !cmd.Flags().Changed(name) {
				*v.dst = *v.val
			}
		}
	}
	if len(o.runtimes) < 2 {
		return fmt.Errorf("--runtime: give at least two Ollama URLs (got %d)", len(o.runtimes))
	}
	if !o.quiet {
		o.cfg.Progress = cmd.ErrOrStderr()
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	var rts []*ollama.Runtime
	for _, u := range o.runtimes {
		rt, err := ollama.Connect(u)
		if err != nil {
			return fmt.Errorf("--runtime %s: %w", u, err)
		}
		readyCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = rt.WaitReady(readyCtx)
		cancel()
		if err != nil {
			return fmt.Errorf("--runtime %s: %w", u, err)
		}
		rts = append(rts, rt)
	}
	o.cfg.OpenStore = openBenchStore
	rep, err := bench.RunPool(ctx, rts, o.cfg)
	if err != nil {
		return err
	}
	return printReport(cmd, o.jsonOut, rep)
}

// printReport writes a bench report to stdout as JSON or as markdown.
func printReport(cmd *cobra.Command, jsonOut bool, rep interface{ Markdown(io.Writer) }) error {
	out := cmd.OutOrStdout()
	if jsonOut {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	rep.Markdown(out)
	return nil
}

// startBenchRuntime starts the embedded runtime for a bench run, over modelsDir or a
// temporary models directory; stop unloads its models and removes what it made.
func startBenchRuntime(ctx context.Context, modelsDir string, cfg ollama.EmbeddedConfig) (rt *ollama.Runtime, stop func(), err error) {
	if err := cpubuild.Check(); err != nil {
		return nil, nil, err
	}
	cleanup := func() {}
	if modelsDir == "" {
		tmp, err := os.MkdirTemp("", "hearth-bench-models-")
		if err != nil {
			return nil, nil, err
		}
		cleanup = func() { os.RemoveAll(tmp) }
		modelsDir = tmp
	}
	cfg.ModelsDir = modelsDir
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if rt, err = ollama.StartEmbedded(startCtx, cfg); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("start embedded runtime: %w", err)
	}
	return rt, func() {
		unloadCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = rt.UnloadAll(unloadCtx)
		cleanup()
	}, nil
}

// benchTableCommand puts reports of `hearth bench --json` side by side.
func benchTableCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "table LABEL=REPORT.json...",
		Short: "Put several `hearth bench --json` reports side by side in one table",
		Long: `Reads reports written by hearth bench --json (for instance one per GPU backend, as
scripts/gpu-bench.sh writes them) and prints one markdown table: for each workload
and metric, the runtime's own /api/generate and hearth's ratio to it, a column pair
per report, under its label.`,
		Example: "  hearth bench table cuda=cuda.json vulkan=vulkan.json cpu=cpu.json",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var labels []string
			var reports []*bench.Report
			for _, a := range args {
				label, file, ok := strings.Cut(a, "=")
				if !ok || label == "" || file == "" {
					return fmt.Errorf("%q: want LABEL=REPORT.json", a)
				}
				data, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				var r bench.Report
				if err := json.Unmarshal(data, &r); err != nil {
					return fmt.Errorf("%s: not a hearth bench --json report: %w", file, err)
				}
				labels, reports = append(labels, label), append(reports, &r)
			}
			bench.Compare(cmd.OutOrStdout(), labels, reports)
			return nil
		},
	}
}
