package ollama

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ollama/ollama/discover"
	"github.com/ollama/ollama/ml"
)

// Device is a GPU the embedded runtime found and may place model layers on.
type Device struct {
	// Library is the runtime's backend for it, e.g. "CUDA", "Vulkan".
	Library string `json:"library"`
	// ID is the runtime's id of the device within its library.
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Integrated  bool   `json:"integrated"`
	TotalMemory uint64 `json:"total_memory"`
	FreeMemory  uint64 `json:"free_memory"`
}

// LibDir is where the runtime looks for GPU backend libraries: lib/ollama beside the
// executable's directory (bin/../lib/ollama), each backend in a subdirectory of it.
func LibDir() string { return ml.LibOllamaPath }

// GPUBackends lists the GPU backends built beside this executable (the subdirectories of
// LibDir holding a ggml library, e.g. "cuda_v11", "vulkan"); none means a CPU-only build.
func GPUBackends() []string {
	files, _ := filepath.Glob(filepath.Join(ml.LibOllamaPath, "*", "*ggml-*"))
	seen := map[string]bool{}
	var names []string
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// configureGPU sets the runtime's environment for the GPU choice before it starts. Ollama
// (v0.17.4 to v0.24.0) treats Vulkan as experimental and skips it unless OLLAMA_VULKAN is set; hearth
// builds it on purpose (make build GPU=vulkan), so it turns it on unless the user set
// OLLAMA_VULKAN, and off when the GPU is disabled (the runtime then runs on the CPU). The
// CUDA backend has no such switch in the runtime; CUDA's own CUDA_VISIBLE_DEVICES=-1 hides
// every NVIDIA GPU from it, so its discovery finds none.
func configureGPU(noGPU bool) {
	if noGPU {
		os.Setenv("OLLAMA_VULKAN", "0")
		os.Setenv("CUDA_VISIBLE_DEVICES", "-1")
		return
	}
	if _, set := os.LookupEnv("OLLAMA_VULKAN"); !set {
		os.Setenv("OLLAMA_VULKAN", "1")
	}
}

// Devices runs (once per process, then refreshes) the runtime's own GPU discovery: it
// starts this executable as a short-lived runner per backend library, which loads the
// backend and lists its devices. It returns no devices on a CPU-only build, when the GPU
// is disabled, or when the backend finds none.
func Devices(ctx context.Context) []Device {
	var out []Device
	for _, d := range discover.GPUDevices(ctx, nil) {
		out = append(out, Device{
			Library: d.Library, ID: d.ID, Name: d.Name, Description: strings.TrimSpace(d.Description),
			Integrated: d.Integrated, TotalMemory: d.TotalMemory, FreeMemory: d.FreeMemory,
		})
	}
	layouts.knowDevices(out)
	return out
}

// DiscoverDevices is Devices for a process that has not started the embedded runtime
// (hearth doctor): it applies the same GPU setting first.
func DiscoverDevices(ctx context.Context, noGPU bool) []Device {
	configureGPU(noGPU)
	return Devices(ctx)
}
