package server

import (
	"context"
	"math/rand/v2"
	"sync"

	"hearth"
	"hearth/engine"
)

// HeaderRuntime names the runtime that served a response (engine/pool's label:
// "embedded" or host:port), so a client or an operator sees where a chain lives.
const HeaderRuntime = "x-hearth-runtime"

// placed is a response's placement (engine.Placement: the engine's calls, admission
// and storage follow it) and its reservation in admission.
type placed struct {
	at    *engine.Placement
	unres func()
}

// release ends the placement's reservation, if any; safe to call more than once.
func (p placed) release() {
	if p.unres != nil {
		p.unres()
	}
}

// place chooses the runtime a response runs on and returns that placement. A
// continuation goes to the runtime that served its parent, whose KV cache holds its
// prefix, while that runtime is up and has the model: the parent of
// previous_response_id, else the latest response with the same prompt_cache_key, else
// fallback (a WebSocket's latest response). Anything else goes to the least loaded
// runtime that has the model.
//
// The choice is reserved in admission until the request enters it (admitAs) or the
// placement is released, whichever comes first: requests prepared at the same time
// then spread over the runtimes.
func (s *Server) place(ctx context.Context, who string, req *hearth.CreateResponseRequest, fallback string) placed {
	cands := s.pool.Candidates(req.Model)
	label := ""
	switch {
	case len(cands) > 1 && s.randomPlacement:
		label = cands[rand.IntN(len(cands))]
	case len(cands) > 1:
		for _, prefer := range []func() string{
			func() string {
				if req.PreviousResponseID == "" || s.db == nil {
					return ""
				}
				l, _ := s.db.ResponseRuntime(ctx, who, req.PreviousResponseID)
				return l
			},
			func() string { return s.affinity.get(who, req.PromptCacheKey) },
			func() string { return fallback },
		} {
			if l := prefer(); l != "" {
				if s.pool.Serves(l, req.Model) {
					label = l
				}
				// The parent's runtime is down or lost the model: the prefix is
				// evaluated again wherever the response goes.
				break
			}
		}
	}
	if label == "" {
		label = s.admission.LeastLoaded(req.Model, cands)
	}
	return placed{at: engine.NewPlacement(label), unres: s.admission.Reserve(req.Model, label)}
}

// affinity remembers the runtime of the latest response per owner and prompt_cache_key,
// in memory: a bounded map, the oldest keys dropped first.
type affinity struct {
	mu    sync.Mutex
	m     map[string]string
	order []string
}

// affinityKeys bounds the prompt_cache_key affinity map.
const affinityKeys = 4096

func (a *affinity) get(who, key string) string {
	if key == "" {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.m[who+"\x00"+key]
}

func (a *affinity) put(who, key, label string) {
	if key == "" || label == "" {
		return
	}
	k := who + "\x00" + key
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]string{}
	}
	if _, ok := a.m[k]; !ok {
		a.order = append(a.order, k)
		if len(a.order) > affinityKeys {
			delete(a.m, a.order[0])
			a.order = a.order[1:]
		}
	}
	a.m[k] = label
}
