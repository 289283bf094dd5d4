package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth/cmd/hearth/bench"
	"hearth/engine/ollama/testenv"
)

// TestBenchCommandQuick runs `hearth bench --quick` as its own process with the tiny
// script models: the command must start its runtime and hearth, run every workload and
// print a report of the right shape. It asserts structure, never timings.
func TestBenchCommandQuick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "bench", "--quick", "--tiny-models", "--json", "--quiet")
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1",
		"HOME="+t.TempDir(), "TMPDIR="+t.TempDir()), "OLLAMA_HOST=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hearth bench: %v\nstderr:\n%s", err, tail(stderr.String(), 4000))
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, stdout.String())
	}
	s := rep.Settings
	if s.Runs != 1 || s.Turns != 3 || s.Concurrency != 2 || !s.Tiny || !s.Embedded || len(s.Models) != 3 {
		t.Errorf("settings %+v, want the quick ones with tiny models on an embedded runtime", s)
	}
	workloads := map[string]int{}
	for _, row := range rep.Rows {
		workloads[row.Workload]++
		if row.Unit == "x" {
			if len(row.Ratio) == 0 {
				t.Errorf("ratio row %s / %s has no values", row.Workload, row.Metric)
			}
			continue
		}
		if row.Floor == nil || row.Floor.N != 1 || row.Floor.Median <= 0 {
			t.Errorf("row %s / %s: floor %+v, want one positive measurement", row.Workload, row.Metric, row.Floor)
		}
		if strings.Contains(row.Metric, "no prefix cached") {
			continue // measured on the floor alone
		}
		if st, ok := row.Ratio[bench.SystemHearth]; !ok || st.N != 1 || st.Median <= 0 {
			t.Errorf("row %s / %s: hearth ratio %+v", row.Workload, row.Metric, st)
		}
		if !strings.Contains(row.Metric, "enforced") {
			if st, ok := row.Ratio[bench.SystemRuntime]; !ok || st.N != 1 || st.Median <= 0 {
				t.Errorf("row %s / %s: runtime ratio %+v", row.Workload, row.Metric, st)
			}
		}
	}
	for _, w := range []string{"single turn", "conversation", "tool call", "2 concurrent streams"} {
		if workloads[w] == 0 {
			t.Errorf("no rows for workload %q (have %v)", w, workloads)
		}
	}
	if len(rep.Checks) != 4 {
		t.Errorf("%d checks, want the 4 targets: %+v", len(rep.Checks), rep.Checks)
	}
	// Turn 3 of hearth's conversation found turns 1 and 2 in the runtime's cache.
	if c := rep.Cache; c.Turn != 3 || c.CachedTokens <= 0 || c.CachedTokens >= c.InputTokens {
		t.Errorf("prefix cache evidence %+v, want turn 3 with part of its input cached", c)
	}
	// The call script writes the one call allowed_tools permits, so enforcing it must
	// not change it.
	if e := rep.Enforcement; e.Runs != 1 || e.Same != 1 || len(e.Enforced) != 1 {
		t.Errorf("enforcement %+v", rep.Enforcement)
	}
	// The embedded runtime's temporary models directory is gone.
	if left, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(findEnv(cmd.Env, "TMPDIR="), "TMPDIR="), "hearth-bench-*")); len(left) > 0 {
		t.Errorf("bench left %v behind", left)
	}
}

// TestBenchCommandExternalRuntime: `hearth bench --runtime URL` measures hearth over an
// Ollama server (a real `ollama serve` built from the same module), against that
// server's own endpoints, and creates its models there.
func TestBenchCommandExternalRuntime(t *testing.T) {
	srv := testenv.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	url := srv.Runtime.Target().String()
	cmd := exec.CommandContext(ctx, os.Args[0], "bench", "--quick", "--tiny-models", "--json", "--quiet", "--runtime", url)
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1", "HOME="+t.TempDir(), "TMPDIR="+t.TempDir()), "OLLAMA_HOST=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hearth bench --runtime %s: %v\nstderr:\n%s", url, err, tail(stderr.String(), 4000))
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, stdout.String())
	}
	if rep.Settings.Embedded || len(rep.Rows) == 0 {
		t.Errorf("settings %+v with %d rows, want an external runtime measured", rep.Settings, len(rep.Rows))
	}
	for _, row := range rep.Rows {
		if row.Unit != "x" && (row.Floor == nil || row.Floor.Median <= 0) {
			t.Errorf("row %s / %s: floor %+v", row.Workload, row.Metric, row.Floor)
		}
	}
	// Two runtimes named at once are refused.
	if _, _, err := runCLI(t, "bench", "--runtime", url, "--ollama", "http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "two runtimes") {
		t.Errorf("--runtime and --ollama naming two runtimes: %v", err)
	}
}

