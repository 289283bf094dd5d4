package admission

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func enter(t *testing.T, c *Controller, model, key string) *Ticket {
	t.Helper()
	tk, err := c.Enter(model, key)
	if err != nil {
		t.Fatalf("Enter(%s, %s): %v", model, key, err)
	}
	return tk
}

// order runs the queue to its end one slot at a time and returns the keys in the order
// they were admitted.
func order(c *Controller, running *Ticket, waiting []*Ticket) []string {
	var got []string
	cur := running
	for range waiting {
		cur.Done()
		for _, w := range waiting {
			if w.Admitted() && !w.gone {
				got = append(got, w.key)
				cur = w
				break
			}
		}
	}
	return got
}

// A key with 50 queued requests does not starve a key with one: it runs after at most
// one of the other's.
func TestFairShare(t *testing.T) {
	c := New(Config{Slots: 1, MaxQueue: 100})
	first := enter(t, c, "m", "alice")
	if !first.Admitted() {
		t.Fatal("first request not admitted at once")
	}
	var waiting []*Ticket
	for range 50 {
		waiting = append(waiting, enter(t, c, "m", "alice"))
	}
	bob := enter(t, c, "m", "bob")
	waiting = append(waiting, bob)
	carol := enter(t, c, "m", "carol")
	waiting = append(waiting, carol)
	if bob.Admitted() || carol.Admitted() {
		t.Fatal("admitted beyond the slots")
	}
	got := order(c, first, waiting)
	pos := func(key string) int {
		for i, k := range got {
			if k == key {
				return i
			}
		}
		return -1
	}
	if p := pos("bob"); p < 0 || p > 1 {
		t.Errorf("bob admitted at %d: %v", p, got[:5])
	}
	if p := pos("carol"); p < 0 || p > 2 {
		t.Errorf("carol admitted at %d: %v", p, got[:5])
	}
	if len(got) != 52 {
		t.Errorf("%d admitted, want 52", len(got))
	}
}

