// Package pool serves several runtimes as one: it learns which models each has, follows
// whether each answers, and sends every call of a response to the runtime its placement
// names (engine.Placement: the pool bound to it with On, chosen by the server: the
// runtime whose KV cache holds the chain's prefix, else the least loaded). It
// implements engine.Runtime, so the engine runs over a pool as over one runtime, and
// what the server needs of a runtime beside the engine (health, the model list, the
// loaded models).
//
// A runtime that stops answering is marked down: its in-flight generations fail as they
// would with one runtime, new requests go to the others, and a generation whose runtime
// refuses the connection, or resets or closes it, before any output is tried once on
// another runtime that has the model. A runtime comes back when it answers a health
// check again.
package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"hearth"
	"hearth/engine"
)

// Runtime is one runtime of the pool; *ollama.Runtime implements it. It is what every
// runtime has; what only some have (the server's passthrough of a runtime's own HTTP
// API) is a capability of its own, found by a type assertion where it is used.
type Runtime interface {
	// Ready reports whether the runtime answers.
	Ready(ctx context.Context) error
	// Models lists the models the runtime has.
	Models(ctx context.Context) ([]engine.ListedModel, error)
	// Loaded lists the models it holds in memory now.
	Loaded(ctx context.Context) ([]engine.LoadedModel, error)
	// Label is the runtime's short stable name, what responses and metrics say served
	// them: "embedded" for a runtime inside hearth, host:port for one at a URL. Not a
	// whole URL: it is shown to clients, and a URL may carry credentials.
	Label() string
	// IsEmbedded reports whether the runtime runs inside this process.
	IsEmbedded() bool
	// Seam is the engine's view of the runtime.
	Seam() engine.Runtime
}

// Pool is several runtimes served as one. It is safe for concurrent use.
type Pool struct {
	members []*member
	// labels are the members' labels, in order.
	labels []string
	log    *slog.Logger

	mu     sync.Mutex
	onDown []func(label string)
}

type member struct {
	label string
	rt    Runtime
	seam  engine.Runtime

	mu sync.Mutex
	// checked is false until the first health check: an unchecked runtime counts as
	// up, so the first request does not wait for a check.
	checked bool
	up      bool
	since   time.Time
	lastErr string
	// models are the names the runtime has (each also under its short forms), from
	// its last listing; listed is when that was, zero before the first.
	models map[string]bool
	names  []string
	listed time.Time
	// cannot are the models whose architecture the runtime said it cannot run
	// (ModelInfo.UnsupportedBy): the pool places them on the others.
	cannot map[string]bool
}

// cannotRun reports whether the runtime said it cannot run model's architecture.
func (m *member) cannotRun(model string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cannot[model]
}

// learn records what the runtime said of model: whether it can run its architecture.
func (m *member) learn(model string, info *engine.ModelInfo) {
	m.setCannot(model, info.UnsupportedBy != "")
}

func (m *member) setCannot(model string, cannot bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !cannot {
		delete(m.cannot, model)
		return
	}
	if m.cannot == nil {
		m.cannot = map[string]bool{}
	}
	m.cannot[model] = true
}

// New returns a pool of rts, in order of preference among equals (the first also stands
// for the pool where one runtime is expected: IsEmbedded, Label). Labels must differ.
func New(rts []Runtime, log *slog.Logger) (*Pool, error) {
	if len(rts) == 0 {
		return nil, errors.New("pool: no runtimes")
	}
	if log == nil {
		log = slog.Default()
	}
	p := &Pool{log: log}
	seen := map[string]bool{}
	for _, rt := range rts {
		l := rt.Label()
		if seen[l] {
			return nil, fmt.Errorf("pool: runtime %s given twice", l)
		}
		seen[l] = true
		p.members = append(p.members, &member{label: l, rt: rt, seam: rt.Seam(), up: true})
		p.labels = append(p.labels, l)
	}
	return p, nil
}

// Labels are the pool's runtimes, in order.
func (p *Pool) Labels() []string {
	out := make([]string, len(p.members))
	for i, m := range p.members {
		out[i] = m.label
	}
	return out
}

// Runtime returns the runtime labelled label, nil if the pool has none.
func (p *Pool) Runtime(label string) Runtime {
	if m := p.member(label); m != nil {
		return m.rt
	}
	return nil
}

func (p *Pool) member(label string) *member {
	for _, m := range p.members {
		if m.label == label {
			return m
		}
	}
	return nil
}

