package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestGPUOffloadE2E checks that a GPU build really runs the script models on the GPU, so
// that the e2e tests make test-vulkan runs beside it test the Vulkan backend's kernels and
// not the CPU's. It runs only where a GPU is expected (make test-vulkan sets
// HEARTH_TEST_GPU=vulkan); a CPU build has no device to place layers on.
func TestGPUOffloadE2E(t *testing.T) {
	want := os.Getenv("HEARTH_TEST_GPU")
	if want == "" {
		t.Skip("HEARTH_TEST_GPU is not set (make test-vulkan sets it)")
	}
	testenv.SkipIfExternal(t, "checks the GPU backend built beside the embedded runtime")
	rt := testenv.Runtime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if got := ollama.GPUBackends(); len(got) != 1 || got[0] != want {
		t.Fatalf("GPU backends beside the test binary in %s: %v, want [%s]", ollama.LibDir(), got, want)
	}
	devices := ollama.Devices(ctx)
	if len(devices) == 0 {
		t.Fatalf("the %s backend found no device (lavapipe needs GGML_VK_VISIBLE_DEVICES=0)", want)
	}
	for _, d := range devices {
		if d.Library != "Vulkan" || d.TotalMemory == 0 {
			t.Errorf("device %+v: want a Vulkan device with memory", d)
		}
	}

	// The exact text the plain script model answers on the CPU, now computed by the GPU.
	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	r := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"hi"`))
	sameItems(t, "plain on the GPU", r.Output, []item{{Type: "message", Status: "completed", Text: plain.Text(scriptmodel.EntryAssistant)}})

	ps, err := rt.Client.ListRunning(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range ps.Models {
		if m.Name != scriptmodel.PlainModel {
			continue
		}
		found = true
		// A model a few MB large fits any device: every layer and the output belong there.
		if m.SizeVRAM != m.Size || m.Size == 0 {
			t.Errorf("%s: size_vram %d of size %d, want the whole model on the GPU", m.Name, m.SizeVRAM, m.Size)
		}
	}
	if !found {
		t.Errorf("%s is not loaded after answering: /api/ps lists %+v", scriptmodel.PlainModel, ps.Models)
	}

	// /v1/models says where the layers run: every one of them (the model's blocks and
	// its output layer, as the runtime counts) on the device the backend names first.
	l := loadedEntry(t, srv, scriptmodel.PlainModel)
	total := plain.Layers + 1
	if l.Processor != "100% GPU" || l.Layers == nil || l.Layers.Total != total || l.Layers.CPU != 0 ||
		len(l.Layers.Devices) != 1 || l.Layers.Devices[0] != (deviceLayers{Device: "Vulkan0", Layers: total}) {
		t.Errorf("/v1/models placement of %s = %+v (layers %+v), want %d/%d layers on Vulkan0", scriptmodel.PlainModel, l, l.Layers, total, total)
	}

	// A model loaded with num_gpu 1 (the option asks for one layer on the GPU) is split:
	// hearth reports the split the runtime made, not the whole model. A model the other
	// Vulkan tests do not use, unloaded afterwards.
	split := testenv.Model(t, scriptmodel.SmallContextModel)
	stream, zero := false, api.Duration{}
	gen := &api.GenerateRequest{Model: scriptmodel.SmallContextModel, Prompt: "hi", Stream: &stream, Options: map[string]any{"num_gpu": 1, "num_predict": 1}}
	if err := rt.Client.Generate(ctx, gen, func(api.GenerateResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	defer rt.Client.Generate(ctx, &api.GenerateRequest{Model: scriptmodel.SmallContextModel, KeepAlive: &zero}, func(api.GenerateResponse) error { return nil })
	l = loadedEntry(t, srv, scriptmodel.SmallContextModel)
	total = split.Layers + 1
	if l.Layers == nil || l.Layers.Total != total || l.Layers.CPU != total-1 ||
		len(l.Layers.Devices) != 1 || l.Layers.Devices[0] != (deviceLayers{Device: "Vulkan0", Layers: 1}) {
		t.Errorf("/v1/models placement of %s with num_gpu 1 = %+v (layers %+v), want 1/%d layers on Vulkan0 and %d on the CPU", scriptmodel.SmallContextModel, l, l.Layers, total, total-1)
	}
}

// TestLoadedLayersE2E: /v1/models tells, for a loaded model, how many of its layers run
// on which device. On a CPU build the embedded runtime places them all on the CPU, and
// hearth reports the model's exact layer count; an external Ollama's API reports no
// layers, and hearth says so instead of guessing.
func TestLoadedLayersE2E(t *testing.T) {
	if os.Getenv("HEARTH_TEST_GPU") != "" {
		t.Skip("a GPU build places the layers on the device: TestGPUOffloadE2E checks them")
	}
	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	r := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"hi"`))
	sameItems(t, "plain", r.Output, []item{{Type: "message", Status: "completed", Text: plain.Text(scriptmodel.EntryAssistant)}})

	l := loadedEntry(t, srv, scriptmodel.PlainModel)
	if l.Processor != "100% CPU" || l.Size == 0 || l.SizeVRAM != 0 {
		t.Errorf("placement %+v: want the whole model on the CPU", l)
	}
	if testenv.External() {
		if l.Layers != nil || l.LayersNote != "layers not reported by this runtime" {
			t.Errorf("external runtime: layers %+v, note %q; want none, and the note", l.Layers, l.LayersNote)
		}
		return
	}
	// The script model has plain.Layers blocks; the runtime counts its output layer too.
	total := plain.Layers + 1
	if l.Layers == nil || l.Layers.Total != total || l.Layers.CPU != total || l.Layers.Devices == nil || len(l.Layers.Devices) != 0 || l.LayersNote != "" {
		t.Errorf("layers %+v (note %q), want all %d on the CPU and devices []", l.Layers, l.LayersNote, total)
	}
}

