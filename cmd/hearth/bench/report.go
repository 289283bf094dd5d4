package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Report is the result of a run.
type Report struct {
	Settings Settings `json:"settings"`
	// Rows are the measurements: the floor in absolute units, the two servers as
	// ratios to it.
	Rows []Row `json:"rows"`
	// Checks are the targets hearth is held to, and whether this run met them.
	Checks      []Check     `json:"checks"`
	Enforcement Enforcement `json:"enforcement"`
	Cache       Cache       `json:"prefix_cache"`
}

// Cache is the evidence that hearth's conversation reuses the runtime's prefix cache:
// what hearth reported for its last turn (input tokens, and how many of them the
// runtime already held from the turn before).
type Cache struct {
	Turn         int `json:"turn"`
	InputTokens  int `json:"input_tokens"`
	CachedTokens int `json:"cached_tokens"`
}

// Settings says what was run, so that a number can be re-run.
type Settings struct {
	Runs           int      `json:"runs"`
	Turns          int      `json:"turns"`
	Concurrency    int      `json:"concurrency"`
	Tiny           bool     `json:"tiny_models"`
	Models         []string `json:"models"`
	NumParallel    string   `json:"ollama_num_parallel"`
	RuntimeVersion string   `json:"runtime_version"`
	Embedded       bool     `json:"embedded_runtime"`
	// CPULevel is the x86-64 level the embedded runtime's kernels were built for
	// ("" for the compiler's default, or with an external runtime).
	CPULevel string `json:"cpu_level,omitempty"`
	// CPUKernels is the build of the kernels the runtime's model runners ran: one of
	// ggml's CPU variants (lib/hearth) or "builtin" (the ones of CPULevel).
	CPUKernels string `json:"cpu_kernels,omitempty"`
	// Layers and Width are the bench models' size (absent for the tiny models).
	Layers int `json:"layers,omitempty"`
	Width  int `json:"width,omitempty"`
	// Devices are the GPUs the embedded runtime found and placed the models on
	// ("CUDA0 NVIDIA H100 80GB HBM3"); none: the CPU.
	Devices  []string  `json:"gpu_devices,omitempty"`
	Started  time.Time `json:"started"`
	Duration string    `json:"duration"`
}

// Stat summarises a metric over runs.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func summarize(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Row is one metric of one workload.
type Row struct {
	Workload string `json:"workload"`
	Metric   string `json:"metric"`
	// Unit of Floor ("ms", "tokens/s"), or "x" for a row of ratios.
	Unit string `json:"unit"`
	// Floor is the raw runtime's value, absolute (absent for rows of ratios).
	Floor *Stat `json:"floor,omitempty"`
	// Ratio is each system's value divided by the floor's in the same run, summarised
	// over runs; for rows of ratios (Unit "x") it is the ratio itself, per system.
	Ratio  map[string]Stat `json:"ratio"`
	Target string          `json:"target,omitempty"`
	// HigherBetter: a ratio below 1 is a loss (rates), not a gain.
	HigherBetter bool `json:"higher_is_better,omitempty"`
}

// Check is a target and this run's verdict.
type Check struct {
	Name   string `json:"name"`
	Target string `json:"target"`
	Value  Stat   `json:"value"`
	Met    bool   `json:"met"`
}

// Enforcement compares the tool workload's enforced call with the unenforced one: the
// script model writes the one call allowed_tools permits, spelled as its grammar allows,
// so the two must be the same call, and their time differs by the cost of enforcing.
type Enforcement struct {
	// Same counts the runs whose enforced call equals hearth's unenforced call.
	Same       int      `json:"same_call_runs"`
	Runs       int      `json:"runs"`
	Unenforced []string `json:"last_unenforced_calls"`
	Enforced   []string `json:"last_enforced_calls"`
}

