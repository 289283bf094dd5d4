package telemetry

import (
	"context"
	"strings"
	"sync"
	"time"
)

// UnknownModel is the metric label of a model name the runtime does not have.
const UnknownModel = "unknown"

// modelRefreshEvery bounds how often a name not seen before makes hearth ask the
// runtime for its model list again: a stream of made-up names costs one list call per
// interval, not one per request.
const modelRefreshEvery = 5 * time.Second

// ModelNames maps the model names requests send to the names the runtime has, for
// metric labels. Labels must come from a small set: every distinct label value is a
// series kept for the life of the process, and requests may name anything (120
// requests with 500 KB names once grew /metrics to 660 MB).
type ModelNames struct {
	list func(context.Context) ([]string, error)

	mu sync.Mutex
	// byKey maps a lowercased name, with and without ":latest", to the runtime's name.
	byKey   map[string]string
	fetched time.Time
	// listing is closed when the list call in flight ends; nil when none is.
	listing chan struct{}
}

// NewModelNames knows the names list returns.
func NewModelNames(list func(context.Context) ([]string, error)) *ModelNames {
	return &ModelNames{list: list, byKey: map[string]string{}}
}

// Label is the runtime's name of the model the request named, or UnknownModel; the
// empty name (a request that named none) stays empty.
func (m *ModelNames) Label(name string) string {
	if name == "" || m == nil {
		return name
	}
	key := strings.ToLower(name)
	m.mu.Lock()
	v, ok := m.byKey[key]
	// A miss waits for the list call in flight, or starts one (at most one per
	// interval). Known names never wait: a runtime that is down must not hold up the
	// requests whose names are known. Waiting rather than answering "unknown" matters
	// at start, when the first requests arrive together: each of them would otherwise
	// be counted under "unknown" while the first one's list call runs.
	wait := m.listing
	if !ok && wait == nil && m.list != nil && time.Since(m.fetched) >= modelRefreshEvery {
		wait = make(chan struct{})
		m.listing, m.fetched = wait, time.Now()
		go m.refresh(wait)
	}
	m.mu.Unlock()
	if ok {
		return v
	}
	if wait == nil {
		return UnknownModel
	}
	<-wait
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.byKey[key]; ok {
		return v
	}
	return UnknownModel
}

// refresh lists the runtime's models (bounded in time) and closes done. A failed list
// keeps the names already known.
func (m *ModelNames) refresh(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	names, err := m.list(ctx)
	cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	defer close(done)
	m.listing = nil
	if err != nil {
		return
	}
	m.byKey = make(map[string]string, 2*len(names))
	for _, n := range names {
		l := strings.ToLower(n)
		m.byKey[l] = n
		if base, ok := strings.CutSuffix(l, ":latest"); ok {
			m.byKey[base] = n
		}
	}
}
