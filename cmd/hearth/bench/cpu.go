package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama"
	"hearth/internal/cpubuild"
	"hearth/scriptmodel"
)

// CPUConfig is a run of the CPU kernels benchmark (`hearth bench cpu`): one long prompt
// processed by each build of the kernels, alternating within each run.
type CPUConfig struct {
	// Variants are the kernels to measure by name (cpubuild.BuiltinName for the ones in
	// this binary); empty: the built-in ones and every runner variant this CPU runs.
	Variants     []string
	PromptTokens int
	Runs         int
	// Layers overrides the bench model's 8 layers (0 keeps them): the same matrix
	// shapes, a fraction of the time, for long prompts on small machines.
	Layers int
	// Tiny uses the tiny script model: a check of the command, not a measurement.
	Tiny     bool
	Progress io.Writer
}

// CPUDefault is the table of docs/benchmarks.md.
func CPUDefault() CPUConfig { return CPUConfig{PromptTokens: 16384, Runs: 3} }

// CPUReport is the result: a row per variant, the ratios against the slowest.
type CPUReport struct {
	Settings CPUSettings `json:"settings"`
	Rows     []CPURow    `json:"rows"`
}

// CPUSettings says what was run.
type CPUSettings struct {
	Runs           int       `json:"runs"`
	PromptTokens   int       `json:"prompt_tokens"`
	Model          string    `json:"model"`
	Layers         int       `json:"layers"`
	Tiny           bool      `json:"tiny_model"`
	RuntimeVersion string    `json:"runtime_version"`
	CPU            string    `json:"cpu"`
	Started        time.Time `json:"started"`
	Duration       string    `json:"duration"`
}

// CPURow is one build of the kernels.
type CPURow struct {
	Variant string `json:"variant"`
	CFlags  string `json:"cflags"`
	// Runner is the executable the model runner ran, read from /proc: the measurement
	// is checked to be of the variant it names.
	Runner       string `json:"runner"`
	PromptTokens int    `json:"prompt_tokens"`
	// PromptRate is the runtime's prompt_eval_count / prompt_eval_duration (tokens/s);
	// TTFT the time from the request to the first generated token, seen by the client (s).
	PromptRate Stat `json:"prompt_tokens_per_s"`
	TTFT       Stat `json:"ttft_s"`
}

// RunCPU measures prompt processing with each variant. The runtime must be embedded:
// a variant is chosen by each runner as it starts, from HEARTH_CPU_VARIANT in the
// environment it inherits, so every measurement loads the model afresh under the
// variant's name and unloads it afterwards (an empty KV cache each time).
func RunCPU(ctx context.Context, rt *ollama.Runtime, cfg CPUConfig) (*CPUReport, error) {
	if !rt.Embedded {
		return nil, errors.New("bench cpu measures the embedded runtime's runners")
	}
	if cfg.Runs < 1 || cfg.PromptTokens < 16 {
		return nil, fmt.Errorf("bench cpu: --runs %d, --prompt-tokens %d", cfg.Runs, cfg.PromptTokens)
	}
	sel := cpubuild.Selected()
	variants := cfg.Variants
	if len(variants) == 0 {
		variants = []string{cpubuild.BuiltinName}
		for i := len(sel.Variants) - 1; i >= 0; i-- { // slowest first
			if sel.Variants[i].Runs() {
				variants = append(variants, sel.Variants[i].Name)
			}
		}
	}
	rows := make([]CPURow, len(variants))
	for i, name := range variants {
		s := cpubuild.Select(sel.Dir, name, cpubuild.Host())
		if s.Err != nil {
			return nil, s.Err
		}
		rows[i] = CPURow{Variant: name, CFlags: s.Chosen.CFlags, Runner: s.Chosen.Path}
		if rows[i].Runner == "" {
			exe, err := os.Executable()
			if err != nil {
				return nil, err
			}
			rows[i].Runner = exe
		}
		if r, err := filepath.EvalSymlinks(rows[i].Runner); err == nil {
			rows[i].Runner = r
		}
	}
	spec := scriptmodel.Catalog()[scriptmodel.PlainModel]
	model := "hearth-bench-cpu-tiny:latest"
	if !cfg.Tiny {
		spec, model = scriptmodel.Bench(spec), "hearth-bench-cpu:latest"
	}
	if cfg.Layers > 0 && !cfg.Tiny {
		spec.Layers = cfg.Layers
		model = fmt.Sprintf("hearth-bench-cpu-%dl:latest", cfg.Layers)
	}
	spec.ContextLength = cfg.PromptTokens + 256
	progress(cfg.Progress, "creating model %s (context %d)", model, spec.ContextLength)
	if _, err := scriptmodel.Create(ctx, rt.Client, model, spec); err != nil {
		return nil, fmt.Errorf("bench cpu: create %s: %w", model, err)
	}
	rep := &CPUReport{Settings: CPUSettings{
		Runs: cfg.Runs, PromptTokens: cfg.PromptTokens, Model: model, Layers: spec.Layers, Tiny: cfg.Tiny, RuntimeVersion: ollama.RuntimeVersion,
		CPU: cpuName(), Started: time.Now().UTC(),
	}}
	prev, had := os.LookupEnv(cpubuild.VariantEnv)
	defer func() {
		if had {
			os.Setenv(cpubuild.VariantEnv, prev)
		} else {
			os.Unsetenv(cpubuild.VariantEnv)
		}
	}()
	rates, ttfts := make([][]float64, len(rows)), make([][]float64, len(rows))
	for run := 0; run < cfg.Runs; run++ {
		// Alternate, starting one further each run: no variant always goes first.
		for k := range rows {
			i := (k + run) % len(rows)
			row := &rows[i]
			os.Setenv(cpubuild.VariantEnv, row.Variant)
			rate, ttft, n, err := measurePrompt(ctx, rt, model, cfg.PromptTokens, row.Runner)
			if err != nil {
				return nil, fmt.Errorf("bench cpu: %s: %w", row.Variant, err)
			}
			row.PromptTokens = n
			rates[i], ttfts[i] = append(rates[i], rate), append(ttfts[i], ttft)
			progress(cfg.Progress, "run %d %-10s %7.1f prompt tokens/s, first token after %.2f s (%d prompt tokens)", run+1, row.Variant, rate, ttft, n)
		}
	}
	for i := range rows {
		rows[i].PromptRate, rows[i].TTFT = summarize(rates[i]), summarize(ttfts[i])
	}
	rep.Rows = rows
	rep.Settings.Duration = time.Since(rep.Settings.Started).Round(time.Second).String()
	return rep, nil
}

