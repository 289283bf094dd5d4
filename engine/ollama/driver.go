package ollama

/*
#include <dlfcn.h>
#include <stdlib.h>

// hearth_cuda_init loads the NVIDIA driver's library and initialises it, as the CUDA
// backend would: -1 when the library cannot be loaded, else cuInit's result (0: a
// driver that answers), with the device count it reports in *count.
static int hearth_cuda_init(const char *name, int *count) {
	void *h = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
	if (h == NULL) return -1;
	int (*init)(unsigned int) = (int (*)(unsigned int))dlsym(h, "cuInit");
	int (*getCount)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
	if (init == NULL || getCount == NULL) return -1;
	int rc = init(0);
	if (rc == 0 && getCount(count) != 0) *count = 0;
	// The library stays loaded: unloading a driver library that was initialised is not safe.
	return rc;
}
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"
)

// cudaDriver is the NVIDIA driver's library every CUDA program loads. It comes with the
// driver (Debian's libcuda1, which the CUDA toolkit package pulls in), not with hearth,
// so a CUDA backend beside hearth on a machine without it cannot load, and the runtime's
// discovery skips it.
const cudaDriver = "libcuda.so.1"

// CUDADriver is what NVIDIA's driver on this machine says.
type CUDADriver struct {
	// Installed: its library loads.
	Installed bool
	// InitError is cuInit's error code (0: none), e.g. 100 where no GPU is present.
	InitError int
	// Devices is the number of GPUs it lists.
	Devices int
}

// ProbeCUDADriver loads and initialises NVIDIA's driver library in this process, as the
// CUDA backend would. Only for explaining a missing device: it is called when discovery
// found none, so a working GPU machine never pays for it.
func ProbeCUDADriver() CUDADriver {
	cname := C.CString(cudaDriver)
	defer C.free(unsafe.Pointer(cname))
	var count C.int
	rc := int(C.hearth_cuda_init(cname, &count))
	if rc < 0 {
		return CUDADriver{}
	}
	return CUDADriver{Installed: true, InitError: rc, Devices: int(count)}
}

// cudaErrors names cuInit's results that say why there is no GPU to use.
var cudaErrors = map[int]string{
	3:   "not initialized",
	34:  "a stub library, not a driver",
	35:  "the kernel driver is older than the library",
	100: "no CUDA-capable device",
	101: "invalid device",
	999: "unknown error",
}

// NoDeviceReason says, for people, why a GPU backend built beside hearth (a subdirectory
// of LibDir, as GPUBackends names it) found no device, as far as hearth can tell.
func NoDeviceReason(backend string) string {
	switch {
	case strings.HasPrefix(backend, "cuda"):
		d := ProbeCUDADriver()
		switch {
		case !d.Installed:
			return "no NVIDIA driver (" + cudaDriver + " not found)"
		case d.InitError != 0:
			name := cudaErrors[d.InitError]
			if name == "" {
				name = "see CUDA's error codes"
			}
			return fmt.Sprintf("NVIDIA's driver library is installed but finds no GPU to use (cuInit error %d: %s)", d.InitError, name)
		}
		return fmt.Sprintf("NVIDIA's driver lists %d GPU(s), none of an architecture this backend is built for (docs/gpu.md)", d.Devices)
	case backend == "vulkan":
		// ggml skips CPU-type Vulkan devices (lavapipe) unless they are named.
		return "no Vulkan GPU (a CPU-type Vulkan device such as lavapipe is used only when named, e.g. GGML_VK_VISIBLE_DEVICES=0)"
	}
	return "no device"
}

// NoDeviceReasons is NoDeviceReason for each backend, "backend: reason", joined by "; ".
func NoDeviceReasons(backends []string) string {
	parts := make([]string, len(backends))
	for i, b := range backends {
		parts[i] = b + ": " + NoDeviceReason(b)
	}
	return strings.Join(parts, "; ")
}