func findEnv(env []string, prefix string) string {
	for _, e := range env {
		if strings.HasPrefix(e, prefix) {
			return e
		}
	}
	return ""
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func TestBenchMarkdown(t *testing.T) {
	// The markdown of a report names the three systems and every target.
	var buf bytes.Buffer
	rep := &bench.Report{Settings: bench.Settings{Runs: 5, Turns: 20, Concurrency: 16}}
	rep.Markdown(&buf)
	for _, want := range []string{bench.SystemRaw, bench.SystemRuntime, bench.SystemHearth, "| workload | metric |"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestBenchPoolCommand runs `hearth bench pool` over two real `ollama serve` processes:
// each setup serves every turn, the single runtime all of them, and with hearth's
// placement the conversations spread over both and never move, each turn finding its
// whole previous turn in its runtime's KV cache (four slots each).
func TestBenchPoolCommand(t *testing.T) {
	a := testenv.StartServer(t, "OLLAMA_NUM_PARALLEL=4")
	b := testenv.StartServer(t, "OLLAMA_NUM_PARALLEL=4")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ua, ub := a.Runtime.Target().String(), b.Runtime.Target().String()
	cmd := exec.CommandContext(ctx, os.Args[0], "bench", "pool", "--quick", "--tiny-models", "--json", "--quiet",
		"--runtime", ua, "--runtime", ub, "--slots", "4", "--turns", "3")
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1", "HOME="+t.TempDir(), "TMPDIR="+t.TempDir()), "OLLAMA_HOST=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hearth bench pool: %v\nstderr:\n%s", err, tail(stderr.String(), 4000))
	}
	var rep bench.PoolReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output is not a pool report: %v\n%s", err, stdout.String())
	}
	if len(rep.Setups) != 3 || len(rep.Checks) != 3 || rep.Speedup.N != 1 {
		t.Fatalf("%d setups, %d checks and %d speed-ups, want 3, 3 and 1 (a run): %s", len(rep.Setups), len(rep.Checks), rep.Speedup.N, stdout.String())
	}
	la, lb := a.Runtime.Target().Host, b.Runtime.Target().Host
	const responses = 4 * 3 // --quick's conversations × --turns
	one, aff, rnd := rep.Setups[0], rep.Setups[1], rep.Setups[2]
	if one.Served[la] != responses || len(one.Served) != 1 {
		t.Errorf("1 runtime served %v, want all %d on %s", one.Served, responses, la)
	}
	if aff.Served[la] != responses/2 || aff.Served[lb] != responses/2 {
		t.Errorf("affinity served %v, want the conversations spread evenly", aff.Served)
	}
	for _, su := range []bench.PoolSetup{one, aff} {
		if su.Moved.Median != 0 || su.Reuse.Median != 1 || su.CachedShare.Median <= 0.5 {
			t.Errorf("%s: moved %v, reuse %v, cached share %v; want no move and every previous turn reused",
				su.Name, su.Moved, su.Reuse, su.CachedShare)
		}
	}
	if rnd.Routing != "random" || rnd.Served[la]+rnd.Served[lb] != responses {
		t.Errorf("random routing: %+v", rnd)
	}
	if _, _, err := runCLI(t, "bench", "pool", "--runtime", ua); err == nil || !strings.Contains(err.Error(), "at least two") {
		t.Errorf("one runtime: %v", err)
	}
}
