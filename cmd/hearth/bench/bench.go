// Package bench measures hearth against the runtime it drives, side by side in one run
// on the same models: the runtime's raw /api/generate (the floor no server on top of it
// can beat), the runtime's own /v1/responses, and hearth's /v1/responses. Every number
// is reported as a ratio to the floor, measured in the same run, so the noise of a
// shared machine cancels as far as it can.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/internal/cpubuild"
	"hearth/scriptmodel"
	"hearth/server"
)

// Config sets the size of a run.
type Config struct {
	// Runs is how many times each workload is measured (the report gives median, min
	// and max over runs).
	Runs int
	// Turns is the length of the conversation workload.
	Turns int
	// Concurrency is the number of simultaneous streams of the concurrency workload.
	Concurrency int
	// Tiny uses the catalogue's tiny script models instead of their bench variants: a
	// check that the command works, not a benchmark.
	Tiny bool
	// Layers and Width size the bench models (0: scriptmodel.Bench's), to give a GPU
	// a model it does not finish at once.
	Layers, Width int
	// Progress, when set, receives one line per measured step.
	Progress io.Writer
	// OpenStore opens the store of the hearth under measure at path, a file in a
	// temporary directory (cmd/hearth passes the store it serves with).
	OpenStore func(path string) (Store, error)
}

// Store is what the harness needs of a store: the server's, and closing it when the
// run ends.
type Store interface {
	server.Store
	io.Closer
}

// Quick is a CI-sized configuration: every workload once, short.
func Quick() Config { return Config{Runs: 1, Turns: 3, Concurrency: 2} }

// Default is the configuration docs/benchmarks.md's numbers come from.
func Default() Config { return Config{Runs: 5, Turns: 20, Concurrency: 16} }

// The three systems measured, in the report's column order.
const (
	SystemRaw     = "runtime /api/generate"
	SystemRuntime = "runtime /v1/responses"
	SystemHearth  = "hearth /v1/responses"
)

var systems = []string{SystemRaw, SystemRuntime, SystemHearth}

// env is everything a run talks to.
type env struct {
	cfg    Config
	rt     *ollama.Runtime
	hearth string // hearth's base URL
	hc     *http.Client
	rtc    *http.Client   // to the runtime, over its own transport (the embedded one has no address)
	eng    *engine.Engine // renders the exact prompts hearth sends, for the raw floor
	models struct{ long, plain, call string }
	nonce  int
}

// Run creates the script models in rt, serves hearth in this process on a loopback
// port (with a database in a temporary directory), runs every workload and returns the
// report.
func Run(ctx context.Context, rt *ollama.Runtime, cfg Config) (*Report, error) {
	if cfg.Runs < 1 || cfg.Turns < 1 || cfg.Concurrency < 1 {
		return nil, errors.New("bench: runs, turns and concurrency must be at least 1")
	}
	e := &env{cfg: cfg, rt: rt, hc: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 4 * cfg.Concurrency, DisableCompression: true,
	}}, rtc: &http.Client{Transport: rt.Transport()}}
	defer e.hc.CloseIdleConnections()
	defer e.rtc.CloseIdleConnections()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.eng = engine.New(rt.Seam(), engine.DefaultFormats(), quiet)

	if err := e.createModels(ctx); err != nil {
		return nil, err
	}

	base, stop, err := serveHearth(cfg.OpenStore, wire.Config{
		Runtime: rt, Engine: engine.New(rt.Seam(), engine.DefaultFormats(), quiet), Logger: quiet,
	})
	if err != nil {
		return nil, err
	}
	defer stop()
	e.hearth = base

	rep := &Report{Settings: Settings{
		Runs: cfg.Runs, Turns: cfg.Turns, Concurrency: cfg.Concurrency, Tiny: cfg.Tiny,
		Models:      []string{e.models.long, e.models.plain, e.models.call},
		NumParallel: envOr("OLLAMA_NUM_PARALLEL", "1"), RuntimeVersion: ollama.RuntimeVersion,
		Embedded: rt.Embedded, Started: time.Now().UTC(),
	}}
	if !cfg.Tiny {
		rep.Settings.Layers, rep.Settings.Width = scriptmodel.BenchLayers, scriptmodel.BenchWidth
		if cfg.Layers > 0 {
			rep.Settings.Layers = cfg.Layers
		}
		if cfg.Width > 0 {
			rep.Settings.Width = cfg.Width
		}
	}
	if rt.Embedded {
		rep.Settings.CPULevel = cpubuild.Level()
		rep.Settings.CPUKernels = cpubuild.Selected().Chosen.Name
		for _, d := range rt.GPUs {
			rep.Settings.Devices = append(rep.Settings.Devices, d.Name+" "+d.Description)
		}
	}
	if err := e.warmUp(ctx); err != nil {
		return nil, fmt.Errorf("bench: warm-up: %w", err)
	}
	for _, w := range []func(context.Context, *Report) error{e.singleTurn, e.conversation, e.toolCall, e.concurrent} {
		if err := w(ctx, rep); err != nil {
			return nil, err
		}
	}
	rep.Settings.Duration = time.Since(rep.Settings.Started).Round(time.Second).String()
	rep.check()
	return rep, nil
}

