package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ollama/ollama/llm"
	"github.com/ollama/ollama/ml"

	"hearth/engine"
	"hearth/scriptmodel"
)

// runnerRecord logs what llm.StartRunner logs when it starts a runner.
func runnerRecord(log *slog.Logger, args ...string) {
	log.Info("starting runner", "cmd", exec.Command(args[0], args[1:]...))
}

// TestRunnerLogTap: the log tap notes the port and model of each runner started with a
// model, and hands every record on to the runtime's handler as that handler would.
func TestRunnerLogTap(t *testing.T) {
	book := newLayoutBook()
	var out bytes.Buffer
	log := slog.New(runnerLogTap{inner: slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelInfo}), book: book})

	runnerRecord(log, "/bin/hearth", "runner", "--ollama-engine", "--port", "4001")                         // discovery: no model
	runnerRecord(log, "/bin/hearth", "runner", "--ollama-engine", "--model", "/m/blob-a", "--port", "4002") // Ollama engine
	runnerRecord(log.With("k", "v"), "/bin/hearth", "runner", "--model", "/m/blob-b", "--port", "4003")     // llama.cpp runner
	log.Debug("hidden detail")

	for port, want := range map[int]string{4001: "", 4002: "/m/blob-a", 4003: "/m/blob-b"} {
		if got, _ := book.modelAt(port); got != want {
			t.Errorf("port %d: model %q, want %q", port, got, want)
		}
	}
	if got := strings.Count(out.String(), `msg="starting runner"`); got != 3 {
		t.Errorf("the runtime's handler got %d runner records, want 3:\n%s", got, out.String())
	}
	if !strings.Contains(out.String(), "k=v") || strings.Contains(out.String(), "hidden detail") {
		t.Errorf("attributes or levels not kept as the runtime's handler keeps them:\n%s", out.String())
	}
}

// fakeRunner answers load requests as a runner does and keeps what it was sent.
type fakeRunner struct {
	answer llm.LoadResponse
	got    [][]byte
}

func (f *fakeRunner) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
	}
	f.got = append(f.got, body)
	b, _ := json.Marshal(f.answer)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(b)), Request: req}, nil
}

