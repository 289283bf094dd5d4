package telemetry

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// TestModelNamesLabel: names map to the runtime's own spelling; anything else is
// "unknown"; a stream of made-up names costs one list call per interval, not one each.
func TestModelNamesLabel(t *testing.T) {
	calls := 0
	var fail bool
	m := NewModelNames(func(context.Context) ([]string, error) {
		calls++
		if fail {
			return nil, errors.New("runtime down")
		}
		return []string{"qwen3:0.6b", "plain:latest"}, nil
	})
	for name, want := range map[string]string{
		"plain:latest": "plain:latest", "plain": "plain:latest", "PLAIN": "plain:latest",
		"qwen3:0.6b": "qwen3:0.6b", "qwen3": UnknownModel, "": "",
	} {
		if got := m.Label(name); got != want {
			t.Errorf("label(%q) = %q, want %q", name, got, want)
		}
	}
	if calls != 1 {
		t.Errorf("%d list calls for the first names, want 1", calls)
	}
	for i := range 1000 {
		if got := m.Label(fmt.Sprintf("made-up-%d", i)); got != UnknownModel {
			t.Fatalf("made-up name labelled %q", got)
		}
	}
	if calls != 1 {
		t.Errorf("%d list calls after 1000 made-up names within the interval, want 1", calls)
	}
	// After the interval a miss lists again; a failed list keeps the names known.
	m.fetched = time.Now().Add(-modelRefreshEvery)
	fail = true
	if got := m.Label("made-up"); got != UnknownModel || calls != 2 {
		t.Errorf("after the interval: %q, %d calls", got, calls)
	}
	if got := m.Label("plain"); got != "plain:latest" {
		t.Errorf("a known name after a failed list: %q", got)
	}
}

// TestModelNamesLabelConcurrentMiss: requests that arrive together while the names are
// being listed all get the runtime's name, from one list call; none is counted under
// "unknown" for having come second (the first requests after a start did).
func TestModelNamesLabelConcurrentMiss(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	m := NewModelNames(func(context.Context) ([]string, error) {
		calls.Add(1)
		<-release
		return []string{"plain:latest"}, nil
	})
	got := make(chan string)
	for range 8 {
		go func() { got <- m.Label("plain") }()
	}
	// Let every caller reach the lookup before the list call answers.
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	for range 8 {
		if l := <-got; l != "plain:latest" {
			t.Errorf("a concurrent first lookup got %q", l)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d list calls for 8 concurrent misses, want 1", n)
	}
}
