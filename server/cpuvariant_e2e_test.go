package server_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"hearth/engine/ollama/testenv"
	"hearth/internal/cpubuild"
	"hearth/scriptmodel"
)

// TestCPUVariantE2E: with the runner variants `make build` puts in lib/hearth, the
// embedded runtime's model runner is the best variant this CPU runs (the process's
// executable is that variant's file, not the test binary), it answers exactly, and
// /v1/models says which variant runs the model.
func TestCPUVariantE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "an external Ollama runs its own runners")
	if os.Getenv(cpubuild.VariantEnv) != "" {
		t.Skipf("%s forces a variant", cpubuild.VariantEnv)
	}
	sel := cpubuild.Selected()
	if len(sel.Variants) == 0 {
		t.Skipf("no runner variants in %q (make build and make test build them)", sel.Dir)
	}
	if sel.Err != nil {
		t.Fatal(sel.Err)
	}
	// The choice is the best that runs here: every variant ranked above it needs a
	// feature this CPU lacks.
	runs := 0
	for _, v := range sel.Variants {
		if v.Runs() {
			runs++
			if v.Score > sel.Chosen.Score {
				t.Errorf("chose %s (score %d) over %s (score %d), which this CPU runs", sel.Chosen.Name, sel.Chosen.Score, v.Name, v.Score)
			}
		}
	}
	if runs == 0 {
		t.Skipf("this CPU runs none of the variants in %s", sel.Dir)
	}
	exe := sel.Chosen.Path
	if exe == "" {
		// The built-in kernels rank with the best variant (a test binary built with
		// -march=x86-64-v3 beside a haswell runner): no second program to start.
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		exe = self
	}

	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	r := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"hi"`))
	sameItems(t, "plain on "+sel.Chosen.Name, r.Output, []item{{Type: "message", Status: "completed", Text: plain.Text(scriptmodel.EntryAssistant)}})

	want, err := filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	pids := testenv.RunnerPIDs(true)
	if len(pids) == 0 {
		t.Fatal("no model runner process after an answer")
	}
	for _, pid := range pids {
		exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
		if err != nil {
			t.Fatal(err)
		}
		if exe != want {
			t.Errorf("runner %d runs %s, want the %s variant %s", pid, exe, sel.Chosen.Name, want)
		}
	}
	if l := loadedEntry(t, srv, scriptmodel.PlainModel); l.CPUKernels != sel.Chosen.Name {
		t.Errorf("/v1/models cpu_kernels = %q, want %q", l.CPUKernels, sel.Chosen.Name)
	}
}