func writeModel(t *testing.T, layers int) string {
	t.Helper()
	spec := scriptmodel.Catalog()[scriptmodel.PlainModel]
	spec.Layers = layers
	m, err := scriptmodel.Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sha256-model")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := m.WriteGGUF(f); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLoadTap: the layout is the one the runner committed, counted against the model's
// own layers and named as the runner's backend names the devices; the requests and
// answers pass through unchanged, and nothing else is read.
func TestLoadTap(t *testing.T) {
	t.Setenv("OLLAMA_MODELS", t.TempDir()) // no manifests: the log names the blob
	path := writeModel(t, 3)               // 3 blocks + the output layer
	vk0 := ml.DeviceID{ID: "a1b2", Library: "Vulkan"}
	vk1 := ml.DeviceID{ID: "c3d4", Library: "Vulkan"}
	split := ml.GPULayersList{{DeviceID: vk0, Layers: []int{1, 2}}, {DeviceID: vk1, Layers: []int{3}}}

	for _, tc := range []struct {
		name   string
		url    string
		op     llm.LoadOperation
		gpus   ml.GPULayersList
		answer llm.LoadResponse
		known  []Device // what discovery found
		want   *engine.Layers
	}{
		{name: "all on the CPU", url: "http://127.0.0.1:5001/load", op: llm.LoadOperationCommit,
			answer: llm.LoadResponse{Success: true},
			want:   &engine.Layers{Total: 4, CPU: 4, Devices: []engine.DeviceLayers{}}},
		{name: "split, names from the runner", url: "http://127.0.0.1:5001/load", op: llm.LoadOperationCommit, gpus: split,
			answer: llm.LoadResponse{Success: true, Memory: ml.BackendMemory{GPUs: []ml.DeviceMemory{{DeviceID: vk1, Name: "Vulkan1"}, {DeviceID: vk0, Name: "Vulkan0"}}}},
			want:   &engine.Layers{Total: 4, CPU: 1, Devices: []engine.DeviceLayers{{Device: "Vulkan0", Layers: 2}, {Device: "Vulkan1", Layers: 1}}}},
		{name: "llama.cpp runner, names from discovery", url: "http://127.0.0.1:5001/load", op: llm.LoadOperationCommit, gpus: split,
			answer: llm.LoadResponse{Success: true}, known: []Device{{Library: "Vulkan", ID: "a1b2", Name: "Vulkan0"}},
			want: &engine.Layers{Total: 4, CPU: 1, Devices: []engine.DeviceLayers{{Device: "Vulkan0", Layers: 2}, {Device: "Vulkan c3d4", Layers: 1}}}},
		{name: "fit round", url: "http://127.0.0.1:5001/load", op: llm.LoadOperationFit, gpus: split, answer: llm.LoadResponse{Success: true}},
		{name: "commit failed", url: "http://127.0.0.1:5001/load", op: llm.LoadOperationCommit, gpus: split, answer: llm.LoadResponse{Success: false}},
		{name: "port of no runner", url: "http://127.0.0.1:5999/load", op: llm.LoadOperationCommit, gpus: split, answer: llm.LoadResponse{Success: true}},
		{name: "not loopback", url: "http://10.0.0.7:5001/load", op: llm.LoadOperationCommit, gpus: split, answer: llm.LoadResponse{Success: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			book := newLayoutBook()
			var logs bytes.Buffer
			book.log = slog.New(slog.NewTextHandler(&logs, nil))
			book.runnerStarted(5001, path, nil)
			book.knowDevices(tc.known)
			runner := &fakeRunner{answer: tc.answer}
			client := &http.Client{Transport: loadTap{next: runner, book: book}}

			sent, _ := json.Marshal(llm.LoadRequest{Operation: tc.op, GPULayers: tc.gpus, KvSize: 4096})
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, tc.url, bytes.NewReader(sent))
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want, _ := json.Marshal(tc.answer); !bytes.Equal(answer, want) {
				t.Errorf("the runtime read %s, the runner answered %s", answer, want)
			}
			if len(runner.got) != 1 || !bytes.Equal(runner.got[0], sent) {
				t.Errorf("the runner got %q, the runtime sent %s", runner.got, sent)
			}

			got, ok := book.layout(path)
			if tc.want == nil {
				if ok || logs.Len() > 0 {
					t.Errorf("recorded %+v and logged %q, want nothing", got, logs.String())
				}
				return
			}
			if !ok || !reflect.DeepEqual(got, *tc.want) {
				t.Errorf("layout %+v (recorded %v), want %+v", got, ok, *tc.want)
			}
			if want := fmt.Sprintf(`msg="model layers placed" model=%s layers="%s"`, path, tc.want); !strings.Contains(logs.String(), want) || strings.Count(logs.String(), "\n") != 1 {
				t.Errorf("logged %q, want one line with %s", logs.String(), want)
			}
		})
	}
}

// TestLoadTapPassesOtherRequests: requests other than a runner's load are not read.
func TestLoadTapPassesOtherRequests(t *testing.T) {
	book := newLayoutBook()
	book.runnerStarted(5001, "/m/blob", nil)
	runner := &fakeRunner{}
	client := &http.Client{Transport: loadTap{next: runner, book: book}}
	for _, r := range []struct{ method, url, body string }{
		{"POST", "http://127.0.0.1:5001/completion", `{"prompt":"hi"}`},
		{"GET", "http://127.0.0.1:5001/health", ""},
		{"POST", "http://127.0.0.1:5001/load", `not json`},
	} {
		req, _ := http.NewRequest(r.method, r.url, strings.NewReader(r.body))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := string(runner.got[len(runner.got)-1]); got != r.body {
			t.Errorf("%s %s: the runner got %q, want %q", r.method, r.url, got, r.body)
		}
	}
	if _, ok := book.layout("/m/blob"); ok {
		t.Errorf("a layout was recorded from requests that commit none")
	}
}