// serveHearth serves hearth with cfg and a database in a temporary directory, in this
// process on a loopback port; it returns the base URL and what stops it.
func serveHearth(open func(string) (Store, error), cfg wire.Config) (base string, stop func(), err error) {
	if open == nil {
		return "", nil, errors.New("bench: no store to serve with (Config.OpenStore)")
	}
	dir, err := os.MkdirTemp("", "hearth-bench-")
	if err != nil {
		return "", nil, err
	}
	db, err := open(filepath.Join(dir, "hearth.db"))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	cfg.Database = db
	srv := &http.Server{Handler: wire.New(cfg)}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), func() {
		srv.Close()
		db.Close()
		os.RemoveAll(dir)
	}, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func (e *env) progress(format string, args ...any) {
	if e.cfg.Progress != nil {
		fmt.Fprintf(e.cfg.Progress, format+"\n", args...)
	}
}

// createModels creates the three script models the workloads use: a long text (single
// turn, concurrency: enough tokens for a decode rate), a short answer (conversation:
// the history grows by little per turn), and the tool caller.
func (e *env) createModels(ctx context.Context) error {
	cat := scriptmodel.Catalog()
	for _, m := range []struct {
		dst  *string
		spec string
		name string
	}{
		{&e.models.long, scriptmodel.LongModel, "hearth-bench-long:latest"},
		{&e.models.plain, scriptmodel.PlainModel, "hearth-bench-plain:latest"},
		{&e.models.call, scriptmodel.AgentModel, "hearth-bench-call:latest"},
	} {
		spec := cat[m.spec]
		name := m.name
		if e.cfg.Tiny {
			name = strings.Replace(name, "hearth-bench-", "hearth-bench-tiny-", 1)
		} else {
			var err error
			if spec, err = scriptmodel.BenchSized(spec, e.cfg.Layers, e.cfg.Width); err != nil {
				return err
			}
			if e.cfg.Layers != 0 || e.cfg.Width != 0 {
				name = strings.Replace(name, ":latest", fmt.Sprintf("-%dx%d:latest", spec.Layers, spec.Width), 1)
			}
		}
		e.progress("creating model %s", name)
		if _, err := scriptmodel.Create(ctx, e.rt.Client, name, spec); err != nil {
			return fmt.Errorf("bench: create %s: %w", name, err)
		}
		*m.dst = name
	}
	return nil
}

// question is the single-turn prompt after its nonce: about 200 tokens of prompt
// processing, a short real-world question's worth.
const question = "I am planning a week-long trip through the south of France in late " +
	"spring and would like to visit a few small towns, a vineyard or two and the coast. " +
	"What route would you suggest, and which days should I keep free for the markets?"

// prompt makes a user message no earlier request shares a prefix with, so every
// system processes the whole prompt rather than finding it in the runtime's cache.
func (e *env) prompt(text string) string {
	e.nonce++
	return fmt.Sprintf("[%d-%d] %s", time.Now().UnixNano()%1e6, e.nonce, text)
}

// measure sends one request of the given shape to system. input is the Open Responses
// input (a string or items), extra adds request fields (tools, tool_choice, ...);
// previous is hearth's previous_response_id. The raw system gets the exact prompt hearth
// would render for input.
func (e *env) measure(ctx context.Context, system, model string, input any, extra map[string]any, previous string) (sample, error) {
	req := map[string]any{"model": model, "input": input}
	for k, v := range extra {
		req[k] = v
	}
	switch system {
	case SystemRaw:
		return e.raw(ctx, req)
	case SystemRuntime:
		return responsesStream(ctx, e.rtc, e.rt.URL.String(), req)
	default:
		if previous != "" {
			req["previous_response_id"] = previous
		}
		return responsesStream(ctx, e.hc, e.hearth, req)
	}
}

