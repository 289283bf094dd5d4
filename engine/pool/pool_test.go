package pool

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"hearth/engine"
)

// fake is a runtime whose answers the test sets: its models, whether it answers, and
// what a generation does.
type fake struct {
	host string

	mu     sync.Mutex
	down   error    // Ready's and every call's error while set
	models []string // what it lists
	gens   int      // generations it was asked for
	// midway, when set, fails a generation after its first chunk.
	midway error
	// unready, when set, is Ready's error alone.
	unready error
	// noTokenizer: CountTokens answers engine.ErrNoTokenizer (an external runtime
	// whose model's tokenizer the seam cannot build).
	noTokenizer bool
	counted     int // CountTokens calls answered
	// cannot are the models whose architecture this runtime says it cannot run.
	cannot []string
	// dropNext, when set, fails the next generation with it before any output, once.
	dropNext error
}

// CountTokens counts a token per byte.
func (f *fake) CountTokens(_ context.Context, model string, texts []string) ([]int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.down != nil:
		return nil, f.down
	case f.noTokenizer:
		return nil, engine.ErrNoTokenizer
	}
	f.counted++
	n := make([]int, len(texts))
	for i, t := range texts {
		n[i] = len(t)
	}
	return n, nil
}

func (f *fake) set(fn func(*fake)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fake) Ready(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return f.down
	}
	return f.unready
}

func (f *fake) Models(context.Context) ([]engine.ListedModel, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	var out []engine.ListedModel
	for _, m := range f.models {
		out = append(out, engine.ListedModel{Name: m, Model: m})
	}
	return out, nil
}

func (f *fake) Loaded(context.Context) ([]engine.LoadedModel, error) { return nil, nil }
func (f *fake) Label() string                                        { return f.host }
func (f *fake) IsEmbedded() bool                                     { return false }
func (f *fake) Seam() engine.Runtime                                 { return f }

func (f *fake) CheckFormat(context.Context, []byte) error { return nil }

func (f *fake) Model(_ context.Context, name string) (*engine.ModelInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	info := &engine.ModelInfo{Family: f.host, Architecture: "arch"}
	if slices.Contains(f.cannot, name) {
		info.UnsupportedBy = f.host
	}
	return info, nil
}

func (f *fake) Generate(_ context.Context, req *engine.GenerateRequest, fn func(engine.Chunk) error) error {
	f.mu.Lock()
	f.gens++
	down, midway, drop := f.down, f.midway, f.dropNext
	f.dropNext = nil
	f.mu.Unlock()
	if down != nil {
		return down
	}
	if drop != nil {
		return drop
	}
	if err := fn(engine.Chunk{Text: f.host}); err != nil {
		return err
	}
	if midway != nil {
		return midway
	}
	return fn(engine.Chunk{Done: true, DoneReason: "stop", EvalCount: 1})
}

// refusedErr is what dialling a runtime that listens no more returns.
var refusedErr = &url.Error{Op: "Post", URL: "http://x/api/generate", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}

