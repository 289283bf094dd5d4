package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"hearth/cmd/hearth/bench"
	"hearth/engine/ollama/testenv"
	"hearth/internal/cpubuild"
)

// TestBenchCPUCommand runs `hearth bench cpu` as its own process with the tiny script
// model: one row for hearth's own kernels and one for each runner variant this CPU runs
// (this checkout's lib/hearth, when make build made it), each measured on a runner that
// /proc shows is that variant's executable. It asserts structure, never timings.
func TestBenchCPUCommand(t *testing.T) {
	testenv.SkipIfExternal(t, "measures the embedded runtime's runners")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := os.Getenv(cpubuild.DirEnv)
	if dir == "" {
		dir, _ = filepath.Abs(filepath.Join("..", "..", "lib", "hearth"))
	}
	want := []string{cpubuild.BuiltinName}
	sel := cpubuild.Select(dir, "", cpubuild.Host())
	for i := len(sel.Variants) - 1; i >= 0; i-- {
		if sel.Variants[i].Runs() {
			want = append(want, sel.Variants[i].Name)
		}
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "bench", "cpu", "--tiny-models", "--runs", "1", "--prompt-tokens", "200", "--json", "--quiet")
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1", cpubuild.DirEnv+"="+dir,
		"HOME="+t.TempDir(), "TMPDIR="+t.TempDir()), "OLLAMA_HOST=")
	cmd.Env = slicesWithout(cmd.Env, cpubuild.VariantEnv+"=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hearth bench cpu: %v\nstderr:\n%s", err, tail(stderr.String(), 4000))
	}
	var rep bench.CPUReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, stdout.String())
	}
	if len(rep.Rows) != len(want) {
		t.Fatalf("rows %+v, want one for each of %v", rep.Rows, want)
	}
	self, _ := filepath.EvalSymlinks(os.Args[0])
	for i, row := range rep.Rows {
		exe := self
		if row.Variant != cpubuild.BuiltinName {
			exe, _ = filepath.EvalSymlinks(filepath.Join(dir, "runner-"+row.Variant))
		}
		if row.Variant != want[i] || row.Runner != exe || row.PromptTokens < 200 ||
			row.PromptRate.N != 1 || row.PromptRate.Median <= 0 || row.TTFT.N != 1 || row.TTFT.Median <= 0 {
			t.Errorf("row %d: %+v, want variant %s run by %s, 200+ prompt tokens, one positive measurement each", i, row, want[i], exe)
		}
	}
}
