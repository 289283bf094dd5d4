package engine

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"

	"hearth"
)

// TestUnsupportedArchitectureRefused: a model whose architecture the runtime says it
// cannot run is refused before anything is rendered or generated, with a 400 on
// `model` that names the model, its architecture, the runtime and what to do.
func TestUnsupportedArchitectureRefused(t *testing.T) {
	show := qwenShow()
	show.Architecture, show.UnsupportedBy = "hearthtestarch", "the embedded runtime (Ollama 0.24.0)"
	rt := &fakeRuntime{show: show, write: func(string, json.RawMessage) []string { return []string{"Never."} }}
	e := New(rt, DefaultFormats(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	req, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"odd:1b","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Prepare(context.Background(), req, nil, Inputs{})
	var he *hearth.Error
	const want = `The model "odd:1b" has the architecture "hearthtestarch", which the embedded runtime (Ollama 0.24.0) cannot run; ` +
		`serve it from an Ollama that can (hearth serve --runtime URL).`
	if !errors.As(err, &he) || he.Status != 400 || he.Param != "model" || he.Code != "model_architecture_unsupported" || he.Message != want {
		t.Fatalf("got %v\nwant a 400 on model, model_architecture_unsupported: %s", err, want)
	}
	if len(rt.reqs) != 0 {
		t.Fatalf("%d runtime requests, want none", len(rt.reqs))
	}

	// The same model on a runtime that can run it (the architecture alone decides nothing).
	ok := qwenShow()
	ok.Architecture = "hearthtestarch"
	e = New(&fakeRuntime{show: ok, write: rt.write}, DefaultFormats(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := e.Prepare(context.Background(), req, nil, Inputs{}); err != nil {
		t.Fatalf("a runnable model: %v", err)
	}
}
