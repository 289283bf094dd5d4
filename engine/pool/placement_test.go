package pool

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"hearth/internal/admission"
)

// The placement policy over one moment's state, case by case: which runtimes pass the
// filter, when the chain's runtime wins, how load and slots score, how equals and the
// random policy pick, and that the chain's lookup (a storage read) is made only when
// there is a choice.
func TestPlacementPolicy(t *testing.T) {
	// rt is a runtime that is up, has the model, runs one request at a time and runs
	// nothing now.
	rt := func(label string, opts ...func(*state)) state {
		s := state{label: label, up: true, has: true, slots: 1}
		for _, o := range opts {
			o(&s)
		}
		return s
	}
	down := func(s *state) { s.up = false }
	lacks := func(s *state) { s.has = false }
	cannot := func(s *state) { s.cannot = true }
	load := func(n int) func(*state) { return func(s *state) { s.load = n } }
	slots := func(n int) func(*state) { return func(s *state) { s.slots = n } }

	for _, tc := range []struct {
		name     string
		runtimes []state
		// chain is the runtime the chain's lookups name ("": none).
		chain string
		// draw is the random policy's draw; -1: not the random policy.
		draw int
		want string
		// asked: the chain's lookup must be made (false: it must not be).
		asked bool
	}{
		{name: "one runtime", runtimes: []state{rt("a", load(5))}, chain: "a", draw: -1, want: "a"},
		{name: "one runtime, down", runtimes: []state{rt("a", down)}, chain: "a", draw: -1, want: "a"},
		{name: "model only on one", runtimes: []state{rt("a", lacks), rt("b", load(3))}, chain: "a", draw: -1, want: "b"},
		{name: "model only on one that is up", runtimes: []state{rt("a", down), rt("b", load(3))}, chain: "a", draw: -1, want: "b"},
		{name: "no chain: least loaded", runtimes: []state{rt("a", load(1)), rt("b")}, draw: -1, want: "b", asked: true},
		{name: "affinity wins over load", runtimes: []state{rt("a"), rt("b", load(4))}, chain: "b", draw: -1, want: "b", asked: true},
		{name: "affinity to a full runtime still wins: its KV cache holds the prefix",
			runtimes: []state{rt("a"), rt("b", load(9), slots(2))}, chain: "b", draw: -1, want: "b", asked: true},
		{name: "affinity to a down runtime falls back to the least loaded",
			runtimes: []state{rt("a", load(2)), rt("b", down), rt("c", load(1))}, chain: "b", draw: -1, want: "c", asked: true},
		{name: "affinity to a runtime that lost the model falls back",
			runtimes: []state{rt("a", load(2)), rt("b", lacks), rt("c", load(1))}, chain: "b", draw: -1, want: "c", asked: true},
		{name: "affinity to a runtime that cannot run the architecture falls back",
			runtimes: []state{rt("a", cannot), rt("b", load(1)), rt("c", load(2))}, chain: "a", draw: -1, want: "b", asked: true},
		{name: "affinity to a runtime outside the pool falls back",
			runtimes: []state{rt("a", load(1)), rt("b")}, chain: "gone:1", draw: -1, want: "b", asked: true},
		{name: "least load", runtimes: []state{rt("a", load(3)), rt("b", load(1)), rt("c", load(2))}, draw: -1, want: "b", asked: true},
		{name: "load counts against slots", runtimes: []state{rt("a", load(1)), rt("b", load(1), slots(2))}, draw: -1, want: "b", asked: true},
		{name: "tie break: the first in the pool's order", runtimes: []state{rt("b", load(1)), rt("a", load(1))}, draw: -1, want: "b", asked: true},
		{name: "tie break against slots", runtimes: []state{rt("a", load(2), slots(2)), rt("b", load(1))}, draw: -1, want: "a", asked: true},
		{name: "admission full: still the least loaded, admission queues or refuses it",
			runtimes: []state{rt("a", load(4)), rt("b", load(3))}, draw: -1, want: "b", asked: true},
		{name: "random policy ignores affinity and load", runtimes: []state{rt("a"), rt("b", load(5)), rt("c")}, chain: "a", draw: 1, want: "b"},
		{name: "random policy draws among candidates only", runtimes: []state{rt("a", down), rt("b"), rt("c", lacks), rt("d")}, draw: 1, want: "d"},
		{name: "cannot run: a runtime that can is preferred", runtimes: []state{rt("a", cannot), rt("b", load(7))}, draw: -1, want: "b"},
		{name: "every runtime cannot run: they all stay candidates",
			runtimes: []state{rt("a", cannot, load(1)), rt("b", cannot)}, chain: "a", draw: -1, want: "a", asked: true},
		{name: "no runtime up lists the model: any up runtime",
			runtimes: []state{rt("a", lacks, load(1)), rt("b", down), rt("c", lacks)}, draw: -1, want: "c", asked: true},
		{name: "none up: every runtime, so the runtime's own error comes back",
			runtimes: []state{rt("a", down, load(1)), rt("b", down)}, chain: "a", draw: -1, want: "b", asked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			chain := func() string { asked = true; return tc.chain }
			var draw func(int) int
			if tc.draw >= 0 {
				draw = func(n int) int {
					if tc.draw >= n {
						t.Fatalf("draw among %d", n)
					}
					return tc.draw
				}
			}
			if got := decide(tc.runtimes, chain, draw); got != tc.want {
				t.Errorf("placed on %q, want %q", got, tc.want)
			}
			if asked != tc.asked {
				t.Errorf("chain looked up: %v, want %v", asked, tc.asked)
			}
		})
	}
}

