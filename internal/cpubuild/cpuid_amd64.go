package cpubuild

import "golang.org/x/sys/cpu"

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)

// hostFeatures asks the CPU itself (CPUID, and XGETBV through x/sys/cpu for the
// registers the OS saves), never /proc/cpuinfo: hypervisors leave words out of cpuinfo
// for features the guest runs fine, and a kernel refused for a missing word is a
// silent 3x loss.
func hostFeatures() Features {
	x := cpu.X86
	f := Features{}
	set := func(name string, ok bool) {
		if ok {
			f[name] = true
		}
	}
	_, _, ecx1, _ := cpuid(1, 0)
	maxExt, _, _, _ := cpuid(0x80000000, 0)
	var ecxExt uint32
	if maxExt >= 0x80000001 {
		_, _, ecxExt, _ = cpuid(0x80000001, 0)
	}
	set("pni", x.HasSSE3)
	set("ssse3", x.HasSSSE3)
	set("sse4_1", x.HasSSE41)
	set("sse4_2", x.HasSSE42)
	set("popcnt", x.HasPOPCNT)
	set("cx16", x.HasCX16)
	set("lahf_lm", ecxExt&1 != 0)
	set("abm", ecxExt&(1<<5) != 0) // LZCNT
	set("movbe", ecx1&(1<<22) != 0)
	set("xsave", ecx1&(1<<26) != 0 && x.HasOSXSAVE)
	// x/sys/cpu's AVX flags already require the OS to save the YMM/ZMM registers;
	// FMA and F16C work on YMM registers too.
	set("avx", x.HasAVX)
	set("avx2", x.HasAVX2)
	set("fma", x.HasFMA && x.HasAVX)
	set("f16c", ecx1&(1<<29) != 0 && x.HasAVX)
	set("bmi1", x.HasBMI1)
	set("bmi2", x.HasBMI2)
	set("avx_vnni", x.HasAVXVNNI && x.HasAVX)
	set("avx512f", x.HasAVX512F)
	set("avx512cd", x.HasAVX512CD)
	set("avx512vl", x.HasAVX512VL)
	set("avx512dq", x.HasAVX512DQ)
	set("avx512bw", x.HasAVX512BW)
	set("avx512ifma", x.HasAVX512IFMA)
	set("avx512vbmi", x.HasAVX512VBMI)
	set("avx512_vnni", x.HasAVX512VNNI)
	set("avx512_bf16", x.HasAVX512BF16)
	return f
}
