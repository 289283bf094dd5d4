package console

import (
	"slices"
	"sort"
	"sync"
	"time"
)

// recentSamples is how many finished responses per model the live view's speeds are
// taken from: enough to smooth one odd response, few enough to follow a change.
const recentSamples = 32

// Recent keeps the latest time to first token and decoding speed of each model, for the
// live view. Prometheus histograms (on /metrics) are cumulative since start; a person
// watching the console wants what happens now.
type Recent struct {
	mu     sync.Mutex
	models map[string]*samples
}

type samples struct {
	ttft []time.Duration
	tps  []float64
	last time.Time
}

// NewRecent returns an empty Recent.
func NewRecent() *Recent { return &Recent{models: map[string]*samples{}} }

func (r *Recent) get(model string) *samples {
	s := r.models[model]
	if s == nil {
		s = &samples{}
		r.models[model] = s
	}
	s.last = time.Now()
	return s
}

// FirstToken records a response's time to first token.
func (r *Recent) FirstToken(model string, d time.Duration) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.get(model)
	s.ttft = appendRing(s.ttft, d)
}

// Speed records a response's decoding speed in tokens per second.
func (r *Recent) Speed(model string, tps float64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.get(model)
	s.tps = appendRing(s.tps, tps)
}

func appendRing[T any](xs []T, x T) []T {
	if len(xs) == recentSamples {
		xs = xs[1:]
	}
	return append(xs, x)
}

// ModelSpeed is a model's recent median time to first token and decoding speed.
type ModelSpeed struct {
	Model           string
	Samples         int
	TTFT            time.Duration
	TokensPerSecond float64
	Last            time.Time
}

// Snapshot returns each model's medians, sorted by model.
func (r *Recent) Snapshot() []ModelSpeed {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ModelSpeed, 0, len(r.models))
	for m, s := range r.models {
		ms := ModelSpeed{Model: m, Samples: max(len(s.ttft), len(s.tps)), Last: s.last}
		if len(s.ttft) > 0 {
			ms.TTFT = median(s.ttft)
		}
		if len(s.tps) > 0 {
			ms.TokensPerSecond = median(s.tps)
		}
		out = append(out, ms)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

func median[T time.Duration | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