// OnDown registers fn to be called (in its own goroutine) when a runtime is marked
// down, so that requests waiting for it can move elsewhere.
func (p *Pool) OnDown(fn func(label string)) {
	p.mu.Lock()
	p.onDown = append(p.onDown, fn)
	p.mu.Unlock()
}

// State is one runtime's state at one moment.
type State struct {
	Label    string
	Embedded bool
	// Up is whether it answered its last check (true before the first).
	Up bool
	// Since is when it went down or came back, zero if it never changed.
	Since time.Time
	// Error is why it is down.
	Error string
	// Models are the model names it had at its last listing, sorted.
	Models []string
}

// States returns each runtime's state, in the pool's order.
func (p *Pool) States() []State {
	out := make([]State, len(p.members))
	for i, m := range p.members {
		m.mu.Lock()
		s := State{Label: m.label, Embedded: m.rt.IsEmbedded(), Up: m.up, Since: m.since, Error: m.lastErr,
			Models: slices.Sorted(slices.Values(m.names))}
		m.mu.Unlock()
		out[i] = s
	}
	return out
}

// setState records a check's result; it reports whether the runtime just went down.
func (p *Pool) setState(m *member, err error) {
	m.mu.Lock()
	wasUp := m.up
	m.checked = true
	switch {
	case err != nil && m.up:
		m.up, m.since, m.lastErr = false, time.Now(), err.Error()
	case err != nil:
		m.lastErr = err.Error()
	case !m.up:
		m.up, m.since, m.lastErr = true, time.Now(), ""
	}
	up := m.up
	m.mu.Unlock()
	switch {
	case wasUp && !up:
		p.log.Error("runtime down; its requests go to the others until it answers again", "runtime", m.label, "error", err)
		p.mu.Lock()
		fns := slices.Clone(p.onDown)
		p.mu.Unlock()
		for _, fn := range fns {
			go fn(m.label)
		}
	case !wasUp && up:
		p.log.Info("runtime is back", "runtime", m.label)
	}
}

// check asks one runtime whether it answers and, when it does, which models it has. A
// runtime that answers but cannot list keeps its last listing: it is up all the same.
func (p *Pool) check(ctx context.Context, m *member) error {
	err := m.rt.Ready(ctx)
	if err == nil {
		if list, lerr := m.rt.Models(ctx); lerr != nil {
			p.log.Debug("runtime answers but does not list its models", "runtime", m.label, "error", lerr)
		} else {
			names, listed := map[string]bool{}, make([]string, 0, len(list))
			for _, lm := range list {
				listed = append(listed, lm.Name)
				for _, n := range []string{lm.Name, lm.Model} {
					if n != "" {
						names[n] = true
						names[strings.TrimSuffix(n, ":latest")] = true
					}
				}
			}
			m.mu.Lock()
			m.models, m.names, m.listed = names, listed, time.Now()
			m.mu.Unlock()
		}
	}
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// The caller left, which says nothing of the runtime (a deadline does: the
		// runtime did not answer in time).
		return err
	}
	p.setState(m, err)
	return err
}

// Check checks every runtime at once, refreshing its state and model list, and returns
// nil when any answers, else every runtime's error.
func (p *Pool) Check(ctx context.Context) error {
	errs := make([]error, len(p.members))
	var wg sync.WaitGroup
	for i, m := range p.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.check(ctx, m); err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.label, err)
			}
		}()
	}
	wg.Wait()
	if slices.Contains(errs, nil) {
		return nil
	}
	if len(errs) == 1 {
		return errors.Unwrap(errs[0])
	}
	return errors.Join(errs...)
}

// Ready is Check: the pool serves while any of its runtimes does.
func (p *Pool) Ready(ctx context.Context) error { return p.Check(ctx) }

// has reports whether the runtime's last listing has model; unknown (never listed) is
// true, so that a runtime not yet listed is not left out.
func (m *member) has(model string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hasLocked(model)
}

func (m *member) hasLocked(model string) bool {
	return m.listed.IsZero() || m.models[model] || m.models[strings.TrimSuffix(model, ":latest")]
}

func (m *member) isUp() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up
}

// Candidates are the runtimes a request for model may go to, in the pool's order: the
// placement policy's first step (filter, placement.go).
func (p *Pool) Candidates(model string) []string {
	var buf [8]state
	cands := filter(p.appendStates(buf[:0], model, nil))
	out := make([]string, len(cands))
	for i, s := range cands {
		out[i] = s.label
	}
	return out
}

// Serves reports whether the runtime labelled label is up and has model: a chain's
// runtime keeps its chain while it does.
func (p *Pool) Serves(label, model string) bool {
	m := p.member(label)
	return m != nil && m.isUp() && m.has(model)
}

