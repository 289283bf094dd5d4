package engine

// What hearth knows of a runtime's KV cache, to report cached_tokens (the runtime does
// not say how much of a prompt it found cached).
//
// A runtime with parallel slots (OLLAMA_NUM_PARALLEL) keeps one sequence per slot and
// model. Ollama's runners (0.17.4 to 0.24.0: the Ollama engine's, runner/ollamarunner/cache.go,
// and llama.cpp's, runner/llamarunner/cache.go, both findLongestCacheSlot) give a
// request the free slot whose sequence shares the longest prefix with the prompt (the
// first on a tie; an empty slot shares nothing), reuse that prefix and overwrite the
// rest. (With OLLAMA_MULTIUSER_CACHE a runner copies the prefix into its least recently
// used slot instead: continuations count the same, first turns may not.) hearth
// mirrors that choice: each response claims a slot when it starts generating and
// leaves its sequence there when it ends, so conversations that run side by side on
// one runtime each keep their own slot, as they do in the runtime, and a response
// placed where its prefix is not cached reports so.
//
// cached_tokens is scoped to a cache group (Inputs.CacheGroup: the server gives each API
// key its own, or the group an admin put it in). A response counts a prefix only when
// the sequence it found in its slot was left there by its own group: otherwise
// cached_tokens would tell one key how much of its prompt another key sent before
// (guess a prompt, read how much of it was cached). The runtime itself still reuses
// the prefix, whoever left it (the runners take the longest common prefix of a free
// slot, and no request option turns that off): what remains is timing, see
// docs/security.md.

// inCache is how many tokens a generation of promptTokens and evalTokens leaves in its
// slot: the last token sampled is never evaluated, so the slot holds one less than the
// generation counted (the runner's debug log says cache=93 after a 39-token prompt
// and a 55-token answer; TestKVSlotsCachedTokensE2E).
func inCache(promptTokens, evalTokens int) int {
	if evalTokens == 0 {
		return promptTokens
	}
	return promptTokens + evalTokens - 1
}

// kvSlots is the mirror of one runtime's slots for one model.
type kvSlots struct {
	seqs []promptCache
	busy []bool
}

// kvClaim is a response's slot while it generates: prev is what the slot held when
// the response claimed it (cached_tokens is counted against it); next, set by keep,
// is what the response leaves there.
type kvClaim struct {
	key   string
	group string // the cache group of the response (Inputs.CacheGroup)
	slot  int    // -1: every slot was busy (more requests than slots: the runtime queues)
	prev  promptCache
	next  *promptCache
	done  bool
}

// kvSlotCount is how many slots the runtime labelled runtime has per model.
func (e *Engine) kvSlotCount(runtime string) int {
	if e.KVSlots == nil {
		return 1
	}
	return max(1, e.KVSlots(runtime))
}

// claimKV claims the slot a generation of prompt for model, of cache group group, gets
// on the runtime pl names. The claim must be released (releaseKV) when the generation
// ends.
func (e *Engine) claimKV(pl *Placement, group, model, prompt string) *kvClaim {
	c := &kvClaim{key: seqKey(pl, model), group: group, slot: -1}
	n := e.kvSlotCount(pl.Runtime())
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.kv[c.key]
	if s == nil {
		s = &kvSlots{}
		e.kv[c.key] = s
	}
	for len(s.seqs) < n {
		s.seqs, s.busy = append(s.seqs, promptCache{}), append(s.busy, false)
	}
	if i := s.choose(prompt); i >= 0 {
		c.slot = i
		s.busy[i] = true
		// Another group's sequence counts as nothing cached (the runtime still reuses
		// its prefix: the slot is chosen as the runtime chooses it).
		if s.seqs[i].group == c.group {
			c.prev = s.seqs[i]
		}
	}
	return c
}

// choose is the free slot the runtime gives prompt, -1 when none is free.
//
// It follows the runtime's rule whatever group left each sequence: a mirror that
// preferred a slot of the response's own group would believe sequences live where
// they do not, and report wrong counts afterwards. hearth cannot steer the runner's
// choice within a runtime (a request names no slot); it chooses only the runtime of a
// pool (server placement), where it follows the caller's own chains.
func (s *kvSlots) choose(prompt string) int {
	best, longest := -1, -1
	for i, seq := range s.seqs {
		if s.busy[i] {
			continue
		}
		if l := SharedPrefixLen(seq.text, prompt); l > longest {
			best, longest = i, l
		}
	}
	return best
}

// keep records the sequence the generation leaves in its slot: its text and the points
// of it whose token counts are known, in order. Without any known point the slot is
// forgotten, as after a failed generation.
func (c *kvClaim) keep(text string, images [][]byte, marks ...cacheMark) {
	var ok []cacheMark
	for _, m := range marks {
		if m.tokens > 0 && m.bytes <= len(text) && (len(ok) == 0 || m.bytes > ok[len(ok)-1].bytes) {
			ok = append(ok, m)
		}
	}
	if len(ok) == 0 {
		c.next = nil
		return
	}
	c.next = &promptCache{text: text, marks: ok, images: imageDigests(images), group: c.group}
}

// releaseKV ends the claim (once; later calls do nothing): the slot holds what keep recorded, or nothing known when
// the generation failed or was cut (it may have left anything there). A claim that got
// no slot takes the free one the runtime would have given it once one freed.
func (e *Engine) releaseKV(c *kvClaim) {
	if c == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.done {
		return
	}
	c.done = true
	s := e.kv[c.key]
	if s == nil {
		return
	}
	i := c.slot
	if i < 0 && c.next != nil {
		i = s.choose(c.next.text)
	}
	if i < 0 || i >= len(s.seqs) {
		return
	}
	s.busy[i] = false
	if c.next != nil {
		s.seqs[i] = *c.next
	} else {
		s.seqs[i] = promptCache{}
	}
}
