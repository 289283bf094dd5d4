package cpubuild

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestMarchOf(t *testing.T) {
	for flags, want := range map[string]string{
		"":                                   "",
		"-O2 -g":                             "",
		"-O2 -g -march=x86-64-v3":            "x86-64-v3",
		"-march=x86-64-v2 -O3 -march=native": "native",
	} {
		if got := marchOf(flags); got != want {
			t.Errorf("marchOf(%q) = %q, want %q", flags, got, want)
		}
	}
}

func TestRequirements(t *testing.T) {
	for _, c := range []struct {
		flags string
		want  string // sorted features
		ok    bool
	}{
		{"-O2 -g", "", true},
		{"-O2 -g -march=x86-64", "", true},
		{"-march=x86-64 -msse4.2", "pni sse4_1 sse4_2 ssse3", true},
		{"-march=x86-64 -mavx2 -mtune=generic -m64 -mno-avx512f", "avx avx2 pni sse4_1 sse4_2 ssse3", true},
		{"-march=x86-64-v2", "cx16 lahf_lm pni popcnt sse4_1 sse4_2 ssse3", true},
		// The level Makefile builds used to pick: LZCNT (abm) and MOVBE come with it.
		{"-O2 -g -march=x86-64-v3", "abm avx avx2 bmi1 bmi2 cx16 f16c fma lahf_lm movbe pni popcnt sse4_1 sse4_2 ssse3 xsave", true},
		{"-march=x86-64 -mavx512vnni", "avx avx2 avx512_vnni avx512f f16c fma pni sse4_1 sse4_2 ssse3", true},
		{"-O2 -march=native", "", false},
		{"-march=znver4", "", false},
		{"-march=x86-64 -mamx-tile", "", false},
	} {
		need, ok := Requirements(c.flags)
		got := strings.Join(Features{}.Missing(need), " ")
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("Requirements(%q) = %q, %v; want %q, %v", c.flags, got, ok, c.want, c.ok)
		}
	}
}

// cpus are recorded /proc/cpuinfo flags lines, standing for what CPUID says.
var cpus = map[string]string{
	// The 2-core AMD EPYC VM whose hypervisor hides abm (LZCNT runs): make build picked
	// x86-64-v2 kernels there.
	"epyc-vm-no-abm": "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl nonstop_tsc cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy cr8_legacy 3dnowprefetch osvw topoext fsgsbase bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx512vbmi umip rdpid fsrm",
	// This project's other test machine: an Intel Xeon (Sapphire Rapids) VM.
	"xeon-spr":         "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid cldemote movdiri movdir64b fsrm serialize tsxldtrk amx_bf16 avx512_fp16 amx_tile amx_int8 arch_capabilities",
	"haswell-desktop":  "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm cpuid_fault epb invpcid_single pti fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid xsaveopt dtherm ida arat pln pts",
	"alderlake-laptop": "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq dtes64 monitor ds_cpl vmx est tm2 ssse3 sdbg fma cx16 xtpr pdcm sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch cpuid_fault epb fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid rdseed adx smap clflushopt clwb intel_pt sha_ni xsaveopt xsavec xgetbv1 xsaves split_lock_detect avx_vnni dtherm ida arat pln pts hwp umip pku ospke waitpkg gfni vaes vpclmulqdq rdpid movdiri movdir64b fsrm md_clear serialize arch_lbr flush_l1d arch_capabilities",
	"westmere":         "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est tm2 ssse3 cx16 xtpr pdcm pcid dca sse4_1 sse4_2 popcnt aes lahf_lm epb pti tpr_shadow vnmi flexpriority ept vpid dtherm ida arat",
	// QEMU's default CPU model: SSE3 at most.
	"qemu64": "fpu de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 syscall nx lm rep_good nopl cpuid pni cx16 x2apic hypervisor lahf_lm",
}

// variants are the runners scripts/cpu-runners.sh builds, by the flags it gives each.
var variants = map[string]string{
	"sse42":     "-O2 -g -march=x86-64 -msse4.2",
	"haswell":   "-O2 -g -march=x86-64 -msse4.2 -mavx -mf16c -mavx2 -mbmi2 -mfma",
	"skylakex":  "-O2 -g -march=x86-64 -msse4.2 -mavx -mf16c -mavx2 -mbmi2 -mfma -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw",
	"icelake":   "-O2 -g -march=x86-64 -msse4.2 -mavx -mf16c -mavx2 -mbmi2 -mfma -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw -mavx512vbmi -mavx512vnni",
	"alderlake": "-O2 -g -march=x86-64 -msse4.2 -mavx -mf16c -mavx2 -mbmi2 -mfma -mavxvnni",
}

