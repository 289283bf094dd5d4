// Package cpubuild tells which x86-64 level the runtime's C kernels (llama.cpp's ggml,
// compiled by cgo into this binary) were built for, and whether this CPU can run them.
//
// cgo compiles ggml once, for one instruction set: the Makefile picks this machine's
// level (scripts/cpu-level.sh), because the compiler's default leaves out AVX2, FMA and
// F16C and makes prompt processing about three times slower. A binary built for
// x86-64-v3 that is copied to an older CPU would die of SIGILL inside a model runner;
// Check turns that into a clear message at start instead.
package cpubuild

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"golang.org/x/sys/cpu"
)

// Level is the -march value in the CGO_CFLAGS this binary was built with ("" when none
// was given: the compiler's default, x86-64 on amd64).
func Level() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "CGO_CFLAGS" {
			return marchOf(s.Value)
		}
	}
	return ""
}

// marchOf returns the last -march=X of a flags string (the one the compiler obeys).
func marchOf(flags string) string {
	level := ""
	for _, f := range strings.Fields(flags) {
		if v, ok := strings.CutPrefix(f, "-march="); ok {
			level = v
		}
	}
	return level
}

// Supported reports which x86-64 psABI levels this CPU can run, best first.
func Supported() []string {
	if runtime.GOARCH != "amd64" {
		return nil
	}
	x := cpu.X86
	var out []string
	if x.HasAVX && x.HasAVX2 && x.HasFMA && x.HasBMI1 && x.HasBMI2 && x.HasOSXSAVE {
		out = append(out, "x86-64-v3")
	}
	if x.HasSSE3 && x.HasSSSE3 && x.HasSSE41 && x.HasSSE42 && x.HasPOPCNT && x.HasCX16 {
		out = append(out, "x86-64-v2")
	}
	return append(out, "x86-64")
}

// Check returns an error when the kernels were built for an x86-64 level this CPU lacks.
// Other -march values (native, a CPU's name) cannot be checked and pass.
func Check() error {
	return check(Level(), Supported())
}

func check(level string, supported []string) error {
	switch level {
	case "x86-64-v2", "x86-64-v3", "x86-64-v4":
	default:
		return nil
	}
	for _, s := range supported {
		if s == level {
			return nil
		}
	}
	best := "x86-64"
	if len(supported) > 0 {
		best = supported[0]
	}
	return fmt.Errorf("this hearth was built for %s CPUs, and this CPU is %s at best: "+
		"its model runners would crash on the first instruction it lacks. "+
		"Rebuild it on this machine with `make build`, or anywhere with `make build CPU_LEVEL=x86-64` for any x86-64 CPU", level, best)
}

// Describe is one line for `hearth doctor`: what the kernels were built for, what the
// CPU supports, and whether a rebuild would be faster.
func Describe() (string, error) {
	return describe(Level(), Supported())
}

func describe(level string, supported []string) (string, error) {
	if err := check(level, supported); err != nil {
		return "", err
	}
	built := level
	if built == "" {
		built = "the compiler's default"
		if runtime.GOARCH == "amd64" {
			built += " (x86-64: no AVX)"
		}
	}
	line := "runtime kernels built for " + built
	if len(supported) > 0 {
		line += "; this CPU runs up to " + supported[0]
		if (level == "" || level == "x86-64" || level == "x86-64-v2") && supported[0] != level && supported[0] != "x86-64" {
			line += fmt.Sprintf(": rebuild with `make build` (CPU_LEVEL=%s) for about 3x faster prompt processing", supported[0])
		}
	}
	return line, nil
}
