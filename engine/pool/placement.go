package pool

import (
	"math/rand/v2"
	"sync"

	"hearth/engine"
	"hearth/internal/admission"
)

// The placement policy: which runtime of the pool a request runs on. One policy, in
// three steps, over inputs given as values (Want, and the pool's and admission's
// state read once):
//
//  1. Filter: the runtimes that are up and have the model, leaving out those that
//     said they cannot run its architecture while another can (Pool.Candidates).
//  2. Score: with more than one left, the chain's runtime wins: the runtime that
//     served the chain's previous turn (previous_response_id), else the latest one
//     of the owner's prompt_cache_key, else the caller's fallback (a WebSocket
//     connection's latest), the first of them that names a runtime, while that
//     runtime is a candidate that is up and has the model. Its KV cache holds the
//     prefix, worth more than an idle runtime that evaluates it again, so it wins
//     however busy it is. Otherwise each candidate scores its load (running, waiting
//     and reserved requests of the model) against its slots.
//  3. Pick: the chain's runtime, else the least loaded, the first in the pool's
//     order of equals; or, with the random policy (`hearth bench pool`, measuring
//     what affinity is worth), any candidate at random.
//
// The pick is reserved in admission until the request enters it (or is released), so
// that requests prepared at the same time spread over the runtimes.

// Want is what one request asks of placement.
type Want struct {
	// Model is the model the request runs.
	Model string
	// Parent looks up the runtime that served the chain's previous turn (the response
	// previous_response_id names), "" when none. It may read storage, so it is asked
	// only when the pool has a choice to make; nil: no chain.
	Parent func() string
	// Owner and CacheKey are the request's owner and prompt_cache_key: the runtime of
	// the owner's latest response with the same key (Policy.Remember) holds its
	// prefix. An empty key has no runtime.
	Owner, CacheKey string
	// Fallback is where the prefix is when neither of the above says: the runtime of
	// a WebSocket connection's latest response; "" when none.
	Fallback string
}

// Placed is a request's placement (the engine follows it: engine.Inputs.Placement)
// and its reservation in admission. The zero value is no placement.
type Placed struct {
	// Placement names the runtime the request runs on.
	Placement *engine.Placement
	release   func()
}

// Release ends the placement's reservation in admission; safe to call more than once,
// and on the zero Placed.
func (p Placed) Release() {
	if p.release != nil {
		p.release()
	}
}

// Policy places requests on a pool's runtimes (the steps above), with admission's
// loads. It is safe for concurrent use.
type Policy struct {
	pool   *Pool
	adm    *admission.Controller
	random bool
	// intn draws the random policy's pick (rand.IntN; a test sets its own).
	intn func(n int) int
	keys cacheKeys
}

// NewPolicy returns the placement policy of p with adm's loads; random places every
// request at random among the candidates.
func NewPolicy(p *Pool, adm *admission.Controller, random bool) *Policy {
	return &Policy{pool: p, adm: adm, random: random, intn: rand.IntN}
}

// Place places one request: filter, score, pick, and the pick reserved in admission.
func (pc *Policy) Place(w Want) Placed {
	var buf [8]state // a pool's runtimes, without an allocation
	label := decide(pc.pool.appendStates(buf[:0], w.Model, pc.adm), func() string {
		for _, look := range []func() string{w.Parent, func() string { return pc.keys.get(w.Owner, w.CacheKey) }} {
			if look != nil {
				if l := look(); l != "" {
					return l
				}
			}
		}
		return w.Fallback
	}, pc.draw())
	return Placed{Placement: engine.NewPlacement(label), release: pc.adm.Reserve(w.Model, label)}
}

// draw is the random policy's draw, nil when the policy is not random.
func (pc *Policy) draw() func(int) int {
	if !pc.random {
		return nil
	}
	return pc.intn
}

// Remember records that the owner's latest response with prompt_cache_key key ran on
// label (a finished response that did not fail): the key's next request goes there.
func (pc *Policy) Remember(owner, key, label string) { pc.keys.put(owner, key, label) }

