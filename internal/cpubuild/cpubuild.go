// Package cpubuild tells which instruction sets the runtime's C kernels (llama.cpp's
// ggml) were compiled for, which of those builds this CPU runs, and makes each model
// runner run the best of them (variants.go).
//
// cgo compiles ggml into the hearth binary once, for one instruction set: the Makefile
// builds it for any x86-64 CPU, and builds the same runner again for ggml's CPU variants
// (haswell: AVX2 FMA F16C BMI2; skylakex: AVX-512; ...) into lib/hearth, because the
// kernels without AVX2 and FMA make prompt processing several times slower. A binary
// built for more than this CPU has would die of SIGILL inside the runtime; Check turns
// that into a clear message at start instead.
package cpubuild

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
)

// Level is the -march value in the CGO_CFLAGS this binary was built with ("" when none
// was given: the compiler's default, x86-64 on amd64).
func Level() string {
	return marchOf(cgoFlags(buildSettings()))
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

// Check returns an error when the kernels built into this binary need features this CPU
// lacks. Flags that cannot be checked (-march=native, a CPU's name) pass.
func Check() error {
	if runtime.GOARCH != "amd64" {
		return nil
	}
	return check(cgoFlags(buildSettings()), Host())
}

func check(cflags string, host Features) error {
	need, ok := Requirements(cflags)
	if !ok {
		return nil
	}
	missing := host.Missing(need)
	if len(missing) == 0 {
		return nil
	}
	level := marchOf(cflags)
	if level == "" {
		level = "x86-64"
	}
	return fmt.Errorf("this hearth's built-in kernels were compiled for %s, and this CPU lacks %s: "+
		"the runtime would crash on the first instruction it lacks. "+
		"Rebuild it with `make build` (its default CPU_LEVEL=x86-64 runs on any x86-64 CPU)", level, strings.Join(missing, " "))
}

// Describe is one line for `hearth doctor`: which kernels the model runners run, the
// others there are, and what this CPU has of what ggml's kernels use.
func Describe() (string, error) {
	if runtime.GOARCH != "amd64" {
		return "built-in kernels (" + runtime.GOARCH + ")", nil
	}
	if err := Check(); err != nil {
		return "", err
	}
	return describe(Selected(), Host())
}

func describe(s Selection, host Features) (string, error) {
	if s.Err != nil {
		return "", s.Err
	}
	line := "runners use " + s.Summary() + "; this CPU has " + kernelFeatures(host)
	if s.Forced == "" && s.Chosen.Path == "" && len(s.Variants) == 0 {
		switch {
		case host["avx2"] && !s.Chosen.Requires["avx2"]:
			line += ": `make build` builds the runner variants, for several times faster prompt processing"
		case bestPossible(host) > s.Chosen.Score:
			line += ": `make build` builds runner variants that use more of it"
		}
	}
	return line, nil
}

// kernelFeatures lists the features of host that ggml's kernels use, in ggml's order.
func kernelFeatures(host Features) string {
	var names []string
	for n := range kernelWeights {
		if host[n] {
			names = append(names, n)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return kernelWeights[a] - kernelWeights[b] })
	if len(names) == 0 {
		return "none of the features ggml's kernels use (SSE2 only)"
	}
	return strings.Join(names, " ")
}

// bestPossible is the score of kernels built for everything host has.
func bestPossible(host Features) int {
	s := 0
	for n, w := range kernelWeights {
		if host[n] {
			s += w
		}
	}
	return s
}