// Each key's own requests keep their arrival order, and keys alternate.
func TestRoundRobinFIFO(t *testing.T) {
	c := New(Config{Slots: 1})
	first := enter(t, c, "m", "x")
	var waiting []*Ticket
	ids := map[*Ticket]string{}
	for i, k := range []string{"a", "a", "a", "b", "b", "c"} {
		tk := enter(t, c, "m", k)
		ids[tk] = k + string(rune('0'+i))
		waiting = append(waiting, tk)
	}
	var got []string
	cur := first
	for range waiting {
		cur.Done()
		for _, w := range waiting {
			if w.Admitted() && !w.gone {
				got = append(got, ids[w])
				cur = w
				break
			}
		}
	}
	want := []string{"a0", "b3", "c5", "a1", "b4", "a2"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestSlotsPerModel(t *testing.T) {
	c := New(Config{Slots: 2, MaxQueue: -1})
	a := enter(t, c, "m1", "k")
	b := enter(t, c, "m1", "k")
	if !a.Admitted() || !b.Admitted() {
		t.Fatal("two slots, two requests: both run")
	}
	var rej *Rejected
	if _, err := c.Enter("m1", "k"); !errors.As(err, &rej) || rej.Reason != ReasonQueueFull || rej.RetryAfter < time.Second {
		t.Fatalf("third with no queue: %v", err)
	}
	// Another model has its own slots.
	if o := enter(t, c, "m2", "k"); !o.Admitted() {
		t.Fatal("other model not admitted")
	}
	a.Done()
	a.Done() // twice is harmless
	if d := enter(t, c, "m1", "k"); !d.Admitted() {
		t.Fatal("freed slot not reused")
	}
}

func TestQueueBounds(t *testing.T) {
	c := New(Config{Slots: 1, MaxQueue: 3, MaxQueuePerKey: 2})
	enter(t, c, "m", "a")
	enter(t, c, "m", "a")
	enter(t, c, "m", "a")
	var rej *Rejected
	if _, err := c.Enter("m", "a"); !errors.As(err, &rej) || rej.Reason != ReasonKeyQueueFull || rej.Limit != 2 {
		t.Fatalf("third waiting of a key: %v", err)
	}
	enter(t, c, "m", "b")
	if _, err := c.Enter("m", "c"); !errors.As(err, &rej) || rej.Reason != ReasonQueueFull || rej.Limit != 3 {
		t.Fatalf("fourth waiting: %v", err)
	}
	s := c.Snapshot()
	if len(s) != 1 || s[0].Running != 1 || s[0].Waiting != 3 || s[0].WaitingByKey["a"] != 2 {
		t.Errorf("snapshot %+v", s)
	}
}

// A request whose client leaves gives its place up at once.
func TestLeaveQueue(t *testing.T) {
	c := New(Config{Slots: 1, MaxQueue: 1})
	run := enter(t, c, "m", "a")
	w := enter(t, c, "m", "b")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- w.Wait(ctx) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v", err)
	}
	w.Done()
	if s := c.Snapshot(); s[0].Waiting != 0 {
		t.Fatalf("left request still counted: %+v", s)
	}
	// The place is free for the next one, which runs when the slot frees.
	next := enter(t, c, "m", "c")
	run.Done()
	if err := next.Wait(context.Background()); err != nil || !next.Admitted() {
		t.Fatalf("next: %v", err)
	}
	if next.Waited() < 0 {
		t.Error("negative wait")
	}
}

func TestRateLimit(t *testing.T) {
	c := New(Config{Slots: 100, RatePerMinute: 2})
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	for range 2 {
		enter(t, c, "m", "a").Done()
	}
	var rej *Rejected
	_, err := c.Enter("m", "a")
	if !errors.As(err, &rej) || rej.Reason != ReasonRateLimited || rej.RetryAfter != 30*time.Second {
		t.Fatalf("third in a minute: %v (%+v)", err, rej)
	}
	// Another key has its own budget.
	enter(t, c, "m", "b").Done()
	now = now.Add(30 * time.Second)
	enter(t, c, "m", "a").Done()
	if _, err := c.Enter("m", "a"); err == nil {
		t.Fatal("token reused")
	}
}

// TestIdleStateEvicted: rate buckets and lanes are keyed by what clients send (a key
// or address, a model name); once idle they are dropped, so a stream of new names does
// not grow the controller for ever. A lane with a request running or waiting stays.
func TestIdleStateEvicted(t *testing.T) {
	c := New(Config{Slots: 1, RatePerMinute: 60})
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	for i := range 1000 {
		tk, err := c.Enter(fmt.Sprintf("model-%d", i), fmt.Sprintf("ip:10.0.%d.%d", i/256, i%256))
		if err != nil {
			t.Fatal(err)
		}
		tk.Done()
	}
	busy, err := c.Enter("busy", "ip:10.9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.lanes) != 1001 || len(c.buckets) != 1001 {
		t.Fatalf("before: %d lanes, %d buckets", len(c.lanes), len(c.buckets))
	}
	// A minute on, every bucket has refilled; lanes are not idle long enough yet.
	now = now.Add(time.Minute)
	if _, err := c.Enter("busy", "ip:10.9.9.10"); err != nil {
		t.Fatal(err)
	}
	if len(c.buckets) != 1 || len(c.lanes) != 1001 {
		t.Errorf("after a minute: %d buckets (want the new one), %d lanes (want all)", len(c.buckets), len(c.lanes))
	}
	now = now.Add(laneIdle)
	if _, err := c.Enter("other", "ip:10.9.9.11"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.lanes["busy"]; !ok || len(c.lanes) != 2 {
		t.Errorf("after %v idle: lanes %d, busy kept %v; want busy (running) and other", laneIdle, len(c.lanes), ok)
	}
	busy.Done()
	// The busy lane's waiting ticket got the slot: still not idle.
	if l := c.lanes["busy"]; l == nil || l.running != 1 {
		t.Fatalf("busy lane after Done: %+v", l)
	}
}
