// Package testenv gives end-to-end tests a real runtime: Ollama's server embedded in the
// test process, or with HEARTH_TEST_RUNTIME=external a stock `ollama serve` process
// built from the same module and reached over loopback, with the script models of
// package scriptmodel created in a temporary models directory. Nothing is downloaded.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth/engine/ollama"
	"hearth/internal/cpubuild"
	"hearth/internal/gomodule"
	"hearth/scriptmodel"
)

// Main is the TestMain of packages whose tests use Runtime. The embedded runtime starts
// model runners by re-executing the test binary with the runner sub-command, so those
// invocations must run the runner instead of the tests.
func Main(m *testing.M) {
	if ollama.IsRunnerInvocation(os.Args) {
		if err := ollama.RunRunner(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "runner:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	useRunnerVariants()
	code := m.Run()
	shutdown()
	os.Exit(code)
}

// useRunnerVariants points the runtime's runners at the CPU variants `make build` put in
// this checkout's lib/hearth (the test binary lives in a temporary directory, where no
// lib/hearth is beside it), so that tests run the kernels bin/hearth would. Without
// them, the runners run the kernels built into the test binary.
func useRunnerVariants() {
	if os.Getenv(cpubuild.DirEnv) != "" {
		return
	}
	root, err := gomodule.Root()
	if err != nil {
		return
	}
	dir := filepath.Join(root, "lib", "hearth")
	if _, err := os.Stat(dir); err == nil {
		os.Setenv(cpubuild.DirEnv, dir)
	}
}

var (
	once      sync.Once
	rt        *ollama.Runtime
	server    *Server // the external runtime's process, with RuntimeEnv=external
	models    map[string]*scriptmodel.Model
	modelsDir string
	startErr  error
)

// Runtime returns the shared runtime (embedded, or external by RuntimeEnv), starting it
// and creating the catalogue's script models on first use.
func Runtime(t testing.TB) *ollama.Runtime {
	t.Helper()
	once.Do(start)
	if startErr != nil {
		kind := "embedded"
		if External() {
			kind = "external"
		}
		t.Fatalf("%s runtime: %v", kind, startErr)
	}
	return rt
}

// LlamaServerSince is the first Ollama release that runs GGUF models in a llama.cpp
// `llama-server` process instead of its in-process engines: a runtime whose numbers
// differ from the embedded runtime's where a test must say so (RunsLlamaServer).
const LlamaServerSince = "0.30.0"

var (
	versionOnce sync.Once
	version     string
	versionErr  error
)

// RuntimeVersion is the version the shared runtime reports (/api/version).
func RuntimeVersion(t testing.TB) string {
	t.Helper()
	r := Runtime(t)
	versionOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		version, versionErr = r.Client.Version(ctx)
	})
	if versionErr != nil {
		t.Fatalf("the runtime's version: %v", versionErr)
	}
	return version
}

// RunsLlamaServer reports whether the shared runtime is an external Ollama of
// LlamaServerSince or later.
func RunsLlamaServer(t testing.TB) bool {
	t.Helper()
	return External() && !ollama.VersionBefore(RuntimeVersion(t), LlamaServerSince)
}

// Model returns the built script model created in the runtime under name (one of the
// scriptmodel catalogue names), for its expected text and pieces.
func Model(t testing.TB, name string) *scriptmodel.Model {
	t.Helper()
	Runtime(t)
	m, ok := models[name]
	if !ok {
		t.Fatalf("no script model %q", name)
	}
	return m
}

// BenchName is the runtime name of the bench variant of catalogue model name.
func BenchName(name string) string {
	base, _, _ := strings.Cut(name, ":")
	return base + "-bench:latest"
}

var (
	benchMu     sync.Mutex
	benchModels = map[string]*scriptmodel.Model{}
)

// BenchModel creates (once) the bench variant of catalogue model name: the same script
// at the compute cost of a small real model, for tests that need generation to take
// real time, such as stopping it midway. It returns the model and its runtime name.
func BenchModel(t testing.TB, name string) (*scriptmodel.Model, string) {
	t.Helper()
	r := Runtime(t)
	benchMu.Lock()
	defer benchMu.Unlock()
	bench := BenchName(name)
	if m, ok := benchModels[bench]; ok {
		return m, bench
	}
	spec, ok := scriptmodel.Catalog()[name]
	if !ok {
		t.Fatalf("no script model %q", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := scriptmodel.Create(ctx, r.Client, bench, scriptmodel.Bench(spec))
	if err != nil {
		t.Fatalf("create %s: %v", bench, err)
	}
	benchModels[bench] = m
	return m, bench
}

func start() {
	// The external runtime's first start on a machine builds it (minutes on two cores).
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	modelsDir, startErr = os.MkdirTemp("", "hearth-test-models-")
	if startErr != nil {
		return
	}
	if External() {
		if server, startErr = startServer(ctx, modelsDir); startErr != nil {
			return
		}
		rt = server.Runtime
	} else {
		// Keep runners loaded for the whole run: reloading a model costs more than a test.
		os.Setenv("OLLAMA_KEEP_ALIVE", "-1")
		rt, startErr = ollama.StartEmbedded(ctx, ollama.EmbeddedConfig{ModelsDir: modelsDir})
		if startErr != nil {
			return
		}
	}
	models = map[string]*scriptmodel.Model{}
	for name, spec := range scriptmodel.Catalog() {
		m, err := scriptmodel.Create(ctx, rt.Client, name, spec)
		if err != nil {
			startErr = err
			return
		}
		models[name] = m
	}
	embedder = scriptmodel.NewEmbedder(scriptmodel.DefaultEmbedWords)
	// Only the tests of embeddings need this model, and a runtime may refuse it while
	// running the others (Ollama 0.30 and later check a created GGUF with llama.cpp's
	// loader, which is stricter than the runtime's own engine: it refused this model
	// while it had no layers).
	embedErr = scriptmodel.CreateEmbedder(ctx, rt.Client, scriptmodel.EmbedModel, embedder)
}

var (
	// embedder is the embedding model created as scriptmodel.EmbedModel.
	embedder *scriptmodel.Embedder
	// embedErr is why the runtime has no embedding model, if it has none.
	embedErr error
)

// Embedder returns the script embedding model created in the runtime under
// scriptmodel.EmbedModel, for its exact vectors. A test of embeddings calls it first:
// it fails the test when the runtime could not create the model.
func Embedder(t testing.TB) *scriptmodel.Embedder {
	t.Helper()
	Runtime(t)
	if embedErr != nil {
		t.Fatalf("the runtime has no %s: %v", scriptmodel.EmbedModel, embedErr)
	}
	return embedder
}

func shutdown() {
	if rt != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.UnloadAll(ctx)
	}
	if server != nil {
		server.stop()
	}

	if modelsDir != "" {
		os.RemoveAll(modelsDir)
	}
}