func (r *Report) add(ss ...*series) {
	for _, s := range ss {
		floor := summarize(s.vals[SystemRaw])
		row := Row{Workload: s.workload, Metric: s.metric, Unit: s.unit, Floor: &floor, Target: s.target,
			HigherBetter: s.higherBetter, Ratio: map[string]Stat{}}
		for _, sys := range systems[1:] {
			vals := s.vals[sys]
			if len(vals) == 0 {
				continue
			}
			ratios := make([]float64, len(vals))
			for i, v := range vals {
				if i < len(s.vals[SystemRaw]) && s.vals[SystemRaw][i] > 0 {
					ratios[i] = v / s.vals[SystemRaw][i]
				}
			}
			row.Ratio[sys] = summarize(ratios)
		}
		r.Rows = append(r.Rows, row)
	}
}

// addGrowth adds a row whose values are already ratios (turn N over turn 1, enforced
// over unenforced), for every system that has them.
func (r *Report) addGrowth(s *series) {
	row := Row{Workload: s.workload, Metric: s.metric, Unit: "x", Target: s.target, Ratio: map[string]Stat{}}
	for _, sys := range systems {
		if len(s.vals[sys]) > 0 {
			row.Ratio[sys] = summarize(s.vals[sys])
		}
	}
	r.Rows = append(r.Rows, row)
}

func (r *Report) row(workload, metric string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Workload == workload && strings.HasPrefix(row.Metric, metric) {
			return row, true
		}
	}
	return Row{}, false
}

// check evaluates the targets on the medians.
func (r *Report) check() {
	for _, c := range []struct {
		name, workload, metric, target string
		limit                          float64
	}{
		{"hearth single-turn time to first token / raw runtime", "single turn", "time to first token", "< 1.02", 1.02},
		{"hearth single-turn total time / raw runtime", "single turn", "total time", "< 1.02", 1.02},
		{fmt.Sprintf("hearth time to first token, turn %d / turn 1", r.Settings.Turns), "conversation", fmt.Sprintf("turn %d / turn 1", r.Settings.Turns), "< 1.5", 1.5},
		{"hearth enforced allowed_tools call / unenforced, total time", "tool call", "enforced / unenforced", "< 1.15", 1.15},
	} {
		row, ok := r.row(c.workload, c.metric)
		if !ok {
			continue
		}
		st := row.Ratio[SystemHearth]
		r.Checks = append(r.Checks, Check{Name: c.name, Target: c.target, Value: st, Met: st.N > 0 && st.Median < c.limit})
	}
}

func fmtStat(s Stat, unit string) string {
	if s.N == 0 {
		return "-"
	}
	prec := 2
	if unit == "ms" || unit == "tokens/s" {
		prec = 1
	}
	if s.N == 1 {
		return fmt.Sprintf("%.*f", prec, s.Median)
	}
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, s.Median, prec, s.Min, prec, s.Max)
}

