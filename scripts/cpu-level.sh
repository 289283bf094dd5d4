#!/usr/bin/env bash
# Prints the -march level to compile the runtime's CPU kernels (llama.cpp's ggml) for on
# this machine, or nothing where the compiler's default is right.
#
# cgo compiles ggml once, for one instruction set. With the compiler's default (x86-64:
# SSE2 only) its kernels run without AVX2, FMA and F16C, and prompt processing is about
# 3-4x slower on a machine that has them. Ollama's own releases build several variants
# and pick one at run time; a cgo build cannot, so hearth is built for the machine that
# builds it. The levels are the x86-64 psABI's (v2: SSE4.2; v3: AVX2, FMA, F16C, BMI2),
# so the build cache key names the instruction set, never just "native".
#   make build CPU=x86-64   # portable: runs on any x86-64 CPU
set -euo pipefail
[ "$(uname -m)" = x86_64 ] && [ -r /proc/cpuinfo ] || exit 0
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { for f in "$@"; do [[ $flags == *" $f "* ]] || return 1; done; }
if has avx avx2 bmi1 bmi2 f16c fma abm movbe xsave; then
  echo x86-64-v3
elif has cx16 lahf_lm popcnt sse4_1 sse4_2 ssse3; then
  echo x86-64-v2
fi
