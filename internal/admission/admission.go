// Package admission decides when a generation may run: per model and runtime at most
// that runtime's slots run at once, the rest wait in one bounded queue per model (across
// all runtimes of a pool) that serves keys round-robin (each key's own requests in
// arrival order), and a key over its rate limit is refused. It knows nothing of HTTP;
// the server maps its errors to 429 with Retry-After.
//
// Each request is placed on one runtime when it enters (engine/pool's placement policy
// chooses, with the loads of AppendLoads: the runtime that served its chain, else the
// least loaded), and waits for a slot of that runtime: a response whose runtime is
// known before it runs can say so (a header) and keep that runtime's KV cache in mind.
// A single runtime is the runtime "".
package admission

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"sync"
	"time"
)

// Config bounds admission. The zero value admits one generation per model and lets
// any number wait.
type Config struct {
	// Slots is how many generations of one model run at once on a runtime (<= 0: 1).
	// hearth sets it to the runtime's parallel slots: more would only queue inside the
	// runtime, where nobody can see, order or cancel them.
	Slots int
	// RuntimeSlots overrides Slots for the runtimes it names (by label), for a pool
	// whose runtimes run different numbers of generations at once.
	RuntimeSlots map[string]int
	// MaxQueue bounds how many requests wait for one model (0: unbounded; < 0: none may
	// wait, every request beyond the slots is refused).
	MaxQueue int
	// MaxQueuePerKey bounds how many requests of one key wait for one model (0: only
	// MaxQueue applies), so one key cannot take the whole queue.
	MaxQueuePerKey int
	// RatePerMinute limits how many requests a key may start per minute (0: no limit),
	// with bursts of up to that many.
	RatePerMinute int
}

// Reasons of a Rejected.
const (
	ReasonQueueFull    = "queue_full"
	ReasonKeyQueueFull = "key_queue_full"
	ReasonRateLimited  = "rate_limited"
)

// Rejected is the error of a request admission refuses.
type Rejected struct {
	Reason     string
	Model, Key string
	// RetryAfter is when trying again is likely to succeed (at least a second).
	RetryAfter time.Duration
	Limit      int
}

func (e *Rejected) Error() string {
	switch e.Reason {
	case ReasonRateLimited:
		return fmt.Sprintf("Rate limit reached: at most %d requests per minute per API key. Retry after %ds.", e.Limit, secs(e.RetryAfter))
	case ReasonKeyQueueFull:
		return fmt.Sprintf("Too many of this API key's requests are waiting for model '%s' (at most %d). Retry after %ds.", e.Model, e.Limit, secs(e.RetryAfter))
	default:
		return fmt.Sprintf("The server is busy: %d requests are already waiting for model '%s'. Retry after %ds.", e.Limit, e.Model, secs(e.RetryAfter))
	}
}

