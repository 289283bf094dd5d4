// Package testenv gives end-to-end tests a real runtime: Ollama's server embedded in the
// test process, with the script models of package scriptmodel created in a temporary
// models directory. Nothing is downloaded.
package testenv

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"hearth/engine/ollama"
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
	code := m.Run()
	shutdown()
	os.Exit(code)
}

var (
	once      sync.Once
	rt        *ollama.Runtime
	models    map[string]*scriptmodel.Model
	modelsDir string
	startErr  error
)

// Runtime returns the shared embedded runtime, starting it and creating the catalogue's
// script models on first use.
func Runtime(t testing.TB) *ollama.Runtime {
	t.Helper()
	once.Do(start)
	if startErr != nil {
		t.Fatalf("embedded runtime: %v", startErr)
	}
	return rt
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

func start() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	modelsDir, startErr = os.MkdirTemp("", "hearth-test-models-")
	if startErr != nil {
		return
	}
	// Keep runners loaded for the whole run: reloading a model costs more than a test.
	os.Setenv("OLLAMA_KEEP_ALIVE", "-1")
	rt, startErr = ollama.StartEmbedded(ctx, ollama.EmbeddedConfig{ModelsDir: modelsDir})
	if startErr != nil {
		return
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
}

func shutdown() {
	if rt != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.UnloadAll(ctx)
	}
	if modelsDir != "" {
		os.RemoveAll(modelsDir)
	}
}
