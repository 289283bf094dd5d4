package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/engine/pool"
	"hearth/internal/admission"
	"hearth/scriptmodel"
)

// PoolConfig sizes the pool workload: Conversations conversations at once, each of
// Turns turns chained with previous_response_id, served by hearth over one runtime and
// over several.
type PoolConfig struct {
	// Runs is how many times each setup is measured.
	Runs int
	// Conversations run at once; Turns is each one's length.
	Conversations, Turns int
	// Slots is how many generations hearth runs at once on each runtime (admission's
	// slots, also what it assumes of the runtime's KV cache slots): the runtimes
	// should run with OLLAMA_NUM_PARALLEL at least this. Zero means Conversations.
	Slots int
	// Threads, when set, is the num_thread of the models (one per runtime pinned to
	// one core stands for one host each).
	Threads int
	// Tiny uses the tiny script model: a check that the command works.
	Tiny bool
	// Progress, when set, receives one line per measured step.
	Progress io.Writer
	// OpenStore opens the store of the hearth under measure (Config.OpenStore).
	OpenStore func(path string) (Store, error)
}

// PoolDefault is the configuration docs/benchmarks.md's pool numbers come from.
func PoolDefault() PoolConfig { return PoolConfig{Runs: 2, Conversations: 16, Turns: 3, Threads: 1} }

// PoolQuick is a CI-sized pool run.
func PoolQuick() PoolConfig { return PoolConfig{Runs: 1, Conversations: 4, Turns: 2} }

// PoolReport is the result of a pool run: one row per setup.
type PoolReport struct {
	Settings PoolSettings `json:"settings"`
	Setups   []PoolSetup  `json:"setups"`
	// Speedup is the aggregate output of all runtimes with hearth's placement over
	// the first runtime's alone, a ratio per run.
	Speedup Stat    `json:"speedup"`
	Checks  []Check `json:"checks"`
}

// PoolSettings says what was run.
type PoolSettings struct {
	Runs           int       `json:"runs"`
	Conversations  int       `json:"conversations"`
	Turns          int       `json:"turns"`
	Slots          int       `json:"slots_per_runtime"`
	Threads        int       `json:"num_thread"`
	Model          string    `json:"model"`
	Runtimes       []string  `json:"runtimes"`
	RuntimeVersion string    `json:"runtime_version"`
	Started        time.Time `json:"started"`
	Duration       string    `json:"duration"`
}

// PoolSetup is one way of serving the workload and what it measured, over runs.
type PoolSetup struct {
	Name     string   `json:"name"`
	Runtimes []string `json:"runtimes"`
	// Routing is "affinity" (a continuation goes where its chain lives, the rest to
	// the least loaded runtime: hearth's placement) or "random" (bench only).
	Routing string `json:"routing"`
	// OutputRate is the aggregate output: every response's output tokens over the
	// wall time of the whole workload.
	OutputRate Stat `json:"output_tokens_per_s"`
	// CachedShare is cached_tokens / input_tokens summed over turns 2 and later.
	// Its ceiling is below 1: each turn's new message is evaluated anyway.
	CachedShare Stat `json:"cached_share_from_turn_2"`
	// Reuse is cached_tokens over what the turn before left in the KV cache (its
	// input and output tokens, but the last token sampled), turns 2 and later: 1 when
	// every continuation found its whole chain cached.
	Reuse Stat `json:"reuse_from_turn_2"`
	// Moved is the share of turns 2 and later served on another runtime than the
	// turn before.
	Moved Stat `json:"moved_share_from_turn_2"`
	// Wall is the workload's wall time.
	Wall Stat `json:"wall_s"`
	// Served counts the responses each runtime served, over all runs.
	Served map[string]int `json:"served"`
}

