package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/engine/ollama/testenv"
	"hearth/internal/seal"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
)

// fakeRuntime stands in for Ollama in the HTTP fuzz target: every model exists, has the
// script models' template, and answers every prompt with the same short text. A fuzz
// run then reaches the whole handler (decode, chain lookup, prepare, render, generate,
// store, frame) thousands of times a second without a runner.
type fakeRuntime struct{}

func (fakeRuntime) Show(_ context.Context, req *api.ShowRequest) (*api.ShowResponse, error) {
	if req.Model == "no-such-model" {
		return nil, api.StatusError{StatusCode: http.StatusNotFound, ErrorMessage: "model not found"}
	}
	// A 4k context, or 128k for a model named *-128k and 1M for *-1m (long chains and
	// histories in benchmarks).
	window := 4096.0
	if strings.HasSuffix(req.Model, "-128k") {
		window = 131072
	} else if strings.HasSuffix(req.Model, "-1m") {
		window = 1 << 20
	}
	return &api.ShowResponse{
		Template:     scriptmodel.Template,
		Parameters:   `stop "<|end|>"`,
		Capabilities: []model.Capability{model.CapabilityCompletion, model.CapabilityTools},
		ModelInfo:    map[string]any{"general.architecture": "llama", "llama.context_length": window},
	}, nil
}

func (fakeRuntime) Generate(ctx context.Context, req *api.GenerateRequest, fn api.GenerateResponseFunc) error {
	for _, piece := range []string{"Hello", " from", " a fake", " runtime."} {
		if err := fn(api.GenerateResponse{Model: req.Model, Response: piece}); err != nil {
			return err
		}
	}
	return fn(api.GenerateResponse{Model: req.Model, Done: true, DoneReason: "stop",
		Metrics: api.Metrics{PromptEvalCount: len(req.Prompt), EvalCount: 5}})
}

// newFakeRuntimeServer is hearth's handler over fakeRuntime with a real database; the
// runtime URL points at a closed port, so nothing but the fake is ever reached.
func newFakeRuntimeServer(f testing.TB) http.Handler {
	return newFakeServer(f, fakeRuntime{}, nil)
}

// newFakeServer is hearth's handler over an Ollama client fake, with a real database
// and, when key is not nil, that sealing key.
func newFakeServer(f testing.TB, rt ollama.Client, key *seal.Key) http.Handler {
	return hearthOverFake(f, rt, wire.Config{Seal: key})
}

// hearthOverFake is hearth over rt (a fake runtime: the overhead benchmarks, the
// HTTP fuzzer) with a quiet log, cfg's Database or else a fresh SQLite one, and the
// rest of cfg as given.
func hearthOverFake(tb testing.TB, rt ollama.Client, cfg wire.Config) *wire.Hearth {
	if cfg.Database == nil {
		db, err := sqlite.Open(filepath.Join(tb.TempDir(), "hearth.db"))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { db.Close() })
		cfg.Database = db
	}
	target, err := ollama.Connect("127.0.0.1:1")
	if err != nil {
		tb.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Runtime, cfg.Engine, cfg.Logger = target, engine.New(ollama.Seam(rt), engine.DefaultFormats(), log), log
	return wire.New(cfg)
}

// fuzzRuntime runs FuzzCreateResponseHTTP over the embedded runtime and the script
// models instead of the fake: every generation is real (grammars, stops, the runtime's
// own refusals), at a few requests a second instead of thousands.
var fuzzRuntime = flag.Bool("hearth.fuzz-runtime", os.Getenv("HEARTH_FUZZ_RUNTIME") != "",
	"run FuzzCreateResponseHTTP over the embedded runtime (also HEARTH_FUZZ_RUNTIME=1)")

// newRuntimeServer is hearth's handler over the shared embedded runtime, with a fresh
// database and a quiet log, and every script model loaded.
//
// A fuzz worker panics on an input that takes 10 s; the first use of a model (its runner
// starting) may take that long on a busy machine, so the models are loaded here, before
// the worker takes inputs. And the worker's pipes to the coordinator (fds 3 and 4, as
// internal/fuzz passes them) are not inherited by the runners the runtime starts: a
// runner holding them would keep a dead worker's pipes open, and the coordinator would
// wait for it for ever instead of reporting the crash.
func newRuntimeServer(f testing.TB) http.Handler {
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	rt := testenv.Runtime(f)
	for name := range scriptmodel.Catalog() {
		err := rt.Client.Generate(context.Background(), &api.GenerateRequest{Model: name, Prompt: "hi", Raw: true,
			Options: map[string]any{"num_predict": 1}, Stream: new(bool)},
			func(api.GenerateResponse) error { return nil })
		if err != nil {
			f.Fatalf("load %s: %v", name, err)
		}
	}
	db, err := sqlite.Open(filepath.Join(f.TempDir(), "hearth.db"))
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return wire.New(wire.Config{Runtime: rt, Database: db, Logger: log})
}

// fuzzInputTime bounds one input over the runtime, below the fuzz worker's 10 s: an
// input cut by it (a long generation) proves nothing and is not judged.
const fuzzInputTime = 6 * time.Second