// measurePrompt loads model under the current variant (a one-token request), checks
// that its runner runs wantExe, times one long uncached prompt, and unloads the model.
func measurePrompt(ctx context.Context, rt *ollama.Runtime, model string, tokens int, wantExe string) (rate, ttft float64, n int, err error) {
	stream := false
	opts := map[string]any{"num_predict": 1, "temperature": 0}
	load := &api.GenerateRequest{Model: model, Prompt: "a", Raw: true, Stream: &stream, Options: opts}
	if err := rt.Client.Generate(ctx, load, func(api.GenerateResponse) error { return nil }); err != nil {
		return 0, 0, 0, fmt.Errorf("load: %w", err)
	}
	defer unload(rt, model)
	if exe := runnerExe(); exe != "" && exe != wantExe {
		return 0, 0, 0, fmt.Errorf("the model runner runs %s, want %s", exe, wantExe)
	}
	streaming := true
	req := &api.GenerateRequest{Model: model, Prompt: longPrompt(tokens), Raw: true, Stream: &streaming, Options: opts}
	start := time.Now()
	var first time.Duration
	var last api.GenerateResponse
	err = rt.Client.Generate(ctx, req, func(r api.GenerateResponse) error {
		if first == 0 && (r.Response != "" || r.Done) {
			first = time.Since(start)
		}
		last = r
		return nil
	})
	if err != nil {
		return 0, 0, 0, err
	}
	if last.PromptEvalDuration <= 0 || last.PromptEvalCount < tokens {
		return 0, 0, 0, fmt.Errorf("prompt of %d tokens evaluated as %d in %v", tokens, last.PromptEvalCount, last.PromptEvalDuration)
	}
	return float64(last.PromptEvalCount) / last.PromptEvalDuration.Seconds(), first.Seconds(), last.PromptEvalCount, nil
}

// longPrompt is tokens bytes of lowercase letters, a token each for a script model's
// byte-level tokenizer, different every call so that nothing could be cached.
func longPrompt(tokens int) string {
	var b strings.Builder
	b.Grow(tokens)
	for range tokens {
		b.WriteByte(byte('a' + rand.IntN(26)))
	}
	return b.String()
}

func unload(rt *ollama.Runtime, model string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zero, stream := api.Duration{}, false
	_ = rt.Client.Generate(ctx, &api.GenerateRequest{Model: model, KeepAlive: &zero, Stream: &stream}, func(api.GenerateResponse) error { return nil })
	// The runner must be gone before the next variant's starts (else both compute).
	for ctx.Err() == nil {
		ps, err := rt.Client.ListRunning(ctx)
		if err == nil && len(ps.Models) == 0 && runnerExe() == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runnerExe is the executable of this process's model runner (a child started with
// --model), from /proc; "" where there is none or no /proc.
func runnerExe() string {
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its ')'.
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(self) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if !strings.Contains(string(cmdline), "\x00--model\x00") {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe")); err == nil {
			return exe
		}
	}
	return ""
}

// cpuName is the CPU's model name as Linux reports it.
func cpuName() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Markdown writes the table of docs/benchmarks.md.
func (r *CPUReport) Markdown(w io.Writer) {
	s := r.Settings
	layers := fmt.Sprintf("%d layers", s.Layers)
	if s.Layers == 1 {
		layers = "1 layer"
	}
	model := "bench script model: " + layers + ", width 2048, FFN 5632, Q4_0"
	if s.Tiny {
		model = "tiny script model: a check of the command, not a measurement"
	}
	fmt.Fprintf(w, "CPU: %s; Ollama %s embedded; model %s (%s); a %d-token prompt, uncached, %d runs alternating between the variants; took %s.\n\n",
		s.CPU, s.RuntimeVersion, s.Model, model, s.PromptTokens, s.Runs, s.Duration)
	base := -1
	for i, row := range r.Rows {
		if base < 0 || row.PromptRate.Median < r.Rows[base].PromptRate.Median {
			base = i
		}
	}
	fmt.Fprintf(w, "Median (min–max) over runs.\n\n")
	fmt.Fprintf(w, "| kernels | compiled with | prompt tokens/s | time to first token (s) | prompt speed vs %s |\n", r.Rows[base].Variant)
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- |\n")
	for _, row := range r.Rows {
		ratio := "-"
		if b := r.Rows[base].PromptRate.Median; b > 0 {
			ratio = fmt.Sprintf("%.2fx", row.PromptRate.Median/b)
		}
		fmt.Fprintf(w, "| %s | `%s` | %s | %s | %s |\n", row.Variant, strings.TrimSpace(row.CFlags), fmtStat(row.PromptRate, "tokens/s"), fmtStat(row.TTFT, "s"), ratio)
	}
}
