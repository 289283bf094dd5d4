package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"hearth/internal/gomodule"
)

// TestCgoIncludeIsTheMakefiles: the external runtime's build reads the C headers from
// the directory the Makefile puts them in, so that both share Go's build cache (a cgo
// compile is keyed by its flags, the include path among them).
func TestCgoIncludeIsTheMakefiles(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, err := gomodule.Root()
	if err != nil {
		t.Fatal(err)
	}
	got, err := cgoInclude(root)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-s", "--no-print-directory", "-C", root,
		"--eval", "print-include: ; @echo $(INCLUDE)", "print-include")
	// Without the settings of a make that runs this test (make test INCLUDE=...).
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" && k != "INCLUDE" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, out)
	}
	if want := strings.TrimSpace(string(out)); got != want {
		t.Errorf("cgoInclude = %q, the Makefile's INCLUDE = %q", got, want)
	}
	if strings.HasPrefix(got, root) {
		t.Errorf("the headers are in the clone (%s): every clone would compile llama.cpp again", got)
	}
}
