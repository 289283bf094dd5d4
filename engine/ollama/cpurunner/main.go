// Command cpurunner is the embedded runtime's model runner alone, built once per CPU
// variant by `make build` (scripts/cpu-runners.sh) into lib/hearth/runner-<variant>,
// each with the C flags of one of ggml's CPU variants. hearth's own `runner`
// sub-command replaces itself with the best of them for the CPU it runs on
// (internal/cpubuild); this program then runs as that process, with the same arguments:
// `<hearth> runner ...`.
package main

import (
	"fmt"
	"os"

	"github.com/ollama/ollama/runner"

	"hearth/internal/parentdeath"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "runner" {
		fmt.Fprintln(os.Stderr, "this is a model runner of hearth's embedded runtime; hearth starts it as `hearth runner ...`")
		os.Exit(2)
	}
	// hearth's runner armed the parent-death signal before it became this program, and
	// an exec keeps it; arming again here costs nothing and does not depend on that.
	parentdeath.Arm()
	if err := runner.Execute(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "runner:", err)
		os.Exit(1)
	}
}
