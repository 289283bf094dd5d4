package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// cudaLibEnv names a lib/ollama directory of a `make build GPU=cuda` (its cuda_v*
// subdirectory and libggml-base.so): TestCUDABackendFallsBackToCPU then runs with the
// real backend, as `make test-cuda` does. Without it the test builds a stand-in.
const cudaLibEnv = "HEARTH_TEST_CUDA_LIB"

// TestCUDABackendFallsBackToCPU lays out a hearth as `make build GPU=cuda` leaves it
// (bin/hearth, lib/ollama/cuda_v11/libggml-cuda.so) on a machine without an NVIDIA GPU
// (with or without the driver's library), and checks that it starts, says once and in `hearth doctor` why models run on
// the CPU, and answers a response with every layer on the CPU.
//
// The real backend takes an hour to compile, so CI runs this with a stand-in library
// that fails to load the way the real one does there: it needs the driver's
// libcuda.so.1, which a stock machine lacks (where the library is there, the stand-in
// loads and is no ggml backend, as the real one loads and finds no GPU). With
// HEARTH_TEST_CUDA_LIB (make test-cuda) it runs the real one.
func TestCUDABackendFallsBackToCPU(t *testing.T) {
	testenv.SkipIfExternal(t, "checks the embedded runtime's GPU discovery")
	driver := ollama.ProbeCUDADriver()
	if driver.Installed && driver.InitError == 0 && driver.Devices > 0 {
		t.Skip("this machine has an NVIDIA GPU: the fallback does not apply")
	}
	bin, backend := layOutCUDABuild(t)

	dir := t.TempDir()
	env := append(slicesWithout(os.Environ(), "OLLAMA_HOST="), runMainEnv+"=1",
		"OLLAMA_MODELS="+filepath.Join(dir, "models"), "HEARTH_DATA="+filepath.Join(dir, "data"))
	env = slicesWithout(env, "CUDA_VISIBLE_DEVICES=")
	// Without the driver's library (a stock Debian) the backend cannot load; with it but
	// without a GPU or kernel module (Debian's CUDA toolkit installs the library) it loads
	// and finds nothing. Either way hearth says which.
	reason := backend + ": no NVIDIA driver (libcuda.so.1 not found)"
	if driver.Installed {
		reason = fmt.Sprintf("%s: NVIDIA's driver library is installed but finds no GPU to use (cuInit error %d", backend, driver.InitError)
	}

	// hearth doctor runs the runtime's discovery itself and says what it found.
	doctor := exec.Command(bin, "doctor", "--host", "http://"+freeAddr(t), "--models", filepath.Join(dir, "models"))
	doctor.Env = env
	out, _ := doctor.CombinedOutput()
	if want := fmt.Sprintf("backend %s, no device found: models run on the CPU (%s", backend, reason); !strings.Contains(string(out), want) {
		t.Errorf("hearth doctor does not say %q:\n%s", want, out)
	}

	addr := freeAddr(t)
	serve := exec.Command(bin, "serve", "--addr", addr)
	serve.Env = env
	var logs syncBuffer
	serve.Stderr = &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Kill()
		serve.Wait()
		if t.Failed() {
			t.Logf("hearth logs:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	waitHealthy(t, base)
	if want := "running models on the CPU: the GPU backend found no device"; strings.Count(logs.String(), want) != 1 ||
		!strings.Contains(logs.String(), reason) {
		t.Errorf("hearth serve does not say once %q with the reason %q", want, reason)
	}

	// A response: the model loads and runs, wholly on the CPU.
	u, _ := url.Parse(base)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := scriptmodel.Create(ctx, api.NewClient(u, http.DefaultClient), scriptmodel.PlainModel, scriptmodel.Catalog()[scriptmodel.PlainModel])
	if err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"model":%q,"input":"hi"}`, scriptmodel.PlainModel)
	resp, err := http.Post(base+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Status     string `json:"status"`
		OutputText string `json:"output_text"`
		Output     []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	json.NewDecoder(resp.Body).Decode(&r)
	resp.Body.Close()
	var text string
	for _, o := range r.Output {
		for _, c := range o.Content {
			text += c.Text
		}
	}
	if r.Status != "completed" || text != m.Text(scriptmodel.EntryAssistant) {
		t.Errorf("response = %s %q, want completed %q", r.Status, text, m.Text(scriptmodel.EntryAssistant))
	}
	if want := fmt.Sprintf(`msg="model layers placed" model=%s layers="0/%d (CPU)"`, scriptmodel.PlainModel, m.Layers+1); !strings.Contains(logs.String(), want) {
		t.Errorf("hearth logs no %s", want)
	}
}

// layOutCUDABuild copies this test binary to bin/hearth in a temporary directory and puts
// a CUDA backend in lib/ollama beside it, as `make build GPU=cuda` does: the real one
// from HEARTH_TEST_CUDA_LIB, else a stand-in. It returns the binary and the backend's
// directory name.
func layOutCUDABuild(t *testing.T) (bin, backend string) {
	t.Helper()
	root := t.TempDir()
	bin = filepath.Join(root, "bin", "hearth")
	copyFile(t, os.Args[0], bin, 0o755)
	lib := filepath.Join(root, "lib", "ollama")
	backend = "cuda_v11"
	if real := os.Getenv(cudaLibEnv); real != "" {
		dirs, _ := filepath.Glob(filepath.Join(real, "cuda_v*"))
		if len(dirs) != 1 {
			t.Fatalf("%s=%s holds %d cuda_v* directories, want 1", cudaLibEnv, real, len(dirs))
		}
		backend = filepath.Base(dirs[0])
		// cp into an existing lib/: without it cp would make lib/ the copy itself.
		if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", "-a", real, filepath.Dir(lib)).CombinedOutput(); err != nil {
			t.Fatalf("copying %s: %v\n%s", real, err, out)
		}
		if filepath.Base(real) != "ollama" {
			os.Rename(filepath.Join(filepath.Dir(lib), filepath.Base(real)), lib)
		}
	} else {
		buildStandInCUDABackend(t, filepath.Join(lib, backend))
	}

	return bin, backend
}

// TestGPUBenchScript runs scripts/gpu-bench.sh end to end, as on a GPU machine, with a
// CUDA build laid out beside the binary (on this machine without a GPU its models run on
// the CPU) and the tiny models: one report per backend, and the table of both.
func TestGPUBenchScript(t *testing.T) {
	testenv.SkipIfExternal(t, "runs the embedded runtime's bench")
	if d := ollama.ProbeCUDADriver(); d.Installed && d.InitError == 0 && d.Devices > 0 {
		t.Skip("this machine has an NVIDIA GPU: run the script itself")
	}
	bin, backend := layOutCUDABuild(t)
	out := filepath.Join(t.TempDir(), "reports")
	dir := t.TempDir()
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "gpu-bench.sh"), "-o", out, "--", "--quick", "--tiny-models",
		"--models", filepath.Join(dir, "models"))
	cmd.Env = append(slicesWithout(os.Environ(), "OLLAMA_HOST="), runMainEnv+"=1", "HEARTH="+bin)
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gpu-bench.sh: %v\n%s", err, got)
	}
	table, err := os.ReadFile(filepath.Join(out, "table.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("| workload | metric | %s: runtime | %s: hearth | cpu: runtime | cpu: hearth |", backend, backend),
		"| single turn | time to first token | ",
		"| 2 concurrent streams | aggregate output | ",
		backend + ": GPU none (CPU); tiny script models",
		"cpu: GPU none (CPU); tiny script models",
	} {
		if !strings.Contains(string(table), want) {
			t.Errorf("table.md has no %q:\n%s", want, table)
		}
	}
	for _, b := range []string{backend, "cpu"} {
		var r struct {
			Settings struct {
				Runs int `json:"runs"`
			} `json:"settings"`
			Rows []json.RawMessage `json:"rows"`
		}
		data, _ := os.ReadFile(filepath.Join(out, b+".json"))
		if err := json.Unmarshal(data, &r); err != nil || r.Settings.Runs != 1 || len(r.Rows) < 10 {
			t.Errorf("%s.json: %v, %d rows:\n%s", b, err, len(r.Rows), data)
		}
	}
}

// buildStandInCUDABackend compiles a libggml-cuda.so into dir that, like the real one,
// links the NVIDIA driver's libcuda.so.1: it is linked against a stub of it in a
// directory that is removed afterwards, so the dynamic loader cannot load it on this
// machine, as it cannot load the real backend where no driver is installed.
func buildStandInCUDABackend(t *testing.T, dir string) {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	stub := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(stub, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) {
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", cc, args, err, out)
		}
	}
	run("-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", filepath.Join(stub, "libcuda.so"),
		write("cuda.c", "int cuInit(unsigned int flags) { return 100; }\n"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run("-shared", "-fPIC", "-Wl,--no-as-needed", "-o", filepath.Join(dir, "libggml-cuda.so"),
		write("backend.c", "int cuInit(unsigned int flags);\nint hearth_stand_in(void) { return cuInit(0); }\n"),
		"-L"+stub, "-lcuda")
	if err := os.RemoveAll(stub); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a strings.Builder the child's stderr copier and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitHealthy waits for hearth at base to answer /healthz with 200.
func waitHealthy(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hearth not healthy in time (last error %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
