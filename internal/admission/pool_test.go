package admission

import (
	"slices"
	"testing"
)

func enterOn(t *testing.T, c *Controller, model, key, runtime string) *Ticket {
	t.Helper()
	tk, err := c.EnterOn(model, key, runtime)
	if err != nil {
		t.Fatalf("EnterOn(%s, %s, %s): %v", model, key, runtime, err)
	}
	return tk
}

// Each runtime has its own slots: a request waits only for its runtime's, and a slot
// that frees on one runtime admits a request placed there, not one placed elsewhere.
func TestSlotsPerRuntime(t *testing.T) {
	c := New(Config{Slots: 1, RuntimeSlots: map[string]int{"b": 2}})
	a1 := enterOn(t, c, "m", "k", "a")
	b1 := enterOn(t, c, "m", "k", "b")
	b2 := enterOn(t, c, "m", "k", "b")
	if !a1.Admitted() || !b1.Admitted() || !b2.Admitted() {
		t.Fatal("a runtime's free slots did not admit at once")
	}
	a2 := enterOn(t, c, "m", "k", "a")
	b3 := enterOn(t, c, "m", "k", "b")
	if a2.Admitted() || b3.Admitted() {
		t.Fatal("admitted beyond a runtime's slots")
	}
	b1.Done()
	if a2.Admitted() || !b3.Admitted() {
		t.Fatalf("after a slot of b freed: a2 admitted %v (want false), b3 %v (want true)", a2.Admitted(), b3.Admitted())
	}
	a1.Done()
	if !a2.Admitted() {
		t.Fatal("a's freed slot did not admit a's waiting request")
	}
	snap := c.Snapshot()[0]
	if snap.RunningOn["a"] != 1 || snap.RunningOn["b"] != 2 || snap.Running != 3 {
		t.Errorf("snapshot %+v, want 1 running on a, 2 on b", snap)
	}
}

// Keys are served round-robin within each runtime's queue, one queue per model.
func TestFairSharePerRuntime(t *testing.T) {
	c := New(Config{Slots: 1})
	run := enterOn(t, c, "m", "alice", "a")
	var waiting []*Ticket
	for range 3 {
		waiting = append(waiting, enterOn(t, c, "m", "alice", "a"))
	}
	// Bob's request on b runs at once; his next waits on a, behind alice's first.
	if b := enterOn(t, c, "m", "bob", "b"); !b.Admitted() {
		t.Fatal("b's free slot did not admit")
	}
	waiting = append(waiting, enterOn(t, c, "m", "bob", "a"))
	got := order(c, run, waiting)
	if want := []string{"alice", "bob", "alice", "alice"}; !slices.Equal(got, want) {
		t.Errorf("admitted on a in order %v, want %v", got, want)
	}
}

// LeastLoaded counts running, waiting and reserved requests against each runtime's
// slots; equals go to the first.
func TestLeastLoaded(t *testing.T) {
	c := New(Config{Slots: 1, RuntimeSlots: map[string]int{"b": 2}})
	rts := []string{"a", "b"}
	if got := c.LeastLoaded("m", rts); got != "a" {
		t.Fatalf("idle pool: %q, want the first, a", got)
	}
	release := c.Reserve("m", "a")
	if got := c.LeastLoaded("m", rts); got != "b" {
		t.Fatalf("a reserved: %q, want b", got)
	}
	enterOn(t, c, "m", "k", "b")
	// a: 1/1, b: 1/2.
	if got := c.LeastLoaded("m", rts); got != "b" {
		t.Fatalf("a 1/1, b 1/2: %q, want b", got)
	}
	release()
	release() // twice is once
	if got := c.LeastLoaded("m", rts); got != "a" {
		t.Fatalf("a released: %q, want a", got)
	}
	if got := c.LeastLoaded("other", rts); got != "a" {
		t.Fatalf("another model's load counts apart: %q, want a", got)
	}
	if got := c.LeastLoaded("m", nil); got != "" {
		t.Fatalf("no runtimes: %q", got)
	}
}

// Move sends the requests waiting for a runtime that went down to the least loaded of
// the others, where they run as slots free; running ones stay.
func TestMoveWaiting(t *testing.T) {
	c := New(Config{Slots: 1})
	a := enterOn(t, c, "m", "k", "a")
	b := enterOn(t, c, "m", "k", "b")
	bWait := enterOn(t, c, "m", "k", "b")
	c.Move("b", func(string) []string { return []string{"a", "b", "c"} })
	if bWait.Runtime() != "c" || !bWait.Admitted() {
		t.Fatalf("moved ticket on %q admitted %v, want on idle c and admitted", bWait.Runtime(), bWait.Admitted())
	}
	if b.Runtime() != "b" {
		t.Fatalf("running ticket moved to %q", b.Runtime())
	}
	aWait := enterOn(t, c, "m", "k", "a")
	c.Move("a", func(string) []string { return []string{"a"} })
	if aWait.Runtime() != "a" {
		t.Fatalf("with nowhere to go the ticket moved to %q", aWait.Runtime())
	}
	a.Done()
	if !aWait.Admitted() {
		t.Fatal("ticket left on a not admitted when a's slot freed")
	}
}
