// Command cpuflags prints the C flags of the CPU kernels hearth's model runners run on
// this machine: those of the best runner variant in the given directory that this CPU
// supports, else this program's own (the caller's CGO_CFLAGS). The Makefile builds
// bin/ollama with them, so that Ollama's own server is measured with the kernels hearth's
// runtime uses.
//
//	go run ./internal/cpubuild/cpuflags lib/hearth
package main

import (
	"fmt"
	"os"

	"hearth/internal/cpubuild"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cpuflags <runner-variants-dir>")
		os.Exit(2)
	}
	s := cpubuild.Select(os.Args[1], os.Getenv(cpubuild.VariantEnv), cpubuild.Host())
	if s.Err != nil {
		fmt.Fprintln(os.Stderr, "cpuflags:", s.Err)
		os.Exit(1)
	}
	fmt.Println(s.Chosen.CFlags)
}