// raw renders req the way hearth does and sends the same generation request hearth
// would send to /api/generate.
func (e *env) raw(ctx context.Context, req map[string]any) (sample, error) {
	body, _ := json.Marshal(req)
	r, _, err := hearth.DecodeCreateRequest(body)
	if err != nil {
		return sample{}, err
	}
	job, err := e.eng.Prepare(ctx, r, nil, engine.Inputs{})
	if err != nil {
		return sample{}, err
	}
	// The very request hearth would send (options, num_ctx and the truncate/shift
	// fields included): a different num_ctx would make the runtime reload the model
	// between systems.
	gen := job.GenerateRequest()
	gen.Stream = true
	b, err := json.Marshal(ollama.APIRequest(&gen))
	if err != nil {
		return sample{}, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return sample{}, err
	}
	return rawGenerate(ctx, e.rtc, e.rt.URL.String(), m)
}

// order rotates the systems from run to run, so that none is always first after
// another's work (the runner's cache, the CPU's clock).
func order(run int) []string {
	out := make([]string, len(systems))
	for i := range systems {
		out[i] = systems[(i+run)%len(systems)]
	}
	return out
}

// warmUp loads every model's runner and fills hearth's model cache, so that no
// measurement includes a model load.
func (e *env) warmUp(ctx context.Context) error {
	tools := toolsField()
	for _, s := range systems {
		for _, m := range []string{e.models.long, e.models.plain} {
			if _, err := e.measure(ctx, s, m, e.prompt("hello"), nil, ""); err != nil {
				return fmt.Errorf("%s %s: %w", s, m, err)
			}
		}
		if _, err := e.measure(ctx, s, e.models.call, e.prompt("capital?"), map[string]any{"tools": tools}, ""); err != nil {
			return fmt.Errorf("%s %s: %w", s, e.models.call, err)
		}
	}
	e.progress("warm-up done")
	return nil
}

// series collects one metric of one workload: per run, a value per system.
type series struct {
	workload, metric, unit, target string
	// higherBetter: the ratio is system/raw either way; this only says how to read it.
	higherBetter bool
	vals         map[string][]float64
}

func newSeries(workload, metric, unit, target string) *series {
	return &series{workload: workload, metric: metric, unit: unit, target: target, vals: map[string][]float64{}}
}

