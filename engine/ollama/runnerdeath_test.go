package ollama_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth/engine"
	"hearth/engine/ollama"
)

// dyingRuntime answers Generate with the runtime's errors for a runner that died, as
// many times as deaths says, then with a done chunk; after says how many chunks a
// dying call sends first.
type dyingRuntime struct {
	deaths, after, calls int
	message              string
}

func (d *dyingRuntime) Show(context.Context, *api.ShowRequest) (*api.ShowResponse, error) {
	return &api.ShowResponse{}, nil
}

func (d *dyingRuntime) Generate(_ context.Context, _ *api.GenerateRequest, fn api.GenerateResponseFunc) error {
	d.calls++
	if d.calls <= d.deaths {
		for range d.after {
			fn(api.GenerateResponse{Response: "x"})
		}
		return api.StatusError{StatusCode: 500, ErrorMessage: d.message}
	}
	return fn(api.GenerateResponse{Response: "ok", Done: true})
}

// TestRunnerDeathRetry: a generation whose runner died before it had anything is sent
// once more (the runtime starts a new runner); one that had output, or whose runner
// dies again, fails with the runtime's error (the second time saying it was retried).
// The runtime's messages are Ollama's (llm/server.go); the end-to-end side is
// TestTokenizerRunsE2E (server), which kills a runner.
func TestRunnerDeathRetry(t *testing.T) {
	messages := []string{
		"model runner has unexpectedly stopped, this may be due to resource limitations or an internal error, check ollama server logs for details",
		"llama runner process no longer running: -1 ",
		"an error was encountered while running the model: unexpected EOF",
		`health resp: Get "http://127.0.0.1:34221/health": read tcp 127.0.0.1:45426->127.0.0.1:34221: read: connection reset by peer`,
	}
	for _, msg := range messages {
		cases := []struct {
			name                 string
			deaths, after, calls int
			fail                 string
		}{
			{"died once before output", 1, 0, 2, ""},
			{"died twice", 2, 0, 2, "stopped twice"},
			{"died after output", 1, 1, 1, msg},
		}
		for _, c := range cases {
			rt := &dyingRuntime{deaths: c.deaths, after: c.after, message: msg}
			err := ollama.Seam(rt).Generate(context.Background(), &engine.GenerateRequest{Model: "m"}, func(engine.Chunk) error { return nil })
			label := c.name + ": " + msg[:20]
			switch {
			case rt.calls != c.calls:
				t.Errorf("%s: %d calls, want %d", label, rt.calls, c.calls)
			case c.fail == "" && err != nil:
				t.Errorf("%s: %v", label, err)
			case c.fail != "" && (err == nil || !strings.Contains(err.Error(), c.fail)):
				t.Errorf("%s: %v, want an error with %q", label, err, c.fail)
			}
		}
	}
	// Another failure (the runtime refusing the request) is not retried.
	rt := &dyingRuntime{deaths: 1, message: "exceeds the context length"}
	if ollama.Seam(rt).Generate(context.Background(), &engine.GenerateRequest{Model: "m"}, func(engine.Chunk) error { return nil }) == nil || rt.calls != 1 {
		t.Errorf("a refusal: %d calls", rt.calls)
	}
}