func secs(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// Controller admits generations. It is safe for concurrent use.
type Controller struct {
	cfg Config
	now func() time.Time

	mu      sync.Mutex
	lanes   map[string]*lane
	buckets map[string]*bucket
	// swept is when idle lanes and full buckets were last dropped.
	swept time.Time
}

// Idle state is dropped: a rate bucket once it has refilled (a new one would be the
// same), a lane once nothing ran or waited in it for laneIdle. Clients choose both
// keys (a model name, an address), so keeping them for ever grows without bound.
const (
	sweepEvery = time.Minute
	laneIdle   = 10 * time.Minute
)

// New returns a Controller with cfg.
func New(cfg Config) *Controller {
	if cfg.Slots <= 0 {
		cfg.Slots = 1
	}
	return &Controller{cfg: cfg, now: time.Now, lanes: map[string]*lane{}, buckets: map[string]*bucket{}}
}

// Config returns the controller's configuration.
func (c *Controller) Config() Config { return c.cfg }

// lane is one model's slots (per runtime) and queue.
type lane struct {
	running int
	waiting int
	// runningOn and waitingOn count running and waiting tickets per runtime;
	// reservedOn the requests placed on a runtime that have not entered yet (Reserve).
	runningOn, waitingOn, reservedOn map[string]int
	// queues holds each key's waiting tickets in arrival order; ring the keys that have
	// any, in the order they are served, next the index of the key served next.
	queues map[string][]*Ticket
	ring   []string
	next   int
	// service is a moving average of how long a generation holds its slot, for
	// Retry-After.
	service time.Duration
	// used is when a request last entered or left the lane.
	used time.Time
}

// Ticket is one request's place: admitted at once, or waiting in its model's queue.
type Ticket struct {
	c          *Controller
	model, key string
	// runtime is the runtime it runs on (Move may change it while it waits).
	runtime  string
	enqueued time.Time
	ready    chan struct{}
	// Guarded by c.mu.
	admitted, gone bool
	admittedAt     time.Time
}

// Enter asks to run a generation of model for key on the single runtime. It returns a
// ticket that is either admitted already or waiting (Wait for it), or a *Rejected.
// Every ticket must end with Done (after Wait, also when Wait failed).
func (c *Controller) Enter(model, key string) (*Ticket, error) { return c.EnterOn(model, key, "") }

// Slots is how many generations of a model run at once on runtime.
func (c *Controller) Slots(runtime string) int { return c.slots(runtime) }

func (c *Controller) slots(runtime string) int {
	if n, ok := c.cfg.RuntimeSlots[runtime]; ok && n > 0 {
		return n
	}
	return c.cfg.Slots
}

// LeastLoaded returns the runtime of runtimes whose slots for model are least taken by
// running, waiting and reserved requests, the first of equals; "" when runtimes is
// empty.
func (c *Controller) LeastLoaded(model string, runtimes []string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leastLoadedLocked(c.lanes[model], runtimes)
}

// AppendLoads appends to dst, for each of runtimes, the requests of model running,
// waiting and reserved on it: the load placement scores against the runtime's Slots.
func (c *Controller) AppendLoads(dst []int, model string, runtimes []string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lanes[model]
	for _, r := range runtimes {
		n := 0
		if l != nil {
			n = l.runningOn[r] + l.waitingOn[r] + l.reservedOn[r]
		}
		dst = append(dst, n)
	}
	return dst
}

// Reserve counts a request placed on runtime for model that has not entered yet (it is
// being prepared), so that requests placed meanwhile see it in LeastLoaded: without it,
// requests arriving together would all be placed on the same idle runtime. The returned
// release ends the reservation; it may be called more than once.
func (c *Controller) Reserve(model, runtime string) (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.laneLocked(model, c.now())
	l.reservedOn[runtime]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			l.reservedOn[runtime]--
			if l.reservedOn[runtime] == 0 {
				delete(l.reservedOn, runtime)
			}
		})
	}
}

// laneLocked returns model's lane, made if it has none.
func (c *Controller) laneLocked(model string, now time.Time) *lane {
	l := c.lanes[model]
	if l == nil {
		l = &lane{queues: map[string][]*Ticket{}, runningOn: map[string]int{}, waitingOn: map[string]int{}, reservedOn: map[string]int{}}
		c.lanes[model] = l
	}
	l.used = now
	return l
}

func (c *Controller) leastLoadedLocked(l *lane, runtimes []string) string {
	best, bestLoad, bestSlots := "", 0, 1
	for i, r := range runtimes {
		load := 0
		if l != nil {
			load = l.runningOn[r] + l.waitingOn[r] + l.reservedOn[r]
		}
		slots := c.slots(r)
		// load/slots < bestLoad/bestSlots, without division.
		if i == 0 || load*bestSlots < bestLoad*slots {
			best, bestLoad, bestSlots = r, load, slots
		}
	}
	return best
}