// FuzzCreateResponseHTTP: any bytes POSTed to /v1/responses get a response or a 4xx
// error envelope, never a 5xx (gin's recovery turns a panic into a 500, so this also
// catches panics); a 200 stream is well framed and ends with [DONE].
//
// Over the fake, one failure is the fake's, not hearth's: the fake ignores the grammar
// of a constrained continuation (tool_choice required, allowed_tools), so hearth rightly
// reports its answer as a malformed call, a model_error (500 in JSON, error event in a
// stream). Over the real runtime (-hearth.fuzz-runtime) there is no such excuse.
func FuzzCreateResponseHTTP(f *testing.F) {
	var h http.Handler
	if *fuzzRuntime {
		h = newRuntimeServer(f)
	} else {
		h = newFakeRuntimeServer(f)
	}
	if codex, err := os.ReadFile("../testdata/codex_request.json"); err == nil {
		f.Add(codex)
	}
	// The script models' names, so that mutations reach real generations when the
	// target runs over the runtime (the fake takes any name).
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},` +
		`{"type":"function","name":"get_time","strict":true,"parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}]`
	for _, s := range []string{
		`{"model":"` + scriptmodel.PlainModel + `","input":"hi","temperature":0}`,
		`{"model":"` + scriptmodel.ReasoningModel + `","input":"hi","stream":true}`,
		`{"model":"` + scriptmodel.ToolsModel + `","input":"weather?",` + tools + `}`,
		`{"model":"` + scriptmodel.RepeatModel + `","input":"weather?","stream":true,` + tools + `,"tool_choice":"required"}`,
		`{"model":"` + scriptmodel.RepeatModel + `","input":"weather?",` + tools + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"get_time"}]},"max_output_tokens":40}`,
		`{"model":"` + scriptmodel.PlainModel + `","input":"hi","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","properties":{"a":{"type":"string","maxLength":8}},"required":["a"]}}}}`,
		// Inputs that once gave 500s: names the runtime cannot parse and
		// schemas it cannot turn into a grammar.
		`{"model":"../../etc/passwd","input":"hi"}`,
		`{"model":"a:b:c","input":"hi","stream":true}`,
		`{"model":"` + scriptmodel.PlainModel + `","input":"hi","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"bogus"}}}}`,
		`{"model":"` + scriptmodel.PlainModel + `","input":"hi","text":{"format":{"type":"json_schema","name":"n","schema":{"$ref":"#/nope"}}}}`,
		`{"model":"` + scriptmodel.PlainModel + `","input":"hi","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"string","pattern":"(a+)+"}}}}`,
		`{"model":"` + scriptmodel.ToolsModel + `","input":"hi","tools":[{"type":"function","name":"f","strict":true,"parameters":{"type":"object","properties":{"s":{"type":"string","minLength":5,"maxLength":2}}}}]}`,
	} {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":"hi","stream":true}`,
		`{"model":"no-such-model","input":"hi"}`,
		`{"model":"m","input":"hi","previous_response_id":"resp_nope"}`,
		`{"model":"m","input":"hi","store":false,"background":true}`,
		`{"model":"m","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"role":"assistant","content":"hello"}],"max_output_tokens":16}`,
		`{"model":"m","input":"weather?","stream":true,"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"get_weather"}]}}`,
		`{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}]}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}]}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"reasoning":{"effort":"low"},"metadata":{"k":"v"}}`,
		`{"model":"m","input":"\u0000\ud800","metadata":{"\u0000":"\udfff"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/v1/responses", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if *fuzzRuntime {
			ctx, cancel := context.WithTimeout(req.Context(), fuzzInputTime)
			defer cancel()
			req = req.WithContext(ctx)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if err := req.Context().Err(); err != nil {
			t.Skipf("the input took %s or more: %q", fuzzInputTime, body)
		}
		out := rec.Body.Bytes()
		fakeModelError := !*fuzzRuntime && bytes.Contains(out, []byte(`"code":"model_error"`))
		switch {
		case rec.Code >= 500 && fakeModelError:
		case rec.Code >= 500:
			t.Fatalf("status %d for body %q: %s", rec.Code, body, out)
		case rec.Code >= 400:
			var env struct {
				Error struct{ Message, Type string }
			}
			if err := json.Unmarshal(out, &env); err != nil || env.Error.Message == "" || env.Error.Type == "" {
				t.Fatalf("status %d without an error envelope: %s", rec.Code, out)
			}
		case rec.Code != http.StatusOK:
			t.Fatalf("status %d: %s", rec.Code, out)
		case strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream"):
			if !bytes.HasSuffix(out, []byte("data: [DONE]\n\n")) {
				t.Fatalf("stream does not end with [DONE]: %q", out)
			}
			if bytes.Contains(out, []byte("event: error\n")) && !fakeModelError {
				t.Fatalf("stream over a working runtime has an error event: %s", out)
			}
		default:
			var r struct{ Object, Status string }
			if err := json.Unmarshal(out, &r); err != nil || r.Object != "response" {
				t.Fatalf("200 body is not a response (%v): %s", err, out)
			}
		}
	})
}
