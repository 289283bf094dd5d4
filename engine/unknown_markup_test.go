package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"hearth"
)

// TestUnknownRendererRefusesTools: a model the runtime renders with a renderer no format
// names is served as plain text; a request with tools is a 400 naming the model and the
// renderer, and the warning is logged once per model, however often it is asked.
func TestUnknownRendererRefusesTools(t *testing.T) {
	show := qwenShow()
	show.Template = "{{ .Prompt }}"
	show.Renderer, show.Parser = "olmo3-think", "olmo3-think"
	rt := &fakeRuntime{show: show, write: func(string, json.RawMessage) []string {
		return []string{"Plain", " text."}
	}}
	var logs bytes.Buffer
	e := New(rt, DefaultFormats(), slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()

	withTools, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"olmo3:7b-think","input":"hi","tools":[` + weatherTool + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Prepare(ctx, withTools, nil, Inputs{})
	var he *hearth.Error
	if !errors.As(err, &he) || he.Status != 400 || he.Param != "tools" ||
		!strings.Contains(he.Message, `"olmo3:7b-think"`) || !strings.Contains(he.Message, `renderer "olmo3-think"`) {
		t.Fatalf("with tools: %v, want a 400 on tools naming the model and its renderer", err)
	}

	plain, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"olmo3:7b-think","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		e.mu.Lock()
		e.models = map[string]cachedModel{} // as after the cache's TTL: asked again
		e.mu.Unlock()
		j, err := e.Prepare(ctx, plain, nil, Inputs{})
		if err != nil {
			t.Fatalf("without tools: %v", err)
		}
		if j.Model.UnknownMarkup != `renderer "olmo3-think" and parser "olmo3-think"` {
			t.Fatalf("UnknownMarkup = %q", j.Model.UnknownMarkup)
		}
	}
	if n := strings.Count(logs.String(), "no tool-call format"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, logs.String())
	}

	// A renderer hearth knows is served with its format, and no warning.
	known := qwenShow()
	known.Renderer, known.Parser = "qwen3.5", "qwen3.5"
	known.Template = ""
	rt.show = known
	logs.Reset()
	e2 := New(rt, DefaultFormats(), slog.New(slog.NewTextHandler(&logs, nil)))
	m, err := e2.Model(ctx, "qwen3.5:9b")
	if err != nil || m.UnknownMarkup != "" || m.Format.ID != "qwen3.5" || logs.Len() != 0 {
		t.Fatalf("qwen3.5: %v, %q, %s, %s", err, m.UnknownMarkup, m.Format.ID, logs.String())
	}
}

// failingRenderer renders nothing: the runtime's renderer is unknown to hearth's module.
type failingRenderer struct{}

func (failingRenderer) ToolParameters(schema json.RawMessage) (json.RawMessage, error) {
	return schema, nil
}

func (failingRenderer) RenderPrompt(*Conversation, *Think) (string, error) {
	return "", errors.New(`unknown renderer "qwen3.9"`)
}

// TestNewerRendererIsABadRequest: a model whose renderer the module cannot render (a
// name no release hearth carries knows, as a later release could bring; an
// external runtime of a later release) is a 400 naming it, not a server error.
func TestNewerRendererIsABadRequest(t *testing.T) {
	show := qwenShow()
	show.Template = ""
	show.Renderer, show.Parser = "qwen3.9", "qwen3.9"
	show.Prompt = failingRenderer{}
	e := New(&fakeRuntime{show: show}, DefaultFormats(), nil)
	req, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"qwen3.9:9b","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Prepare(context.Background(), req, nil, Inputs{})
	var he *hearth.Error
	if !errors.As(err, &he) || he.Status != 400 || he.Code != "model_renderer_unsupported" ||
		!strings.Contains(he.Message, `"qwen3.9:9b"`) || !strings.Contains(he.Message, `renderer "qwen3.9"`) {
		t.Fatalf("got %v, want a 400 naming the model and its renderer", err)
	}
}

// TestLaterRenderersHaveFormats: a model whose Modelfile names one of the renderers and
// parsers Ollama added after v0.24.0 that hearth has a format for (cohere, glimmer)
// gets that format by its renderer, with its stops, and no unknown-markup warning: a
// runtime with no template for it (v0.32's, or v0.24.0 with its registered templates) says only
// its renderer's name.
func TestLaterRenderersHaveFormats(t *testing.T) {
	for _, c := range []struct{ renderer, stop string }{
		{"cohere", "<|END_OF_TURN_TOKEN|>"},
		{"glimmer", "<|eot|>"},
	} {
		show := qwenShow()
		show.Template = "{{ .Prompt }}"
		show.Stop = nil
		show.Renderer, show.Parser = c.renderer, c.renderer
		var logs bytes.Buffer
		e := New(&fakeRuntime{show: show}, DefaultFormats(), slog.New(slog.NewTextHandler(&logs, nil)))
		m, err := e.Model(context.Background(), "x:latest")
		if err != nil {
			t.Fatal(err)
		}
		if m.Format == nil || m.Format.ID != c.renderer || m.UnknownMarkup != "" {
			t.Errorf("%s: format %v, unknown markup %q", c.renderer, m.Format, m.UnknownMarkup)
		}
		if !slices.Contains(m.Format.Stop, c.stop) {
			t.Errorf("%s: stops %q, want %q", c.renderer, m.Format.Stop, c.stop)
		}
		if strings.Contains(logs.String(), "no tool-call format") {
			t.Errorf("%s: warned %s", c.renderer, logs.String())
		}
	}
}
