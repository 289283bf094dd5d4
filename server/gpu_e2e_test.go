package server_test

import (
	"context"
	"os"
	"testing"
	"time"

	"hearth/engine/ollama"
	"hearth/internal/testenv"
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
}
