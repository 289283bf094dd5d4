package engine

import (
	"testing"
)

// generate claims a slot for prompt, as a response starting on runtime does, and
// returns what the slot held and a function that ends the generation leaving
// prompt+out there (tokens: the prompt's and the whole sequence's counts).
func generate(e *Engine, runtime, prompt string) (prev promptCache, end func(out string, promptTokens, tokens int)) {
	return generateAs(e, runtime, "", prompt)
}

// generateAs is generate for a response of cache group group.
func generateAs(e *Engine, runtime, group, prompt string) (prev promptCache, end func(out string, promptTokens, tokens int)) {
	c := e.claimKV(NewPlacement(runtime), group, "m", prompt)
	return c.prev, func(out string, promptTokens, tokens int) {
		if out != "" {
			c.keep(prompt+out, nil, cacheMark{len(prompt), promptTokens}, cacheMark{len(prompt) + len(out), tokens})
		}
		e.releaseKV(c)
	}
}

// Two conversations side by side on a runtime with two slots each keep a slot of their
// own, as the runtime's cache does: every later turn finds its whole history cached.
func TestKVSlotsConversationsSideBySide(t *testing.T) {
	e := New(&fakeRuntime{}, DefaultFormats(), nil)
	e.KVSlots = func(string) int { return 2 }
	a1, b1 := "<s>user A1</s>", "<s>user B1</s>"
	prevA, endA := generate(e, "r", a1)
	prevB, endB := generate(e, "r", b1) // while A1 generates: the other slot
	if prevA.text != "" || prevB.text != "" {
		t.Fatalf("first turns found %q and %q cached", prevA.text, prevB.text)
	}
	endA("answer A", 5, 7)
	endB("answer B", 5, 7)
	a2 := a1 + "answer A</s><s>user A2</s>"
	b2 := b1 + "answer B</s><s>user B2</s>"
	prevB, endB = generate(e, "r", b2)
	prevA, endA = generate(e, "r", a2)
	if got := cachedTokens(prevA, a2, nil, 12); got != 7 {
		t.Errorf("A2 cached %d tokens, want 7 (all of A1); slot held %q", got, prevA.text)
	}
	if got := cachedTokens(prevB, b2, nil, 12); got != 7 {
		t.Errorf("B2 cached %d tokens, want 7 (all of B1); slot held %q", got, prevB.text)
	}
	endA("", 0, 0) // failed: its slot holds nothing known
	endB("answer B2", 12, 15)
	// A retry of A2 shares only the template's start with B's slot and nothing with
	// its own emptied one: the runtime takes B's (the longest shared prefix wins).
	b2seq := b2 + "answer B2"
	if prev, _ := generate(e, "r", a2); prev.text != b2seq {
		t.Errorf("A2's retry got the slot holding %q, want B2's sequence", prev.text)
	}
}

// One slot (the default): the conversations take turns in it, each evicting the other,
// and only the template's shared start is found cached.
func TestKVSlotsOneSlotEvicts(t *testing.T) {
	e := New(&fakeRuntime{}, DefaultFormats(), nil)
	a1, b1 := "<s>user A1</s>", "<s>user B1</s>"
	_, endA := generate(e, "", a1)
	endA("answer A", 5, 7)
	_, endB := generate(e, "", b1)
	endB("answer B", 5, 7)
	a2 := a1 + "answer A</s><s>user A2</s>"
	prev, _ := generate(e, "", a2)
	if prev.text != b1+"answer B" {
		t.Errorf("A2's slot held %q, want B1's sequence", prev.text)
	}
}