// CountTokens counts texts' tokens with the tokenizer of model on a runtime that has
// it; one that cannot tokenize for it (an external runtime with a tokenizer it cannot
// build) passes the call to another that has the model, if any.
func (p *Pool) CountTokens(ctx context.Context, model string, texts []string) ([]int, error) {
	var err error
	for _, l := range p.Candidates(model) {
		m := p.member(l)
		if m == nil {
			continue
		}
		t, ok := m.seam.(engine.Tokenizer)
		if !ok {
			err = fmt.Errorf("%w: runtime %s counts no tokens", engine.ErrNoTokenizer, m.label)
			continue
		}
		var n []int
		if n, err = t.CountTokens(ctx, model, texts); err == nil || !(errors.Is(err, engine.ErrNoTokenizer) || refused(err)) {
			return n, err
		}
	}
	if err == nil {
		err = fmt.Errorf("%w: %q", engine.ErrModelNotFound, model)
	}
	return nil, err
}

// choose is the runtime that serves a call for model placed at pl: the one pl names,
// else the first candidate (then named in pl, so the response's later calls go there
// too).
func (p *Pool) choose(pl *engine.Placement, model string) *member {
	if m := p.member(pl.Runtime()); m != nil && !(m.cannotRun(model) && p.Candidates(model)[0] != m.label) {
		return m
	}
	m := p.member(p.Candidates(model)[0])
	if pl != nil {
		pl.Move(m.label)
	}
	return m
}

// another is a runtime other than not that is up and has model, nil if none.
func (p *Pool) another(model string, not *member) *member {
	for _, l := range p.Candidates(model) {
		if m := p.member(l); m != not && m.isUp() {
			return m
		}
	}
	return nil
}

