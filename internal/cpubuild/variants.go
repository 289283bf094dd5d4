package cpubuild

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// The model runners are where the kernels run: the runtime re-executes this binary as
// `<binary> runner ...`. The kernels compiled into it by cgo are one build; `make build`
// also builds runner variants, the same runner compiled with other instruction sets
// (ggml's CPU variants: sse42, haswell, skylakex, ...), into lib/hearth beside bin/. A
// runner start picks the best variant this CPU runs and replaces itself with it
// (execve: the same process, so the runtime's bookkeeping and the parent-death signal
// stay). The choice reads the CPU with CPUID and each variant's requirements from the
// C flags recorded in its own build information, so no name table can drift from what
// was compiled.

const (
	// DirEnv names the directory of the runner variants; default <exe>/../lib/hearth.
	DirEnv = "HEARTH_RUNNER_DIR"
	// VariantEnv forces a variant by name ("builtin" for the kernels in this binary),
	// to compare variants or to step around one.
	VariantEnv = "HEARTH_CPU_VARIANT"
	// BuiltinName names the kernels compiled into this binary.
	BuiltinName = "builtin"
	// variantPrefix starts the file name of a runner variant: runner-<variant>.
	variantPrefix = "runner-"
	// RunnerPackage is the main package a runner variant is built from; a file in the
	// directory built from anything else is not executed.
	RunnerPackage = "hearth/engine/ollama/cpurunner"
	ollamaModule  = "github.com/ollama/ollama"
)

// Variant is one build of the kernels: this binary's own, or a runner variant.
type Variant struct {
	Name string // the variant's name ("haswell"), BuiltinName for this binary's
	Path string // the runner variant's file; empty for the built-in kernels
	// CFlags are the C flags it was compiled with (CGO_CFLAGS); Requires what a CPU
	// needs to run them, Checkable false when that cannot be told (-march=native).
	CFlags    string
	Requires  Features
	Checkable bool
	Score     int
	// Missing lists the features of Requires this CPU lacks.
	Missing []string
}

// Runs reports whether this CPU runs the variant.
func (v Variant) Runs() bool { return v.Checkable && len(v.Missing) == 0 }

// Selection is which kernels the model runners of this process run, and why.
type Selection struct {
	Chosen  Variant
	Builtin Variant
	// Variants are the runner variants found in Dir, best first; Skipped the files
	// there that are not usable, each with why.
	Variants []Variant
	Skipped  []string
	Dir      string
	Forced   string // VariantEnv's value
	// Err says why Chosen is the built-in kernels against a forced choice, or that
	// this CPU runs none of them.
	Err error
}

// Exec reports whether a runner must replace itself with Chosen.
func (s Selection) Exec() bool { return s.Err == nil && s.Chosen.Path != "" }

// Summary is one line on the choice, for logs and `hearth doctor`.
func (s Selection) Summary() string {
	var b strings.Builder
	if s.Chosen.Path != "" {
		fmt.Fprintf(&b, "%s (%s)", s.Chosen.Name, s.Chosen.Path)
	} else {
		fmt.Fprintf(&b, "built-in (%s)", describeFlags(s.Builtin))
	}
	names := []string{}
	for _, v := range s.Variants {
		n := v.Name
		if !v.Runs() {
			n += " (needs " + strings.Join(v.Missing, " ") + ")"
		}
		names = append(names, n)
	}
	switch {
	case s.Forced != "":
		fmt.Fprintf(&b, ", forced by %s", VariantEnv)
	case len(names) == 0:
		fmt.Fprintf(&b, "; no runner variants in %s (make build builds them)", s.Dir)
	}
	if len(names) > 0 {
		fmt.Fprintf(&b, "; variants in %s: %s", s.Dir, strings.Join(names, ", "))
	}
	return b.String()
}

func describeFlags(v Variant) string {
	level := marchOf(v.CFlags)
	if level == "" {
		level = "x86-64"
	}
	var extra []string
	for _, f := range strings.Fields(v.CFlags) {
		if strings.HasPrefix(f, "-m") && !strings.HasPrefix(f, "-march=") {
			extra = append(extra, f)
		}
	}
	if len(extra) > 0 {
		level += " " + strings.Join(extra, " ")
	}
	return level
}

// DefaultDir is where runner variants are looked for: $HEARTH_RUNNER_DIR, else
// lib/hearth beside the executable's bin/ directory (as the runtime finds lib/ollama).
func DefaultDir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Join(filepath.Dir(exe), "..", "lib", "hearth")
}

var (
	selectOnce sync.Once
	selected   Selection
)

// Selected is this process's selection (computed once: the CPU and the directory do not
// change while it runs).
func Selected() Selection {
	selectOnce.Do(func() {
		selected = Select(DefaultDir(), os.Getenv(VariantEnv), Host())
	})
	return selected
}

// Select chooses among the kernels built into this binary and the runner variants in
// dir, for a CPU with host's features; forced names one ("" chooses the best).
func Select(dir, forced string, host Features) Selection {
	builtin := builtinVariant(host)
	variants, skipped := Discover(dir, host)
	return choose(dir, forced, builtin, variants, skipped)
}

func builtinVariant(host Features) Variant {
	flags := cgoFlags(buildSettings())
	return newVariant(BuiltinName, "", flags, host)
}

