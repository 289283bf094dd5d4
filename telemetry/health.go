package telemetry

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"hearth/engine/pool"
)

// RuntimeHealth follows the runtime across health checks: whether it is up, since
// when, how often it came back, and the last generation it failed. Clients hold no
// connection to the runtime (each call is a new HTTP request), so "reconnecting" is
// noticing it is back: requests work again as soon as it answers.
type RuntimeHealth struct {
	metrics     *Metrics
	log         *slog.Logger
	pool        *pool.Pool
	mu          sync.Mutex
	up          bool
	since       time.Time
	lastErr     string
	restarts    int
	lastFailure string
	failedAt    time.Time
}

// NewRuntimeHealth follows the runtimes of p (taken as up), telling changes to m and log.
func NewRuntimeHealth(p *pool.Pool, m *Metrics, log *slog.Logger) *RuntimeHealth {
	return &RuntimeHealth{metrics: m, log: log, pool: p, up: true}
}

// DefaultSuperviseEvery is how often Supervise checks the runtime.
const DefaultSuperviseEvery = 5 * time.Second

// Supervise checks the runtime every interval until ctx ends, so /healthz, /metrics
// (hearth_runtime_up, hearth_runtime_restarts_total) and the log say when an external
// runtime went away or came back, without waiting for a request to find out.
func (h *RuntimeHealth) Supervise(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultSuperviseEvery
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		check, cancel := context.WithTimeout(ctx, min(every, 2*time.Second))
		err := h.pool.Ready(check)
		cancel()
		if ctx.Err() != nil {
			return
		}
		h.Checked(err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Checked records the result of a runtime health check.
func (h *RuntimeHealth) Checked(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case err != nil && h.up:
		h.up, h.since, h.lastErr = false, time.Now(), err.Error()
		h.metrics.RuntimeUp.Set(0)
		h.log.Error("runtime unreachable; responses fail until it is back", "runtimes", strings.Join(h.pool.Labels(), ", "), "error", err)
	case err != nil:
		h.lastErr = err.Error()
	case !h.up:
		h.up, h.since, h.lastErr = true, time.Now(), ""
		h.restarts++
		h.metrics.RuntimeUp.Set(1)
		h.metrics.RuntimeRestarts.Inc()
		h.log.Info("runtime is back", "runtimes", strings.Join(h.pool.Labels(), ", "))
	}
}

// Failed records a generation the runtime failed (a runner that crashed).
func (h *RuntimeHealth) Failed(msg string) {
	h.mu.Lock()
	h.lastFailure, h.failedAt = msg, time.Now()
	h.mu.Unlock()
	h.metrics.RuntimeErrors.Inc()
}

// Describe adds to out, the runtime part of /healthz, since when it is in its state,
// how often it came back, and its last failed generation.
func (h *RuntimeHealth) Describe(out map[string]any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.since.IsZero() {
		out["since"] = h.since.UTC().Format(time.RFC3339)
	}
	if h.restarts > 0 {
		out["restarts"] = h.restarts
	}
	if h.lastFailure != "" {
		out["last_failure"] = map[string]any{"message": h.lastFailure, "at": h.failedAt.UTC().Format(time.RFC3339)}
	}
}

// RuntimeStates describes each runtime of the pool for /healthz: its label (host:port,
// or "embedded"), whether it serves, since when, why not, and its models.
func (h *RuntimeHealth) RuntimeStates() []map[string]any {
	var out []map[string]any
	for _, st := range h.pool.States() {
		h := map[string]any{"runtime": st.Label, "ok": st.Up, "embedded": st.Embedded, "models": st.Models}
		if st.Models == nil {
			h["models"] = []string{}
		}
		if !st.Since.IsZero() {
			h["since"] = st.Since.UTC().Format(time.RFC3339)
		}
		if st.Error != "" {
			h["error"] = st.Error
		}
		out = append(out, h)
	}
	return out
}