func selectFor(cpu, builtinFlags, forced string, names ...string) Selection {
	host := ParseCPUInfoFlags(cpus[cpu])
	var vs []Variant
	for _, n := range names {
		vs = append(vs, newVariant(n, "/lib/hearth/runner-"+n, variants[n], host))
	}
	slices.SortStableFunc(vs, func(a, b Variant) int { return b.Score - a.Score })
	return choose("/lib/hearth", forced, newVariant(BuiltinName, "", builtinFlags, host), vs, nil)
}

func TestSelectBestVariant(t *testing.T) {
	all := []string{"sse42", "haswell", "skylakex", "icelake", "alderlake"}
	for cpu, want := range map[string]string{
		"epyc-vm-no-abm":   "skylakex", // AVX-512 without VNNI
		"xeon-spr":         "icelake",
		"haswell-desktop":  "haswell",
		"alderlake-laptop": "alderlake",
		"westmere":         "sse42",
		"qemu64":           BuiltinName,
	} {
		s := selectFor(cpu, "-O2 -g -march=x86-64", "", all...)
		if s.Err != nil || s.Chosen.Name != want {
			t.Errorf("%s: chose %s (%v), want %s", cpu, s.Chosen.Name, s.Err, want)
		}
		if want != BuiltinName && !s.Exec() || want == BuiltinName && s.Exec() {
			t.Errorf("%s: Exec() = %v for %s", cpu, s.Exec(), s.Chosen.Name)
		}
	}
	// The default build (haswell, skylakex): the EPYC VM gets its AVX-512 kernels
	// although cpuinfo has no abm, which the old level check refused.
	if s := selectFor("epyc-vm-no-abm", "-O2 -g -march=x86-64", "", "haswell", "skylakex"); s.Chosen.Name != "skylakex" {
		t.Errorf("EPYC VM, default variants: chose %s", s.Chosen.Name)
	}
	if need, _ := Requirements("-march=x86-64-v3"); !slices.Equal(ParseCPUInfoFlags(cpus["epyc-vm-no-abm"]).Missing(need), []string{"abm"}) {
		t.Errorf("EPYC VM: an x86-64-v3 build should be refused for abm alone")
	}
}

func TestSelectBuiltinCases(t *testing.T) {
	// No variants built: the built-in kernels, whatever they are.
	if s := selectFor("xeon-spr", "-O2 -g -march=x86-64", ""); s.Err != nil || s.Chosen.Name != BuiltinName || s.Exec() {
		t.Errorf("no variants: %+v", s)
	}
	// Built-in kernels as good as the best variant: no second program to start.
	if s := selectFor("haswell-desktop", "-O2 -g -march=x86-64-v3", "", "sse42", "haswell"); s.Chosen.Name != BuiltinName {
		t.Errorf("x86-64-v3 built-in on haswell: chose %s", s.Chosen.Name)
	}
	// ... but better ones win.
	if s := selectFor("xeon-spr", "-O2 -g -march=x86-64-v3", "", "haswell", "skylakex"); s.Chosen.Name != "skylakex" {
		t.Errorf("x86-64-v3 built-in on the Xeon: chose %s", s.Chosen.Name)
	}
	// -march=native was the builder's choice for this machine: kept.
	if s := selectFor("xeon-spr", "-O2 -march=native", "", "haswell", "icelake"); s.Chosen.Name != BuiltinName {
		t.Errorf("native built-in: chose %s", s.Chosen.Name)
	}
	// Built-in kernels this CPU cannot run (CPU_LEVEL=x86-64-v3 on the EPYC VM): a
	// variant that runs, else an error rather than SIGILL.
	if s := selectFor("epyc-vm-no-abm", "-O2 -g -march=x86-64-v3", "", "haswell"); s.Err != nil || s.Chosen.Name != "haswell" {
		t.Errorf("v3 built-in without abm: %s, %v", s.Chosen.Name, s.Err)
	}
	if s := selectFor("westmere", "-O2 -g -march=x86-64-v3", ""); s.Err == nil {
		t.Errorf("v3 built-in on westmere, no variants: no error")
	}
}

