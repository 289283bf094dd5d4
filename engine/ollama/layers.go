package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/llm"
	"github.com/ollama/ollama/manifest"
	"github.com/ollama/ollama/ml"
	"github.com/ollama/ollama/server"

	"hearth/engine"
)

// Where each loaded model's layers run, in the embedded runtime.
//
// Ollama (v0.17.4 to v0.24.0) decides the layout in this process (llm/server.go) and sends it to the
// model's runner subprocess; nothing in its API reports it (/api/ps has only size and
// size_vram), and its scheduler, which holds the runners, is private. The choices were:
//
//   - reading the runner's output ("offloaded N/M layers to GPU"): text meant for people,
//     without the model's name or a per-device split, interleaved between runners, and
//     only reachable by replacing the process's stderr;
//   - the runtime's own log records alone: this process logs the model's layer count and
//     the candidate layouts of the fit rounds (at debug level) but not the committed one;
//     the runner logs its load request, in its own process;
//   - recomputing the layout: it depends on the free memory at load time and on the
//     runner's own answers to the fit and alloc rounds, so a recomputation can differ;
//   - observing the two structured facts the runtime produces in this process. When it
//     starts a runner it logs "starting runner" with the *exec.Cmd (model blob path and
//     port in its arguments); when the layout is final it POSTs a commit load request
//     (llm.LoadRequest with GPULayers: device ID and layer indices) to that port with
//     http.DefaultClient, and the runner answers with llm.LoadResponse (success, and the
//     memory per device under the backend's device names, e.g. Vulkan0).
//
// hearth does the last: the layout is exactly what the runner committed, in the runtime's
// own types, keyed by port (so concurrent starts cannot be confused), then by model blob
// path, which the runtime's own GetModel gives for each name /api/ps lists. The taps only
// look: the records and requests pass through unchanged. If a later runtime version stops
// logging the record or moves the request, models show no layers ("not reported") rather
// than wrong ones; TestLoadedLayersE2E catches that on upgrade.

// layouts is the embedded runtime's record of placements: one runtime per process.
var layouts = newLayoutBook()

func newLayoutBook() *layoutBook {
	return &layoutBook{ports: map[int]string{}, byPath: map[string]engine.Layers{}, names: map[ml.DeviceID]string{},
		outputs: map[string]*runnerOutput{}}
}

type layoutBook struct {
	mu     sync.Mutex
	ports  map[int]string           // runner port -> model blob path
	byPath map[string]engine.Layers // model blob path -> its committed layout
	names  map[ml.DeviceID]string   // device -> the backend's name for it (Devices)
	log    *slog.Logger             // where each placement is logged; nil logs nothing
	// outputs keep the last lines of each model's latest runner, by model blob path.
	outputs map[string]*runnerOutput
}

// knowDevices keeps the backend's names of the devices discovery found: the llama.cpp
// runner's answer to a load names none (see placement).
func (b *layoutBook) knowDevices(ds []Device) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, d := range ds {
		b.names[ml.DeviceID{ID: d.ID, Library: d.Library}] = d.Name
	}
}

func (b *layoutBook) deviceName(id ml.DeviceID) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.names[id]
	return n, ok
}

func (b *layoutBook) runnerStarted(port int, modelPath string, out *runnerOutput) {
	b.mu.Lock()
	b.ports[port] = modelPath
	if out != nil {
		b.outputs[modelPath] = out
	}
	b.mu.Unlock()
}

// watch returns what notes a runner of the model at modelPath once its process runs:
// its stop is an event of hearth's log (a model unloaded, or a runner that died).
func (b *layoutBook) watch(modelPath string) func(pid int) {
	return func(pid int) {
		start := time.Now()
		watchRunner(pid, func() {
			b.mu.Lock()
			log := b.log
			b.mu.Unlock()
			if log != nil {
				log.Info("model runner stopped", "model", strings.Join(modelNames(modelPath), ","), "pid", pid,
					"ran", time.Since(start).Round(time.Second))
			}
		})
	}
}

func (b *layoutBook) modelAt(port int) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.ports[port]
	return p, ok
}

func (b *layoutBook) committed(modelPath string, l engine.Layers, mem ml.BackendMemory) {
	b.mu.Lock()
	b.byPath[modelPath] = l
	log := b.log
	b.mu.Unlock()
	if log == nil {
		return
	}
	attrs := []any{"model", strings.Join(modelNames(modelPath), ","), "layers", l.String(), "cpu_variant", cpuVariant()}
	// The llama.cpp runner reports no memory; the Ollama engine's runner does.
	if total := memoryTotal(mem); total > 0 {
		attrs = append(attrs, "memory_bytes", total)
	}
	// The runner's start, as an operator reads it: where the model runs, on which CPU
	// kernels, in how much memory.
	log.Info("model layers placed", attrs...)
}

// memoryTotal is the bytes a runner said its model takes, on every device.
func memoryTotal(m ml.BackendMemory) uint64 {
	total := m.InputWeights + m.CPU.Size()
	for _, g := range m.GPUs {
		total += g.Size()
	}
	return total
}

func (b *layoutBook) layout(modelPath string) (engine.Layers, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.byPath[modelPath]
	return l, ok
}

// installLayoutTaps installs the HTTP tap, before the runtime can load anything, and
// sets the logger of the placement lines.
func installLayoutTaps(log *slog.Logger) {
	layouts.mu.Lock()
	layouts.log = log
	layouts.mu.Unlock()
	next := http.DefaultClient.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	http.DefaultClient.Transport = loadTap{next: next, book: layouts}
}