// EnterOn is Enter on the named runtime of a pool.
func (c *Controller) EnterOn(model, key, runtime string) (*Ticket, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if now.Sub(c.swept) >= sweepEvery {
		c.sweepLocked(now)
	}
	if c.cfg.RatePerMinute > 0 {
		b := c.buckets[key]
		if b == nil {
			b = &bucket{tokens: float64(c.cfg.RatePerMinute), at: now}
			c.buckets[key] = b
		}
		if wait := b.take(now, float64(c.cfg.RatePerMinute)/60); wait > 0 {
			return nil, &Rejected{Reason: ReasonRateLimited, Model: model, Key: key, RetryAfter: max(wait, time.Second), Limit: c.cfg.RatePerMinute}
		}
	}
	l := c.laneLocked(model, now)
	t := &Ticket{c: c, model: model, key: key, runtime: runtime, enqueued: now, ready: make(chan struct{})}
	if l.runningOn[runtime] < c.slots(runtime) && l.waitingOn[runtime] == 0 {
		c.admitLocked(l, t, now)
		return t, nil
	}
	if c.cfg.MaxQueue < 0 || (c.cfg.MaxQueue > 0 && l.waiting >= c.cfg.MaxQueue) {
		return nil, &Rejected{Reason: ReasonQueueFull, Model: model, Key: key, RetryAfter: c.retryAfter(l, l.waiting, c.totalSlots(l)), Limit: max(c.cfg.MaxQueue, 0)}
	}
	if n := len(l.queues[key]); c.cfg.MaxQueuePerKey > 0 && n >= c.cfg.MaxQueuePerKey {
		return nil, &Rejected{Reason: ReasonKeyQueueFull, Model: model, Key: key, RetryAfter: c.retryAfter(l, n, c.slots(runtime)), Limit: c.cfg.MaxQueuePerKey}
	}
	if len(l.queues[key]) == 0 {
		// A key that joins waits for its turn after the keys already waiting: it goes
		// just before the key served next, that is at the end of the round.
		l.ring = append(l.ring[:l.next], append([]string{key}, l.ring[l.next:]...)...)
		l.next++
	}
	l.queues[key] = append(l.queues[key], t)
	l.waiting++
	l.waitingOn[runtime]++
	return t, nil
}

// totalSlots is the slots of the runtimes the lane has used: the pool's capacity for
// its model, as far as admission has seen it.
func (c *Controller) totalSlots(l *lane) int {
	n := 0
	for r := range l.runningOn {
		n += c.slots(r)
	}
	return max(n, c.cfg.Slots)
}

// retryAfter estimates when n waiting requests ahead will have been served by slots.
func (c *Controller) retryAfter(l *lane, n, slots int) time.Duration {
	per := l.service
	if per <= 0 {
		per = time.Second
	}
	d := time.Duration(float64(per) * float64(n+1) / float64(slots))
	return min(max(d.Round(time.Second), time.Second), 10*time.Minute)
}

func (c *Controller) admitLocked(l *lane, t *Ticket, now time.Time) {
	l.running++
	l.runningOn[t.runtime]++
	t.admitted, t.admittedAt = true, now
	close(t.ready)
}

// dispatchLocked fills runtime's free slots from the queue, one key after another;
// a key's first ticket placed on runtime goes, its tickets on other runtimes wait.
func (c *Controller) dispatchLocked(l *lane, runtime string) {
	now := c.now()
	for l.runningOn[runtime] < c.slots(runtime) && l.waitingOn[runtime] > 0 && len(l.ring) > 0 {
		if l.next >= len(l.ring) {
			l.next = 0
		}
		var t *Ticket
		for i := range l.ring {
			idx := (l.next + i) % len(l.ring)
			key := l.ring[idx]
			q := l.queues[key]
			j := slices.IndexFunc(q, func(w *Ticket) bool { return w.runtime == runtime })
			if j < 0 {
				continue
			}
			t = q[j]
			q = slices.Delete(q, j, j+1)
			if len(q) == 0 {
				delete(l.queues, key)
				l.ring = slices.Delete(l.ring, idx, idx+1)
				l.next = idx
			} else {
				l.queues[key] = q
				l.next = idx + 1
			}
			break
		}
		if t == nil {
			return
		}
		l.waiting--
		l.waitingOn[runtime]--
		c.admitLocked(l, t, now)
	}
}

// removeLocked takes a waiting ticket out of its queue.
func (c *Controller) removeLocked(l *lane, t *Ticket) {
	q := l.queues[t.key]
	for i, w := range q {
		if w != t {
			continue
		}
		q = append(q[:i], q[i+1:]...)
		l.waiting--
		l.waitingOn[t.runtime]--
		if len(q) > 0 {
			l.queues[t.key] = q
			return
		}
		delete(l.queues, t.key)
		for j, k := range l.ring {
			if k == t.key {
				l.ring = append(l.ring[:j], l.ring[j+1:]...)
				if j < l.next {
					l.next--
				}
				break
			}
		}
		return
	}
}

