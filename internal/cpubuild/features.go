package cpubuild

import (
	"slices"
	"strings"
)

// Features is a set of x86 CPU features, named as Linux names them in the flags line
// of /proc/cpuinfo ("avx2", "f16c", "abm", "avx512_vnni"), so that a recorded cpuinfo
// line can stand for a CPU in tests. The host's come from CPUID (hostFeatures).
type Features map[string]bool

// ParseCPUInfoFlags reads the flags line of /proc/cpuinfo ("flags : fpu vme ..."), or
// just its words.
func ParseCPUInfoFlags(line string) Features {
	if _, after, ok := strings.Cut(line, ":"); ok {
		line = after
	}
	f := Features{}
	for _, w := range strings.Fields(line) {
		f[w] = true
	}
	return f
}

// Missing lists the features of need that f lacks, sorted.
func (f Features) Missing(need Features) []string {
	var out []string
	for n := range need {
		if !f[n] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Host is this CPU's features, asked of the CPU itself.
func Host() Features { return hostFeatures() }

// levelFeatures are the x86-64 psABI levels as GCC's -march=x86-64-vN enables them
// (each includes the ones before it).
var levelFeatures = map[string][]string{
	"x86-64":    nil,
	"x86-64-v2": {"cx16", "lahf_lm", "popcnt", "pni", "ssse3", "sse4_1", "sse4_2"},
	"x86-64-v3": {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"},
	"x86-64-v4": {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"},
}

var levelOrder = []string{"x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"}

// mflagFeatures maps GCC's -m<isa> flags to the feature they let the compiler use, and
// implied lists what GCC switches on with it (-mavx2 implies -mavx, and so on): the
// compiler may emit any of those.
var mflagFeatures = map[string]string{
	"sse3": "pni", "ssse3": "ssse3", "sse4.1": "sse4_1", "sse4.2": "sse4_2", "sse4": "sse4_2",
	"popcnt": "popcnt", "cx16": "cx16", "sahf": "lahf_lm",
	"avx": "avx", "avx2": "avx2", "fma": "fma", "f16c": "f16c",
	"bmi": "bmi1", "bmi2": "bmi2", "lzcnt": "abm", "movbe": "movbe", "xsave": "xsave",
	"avxvnni": "avx_vnni",
	"avx512f": "avx512f", "avx512cd": "avx512cd", "avx512vl": "avx512vl",
	"avx512dq": "avx512dq", "avx512bw": "avx512bw", "avx512ifma": "avx512ifma",
	"avx512vbmi": "avx512vbmi", "avx512vnni": "avx512_vnni", "avx512bf16": "avx512_bf16",
}

var implied = map[string][]string{
	"ssse3":       {"pni"},
	"sse4_1":      {"ssse3"},
	"sse4_2":      {"sse4_1"},
	"avx":         {"sse4_2"},
	"avx2":        {"avx"},
	"fma":         {"avx"},
	"f16c":        {"avx"},
	"avx_vnni":    {"avx2"},
	"avx512f":     {"avx2", "fma", "f16c"},
	"avx512cd":    {"avx512f"},
	"avx512vl":    {"avx512f"},
	"avx512dq":    {"avx512f"},
	"avx512bw":    {"avx512f"},
	"avx512ifma":  {"avx512f"},
	"avx512vbmi":  {"avx512bw"},
	"avx512_vnni": {"avx512f"},
	"avx512_bf16": {"avx512bw"},
}

func (f Features) add(name string) {
	if f[name] {
		return
	}
	f[name] = true
	for _, n := range implied[name] {
		f.add(n)
	}
}

// Requirements is what a CPU needs to run code compiled with these C flags: the
// -march level's features and each -m<isa> flag's, with what they imply. ok is false
// when the flags name something that cannot be checked (-march=native, a CPU's name,
// an -m flag this table does not know): such a build runs where it was built, and
// nothing here can tell where else.
func Requirements(cflags string) (need Features, ok bool) {
	need = Features{}
	ok = true
	march := "x86-64"
	for _, flag := range strings.Fields(cflags) {
		name, isM := strings.CutPrefix(flag, "-m")
		if !isM {
			continue
		}
		if v, isArch := strings.CutPrefix(name, "arch="); isArch {
			march = v
			continue
		}
		switch {
		case strings.HasPrefix(name, "tune="), strings.HasPrefix(name, "no-"),
			name == "64", strings.HasPrefix(name, "fpmath="):
			// Tuning, the ABI, or taking an instruction set away: nothing more to need.
		case mflagFeatures[name] != "":
			need.add(mflagFeatures[name])
		default:
			ok = false
		}
	}
	i := slices.Index(levelOrder, march)
	if i < 0 {
		return need, false
	}
	for _, l := range levelOrder[:i+1] {
		for _, n := range levelFeatures[l] {
			need.add(n)
		}
	}
	return need, ok
}

// kernelWeights are the features ggml's x86 kernels use, weighted as ggml scores its own
// CPU backend variants (ggml-cpu/arch/x86/cpu-feats.cpp): a variant with a later
// feature beats any without it. The AVX-512 group counts once, through avx512f.
var kernelWeights = map[string]int{
	"fma": 1, "f16c": 1 << 1, "sse4_2": 1 << 2, "bmi2": 1 << 3, "avx": 1 << 4,
	"avx2": 1 << 5, "avx_vnni": 1 << 6, "avx512f": 1 << 7, "avx512vbmi": 1 << 8,
	"avx512_bf16": 1 << 9, "avx512_vnni": 1 << 10,
}

// Score ranks kernels compiled for need: higher uses more of what ggml's kernels can use.
func Score(need Features) int {
	s := 0
	for n := range need {
		s += kernelWeights[n]
	}
	return s
}