func TestSelectForced(t *testing.T) {
	if s := selectFor("xeon-spr", "-march=x86-64", "sse42", "sse42", "haswell"); s.Err != nil || s.Chosen.Name != "sse42" || !s.Exec() {
		t.Errorf("forced sse42: %s, %v", s.Chosen.Name, s.Err)
	}
	if s := selectFor("xeon-spr", "-march=x86-64", BuiltinName, "haswell"); s.Err != nil || s.Chosen.Name != BuiltinName || s.Exec() {
		t.Errorf("forced builtin: %s, %v", s.Chosen.Name, s.Err)
	}
	s := selectFor("haswell-desktop", "-march=x86-64", "skylakex", "haswell", "skylakex")
	if s.Err == nil || !strings.Contains(s.Err.Error(), "lacks avx512") || s.Exec() {
		t.Errorf("forced skylakex on haswell: %v", s.Err)
	}
	s = selectFor("xeon-spr", "-march=x86-64", "icelake", "haswell")
	if s.Err == nil || !strings.Contains(s.Err.Error(), "no runner variant runner-icelake") {
		t.Errorf("forced missing variant: %v", s.Err)
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		flags, cpu string
		fails      bool
	}{
		{"", "qemu64", false},
		{"-O2 -g -march=x86-64", "qemu64", false},
		{"-O2 -g -march=x86-64-v3", "haswell-desktop", false},
		{"-O2 -march=native", "qemu64", false}, // cannot be checked
		{"-O2 -g -march=x86-64-v3", "westmere", true},
		{"-O2 -g -march=x86-64-v3", "epyc-vm-no-abm", true},
		{"-O2 -g -march=x86-64-v4", "haswell-desktop", true},
	} {
		err := check(c.flags, ParseCPUInfoFlags(cpus[c.cpu]))
		if (err != nil) != c.fails {
			t.Errorf("check(%q, %s) = %v, want failure %v", c.flags, c.cpu, err, c.fails)
		}
		if err != nil && !strings.Contains(err.Error(), "make build") {
			t.Errorf("error does not say how to rebuild: %v", err)
		}
	}
}

func TestDescribe(t *testing.T) {
	host := ParseCPUInfoFlags(cpus["epyc-vm-no-abm"])
	line, err := describe(selectFor("epyc-vm-no-abm", "-O2 -g -march=x86-64", "", "haswell", "skylakex"), host)
	if err != nil || !strings.HasPrefix(line, "runners use skylakex (/lib/hearth/runner-skylakex); variants in /lib/hearth: skylakex, haswell; this CPU has fma f16c sse4_2 bmi2 avx avx2 avx512f avx512vbmi") {
		t.Errorf("EPYC VM: %q, %v", line, err)
	}
	line, err = describe(selectFor("epyc-vm-no-abm", "-O2 -g -march=x86-64", ""), host)
	if err != nil || !strings.Contains(line, "built-in (x86-64)") || !strings.Contains(line, "`make build` builds the runner variants") {
		t.Errorf("no variants: %q, %v", line, err)
	}
	line, _ = describe(selectFor("haswell-desktop", "-O2 -g -march=x86-64", "", "haswell", "skylakex"), ParseCPUInfoFlags(cpus["haswell-desktop"]))
	if !strings.Contains(line, "skylakex (needs avx512bw avx512cd avx512dq avx512f avx512vl)") {
		t.Errorf("haswell: %q", line)
	}
	if _, err := describe(selectFor("haswell-desktop", "-march=x86-64", "skylakex", "skylakex"), host); err == nil {
		t.Error("forced variant the CPU lacks: no error")
	}
}

func TestHostFeaturesCoverKernels(t *testing.T) {
	// CPUID and the kernel's view agree here on what ggml's kernels use (this test runs
	// where cpuinfo hides nothing of them; the EPYC VM's hides abm only).
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip("no /proc/cpuinfo")
	}
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "flags") {
			line = l
			break
		}
	}
	info, host := ParseCPUInfoFlags(line), Host()
	for n := range kernelWeights {
		if info[n] != host[n] {
			t.Errorf("%s: cpuinfo %v, CPUID %v", n, info[n], host[n])
		}
	}
}

func TestDiscoverSkipsOtherPrograms(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"runner-test": b, "runner-text": []byte("#!/bin/sh\n"), "README": nil} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	vs, skipped := Discover(dir, Host())
	if len(vs) != 0 || len(skipped) != 2 {
		t.Fatalf("Discover: variants %+v, skipped %q; want none and two skipped", vs, skipped)
	}
	s := Select(dir, "", Host())
	if s.Chosen.Name != BuiltinName || s.Exec() {
		t.Errorf("Select with no usable variants: %+v", s.Chosen)
	}
}
