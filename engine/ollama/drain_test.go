package ollama

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine"
)

// pacedClient streams n chunks, one per tick, and reports how the stream ended: read to
// its done chunk, or its request cancelled (the connection closed mid-stream).
type pacedClient struct {
	n     int
	tick  time.Duration
	first time.Duration // before the first chunk (queue, prompt)
	ended chan string
}

func (c *pacedClient) Show(context.Context, *api.ShowRequest) (*api.ShowResponse, error) {
	return nil, errors.New("not used")
}

func (c *pacedClient) Generate(ctx context.Context, _ *api.GenerateRequest, fn api.GenerateResponseFunc) error {
	wait := c.first
	for i := range c.n {
		select {
		case <-ctx.Done():
			c.ended <- "cancelled"
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = c.tick
		r := api.GenerateResponse{Response: "x"}
		if i == c.n-1 {
			r.Done, r.DoneReason = true, "stop"
		}
		if err := fn(r); err != nil {
			c.ended <- "left"
			return err
		}
	}
	c.ended <- "done"
	return nil
}

// TestDrainingSeam: over an external runtime a generation the caller leaves is read to
// its end, not left mid-stream (ollama/ollama#17131), and the caller does not wait for
// it; one left before its first chunk is closed at once.
func TestDrainingSeam(t *testing.T) {
	stopErr := errors.New("decision point")
	cases := []struct {
		name   string
		first  time.Duration
		leave  func(cancel context.CancelFunc, chunk int) error // per chunk the caller sees
		cancel time.Duration                                    // cancel ctx after this, if set
		want   error
		ended  string
	}{
		{"the callback stops it", 0, func(_ context.CancelFunc, n int) error {
			if n == 2 {
				return stopErr
			}
			return nil
		}, 0, stopErr, "done"},
		{"the caller leaves mid-stream", 0, func(cancel context.CancelFunc, n int) error {
			if n == 2 {
				cancel()
			}
			return nil
		}, 0, context.Canceled, "done"},
		{"the caller leaves before the first chunk", time.Second, nil, 20 * time.Millisecond, context.Canceled, "cancelled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &pacedClient{n: 20, tick: 10 * time.Millisecond, first: tc.first, ended: make(chan string, 1)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel > 0 {
				time.AfterFunc(tc.cancel, cancel)
			}
			seen := 0
			start := time.Now()
			err := DrainingSeam(c).Generate(ctx, &engine.GenerateRequest{Model: "m"}, func(engine.Chunk) error {
				seen++
				if tc.leave != nil {
					return tc.leave(cancel, seen)
				}
				return nil
			})
			took := time.Since(start)
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if took > 100*time.Millisecond {
				t.Errorf("the caller waited %v for the rest of the stream", took)
			}
			if seen > 2 {
				t.Errorf("the callback saw %d chunks after it left", seen-2)
			}
			select {
			case got := <-c.ended:
				if got != tc.ended {
					t.Errorf("the stream ended %q, want %q", got, tc.ended)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the stream never ended")
			}
		})
	}
}