// state is one runtime as placement sees it at one moment.
type state struct {
	label string
	// up: it answered its last check (or was never checked).
	up bool
	// has: it lists the model (or was never listed).
	has bool
	// cannot: it said it cannot run the model's architecture.
	cannot bool
	// load is the model's requests running, waiting and reserved on it; slots how
	// many of them run at once there.
	load, slots int
}

// appendStates appends the state of each runtime of the pool for model to dst, in the
// pool's order, with the loads from adm (nil: none counted).
func (p *Pool) appendStates(dst []state, model string, adm *admission.Controller) []state {
	n := len(dst)
	for _, m := range p.members {
		m.mu.Lock()
		dst = append(dst, state{label: m.label, up: m.up, has: m.hasLocked(model), cannot: m.cannot[model]})
		m.mu.Unlock()
	}
	if adm != nil {
		var buf [8]int
		for i, l := range adm.AppendLoads(buf[:0], model, p.labels) {
			dst[n+i].load, dst[n+i].slots = l, adm.Slots(p.labels[i])
		}
	}
	return dst
}

// Classes of runtimes for the filter, the best first.
const (
	classHave   = iota // up, has the model, can run it
	classCannot        // up, has the model, said it cannot run its architecture
	classUp            // up, does not list the model
	classDown
)

func (s state) class() int {
	switch {
	case !s.up:
		return classDown
	case !s.has:
		return classUp
	case s.cannot:
		return classCannot
	}
	return classHave
}

// filter is step 1: the runtimes a request may go to, in order (all's array, which it
// reuses). Those that are up and have the model, leaving out those that cannot run
// its architecture while another can; when no runtime that is up has it (a model
// pulled since the last listing), every runtime that is up; when none is up, every
// runtime, so that the request fails with the runtime's own error as it would without
// a pool.
func filter(all []state) []state {
	best := classDown
	for _, s := range all {
		best = min(best, s.class())
	}
	out := all[:0]
	for _, s := range all {
		if s.class() == best {
			out = append(out, s)
		}
	}
	return out
}

// decide is the policy over one moment's state (filter, score, pick): the label of
// the runtime the request goes to. chain is the runtime holding the request's prefix,
// asked only when there is a choice; draw, when set, picks at random instead of
// scoring.
func decide(all []state, chain func() string, draw func(int) int) string {
	cands := filter(all)
	switch {
	case len(cands) == 0:
		return ""
	case len(cands) == 1:
		return cands[0].label
	case draw != nil:
		return cands[draw(len(cands))].label
	}
	if l := chain(); l != "" {
		for _, s := range cands {
			if s.label == l && s.up && s.has {
				return l
			}
		}
		// The chain's runtime is down or lost the model: the prefix is evaluated
		// again wherever the request goes.
	}
	best := 0
	for i, s := range cands {
		// load/slots < best's load/slots, without division.
		if i > 0 && s.load*max(cands[best].slots, 1) < cands[best].load*max(s.slots, 1) {
			best = i
		}
	}
	return cands[best].label
}

// cacheKeys remembers the runtime of the latest response per owner and
// prompt_cache_key, in memory: a bounded map, the oldest keys dropped first.
type cacheKeys struct {
	mu    sync.Mutex
	m     map[string]string
	order []string
}

// maxCacheKeys bounds the prompt_cache_key memory.
const maxCacheKeys = 4096

func (a *cacheKeys) get(owner, key string) string {
	if key == "" {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[owner+"\x00"+key]
}

func (a *cacheKeys) put(owner, key, label string) {
	if key == "" || label == "" {
		return
	}
	k := owner + "\x00" + key
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]string{}
	}
	if _, ok := a.m[k]; !ok {
		a.order = append(a.order, k)
		if len(a.order) > maxCacheKeys {
			delete(a.m, a.order[0])
			a.order = a.order[1:]
		}
	}
	a.m[k] = label
}