func (s *series) add(system string, v float64) { s.vals[system] = append(s.vals[system], v) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// singleTurn: one uncached question, streamed; time to first token, total time and the
// decode rate.
func (e *env) singleTurn(ctx context.Context, rep *Report) error {
	ttft := newSeries("single turn", "time to first token", "ms", "hearth < 1.02")
	total := newSeries("single turn", "total time", "ms", "hearth < 1.02")
	rate := newSeries("single turn", "decode rate", "tokens/s", "")
	rate.higherBetter = true
	for run := 0; run < e.cfg.Runs; run++ {
		for _, sys := range order(run) {
			s, err := e.measure(ctx, sys, e.models.long, e.prompt(question), nil, "")
			if err != nil {
				return fmt.Errorf("bench: single turn, %s: %w", sys, err)
			}
			ttft.add(sys, ms(s.TTFT))
			total.add(sys, ms(s.Total))
			rate.add(sys, s.decodeRate())
			e.progress("single turn run %d %-22s ttft %7.1f ms  total %7.1f ms  %d tokens", run+1, sys, ms(s.TTFT), ms(s.Total), s.OutputTokens)
		}
	}
	rep.add(ttft, total, rate)
	return nil
}

// conversation: Turns turns of one conversation. hearth continues it with
// previous_response_id; the runtime's /v1/responses (which ignores that field) and the
// raw floor get the whole history every turn. Each system runs its whole conversation
// before the next starts, so its turns can reuse the runtime's prompt cache.
//
// The last turn is also sent to the floor once more with a new first message, so no
// prefix of it is cached: the time every turn would take without the prefix cache,
// against which the cached turns' growth (the attention over a longer context, which
// no server avoids) can be read.
func (e *env) conversation(ctx context.Context, rep *Report) error {
	first := newSeries("conversation", "time to first token, turn 1", "ms", "")
	mid := newSeries("conversation", fmt.Sprintf("time to first token, turn %d", (e.cfg.Turns+1)/2), "ms", "")
	last := newSeries("conversation", fmt.Sprintf("time to first token, turn %d", e.cfg.Turns), "ms", "")
	uncached := newSeries("conversation", fmt.Sprintf("time to first token, turn %d with no prefix cached", e.cfg.Turns), "ms", "")
	growth := newSeries("conversation", fmt.Sprintf("turn %d / turn 1 time to first token", e.cfg.Turns), "x", "hearth < 1.5")
	growth.unit = "x"
	for run := 0; run < e.cfg.Runs; run++ {
		for _, sys := range order(run) {
			var history []map[string]any
			previous := ""
			var t1 time.Duration
			for turn := 1; turn <= e.cfg.Turns; turn++ {
				msg := fmt.Sprintf("Turn %d: go on, please.", turn)
				if turn == 1 {
					msg = e.prompt("Let us talk about the south of France.")
				}
				history = append(history, map[string]any{"role": "user", "content": msg})
				var input any = history
				if sys == SystemHearth {
					input = msg
				}
				s, err := e.measure(ctx, sys, e.models.plain, input, nil, previous)
				if err != nil {
					return fmt.Errorf("bench: conversation turn %d, %s: %w", turn, sys, err)
				}
				previous = s.ResponseID
				history = append(history, map[string]any{"role": "assistant", "content": s.Text})
				switch turn {
				case 1:
					t1 = s.TTFT
				}
				if turn == 1 {
					first.add(sys, ms(s.TTFT))
				}
				if turn == (e.cfg.Turns+1)/2 {
					mid.add(sys, ms(s.TTFT))
				}
				if turn == e.cfg.Turns {
					last.add(sys, ms(s.TTFT))
					growth.add(sys, float64(s.TTFT)/float64(t1))
					if sys == SystemHearth {
						rep.Cache = Cache{Turn: turn, InputTokens: s.InputTokens, CachedTokens: s.CachedTokens}
					}
				}
			}
			e.progress("conversation run %d %-22s turn 1 %7.1f ms  turn %d %7.1f ms", run+1, sys, first.vals[sys][run], e.cfg.Turns, last.vals[sys][run])
			if sys == SystemRaw {
				// history ends with the last answer; resend the last turn's input.
				fresh := slices.Clone(history[:len(history)-1])
				fresh[0] = map[string]any{"role": "user", "content": e.prompt("Let us talk about the south of France.")}
				s, err := e.measure(ctx, SystemRaw, e.models.plain, fresh, nil, "")
				if err != nil {
					return fmt.Errorf("bench: conversation turn %d uncached: %w", e.cfg.Turns, err)
				}
				uncached.add(SystemRaw, ms(s.TTFT))
				e.progress("conversation run %d %-22s turn %d with no prefix cached %7.1f ms", run+1, sys, e.cfg.Turns, ms(s.TTFT))
			}
		}
	}
	rep.add(first, mid, last, uncached)
	rep.addGrowth(growth)
	return nil
}

// toolsField is the tool list of the tool workload, in Open Responses form (which both
// /v1/responses endpoints take): the tool the script model calls, and another.
func toolsField() []map[string]any {
	fn := func(name, desc, param string) map[string]any {
		return map[string]any{"type": "function", "name": name, "description": desc, "parameters": map[string]any{
			"type": "object", "properties": map[string]any{param: map[string]any{"type": "string"}}, "required": []string{param},
		}}
	}
	return []map[string]any{fn(enforcedTool, "The capital city of a country", "country"), fn("get_time", "Local time in a time zone", "timezone")}
}

// enforcedTool is the one tool allowed_tools permits in the enforced turn, and the one
// the call script model calls (scriptmodel.AgentText).
const enforcedTool = "lookup_capital"

// allowedTools requires a call and restricts it to enforcedTool: hearth stops the model
// at the call's opener and continues under the grammar of that tool's call.
var allowedTools = map[string]any{"type": "allowed_tools", "mode": "required",
	"tools": []map[string]any{{"type": "function", "name": enforcedTool}}}

// toolCall: a turn whose answer is a tool call, unenforced on every system, and on
// hearth also with tool_choice allowed_tools. The script model writes the same call
// either way (its tokens pass the grammar), so enforced / unenforced is the cost of
// enforcing alone: the stop at the opener, the continuation request and grammar
// sampling.
func (e *env) toolCall(ctx context.Context, rep *Report) error {
	const wl = "tool call"
	ttft := newSeries(wl, "time to first token", "ms", "")
	total := newSeries(wl, "total time", "ms", "")
	enfTotal := newSeries(wl, "total time, allowed_tools enforced", "ms", "")
	cost := newSeries(wl, "enforced / unenforced total time", "x", "hearth < 1.15")
	enf := Enforcement{Runs: e.cfg.Runs}
	const ask = "What is the capital of France?"
	for run := 0; run < e.cfg.Runs; run++ {
		var unenforced sample
		for _, sys := range order(run) {
			extra := map[string]any{"tools": toolsField()}
			s, err := e.measure(ctx, sys, e.models.call, e.prompt(ask), extra, "")
			if err != nil {
				return fmt.Errorf("bench: tool call, %s: %w", sys, err)
			}
			ttft.add(sys, ms(s.TTFT))
			total.add(sys, ms(s.Total))
			if sys == SystemHearth {
				unenforced = s
			}
			e.progress("tool call run %d %-22s ttft %7.1f ms  total %7.1f ms  calls %q", run+1, sys, ms(s.TTFT), ms(s.Total), s.Calls)
		}
		extra := map[string]any{"tools": toolsField(), "tool_choice": allowedTools}
		s, err := e.measure(ctx, SystemHearth, e.models.call, e.prompt(ask), extra, "")
		if err != nil {
			return fmt.Errorf("bench: enforced tool call: %w", err)
		}
		enfTotal.add(SystemHearth, ms(s.Total))
		enfTotal.add(SystemRaw, total.vals[SystemRaw][run])
		cost.add(SystemHearth, float64(s.Total)/float64(unenforced.Total))
		enf.Unenforced, enf.Enforced = unenforced.Calls, s.Calls
		if len(s.Calls) > 0 && slices.Equal(s.Calls, unenforced.Calls) {
			enf.Same++
		}
		e.progress("tool call run %d %-22s enforced total %7.1f ms  calls %q", run+1, SystemHearth, ms(s.Total), s.Calls)
	}
	rep.add(ttft, total, enfTotal)
	rep.addGrowth(cost)
	rep.Enforcement = enf
	return nil
}

// concurrent: Concurrency streams at once, each its own uncached question; the wall
// time until the last ends, and the median time to first token across the streams.
func (e *env) concurrent(ctx context.Context, rep *Report) error {
	wl := fmt.Sprintf("%d concurrent streams", e.cfg.Concurrency)
	wall := newSeries(wl, "wall time, all streams", "ms", "")
	ttft := newSeries(wl, "median time to first token", "ms", "")
	throughput := newSeries(wl, "aggregate output", "tokens/s", "")
	throughput.higherBetter = true
	for run := 0; run < e.cfg.Runs; run++ {
		for _, sys := range order(run) {
			type result struct {
				s   sample
				err error
			}
			results := make(chan result, e.cfg.Concurrency)
			prompts := make([]string, e.cfg.Concurrency)
			for i := range prompts {
				prompts[i] = e.prompt(question)
			}
			start := time.Now()
			for _, p := range prompts {
				go func() {
					s, err := e.measure(ctx, sys, e.models.plain, p, nil, "")
					results <- result{s, err}
				}()
			}
			var ttfts []float64
			tokens := 0
			var firstErr error
			for range prompts {
				r := <-results
				if r.err != nil && firstErr == nil {
					firstErr = r.err
				}
				ttfts = append(ttfts, ms(r.s.TTFT))
				tokens += r.s.OutputTokens
			}
			elapsed := time.Since(start)
			if firstErr != nil {
				return fmt.Errorf("bench: %s, %s: %w", wl, sys, firstErr)
			}
			wall.add(sys, ms(elapsed))
			ttft.add(sys, summarize(ttfts).Median)
			throughput.add(sys, float64(tokens)/elapsed.Seconds())
			e.progress("%s run %d %-22s wall %8.1f ms  median ttft %8.1f ms", wl, run+1, sys, ms(elapsed), summarize(ttfts).Median)
		}
	}
	rep.add(wall, ttft, throughput)
	return nil
}
