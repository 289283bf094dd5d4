package ollama

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"hearth/engine"
)

// showClient answers Show with err, and Generate with a refusal or the chunks.
type showClient struct {
	showErr error
	show    *api.ShowResponse
	genErr  error
	gen     []api.GenerateResponse
	got     *api.GenerateRequest
}

func (c *showClient) Show(context.Context, *api.ShowRequest) (*api.ShowResponse, error) {
	return c.show, c.showErr
}

func (c *showClient) Generate(_ context.Context, req *api.GenerateRequest, fn api.GenerateResponseFunc) error {
	c.got = req
	for _, r := range c.gen {
		if err := fn(r); err != nil {
			return err
		}
	}
	return c.genErr
}

// TestSeamModelNotFound: names the runtime cannot parse, and its 404 and 400 answers to
// Show, are the engine's ErrModelNotFound; a 500 is not.
func TestSeamModelNotFound(t *testing.T) {
	for _, name := range []string{"../../etc/passwd", "a:b:c", "a/b/c/d/e"} {
		c := &showClient{show: &api.ShowResponse{}}
		if _, err := Seam(c).Model(context.Background(), name); !errors.Is(err, engine.ErrModelNotFound) {
			t.Errorf("%s: %v, want ErrModelNotFound", name, err)
		}
	}
	for _, code := range []int{http.StatusNotFound, http.StatusBadRequest} {
		c := &showClient{showErr: api.StatusError{StatusCode: code, ErrorMessage: "no"}}
		if _, err := Seam(c).Model(context.Background(), "m"); !errors.Is(err, engine.ErrModelNotFound) {
			t.Errorf("%d: %v, want ErrModelNotFound", code, err)
		}
	}
	c := &showClient{showErr: api.StatusError{StatusCode: 500, ErrorMessage: "broken"}}
	_, err := Seam(c).Model(context.Background(), "m")
	var se *engine.StatusError
	if errors.Is(err, engine.ErrModelNotFound) || !errors.As(err, &se) || se.StatusCode != 500 || se.Message != "broken" {
		t.Errorf("500: %v, want a StatusError 500 broken", err)
	}
}

// TestSeamModelInfo: the parameters text, model_info and capabilities become ModelInfo.
func TestSeamModelInfo(t *testing.T) {
	c := &showClient{show: &api.ShowResponse{
		Template: "{{ .Prompt }}", Parameters: "num_ctx 8192\nstop \"<|end|>\"\nstop \"</s>\"",
		ModelInfo:    map[string]any{"general.architecture": "qwen3", "qwen3.context_length": float64(40960)},
		Capabilities: []model.Capability{"completion", "tools"},
		Details:      api.ModelDetails{Family: "qwen3", Families: []string{"qwen3"}},
	}}
	info, err := Seam(c).Model(context.Background(), "m")
	if err != nil {
		t.Fatal(err)
	}
	if info.NumCtx != 8192 || info.ContextLength != 40960 || len(info.Stop) != 2 || info.Stop[0] != "<|end|>" ||
		info.Family != "qwen3" || len(info.Capabilities) != 2 || info.Capabilities[1] != "tools" || info.Prompt == nil {
		t.Errorf("info %+v", info)
	}
}

// TestSeamGenerate: the request goes out raw, with thinking off, the stop strings as an
// option and truncate/shift off; chunks come back with their counts; a refusal is a
// StatusError with the runtime's message.
func TestSeamGenerate(t *testing.T) {
	c := &showClient{gen: []api.GenerateResponse{{Response: "a"}, {Done: true, DoneReason: "stop", Metrics: api.Metrics{PromptEvalCount: 7, EvalCount: 2}}}}
	temp := 0.5
	opts := engine.Options{ContextWindow: 4096, MaxTokens: 9, Temperature: &temp}
	var got []engine.Chunk
	err := Seam(c).Generate(context.Background(), &engine.GenerateRequest{Model: "m", Prompt: "p", Options: opts, Stop: []string{"<|end|>"}, NoSilentCuts: true, Stream: true},
		func(ch engine.Chunk) error { got = append(got, ch); return nil })
	if err != nil {
		t.Fatal(err)
	}
	r := c.got
	if !r.Raw || r.Think == nil || r.Think.Bool() || r.Truncate == nil || *r.Truncate || r.Shift == nil || *r.Shift || r.Stream == nil || !*r.Stream {
		t.Errorf("request %+v", r)
	}
	// hearth's option names become Ollama's; fields not set are not sent.
	want := map[string]any{"stop": []string{"<|end|>"}, "num_ctx": 4096, "num_predict": 9, "temperature": 0.5}
	if !reflect.DeepEqual(r.Options, want) {
		t.Errorf("options %v, want %v", r.Options, want)
	}
	if len(got) != 2 || got[0].Text != "a" || !got[1].Done || got[1].PromptEvalCount != 7 || got[1].EvalCount != 2 {
		t.Errorf("chunks %+v", got)
	}
	c = &showClient{genErr: api.StatusError{StatusCode: 400, ErrorMessage: "the input length exceeds the context length"}}
	err = Seam(c).Generate(context.Background(), &engine.GenerateRequest{Model: "m"}, func(engine.Chunk) error { return nil })
	var se *engine.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || se.Message != "the input length exceeds the context length" || !errors.Is(err, engine.ErrInputTooLong) {
		t.Errorf("refusal: %v", err)
	}
	// Said in a stream rather than as a refusal: the same meaning, the runtime's words.
	c = &showClient{genErr: errors.New("the input length exceeds the context length")}
	err = Seam(c).Generate(context.Background(), &engine.GenerateRequest{Model: "m"}, func(engine.Chunk) error { return nil })
	if !errors.Is(err, engine.ErrInputTooLong) || err.Error() != "the input length exceeds the context length" {
		t.Errorf("too long in a stream: %v", err)
	}
}