// Admitted reports whether the ticket holds a slot.
func (t *Ticket) Admitted() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.admitted
}

// Wait blocks until the ticket is admitted or ctx ends. A request whose context ends
// while it waits leaves the queue at once, and the next request takes its place.
func (t *Ticket) Wait(ctx context.Context) error {
	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.admitted {
		// Admitted in the same instant: the caller still gives up, so Done frees it.
		return ctx.Err()
	}
	t.gone = true
	t.c.removeLocked(t.c.lanes[t.model], t)
	return ctx.Err()
}

// Waited is how long the ticket waited before it was admitted (so far, if it was not).
func (t *Ticket) Waited() time.Duration {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.admitted {
		return t.admittedAt.Sub(t.enqueued)
	}
	return t.c.now().Sub(t.enqueued)
}

// Done frees the ticket's slot (or place). It may be called more than once.
func (t *Ticket) Done() {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.gone {
		return
	}
	t.gone = true
	l := c.lanes[t.model]
	if !t.admitted {
		c.removeLocked(l, t)
		return
	}
	now := c.now()
	l.used = now
	held := now.Sub(t.admittedAt)
	if l.service == 0 {
		l.service = held
	} else {
		l.service = (l.service*7 + held) / 8
	}
	l.running--
	l.runningOn[t.runtime]--
	c.dispatchLocked(l, t.runtime)
}

// Runtime is the runtime the ticket runs (or will run) on.
func (t *Ticket) Runtime() string {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.runtime
}

// Move places the waiting tickets of runtime from on the least loaded of the runtimes
// candidates gives for their model (a runtime that went down: its queue goes to the
// others); none leaves them where they are. Tickets already running stay: their
// runtime ends them. candidates is called with the controller locked.
func (c *Controller) Move(from string, candidates func(model string) []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for model, l := range c.lanes {
		if l.waitingOn[from] == 0 {
			continue
		}
		dest := c.leastLoadedLocked(l, slices.DeleteFunc(candidates(model), func(r string) bool { return r == from }))
		if dest == "" || dest == from {
			continue
		}
		for _, q := range l.queues {
			for _, t := range q {
				if t.runtime == from {
					t.runtime = dest
					l.waitingOn[from]--
					l.waitingOn[dest]++
				}
			}
		}
		c.dispatchLocked(l, dest)
	}
}

// Lane is a model's admission state at one moment.
type Lane struct {
	Model            string
	Running, Waiting int
	// RunningOn and WaitingOn count them per runtime.
	RunningOn, WaitingOn map[string]int
	// WaitingByKey counts the waiting requests of each key.
	WaitingByKey map[string]int
}

// Snapshot returns every model's state, sorted by model.
func (c *Controller) Snapshot() []Lane {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Lane, 0, len(c.lanes))
	for m, l := range c.lanes {
		byKey := make(map[string]int, len(l.queues))
		for k, q := range l.queues {
			byKey[k] = len(q)
		}
		out = append(out, Lane{Model: m, Running: l.running, Waiting: l.waiting, WaitingByKey: byKey,
			RunningOn: maps.Clone(l.runningOn), WaitingOn: maps.Clone(l.waitingOn)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

// sweepLocked drops lanes idle for laneIdle and buckets that have refilled.
func (c *Controller) sweepLocked(now time.Time) {
	c.swept = now
	for m, l := range c.lanes {
		if l.running == 0 && l.waiting == 0 && len(l.reservedOn) == 0 && now.Sub(l.used) >= laneIdle {
			delete(c.lanes, m)
		}
	}
	if c.cfg.RatePerMinute > 0 {
		burst := float64(c.cfg.RatePerMinute)
		for k, b := range c.buckets {
			if b.tokens+now.Sub(b.at).Seconds()*burst/60 >= burst {
				delete(c.buckets, k)
			}
		}
	}
}

// bucket is a token bucket of one key's rate limit.
type bucket struct {
	tokens float64
	at     time.Time
}

// take takes a token if there is one, else says how long until there is.
func (b *bucket) take(now time.Time, perSecond float64) time.Duration {
	burst := perSecond * 60
	b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*perSecond)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / perSecond * float64(time.Second))
}