// RunPool creates the script model in every runtime and measures the workload served
// by hearth (in this process, on a loopback port) over the first runtime alone, then
// over all of them with hearth's placement, then over all of them with random routing.
func RunPool(ctx context.Context, rts []*ollama.Runtime, cfg PoolConfig) (*PoolReport, error) {
	if cfg.Runs < 1 || cfg.Conversations < 1 || cfg.Turns < 2 {
		return nil, errors.New("bench pool: runs and conversations must be at least 1, turns at least 2")
	}
	if len(rts) < 2 {
		return nil, errors.New("bench pool: give at least two runtimes (--runtime URL, repeated)")
	}
	if cfg.Slots == 0 {
		cfg.Slots = cfg.Conversations
	}
	rep := &PoolReport{Settings: PoolSettings{Runs: cfg.Runs, Conversations: cfg.Conversations, Turns: cfg.Turns,
		Slots: cfg.Slots, Threads: cfg.Threads, RuntimeVersion: ollama.RuntimeVersion, Started: time.Now().UTC()}}
	model, err := createPoolModel(ctx, rts, cfg)
	if err != nil {
		return nil, err
	}
	rep.Settings.Model = model
	labels := make([]string, len(rts))
	for i, rt := range rts {
		labels[i] = rt.Label()
	}
	rep.Settings.Runtimes = labels

	setups := []struct {
		name   string
		rts    []*ollama.Runtime
		random bool
	}{
		{"1 runtime", rts[:1], false},
		{fmt.Sprintf("%d runtimes, affinity", len(rts)), rts, false},
		{fmt.Sprintf("%d runtimes, random routing", len(rts)), rts, true},
	}
	// Each run measures every setup in turn, so that a run's setups see the same
	// machine and the speed-up is a ratio within one run.
	type series struct{ rate, share, reuse, moved, wall []float64 }
	all := make([]series, len(setups))
	rep.Setups = make([]PoolSetup, len(setups))
	for i, su := range setups {
		ps := &rep.Setups[i]
		*ps = PoolSetup{Name: su.name, Routing: "affinity", Served: map[string]int{}}
		if su.random {
			ps.Routing = "random"
		}
		for _, rt := range su.rts {
			ps.Runtimes = append(ps.Runtimes, rt.Label())
		}
	}
	var speedups []float64
	for run := 1; run <= cfg.Runs; run++ {
		for i, su := range setups {
			res, err := runPoolSetup(ctx, su.rts, su.random, model, cfg, run)
			if err != nil {
				return nil, fmt.Errorf("bench pool: %s, run %d: %w", su.name, run, err)
			}
			a := &all[i]
			a.rate, a.share, a.reuse = append(a.rate, res.rate()), append(a.share, res.cachedShare()), append(a.reuse, res.reuse())
			a.moved, a.wall = append(a.moved, res.movedShare()), append(a.wall, res.wall.Seconds())
			for l, n := range res.served {
				rep.Setups[i].Served[l] += n
			}
			progress(cfg.Progress, "pool %-28s run %d  %7.1f tokens/s  cached %.2f  reuse %.2f  moved %.2f  wall %.1f s  served %v",
				su.name, run, res.rate(), res.cachedShare(), res.reuse(), res.movedShare(), res.wall.Seconds(), res.served)
		}
		if one := all[0].rate[run-1]; one > 0 {
			speedups = append(speedups, all[1].rate[run-1]/one)
		}
	}
	for i, a := range all {
		ps := &rep.Setups[i]
		ps.OutputRate, ps.CachedShare, ps.Reuse = summarize(a.rate), summarize(a.share), summarize(a.reuse)
		ps.Moved, ps.Wall = summarize(a.moved), summarize(a.wall)
	}
	rep.Speedup = summarize(speedups)
	rep.Settings.Duration = time.Since(rep.Settings.Started).Round(time.Second).String()
	rep.check()
	return rep, nil
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// createPoolModel creates the long-answer script model (its benchmark variant, with
// the compute of a small real model, unless Tiny) in every runtime and loads it there.
func createPoolModel(ctx context.Context, rts []*ollama.Runtime, cfg PoolConfig) (string, error) {
	spec := scriptmodel.Catalog()[scriptmodel.LongModel]
	name := "hearth-bench-pool-tiny:latest"
	if !cfg.Tiny {
		spec, name = scriptmodel.Bench(spec), "hearth-bench-pool:latest"
	}
	// The instructions and a few turns of long answers fit in 1,024 tokens; a smaller window keeps each
	// runtime's KV cache (its window times its parallel slots) small.
	spec.ContextLength = 1024
	if cfg.Threads > 0 {
		spec.Parameters = map[string]any{"num_thread": cfg.Threads}
	}
	for _, rt := range rts {
		progress(cfg.Progress, "creating model %s in %s", name, rt.Label())
		if _, err := scriptmodel.Create(ctx, rt.Client, name, spec); err != nil {
			return "", fmt.Errorf("bench pool: create %s in %s: %w", name, rt.Label(), err)
		}
		// An empty generation loads the model: no load lands in a measurement.
		if err := rt.Client.Generate(ctx, &api.GenerateRequest{Model: name}, func(api.GenerateResponse) error { return nil }); err != nil {
			return "", fmt.Errorf("bench pool: load %s in %s: %w", name, rt.Label(), err)
		}
	}
	return name, nil
}

// poolResult is one run of one setup.
type poolResult struct {
	wall   time.Duration
	output int
	// Of turns 2 and later: input and cached tokens, what the turn before left in
	// the KV cache (its input and output tokens but the last), the turns that ran on
	// another runtime than the turn before, and how many turns.
	input, cached, reusable, moved, later int
	served                                map[string]int
}

func (r *poolResult) rate() float64 { return float64(r.output) / r.wall.Seconds() }

func (r *poolResult) cachedShare() float64 {
	if r.input == 0 {
		return 0
	}
	return float64(r.cached) / float64(r.input)
}

func (r *poolResult) reuse() float64 {
	if r.reusable == 0 {
		return 0
	}
	return float64(r.cached) / float64(r.reusable)
}

func (r *poolResult) movedShare() float64 {
	if r.later == 0 {
		return 0
	}
	return float64(r.moved) / float64(r.later)
}

// runPoolSetup serves hearth over rts (a new server and database, so no affinity is
// left from another setup) and runs every conversation at once to its last turn.
func runPoolSetup(ctx context.Context, rts []*ollama.Runtime, random bool, model string, cfg PoolConfig, run int) (*poolResult, error) {
	members := make([]pool.Runtime, len(rts))
	adm := admission.Config{Slots: cfg.Slots, MaxQueue: 4 * cfg.Conversations, RuntimeSlots: map[string]int{}}
	for i, rt := range rts {
		members[i] = rt
		adm.RuntimeSlots[rt.Label()] = cfg.Slots
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := pool.New(members, quiet)
	if err != nil {
		return nil, err
	}
	base, stop, err := serveHearth(cfg.OpenStore, wire.Config{
		Runtime: p, Engine: engine.New(p.Seam(), engine.DefaultFormats(), quiet), Logger: quiet,
		Admission: adm, RandomPlacement: random,
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * cfg.Conversations, DisableCompression: true}}
	defer hc.CloseIdleConnections()

	res := &poolResult{served: map[string]int{}}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for c := range cfg.Conversations {
		wg.Add(1)
		go func() {
			defer wg.Done()
			previous, where, left := "", "", 0
			// Instructions of a few hundred tokens, as agents send, sent every turn
			// and starting with words no other conversation, run or setup used: a
			// conversation finds only its own turns cached.
			instructions := fmt.Sprintf("[%d-%d-%d] %s", time.Now().UnixNano()%1e6, run, c, question)
			for turn := 1; turn <= cfg.Turns; turn++ {
				msg := "Tell me a story."
				if turn > 1 {
					msg = "Go on."
				}
				req := map[string]any{"model": model, "instructions": instructions, "input": msg, "temperature": 0}
				if previous != "" {
					req["previous_response_id"] = previous
				}
				s, err := responsesStream(ctx, hc, base, req)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("conversation %d turn %d: %w", c, turn, err)
					}
					mu.Unlock()
					return
				}
				res.output += s.OutputTokens
				res.served[s.Runtime]++
				if turn > 1 {
					res.later++
					res.input += s.InputTokens
					res.cached += s.CachedTokens
					res.reusable += left
					if s.Runtime != where {
						res.moved++
					}
				}
				mu.Unlock()
				previous, where, left = s.ResponseID, s.Runtime, s.InputTokens+s.OutputTokens-1
			}
		}()
	}
	wg.Wait()
	res.wall = time.Since(start)
	if firstErr != nil {
		return nil, firstErr
	}
	return res, nil
}