// The runtime gives a request the free slot sharing the longest prefix with it, even
// when an empty slot is free: conversations that run one after another share one slot
// (Ollama's default cache), and a runtime's slots are its own.
func TestKVSlotsSequentialShareLongest(t *testing.T) {
	e := New(&fakeRuntime{}, DefaultFormats(), nil)
	e.KVSlots = func(label string) int {
		if label == "big" {
			return 4
		}
		return 1
	}
	a1, b1 := "<s>user A1</s>", "<s>user B1</s>"
	_, end := generate(e, "big", a1)
	end("answer A", 5, 7)
	prev, end := generate(e, "big", b1)
	if prev.text != a1+"answer A" {
		t.Errorf("B1 got the slot holding %q, want A1's (it shares \"<s>user \")", prev.text)
	}
	end("answer B", 5, 7)
	if prev, _ := generate(e, "other", a1); prev.text != "" {
		t.Errorf("another runtime's slot held %q", prev.text)
	}
}

// More requests than slots: the runtime queues the extra one; hearth counts nothing
// cached for it and, when it ends, leaves its sequence in the free slot the runtime
// would give it.
func TestKVSlotsAllBusy(t *testing.T) {
	e := New(&fakeRuntime{}, DefaultFormats(), nil)
	_, endA := generate(e, "", "<s>user A1</s>")
	prev, endB := generate(e, "", "<s>user B1</s>")
	if prev.text != "" {
		t.Errorf("a queued request found %q cached", prev.text)
	}
	endA("answer A", 5, 7)
	endB("answer B", 5, 7)
	b2 := "<s>user B1</s>answer B</s><s>user B2</s>"
	if prev, _ := generate(e, "", b2); cachedTokens(prev, b2, nil, 12) != 7 {
		t.Errorf("B2 found %q cached, want all of B1", prev.text)
	}
}

// cached_tokens counts only a sequence left by the response's own cache group: another
// key's exact guess of a prompt finds nothing cached (the runtime still reuses it, and
// the mirror follows the runtime: the slot is B's afterwards), a continuation of the
// same group finds its prefix, and a second key of the group finds the first's.
func TestKVSlotsCacheGroups(t *testing.T) {
	e := New(&fakeRuntime{}, DefaultFormats(), nil)
	secret := "<s>user Customer 88123 password is hunter2</s>"
	_, end := generateAs(e, "", "alice", secret)
	end("noted", 12, 14)

	// Bob's exact guess: the runtime reuses Alice's prefix, hearth reports none of it.
	prev, end := generateAs(e, "", "bob", secret)
	if got := cachedTokens(prev, secret, nil, 12); got != 0 {
		t.Errorf("bob's guess reported %d cached tokens of alice's prompt", got)
	}
	end("noted", 12, 14)
	// The slot holds Bob's sequence now: Alice's next turn counts none of it either.
	a2 := secret + "noted</s><s>user go on</s>"
	if prev, _ := generateAs(e, "", "alice", a2); prev.text != "" {
		t.Errorf("alice's turn after bob's counted bob's sequence %q", prev.text)
	}

	// Without another group in between, a continuation finds its whole previous turn,
	// and so does a key of the same group.
	e = New(&fakeRuntime{}, DefaultFormats(), nil)
	_, end = generateAs(e, "", "team1", secret)
	end("noted", 12, 14)
	prev, end = generateAs(e, "", "team1", a2)
	if got := cachedTokens(prev, a2, nil, 20); got != 14 {
		t.Errorf("same group's continuation cached %d tokens, want 14 (all of the first turn)", got)
	}
	end("", 0, 0)

	// Two slots: the guess takes the slot holding the secret (the runtime's choice,
	// longest shared prefix), though the other is free.
	e = New(&fakeRuntime{}, DefaultFormats(), nil)
	e.KVSlots = func(string) int { return 2 }
	_, end = generateAs(e, "", "alice", secret)
	end("noted", 12, 14)
	prev, _ = generateAs(e, "", "bob", secret)
	if prev.text != "" {
		t.Errorf("bob's guess on two slots counted %q", prev.text)
	}
	if s := e.kv["m"]; !s.busy[0] || s.busy[1] {
		t.Errorf("bob's guess took slots %v, want the first (alice's), as the runtime does", s.busy)
	}
}