// installLogTap wraps the runtime's logger once server.Serve has made it slog's default:
// Serve does that first thing, so it is done once the runtime answers.
func installLogTap() {
	inner := slog.Default().Handler()
	if log := capturedLog(); log != nil {
		// The runtime's records become hearth's debug records (output.go).
		inner = newRuntimeRecords(log.Handler())
	}
	slog.SetDefault(slog.New(runnerLogTap{inner: inner, book: layouts}))
}

// runnerLogTap passes every record on to the runtime's handler and notes each runner
// start with a model.
type runnerLogTap struct {
	inner slog.Handler
	book  *layoutBook
}

func (h runnerLogTap) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.inner.Enabled(ctx, l)
}

func (h runnerLogTap) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "starting runner" {
		r.Attrs(func(a slog.Attr) bool {
			if cmd, ok := a.Value.Any().(*exec.Cmd); ok && a.Key == "cmd" {
				if port, model, ok := runnerArgs(cmd.Args); ok {
					// The runtime logs this before it starts the process, with
					// one writer for its stdout and stderr: the writer hearth puts
					// in its place keeps the runner's last lines and passes all on.
					var out *runnerOutput
					if cmd.Stdout != nil && cmd.Stdout == cmd.Stderr && cmd.Process == nil {
						out = &runnerOutput{next: cmd.Stdout, cmd: cmd, started: h.book.watch(model)}
						cmd.Stdout, cmd.Stderr = out, out
					}
					h.book.runnerStarted(port, model, out)
				}
				return false
			}
			return true
		})
	}
	if !h.inner.Enabled(ctx, r.Level) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h runnerLogTap) WithAttrs(as []slog.Attr) slog.Handler {
	return runnerLogTap{inner: h.inner.WithAttrs(as), book: h.book}
}

func (h runnerLogTap) WithGroup(name string) slog.Handler {
	return runnerLogTap{inner: h.inner.WithGroup(name), book: h.book}
}

// runnerArgs reads a runner's command line (llm.StartRunner: runner [--ollama-engine]
// --model PATH --port N); GPU discovery starts runners without a model, which place
// no layers.
func runnerArgs(args []string) (port int, model string, ok bool) {
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--model":
			model = args[i+1]
		case "--port":
			port, _ = strconv.Atoi(args[i+1])
		}
	}
	return port, model, port > 0 && model != ""
}

// loadTap is http.DefaultClient's transport while the embedded runtime runs. It reads
// only the commit load requests to the runners it saw start; all else passes untouched.
type loadTap struct {
	next http.RoundTripper
	book *layoutBook
}

func (t loadTap) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.URL.Path != "/load" || req.Body == nil {
		return t.next.RoundTrip(req)
	}
	host, portText, err := net.SplitHostPort(req.URL.Host)
	port, _ := strconv.Atoi(portText)
	if err != nil || !net.ParseIP(host).IsLoopback() {
		return t.next.RoundTrip(req)
	}
	modelPath, ok := t.book.modelAt(port)
	if !ok {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var load llm.LoadRequest
	if json.Unmarshal(body, &load) != nil || load.Operation != llm.LoadOperationCommit {
		return t.next.RoundTrip(req)
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	if err != nil {
		return resp, nil // the runtime reads the same short body and reports the failure
	}
	var loaded llm.LoadResponse
	if json.Unmarshal(answer, &loaded) != nil || !loaded.Success {
		return resp, nil
	}
	if total, err := modelLayers(modelPath); err == nil {
		t.book.committed(modelPath, t.book.placement(total, load.GPULayers, loaded.Memory), loaded.Memory)
	}
	return resp, nil
}

// placement is the layout of a model of total layers from the committed GPULayers,
// naming each device as the runner's backend does: the Ollama engine's runner reports
// its memory per device under those names; the llama.cpp runner reports none, so there
// the names come from discovery (Devices, which StartEmbedded runs on a GPU build), and
// failing that the library and the runtime's device ID stand in.
func (b *layoutBook) placement(total int, gpus ml.GPULayersList, mem ml.BackendMemory) engine.Layers {
	l := engine.Layers{Total: total, CPU: total, Devices: []engine.DeviceLayers{}}
	for _, g := range gpus {
		if len(g.Layers) == 0 {
			continue
		}
		name, known := b.deviceName(g.DeviceID)
		if !known {
			name = g.Library + " " + g.ID
		}
		for _, m := range mem.GPUs {
			if m.DeviceID == g.DeviceID && m.Name != "" {
				name = m.Name
			}
		}
		l.Devices = append(l.Devices, engine.DeviceLayers{Device: name, Layers: len(g.Layers)})
		l.CPU -= len(g.Layers)
	}
	return l
}

// modelLayers counts a model's layers as the runtime does (llm.NewLlamaServer: the
// repeating blocks and the output layer).
func modelLayers(path string) (int, error) {
	f, err := llm.LoadModel(path, 0)
	if err != nil {
		return 0, err
	}
	return int(f.KV().BlockCount()) + 1, nil
}

// modelNames are the names whose manifests use the model blob at path, as /api/ps shows
// them; several when a model was copied or created from another.
func modelNames(path string) []string {
	all, _ := manifest.Manifests(true)
	var names []string
	for n, mf := range all {
		for _, layer := range mf.Layers {
			if layer.MediaType != "application/vnd.ollama.image.model" {
				continue
			}
			if p, err := manifest.BlobsPath(layer.Digest); err == nil && p == path {
				names = append(names, n.DisplayShortest())
			}
		}
	}
	if len(names) == 0 {
		return []string{path}
	}
	slices.Sort(names)
	return names
}

// loadedLayers is the committed layout of the loaded model name, if hearth saw it.
func loadedLayers(name string) *engine.Layers {
	m, err := server.GetModel(name)
	if err != nil {
		return nil
	}
	if l, ok := layouts.layout(m.ModelPath); ok {
		return &l
	}
	return nil
}