// check holds the pool run to the targets: with two runtimes the aggregate
// output at least 1.8 times one runtime's (the median of the ratios per run); with affinity at least 0.9 of the input
// from turn 2 cached, and random routing visibly less.
func (r *PoolReport) check() {
	if len(r.Setups) < 3 {
		return
	}
	one, aff, rnd := r.Setups[0], r.Setups[1], r.Setups[2]
	speedup := r.Speedup
	r.Checks = append(r.Checks,
		Check{Name: aff.Name + " / " + one.Name + ", aggregate output", Target: ">= 1.8", Value: speedup, Met: speedup.N > 0 && speedup.Median >= 1.8},
		Check{Name: aff.Name + ", cached share from turn 2", Target: ">= 0.9", Value: aff.CachedShare, Met: aff.CachedShare.N > 0 && aff.CachedShare.Median >= 0.9},
		Check{Name: rnd.Name + ", cached share from turn 2", Target: "< affinity's", Value: rnd.CachedShare, Met: rnd.CachedShare.N > 0 && rnd.CachedShare.Median < aff.CachedShare.Median},
	)
}

// Markdown writes the pool report as docs/benchmarks.md shows it.
func (r *PoolReport) Markdown(w io.Writer) {
	s := r.Settings
	fmt.Fprintf(w, "hearth bench pool: %d conversations × %d turns, %d run(s), model %s, %d slots per runtime, num_thread %d, runtime %s, %s\n\n",
		s.Conversations, s.Turns, s.Runs, s.Model, s.Slots, s.Threads, s.RuntimeVersion, s.Duration)
	fmt.Fprintln(w, "| setup | aggregate output (tokens/s) | cached share from turn 2 | reuse of the previous turn | moved from turn 2 | wall (s) | served |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, su := range r.Setups {
		var served []string
		for _, l := range su.Runtimes {
			served = append(served, fmt.Sprintf("%s: %d", l, su.Served[l]))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", su.Name, fmtStat(su.OutputRate, "tokens/s"), fmtStat(su.CachedShare, "x"),
			fmtStat(su.Reuse, "x"), fmtStat(su.Moved, "x"), fmtStat(su.Wall, "x"), strings.Join(served, ", "))
	}
	fmt.Fprintln(w)
	for _, c := range r.Checks {
		met := "met"
		if !c.Met {
			met = "NOT met"
		}
		fmt.Fprintf(w, "- %s: %s (target %s): %s\n", c.Name, fmtStat(c.Value, "x"), c.Target, met)
	}
}