type deviceLayers struct {
	Device string `json:"device"`
	Layers int    `json:"layers"`
}

type layerCounts struct {
	Total   int            `json:"total"`
	Devices []deviceLayers `json:"devices"`
	CPU     int            `json:"cpu"`
}

type loadedPlacement struct {
	Size       int64        `json:"size"`
	SizeVRAM   int64        `json:"size_vram"`
	Processor  string       `json:"processor"`
	Layers     *layerCounts `json:"layers"`
	LayersNote string       `json:"layers_note"`
	CPUKernels string       `json:"cpu_kernels"`
}

// loadedEntry is the one placement /v1/models (and /v1/models/{model}, which must agree)
// gives for the loaded model name.
func loadedEntry(t *testing.T, srv *httptest.Server, name string) loadedPlacement {
	t.Helper()
	type entry struct {
		ID     string `json:"id"`
		Hearth *struct {
			Loaded []loadedPlacement `json:"loaded"`
		} `json:"hearth"`
	}
	var list struct {
		Data []entry `json:"data"`
	}
	getJSON(t, srv.URL+"/v1/models", http.StatusOK, &list)
	var one entry
	getJSON(t, srv.URL+"/v1/models/"+name, http.StatusOK, &one)
	for _, e := range list.Data {
		if e.ID != name {
			continue
		}
		if e.Hearth == nil || len(e.Hearth.Loaded) != 1 {
			t.Fatalf("/v1/models entry of %s: %+v, want one loaded placement", name, e.Hearth)
		}
		if one.Hearth == nil || !reflect.DeepEqual(one.Hearth.Loaded, e.Hearth.Loaded) {
			t.Errorf("/v1/models/%s says %+v, the list %+v", name, one.Hearth, e.Hearth)
		}
		return e.Hearth.Loaded[0]
	}
	t.Fatalf("/v1/models lists no %s: %+v", name, list.Data)
	return loadedPlacement{}
}