func newVariant(name, path, cflags string, host Features) Variant {
	need, ok := Requirements(cflags)
	v := Variant{Name: name, Path: path, CFlags: cflags, Requires: need, Checkable: ok, Score: Score(need)}
	v.Missing = host.Missing(need)
	return v
}

func choose(dir, forced string, builtin Variant, variants []Variant, skipped []string) Selection {
	s := Selection{Chosen: builtin, Builtin: builtin, Variants: variants, Skipped: skipped, Dir: dir, Forced: forced}
	if forced != "" {
		if forced == BuiltinName {
			return s
		}
		i := slices.IndexFunc(variants, func(v Variant) bool { return v.Name == forced })
		switch {
		case i < 0:
			s.Err = fmt.Errorf("%s=%s: no runner variant %s%s in %s", VariantEnv, forced, variantPrefix, forced, dir)
		case !variants[i].Runs():
			s.Err = fmt.Errorf("%s=%s: this CPU lacks %s", VariantEnv, forced, strings.Join(variants[i].Missing, " "))
		default:
			s.Chosen = variants[i]
		}
		return s
	}
	if !builtin.Checkable {
		// Built for -march=native or a CPU's name: whoever built it chose, for this
		// machine, and nothing here can rank that build against the variants.
		return s
	}
	best := builtin
	if !builtin.Runs() {
		best = Variant{Score: -1}
	}
	for _, v := range variants {
		// Ties keep the built-in kernels: no second program to start.
		if v.Runs() && v.Score > best.Score {
			best = v
		}
	}
	if best.Score < 0 {
		s.Err = fmt.Errorf("this CPU runs neither the built-in kernels (it lacks %s) nor a runner variant", strings.Join(builtin.Missing, " "))
		return s
	}
	s.Chosen = best
	return s
}

// Discover reads the runner variants in dir, best first. A file is a variant when its
// build information says it is the runner package, built against the same Ollama
// module as this binary (the runtime and its runners speak that version's protocol);
// anything else is skipped, with why.
func Discover(dir string, host Features) (variants []Variant, skipped []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	own := moduleVersion(buildDeps())
	if own == "" {
		own = RuntimeVersion
	}
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), variantPrefix)
		if !ok || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		info, err := buildinfo.ReadFile(path)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", e.Name(), err))
			continue
		}
		if info.Path != RunnerPackage {
			skipped = append(skipped, fmt.Sprintf("%s: built from %s, not %s", e.Name(), info.Path, RunnerPackage))
			continue
		}
		if theirs := moduleVersion(info.Deps); own != "" && theirs != own {
			skipped = append(skipped, fmt.Sprintf("%s: built with %s %s, this binary with %s (make build rebuilds it)", e.Name(), ollamaModule, theirs, own))
			continue
		}
		variants = append(variants, newVariant(name, path, cgoFlags(info.Settings), host))
	}
	slices.SortStableFunc(variants, func(a, b Variant) int { return b.Score - a.Score })
	return variants, skipped
}

func buildSettings() []debug.BuildSetting {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.Settings
	}
	return nil
}

func buildDeps() []*debug.Module {
	if info, ok := debug.ReadBuildInfo(); ok {
		return info.Deps
	}
	return nil
}

// cgoFlags are the C and C++ flags a binary was built with: ggml is both.
func cgoFlags(settings []debug.BuildSetting) string {
	var c, cxx string
	for _, s := range settings {
		switch s.Key {
		case "CGO_CFLAGS":
			c = s.Value
		case "CGO_CXXFLAGS":
			cxx = s.Value
		}
	}
	if cxx == "" || cxx == c {
		return c
	}
	return strings.TrimSpace(c + " " + cxx)
}

// RuntimeVersion is the version of the Ollama module this binary embeds, for binaries
// whose build information records no dependencies (test binaries); engine/ollama sets it.
var RuntimeVersion string

// moduleVersion is the Ollama module's version among deps ("" when absent).
func moduleVersion(deps []*debug.Module) string {
	for _, m := range deps {
		if m.Path == ollamaModule {
			if m.Replace != nil {
				return m.Replace.Path + "@" + m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// ExecRunner replaces this process with the runner variant chosen for this CPU, with
// the same arguments (args[0] too, so the process looks the same to whoever lists it)
// and environment. It returns only when the runner is to run the kernels built into
// this binary, saying why in the error when that is not the plain choice.
func ExecRunner(args []string) error {
	s := Selected()
	if s.Err != nil {
		return s.Err
	}
	if !s.Exec() {
		return nil
	}
	env := os.Environ()
	// The variant lives in lib/hearth, so the runtime's default search for GPU backends
	// (<exe>/../lib/ollama) would miss hearth's lib/ollama: name it unless the runtime did.
	if _, ok := os.LookupEnv("OLLAMA_LIBRARY_PATH"); !ok {
		if exe, err := os.Executable(); err == nil {
			env = append(env, "OLLAMA_LIBRARY_PATH="+filepath.Join(filepath.Dir(exe), "..", "lib", "ollama"))
		}
	}
	err := syscall.Exec(s.Chosen.Path, args, env)
	return fmt.Errorf("start runner variant %s: %w", s.Chosen.Path, err)
}