func newPool(t *testing.T, fakes ...*fake) *Pool {
	t.Helper()
	rts := make([]Runtime, len(fakes))
	for i, f := range fakes {
		rts[i] = f
	}
	p, err := New(rts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// generate runs a generation of model placed on label ("": unplaced) and returns the
// runtime that answered and where the placement ended.
func generate(t *testing.T, p *Pool, model, label string) (string, string, error) {
	t.Helper()
	pl := engine.NewPlacement(label)
	var from string
	err := p.On(pl).Generate(context.Background(), &engine.GenerateRequest{Model: model}, func(c engine.Chunk) error {
		if !c.Done {
			from = c.Text
		}
		return nil
	})
	return from, pl.Runtime(), err
}

// Calls go where their placement says; an unplaced call goes to the first runtime that
// has the model and is named in its placement, so the rest of its response follows.
func TestPlacementRoutes(t *testing.T) {
	a := &fake{host: "a:1", models: []string{"m:latest"}}
	b := &fake{host: "b:1", models: []string{"m:latest", "only-b:latest"}}
	p := newPool(t, a, b)
	if err := p.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if from, _, _ := generate(t, p, "m", "b:1"); from != "b:1" {
		t.Errorf("placed on b:1, served by %q", from)
	}
	if from, pl, _ := generate(t, p, "only-b", ""); from != "b:1" || pl != "b:1" {
		t.Errorf("unplaced only-b: served by %q, placement %q; want b:1, the only one that has it", from, pl)
	}
	if got := p.Candidates("m:latest"); !slices.Equal(got, []string{"a:1", "b:1"}) {
		t.Errorf("Candidates(m) = %v", got)
	}
	if got := p.Candidates("nowhere"); !slices.Equal(got, []string{"a:1", "b:1"}) {
		t.Errorf("a model no listing has goes to any runtime up, which answers for it: %v", got)
	}
	info, err := p.On(engine.NewPlacement("b:1")).Model(context.Background(), "m")
	if err != nil || info.Family != "b:1" {
		t.Errorf("Model placed on b:1: %+v, %v", info, err)
	}
	list, err := p.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	where := map[string][]string{}
	for _, m := range list {
		where[m.Name] = m.Runtimes
	}
	if !slices.Equal(where["m:latest"], []string{"a:1", "b:1"}) || !slices.Equal(where["only-b:latest"], []string{"b:1"}) || len(list) != 2 {
		t.Errorf("Models: %+v", list)
	}
}

// A runtime that refuses the connection before any output is marked down, the call runs
// once on another runtime that has the model, and the placement says so; requests then
// go to the others until it answers a check again.
func TestRefusedRetriedElsewhere(t *testing.T) {
	a := &fake{host: "a:1", models: []string{"m"}}
	b := &fake{host: "b:1", models: []string{"m"}}
	p := newPool(t, a, b)
	downs := make(chan string, 4)
	p.OnDown(func(l string) { downs <- l })
	b.set(func(f *fake) { f.down = refusedErr })

	from, pl, err := generate(t, p, "m", "b:1")
	if err != nil || from != "a:1" || pl != "a:1" {
		t.Fatalf("refused on b:1: served by %q, placement %q, error %v; want a:1", from, pl, err)
	}
	select {
	case l := <-downs:
		if l != "b:1" {
			t.Errorf("OnDown(%q)", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnDown not called")
	}
	if got := p.Candidates("m"); !slices.Equal(got, []string{"a:1"}) {
		t.Errorf("Candidates with b down = %v", got)
	}
	if st := p.States()[1]; st.Up || st.Error == "" || st.Since.IsZero() {
		t.Errorf("b's state %+v, want down with its error", st)
	}
	if err := p.Ready(context.Background()); err != nil {
		t.Errorf("Ready with a up: %v", err)
	}

	// Retried once only: with both refusing, the call fails with the refusal.
	a.set(func(f *fake) { f.down = refusedErr })
	if _, _, err := generate(t, p, "m", "a:1"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("both refusing: %v", err)
	}
	if err := p.Ready(context.Background()); err == nil {
		t.Error("Ready with none answering: nil")
	}

	// Back when it answers.
	a.set(func(f *fake) { f.down = nil })
	b.set(func(f *fake) { f.down = nil })
	if err := p.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := p.Candidates("m"); !slices.Equal(got, []string{"a:1", "b:1"}) {
		t.Errorf("Candidates after both came back = %v", got)
	}
}

// A generation that fails after output is not run again (the client saw part of it):
// the error comes back, and the runtime is checked at once.
func TestFailedMidwayNotRetried(t *testing.T) {
	a := &fake{host: "a:1", models: []string{"m"}}
	b := &fake{host: "b:1", models: []string{"m"}}
	p := newPool(t, a, b)
	lostErr := &url.Error{Op: "Post", URL: "http://b:1/api/generate", Err: errors.New("unexpected EOF")}
	// The runtime is gone for good once this generation fails: the check that follows
	// the failure finds it so.
	b.set(func(f *fake) { f.midway, f.unready = lostErr, refusedErr })
	from, pl, err := generate(t, p, "m", "b:1")
	if !errors.Is(err, lostErr) || from != "b:1" || pl != "b:1" {
		t.Fatalf("midway failure: served by %q, placement %q, error %v", from, pl, err)
	}
	if a.gens != 0 {
		t.Errorf("a ran %d generations; a failure after output must not be retried", a.gens)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Serves("b:1", "m") {
		if time.Now().After(deadline) {
			t.Fatal("b not marked down after its connection failed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Labels must differ; the embedded runtime is "embedded", the rest host:port.
func TestLabels(t *testing.T) {
	if _, err := New([]Runtime{&fake{host: "a:1"}, &fake{host: "a:1"}}, nil); err == nil {
		t.Error("two runtimes with one label: no error")
	}
	if _, err := New(nil, nil); err == nil {
		t.Error("no runtimes: no error")
	}
}

// CountTokens goes to a runtime that has the model; one that cannot tokenize for it,
// or refuses the connection, passes it to the next that has it; another error is the
// caller's.
func TestCountTokensPassesOn(t *testing.T) {
	a := &fake{host: "a", models: []string{"m"}, noTokenizer: true}
	b := &fake{host: "b", models: []string{"m"}}
	p := newPool(t, a, b)
	n, err := p.CountTokens(context.Background(), "m", []string{"four", "ab"})
	if err != nil || !slices.Equal(n, []int{4, 2}) || b.counted != 1 {
		t.Fatalf("counted %v %v by b %d", n, err, b.counted)
	}
	b.set(func(f *fake) { f.down = refusedErr })
	if _, err := p.CountTokens(context.Background(), "m", []string{"x"}); !errors.Is(err, refusedErr.Err) {
		t.Errorf("the last refusing: %v", err)
	}
	b.set(func(f *fake) { f.down = errors.New("broken") })
	if _, err := p.CountTokens(context.Background(), "m", []string{"x"}); err == nil || err.Error() != "broken" {
		t.Errorf("another error: %v, want b's", err)
	}
	a.set(func(f *fake) { f.noTokenizer = false })
	if _, err := p.CountTokens(context.Background(), "m", []string{"x"}); err != nil || a.counted != 1 {
		t.Errorf("a counts first now: %v (a %d)", err, a.counted)
	}
}

// A model whose architecture one runtime cannot run (the embedded runtime's Ollama is
// older than the model) is served by another runtime of the pool that has it: the
// lookup moves the placement there, later requests are placed there from the start,
// and with no other runtime up the refusal stands.
func TestUnsupportedArchitecturePlacedElsewhere(t *testing.T) {
	old := &fake{host: "embedded", models: []string{"new", "plain"}, cannot: []string{"new"}}
	newer := &fake{host: "newer:11434", models: []string{"new", "plain"}}
	p := newPool(t, old, newer)

	// The server placed the first request on the embedded runtime (least loaded).
	pl := engine.NewPlacement("embedded")
	ctx := context.Background()
	info, err := p.On(pl).Model(ctx, "new")
	if err != nil {
		t.Fatal(err)
	}
	if info.UnsupportedBy != "" || info.Family != "newer:11434" || pl.Runtime() != "newer:11434" {
		t.Fatalf("lookup: info %+v, placement %q; want the newer runtime's, placed there", info, pl.Runtime())
	}
	var from string
	if err := p.On(pl).Generate(ctx, &engine.GenerateRequest{Model: "new"}, func(c engine.Chunk) error {
		if !c.Done {
			from = c.Text
		}
		return nil
	}); err != nil || from != "newer:11434" {
		t.Fatalf("generation ran on %q (%v), want newer:11434", from, err)
	}

	if got := p.Candidates("new"); !slices.Equal(got, []string{"newer:11434"}) {
		t.Fatalf("Candidates(new) = %v, want only the runtime that can run it", got)
	}
	if got := p.Candidates("plain"); !slices.Equal(got, []string{"embedded", "newer:11434"}) {
		t.Fatalf("Candidates(plain) = %v, want both", got)
	}
	// A later request placed on the embedded runtime (a chain's runtime) moves too,
	// without asking it again.
	if from, placed, err := generate(t, p, "new", "embedded"); err != nil || from != "newer:11434" || placed != "newer:11434" {
		t.Fatalf("placed on embedded: ran on %q, placement %q (%v)", from, placed, err)
	}
	if from, _, err := generate(t, p, "plain", "embedded"); err != nil || from != "embedded" {
		t.Fatalf("a model the embedded runtime can run ran on %q (%v)", from, err)
	}

	// With the newer runtime down, the embedded runtime's refusal stands.
	newer.set(func(f *fake) { f.down = refusedErr })
	p.setState(p.member("newer:11434"), refusedErr)
	pl = engine.NewPlacement("")
	info, err = p.On(pl).Model(context.Background(), "new")
	if err != nil || info.UnsupportedBy != "embedded" {
		t.Fatalf("alone: info %+v (%v), want the embedded runtime's refusal", info, err)
	}
}

// A generation whose connection the runtime resets or closes before answering (a
// connection kept from an earlier call to a runtime that died since, or closed as the
// request went out) did not run there: it goes to another runtime, as a refused one
// does, and the runtime is checked rather than marked down (this one still answers).
func TestDroppedRetriedElsewhere(t *testing.T) {
	for name, drop := range map[string]error{
		"reset": &url.Error{Op: "Post", URL: "http://b/api/generate", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}},
		"eof":   &url.Error{Op: "Post", URL: "http://b/api/generate", Err: io.EOF},
	} {
		a := &fake{host: "a:1", models: []string{"m"}}
		b := &fake{host: "b:1", models: []string{"m"}, dropNext: drop}
		p := newPool(t, a, b)
		from, pl, err := generate(t, p, "m", "b:1")
		if err != nil || from != "a:1" || pl != "a:1" {
			t.Fatalf("%s on b:1: served by %q, placement %q, error %v; want a:1", name, from, pl, err)
		}
		p.recheck(p.member("b:1"))
		if st := p.States()[1]; !st.Up {
			t.Errorf("%s: b's state %+v, want up (it answers its health check)", name, st)
		}
		// Once only, and never after output: a failure mid-stream is the caller's.
		a.set(func(f *fake) { f.dropNext = drop })
		b.set(func(f *fake) { f.dropNext = drop })
		if _, _, err := generate(t, p, "m", "a:1"); !errors.Is(err, drop) {
			t.Errorf("%s on both: %v, want the second runtime's error", name, err)
		}
	}
}