// Markdown writes the report as docs/benchmarks.md shows it.
func (r *Report) Markdown(w io.Writer) {
	s := r.Settings
	models := fmt.Sprintf("bench script models (%d layers, width %d, Q4_0 zero weights; deterministic output)", s.Layers, s.Width)
	if s.Tiny {
		models = "tiny script models (a check of the command, not a benchmark)"
	}
	kernels := ""
	if s.Embedded {
		kernels = ", CPU kernels built for " + s.CPULevel
		if s.CPULevel == "" {
			kernels = ", CPU kernels built for the compiler's default"
		}
		if s.CPUKernels != "" && s.CPUKernels != "builtin" {
			kernels = ", CPU kernels: runner variant " + s.CPUKernels
		}
		if len(s.Devices) > 0 {
			kernels += ", GPU: " + strings.Join(s.Devices, ", ")
		}
	}
	fmt.Fprintf(w, "Runtime: Ollama %s (embedded: %v%s, OLLAMA_NUM_PARALLEL=%s); %s; %d runs, %d turns, %d concurrent streams; took %s.\n\n",
		s.RuntimeVersion, s.Embedded, kernels, s.NumParallel, models, s.Runs, s.Turns, s.Concurrency, s.Duration)
	fmt.Fprintf(w, "Median (min–max) over runs. (1) is absolute; (2) and (3) are ratios to (1) in the same run (lower is better, except for rates).\n\n")
	fmt.Fprintf(w, "| workload | metric | (1) %s | (2) %s | (3) %s | target |\n", SystemRaw, SystemRuntime, SystemHearth)
	fmt.Fprintf(w, "| --- | --- | --- | --- | --- | --- |\n")
	for _, row := range r.Rows {
		first := "-"
		if row.Floor != nil {
			first = fmtStat(*row.Floor, row.Unit) + " " + row.Unit
		} else if st, ok := row.Ratio[SystemRaw]; ok {
			first = fmtStat(st, row.Unit) + "×"
		}
		col := func(sys string) string {
			st, ok := row.Ratio[sys]
			if !ok {
				return "-"
			}
			return fmtStat(st, "x") + "×"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", row.Workload, row.Metric, first, col(SystemRuntime), col(SystemHearth), row.Target)
	}
	fmt.Fprintf(w, "\n| target | median | met |\n| --- | --- | --- |\n")
	for _, c := range r.Checks {
		met := "yes"
		if !c.Met {
			met = "**no**"
		}
		fmt.Fprintf(w, "| %s %s | %s | %s |\n", c.Name, c.Target, fmtStat(c.Value, "x"), met)
	}
	if c := r.Cache; c.Turn > 0 {
		fmt.Fprintf(w, "\nhearth's turn %d: %d input tokens, %d of them cached from the turn before (usage.input_tokens_details.cached_tokens).\n",
			c.Turn, c.InputTokens, c.CachedTokens)
	}
	e := r.Enforcement
	fmt.Fprintf(w, "\nThe enforced call (allowed_tools: %s only) equalled the unenforced one in %d of %d runs; last: %q and %q.\n",
		enforcedTool, e.Same, e.Runs, e.Enforced, e.Unenforced)
}

// Compare writes several reports as one table, a column per report under its label (the
// same workloads measured on several machines or backends): each row's floor, the
// runtime's own /api/generate in absolute units, and hearth's ratio to it in that run.
func Compare(w io.Writer, labels []string, reports []*Report) {
	fmt.Fprintf(w, "Median over runs: the runtime's /api/generate (absolute), and hearth /v1/responses as a ratio to it in the same run.\n\n")
	fmt.Fprintf(w, "| workload | metric |")
	for _, l := range labels {
		fmt.Fprintf(w, " %s: runtime | %s: hearth |", l, l)
	}
	fmt.Fprintf(w, "\n| --- | --- |%s\n", strings.Repeat(" --- | --- |", len(labels)))
	type key struct{ workload, metric string }
	var order []key
	seen := map[key]bool{}
	for _, r := range reports {
		for _, row := range r.Rows {
			k := key{row.Workload, row.Metric}
			if !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
	}
	for _, k := range order {
		fmt.Fprintf(w, "| %s | %s |", k.workload, k.metric)
		for _, r := range reports {
			row, ok := r.exactRow(k.workload, k.metric)
			floor, hearth := "-", "-"
			if ok {
				if row.Floor != nil {
					floor = fmtStat(Stat{Median: row.Floor.Median, N: 1}, row.Unit) + " " + row.Unit
				} else if st, ok := row.Ratio[SystemRaw]; ok {
					floor = fmtStat(Stat{Median: st.Median, N: 1}, "x") + "×"
				}
				if st, ok := row.Ratio[SystemHearth]; ok {
					hearth = fmtStat(Stat{Median: st.Median, N: 1}, "x") + "×"
				}
			}
			fmt.Fprintf(w, " %s | %s |", floor, hearth)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	for i, r := range reports {
		s := r.Settings
		gpu := "none (CPU)"
		if len(s.Devices) > 0 {
			gpu = strings.Join(s.Devices, ", ")
		}
		models := fmt.Sprintf("models %d layers, width %d", s.Layers, s.Width)
		if s.Tiny {
			models = "tiny script models (a check of the command, not a benchmark)"
		}
		fmt.Fprintf(w, "%s: GPU %s; %s; %d runs, %d turns, %d concurrent streams; CPU kernels %s; took %s.\n",
			labels[i], gpu, models, s.Runs, s.Turns, s.Concurrency, s.CPUKernels, s.Duration)
	}
}

func (r *Report) exactRow(workload, metric string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Workload == workload && row.Metric == metric {
			return row, true
		}
	}
	return Row{}, false
}