// refused reports whether err is a runtime refusing the connection (or otherwise not
// reachable when dialled): nothing was sent, so the request may go elsewhere.
func refused(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// dropped reports whether err is a connection the runtime reset or closed before it
// answered: the HTTP client sent the request over a connection kept from an earlier
// call, and the runtime had died since (or closed the idle connection as the request
// went out). Nothing ran there, so the request may go elsewhere, as a refused one.
func dropped(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// unreached reports whether a call that got nothing back from m failed because it did
// not reach a working runtime (refused or dropped, above), so that it may go to another.
// A refusal marks m down at once; a dropped connection has it checked (a live runtime
// closing an idle connection stays up).
func (p *Pool) unreached(ctx context.Context, m *member, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	switch {
	case refused(err):
		p.setState(m, err)
	case dropped(err):
		go p.recheck(m)
	default:
		return false
	}
	return true
}

// lost reports whether err is the runtime's connection failing (not a refusal by the
// runtime, not the caller's own error or cancellation): worth a health check now.
func lost(ctx context.Context, err error) bool {
	var se *engine.StatusError
	return err != nil && ctx.Err() == nil && !errors.As(err, &se) && !errors.Is(err, engine.ErrModelNotFound)
}

// Model describes model as the first runtime that has it has it (Bound.Model for a
// placed call).
func (p *Pool) Model(ctx context.Context, name string) (*engine.ModelInfo, error) {
	return p.model(ctx, nil, name)
}

// model describes model as the runtime the call is placed on (pl) has it. A runtime
// that cannot run the model's architecture (the embedded runtime's Ollama release is
// older than the model) hands the call to another runtime of the pool that has the
// model and can, named in the placement so that the response's generation goes there
// too.
func (p *Pool) model(ctx context.Context, pl *engine.Placement, name string) (*engine.ModelInfo, error) {
	m := p.choose(pl, name)
	info, err := m.seam.Model(ctx, name)
	if p.unreached(ctx, m, err) {
		if alt := p.another(name, m); alt != nil {
			p.moved(pl, m, alt, err)
			m = alt
			info, err = alt.seam.Model(ctx, name)
		}
	}
	if lost(ctx, err) {
		go p.recheck(m)
	}
	if err == nil {
		m.learn(name, info)
	}
	if err == nil && info.UnsupportedBy != "" {
		if alt, altInfo := p.capable(ctx, name, m); alt != nil {
			p.placed(pl, m, alt, info)
			return altInfo, nil
		}
	}
	return info, err
}

// capable is a runtime other than not, up and with model, whose runtime can run the
// model's architecture, and its description of the model; nil if none.
func (p *Pool) capable(ctx context.Context, model string, not *member) (*member, *engine.ModelInfo) {
	for _, l := range p.Candidates(model) {
		m := p.member(l)
		if m == not || !m.isUp() || !m.has(model) || m.cannotRun(model) {
			continue
		}
		if info, err := m.seam.Model(ctx, model); err == nil {
			if m.learn(model, info); info.UnsupportedBy == "" {
				return m, info
			}
		}
	}
	return nil, nil
}

// placed names alt in the call's placement pl because from cannot run the model's
// architecture.
func (p *Pool) placed(pl *engine.Placement, from, alt *member, info *engine.ModelInfo) {
	p.log.Info("runtime cannot run the model's architecture; serving it from another",
		"runtime", from.label, "architecture", info.Architecture, "to", alt.label)
	if pl != nil {
		pl.Move(alt.label)
	}
}

// unsupportedArchitecture reports whether err is a runtime's refusal of a model whose
// architecture it cannot run (engine.ErrUnsupportedArchitecture).
func unsupportedArchitecture(err error) bool {
	var he *hearth.Error
	return errors.As(err, &he) && he.Code == engine.CodeUnsupportedArchitecture
}

// Generate runs the generation on the first runtime that has the model (Bound.Generate
// for a placed call).
func (p *Pool) Generate(ctx context.Context, req *engine.GenerateRequest, fn func(engine.Chunk) error) error {
	return p.generate(ctx, nil, req, fn)
}

// generate runs the generation on the runtime the call is placed on (pl); one refused
// before any output runs on another runtime that has the model, once.
func (p *Pool) generate(ctx context.Context, pl *engine.Placement, req *engine.GenerateRequest, fn func(engine.Chunk) error) error {
	m := p.choose(pl, req.Model)
	started := false
	var fnErr error
	each := func(c engine.Chunk) error {
		started = true
		if err := fn(c); err != nil {
			fnErr = err
			return err
		}
		return nil
	}
	err := m.seam.Generate(ctx, req, each)
	if !started && p.unreached(ctx, m, err) {
		if alt := p.another(req.Model, m); alt != nil {
			p.moved(pl, m, alt, err)
			m = alt
			err = m.seam.Generate(ctx, req, each)
		}
	}
	if fnErr == nil && lost(ctx, err) {
		go p.recheck(m)
	}
	return err
}

// moved names alt in the call's placement pl after from did not take it (unreached).
func (p *Pool) moved(pl *engine.Placement, from, alt *member, err error) {
	p.log.Warn("runtime did not take the call; trying another", "runtime", from.label, "to", alt.label, "error", err)
	if pl != nil {
		pl.Move(alt.label)
	}
}

// recheck checks a runtime whose connection failed mid-call, so that it is marked down
// at once, not at the next periodic check.
func (p *Pool) recheck(m *member) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	p.check(ctx, m)
}

// CheckFormat asks the first runtime: the engine checks a schema before it knows where
// the response runs, and a pool's runtimes are expected to run the same Ollama, whose
// grammar conversion is the same everywhere.
func (p *Pool) CheckFormat(ctx context.Context, schema []byte) error {
	return p.members[0].seam.CheckFormat(ctx, schema)
}

// Models lists the models of every runtime that answers, each once, with the runtimes
// that have it; an error only when none answers.
func (p *Pool) Models(ctx context.Context) ([]engine.ListedModel, error) {
	lists := make([][]engine.ListedModel, len(p.members))
	errs := make([]error, len(p.members))
	var wg sync.WaitGroup
	for i, m := range p.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i], errs[i] = m.rt.Models(ctx)
		}()
	}
	wg.Wait()
	var out []engine.ListedModel
	at := map[string]int{}
	answered := false
	for i, list := range lists {
		if errs[i] != nil {
			continue
		}
		answered = true
		for _, lm := range list {
			j, ok := at[lm.Name]
			if !ok {
				j = len(out)
				at[lm.Name] = j
				lm.Runtimes = nil
				out = append(out, lm)
			}
			out[j].Runtimes = append(out[j].Runtimes, p.members[i].label)
		}
	}
	if !answered {
		if len(errs) == 1 {
			return nil, errs[0]
		}
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Loaded lists the models every runtime that answers holds in memory.
func (p *Pool) Loaded(ctx context.Context) ([]engine.LoadedModel, error) {
	var out []engine.LoadedModel
	var errs []error
	for _, m := range p.members {
		list, err := m.rt.Loaded(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.label, err))
			continue
		}
		for i := range list {
			list[i].Runtime = m.label
		}
		out = append(out, list...)
	}
	if len(errs) == len(p.members) {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Label is the first runtime's label.
func (p *Pool) Label() string { return p.members[0].label }

// IsEmbedded reports whether the first runtime runs inside this process.
func (p *Pool) IsEmbedded() bool { return p.members[0].rt.IsEmbedded() }

// Seam is the pool itself: it routes the engine's calls (On: a response's to its
// placement).
func (p *Pool) Seam() engine.Runtime { return p }

var (
	_ engine.Runtime = (*Pool)(nil)
	_ engine.Placer  = (*Pool)(nil)
)

// On is the pool bound to pl: every call made through it goes to the runtime pl names
// (nil: the first runtime that has the model), and a move the pool makes (the runtime
// did not take the call, or cannot run the model's architecture) is written in pl.
func (p *Pool) On(pl *engine.Placement) engine.Runtime { return &Bound{p: p, pl: pl} }

// Bound is a pool bound to one placement (On). It implements engine.Runtime,
// engine.Embedder and engine.Tokenizer.
type Bound struct {
	p  *Pool
	pl *engine.Placement
}

// Model is Pool.Model on the placement's runtime.
func (b *Bound) Model(ctx context.Context, name string) (*engine.ModelInfo, error) {
	return b.p.model(ctx, b.pl, name)
}

// Generate is Pool.Generate on the placement's runtime.
func (b *Bound) Generate(ctx context.Context, req *engine.GenerateRequest, fn func(engine.Chunk) error) error {
	return b.p.generate(ctx, b.pl, req, fn)
}

// CheckFormat is Pool.CheckFormat: the same everywhere.
func (b *Bound) CheckFormat(ctx context.Context, schema []byte) error {
	return b.p.CheckFormat(ctx, schema)
}

// Embed is Pool.Embed on the placement's runtime.
func (b *Bound) Embed(ctx context.Context, req *engine.EmbedRequest) (*engine.EmbedResult, error) {
	return b.p.embed(ctx, b.pl, req)
}

// CountTokens is Pool.CountTokens: any runtime that has the model counts alike.
func (b *Bound) CountTokens(ctx context.Context, model string, texts []string) ([]int, error) {
	return b.p.CountTokens(ctx, model, texts)
}

var (
	_ engine.Embedder  = (*Bound)(nil)
	_ engine.Tokenizer = (*Bound)(nil)
)

// Embed runs on the first runtime that has the model (Bound.Embed for a placed call).
func (p *Pool) Embed(ctx context.Context, req *engine.EmbedRequest) (*engine.EmbedResult, error) {
	return p.embed(ctx, nil, req)
}

// embed runs on the runtime the call is placed on (pl), moving to another once if the
// first did not take the call (unreached), as generate does.
func (p *Pool) embed(ctx context.Context, pl *engine.Placement, req *engine.EmbedRequest) (*engine.EmbedResult, error) {
	m := p.choose(pl, req.Model)
	e, ok := m.seam.(engine.Embedder)
	if !ok {
		return nil, &engine.StatusError{StatusCode: 501, Message: "runtime " + m.label + " serves no embeddings"}
	}
	res, err := e.Embed(ctx, req)
	if p.unreached(ctx, m, err) {
		if alt := p.another(req.Model, m); alt != nil {
			if e, ok := alt.seam.(engine.Embedder); ok {
				p.moved(pl, m, alt, err)
				return e.Embed(ctx, req)
			}
		}
	}
	if err != nil && unsupportedArchitecture(err) && ctx.Err() == nil {
		m.setCannot(req.Model, true)
		if alt, _ := p.capable(ctx, req.Model, m); alt != nil {
			if e, ok := alt.seam.(engine.Embedder); ok {
				if pl != nil {
					pl.Move(alt.label)
				}
				return e.Embed(ctx, req)
			}
		}
	}
	return res, err
}

// ModelNames are the names of the models every runtime that answers has: what a
// model_not_found compares a name with (engine.ModelCatalog).
func (p *Pool) ModelNames(ctx context.Context) []string {
	list, err := p.Models(ctx)
	if err != nil {
		return nil
	}
	names := make([]string, len(list))
	for i, m := range list {
		names[i] = m.Name
	}
	return names
}

// ModelPlaces are where each runtime keeps its models (engine.ModelCatalog).
func (p *Pool) ModelPlaces() []engine.ModelPlace {
	out := make([]engine.ModelPlace, len(p.members))
	for i, m := range p.members {
		out[i] = engine.ModelPlace{Runtime: m.label, Embedded: m.rt.IsEmbedded()}
		if d, ok := m.rt.(interface{ ModelsDirectory() string }); ok {
			out[i].Dir = d.ModelsDirectory()
		}
	}
	return out
}