// Place over a real pool and admission: the state it reads (listings, health,
// admission's loads with reservations), the order of the chain's inputs (the parent's
// runtime, then the prompt_cache_key's, then the fallback), and the reservation.
func TestPolicyPlace(t *testing.T) {
	a := &fake{host: "a:1", models: []string{"m:latest"}}
	b := &fake{host: "b:1", models: []string{"m:latest", "only-b:latest"}}
	p := newPool(t, a, b)
	if err := p.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	adm := admission.New(admission.Config{Slots: 1})
	pc := NewPolicy(p, adm, false)
	loads := func() []int { return adm.AppendLoads(nil, "m", []string{"a:1", "b:1"}) }

	first := pc.Place(Want{Model: "m"})
	if got := first.Placement.Runtime(); got != "a:1" {
		t.Fatalf("idle pool: placed on %q, want the first, a:1", got)
	}
	second := pc.Place(Want{Model: "m"})
	if got := second.Placement.Runtime(); got != "b:1" {
		t.Fatalf("a:1 reserved: placed on %q, want b:1", got)
	}
	if got := loads(); got[0] != 1 || got[1] != 1 {
		t.Fatalf("loads %v, want one reservation each", got)
	}
	first.Release()
	first.Release() // twice is once
	second.Release()
	Placed{}.Release() // no placement, nothing to release
	if got := loads(); got[0] != 0 || got[1] != 0 {
		t.Fatalf("loads after release %v", got)
	}

	// The chain: the parent's runtime first, then the key's, then the fallback.
	pc.Remember("alice", "k", "b:1")
	parent := func(l string) func() string { return func() string { return l } }
	for _, tc := range []struct {
		name string
		w    Want
		want string
	}{
		{"parent", Want{Model: "m", Parent: parent("b:1")}, "b:1"},
		{"parent before key", Want{Model: "m", Parent: parent("a:1"), Owner: "alice", CacheKey: "k"}, "a:1"},
		{"key", Want{Model: "m", Parent: parent(""), Owner: "alice", CacheKey: "k"}, "b:1"},
		{"key is the owner's", Want{Model: "m", Owner: "bob", CacheKey: "k"}, "a:1"},
		{"key before fallback", Want{Model: "m", Owner: "alice", CacheKey: "k", Fallback: "a:1"}, "b:1"},
		{"fallback", Want{Model: "m", Fallback: "b:1"}, "b:1"},
	} {
		pl := pc.Place(tc.w)
		if got := pl.Placement.Runtime(); got != tc.want {
			t.Errorf("%s: placed on %q, want %q", tc.name, got, tc.want)
		}
		pl.Release()
	}

	// One candidate: no lookup.
	pl := pc.Place(Want{Model: "only-b", Parent: func() string { t.Error("parent looked up with one candidate"); return "" }})
	if got := pl.Placement.Runtime(); got != "b:1" {
		t.Errorf("only-b placed on %q", got)
	}
	pl.Release()

	// A running request counts as load.
	tk, err := adm.EnterOn("m", "k", "a:1")
	if err != nil {
		t.Fatal(err)
	}
	if pl := pc.Place(Want{Model: "m"}); pl.Placement.Runtime() != "b:1" {
		t.Errorf("a:1 busy: placed on %q, want b:1", pl.Placement.Runtime())
	} else {
		pl.Release()
	}
	tk.Done()

	// b goes down: its chain moves.
	p.setState(p.member("b:1"), errors.New("down"))
	if pl := pc.Place(Want{Model: "m", Parent: parent("b:1")}); pl.Placement.Runtime() != "a:1" {
		t.Errorf("chain's runtime down: placed on %q, want a:1", pl.Placement.Runtime())
	} else {
		pl.Release()
	}

	// The random policy draws among the candidates.
	p.setState(p.member("b:1"), nil)
	rnd := NewPolicy(p, adm, true)
	rnd.intn = func(n int) int { return n - 1 }
	if pl := rnd.Place(Want{Model: "m", Parent: parent("a:1")}); pl.Placement.Runtime() != "b:1" {
		t.Errorf("random: placed on %q, want the last drawn, b:1", pl.Placement.Runtime())
	} else {
		pl.Release()
	}
}

// The prompt_cache_key memory is bounded: the oldest key goes first.
func TestCacheKeysBounded(t *testing.T) {
	var k cacheKeys
	for i := range maxCacheKeys + 1 {
		k.put("o", strconv.Itoa(i), "a:1")
	}
	if got := k.get("o", "0"); got != "" {
		t.Errorf("oldest key still remembered: %q", got)
	}
	if got := k.get("o", strconv.Itoa(maxCacheKeys)); got != "a:1" {
		t.Errorf("newest key: %q", got)
	}
	if len(k.m) != maxCacheKeys {
		t.Errorf("%d keys kept, want %d", len(k.m), maxCacheKeys)
	}
}

// BenchmarkPlace measures one placement and its release: one runtime, two with the
// chain's runtime winning, two by load.
func BenchmarkPlace(b *testing.B) {
	for _, bc := range []struct {
		name  string
		rts   int
		chain string
	}{{"one", 1, ""}, {"two-affinity", 2, "b:1"}, {"two-load", 2, ""}} {
		b.Run(bc.name, func(b *testing.B) {
			fakes := []*fake{{host: "a:1", models: []string{"m:latest"}}, {host: "b:1", models: []string{"m:latest"}}}[:bc.rts]
			rts := make([]Runtime, len(fakes))
			for i, f := range fakes {
				rts[i] = f
			}
			p, err := New(rts, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Check(context.Background()); err != nil {
				b.Fatal(err)
			}
			pc := NewPolicy(p, admission.New(admission.Config{Slots: 1}), false)
			w := Want{Model: "m", Parent: func() string { return bc.chain }}
			for b.Loop() {
				pc.Place(w).Release()
			}
		})
	}
}
