// Command hearth serves the Open Responses API from local models, with the Ollama
// runtime running inside the same process or one the user already runs.
package main

import (
	"fmt"
	"os"

	"hearth/engine/ollama"
)

func main() {
	// The embedded runtime starts model runners by re-executing this binary with the
	// runner sub-command; hand those straight to the runtime's runner.
	if ollama.IsRunnerInvocation(os.Args) {
		if err := ollama.RunRunner(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "runner:", err)
			os.Exit(1)
		}
		return
	}
	if err := rootCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
