#!/usr/bin/env bash
# Builds the embedded runtime's model runner (engine/ollama/cpurunner) once per CPU
# variant into <dir>/runner-<variant>; hearth's `runner` sub-command replaces itself with
# the best of them that the CPU it runs on supports (internal/cpubuild, docs/cpu.md).
#
# The variants and their flags are ggml's own (ggml/src/CMakeLists.txt,
# GGML_CPU_ALL_VARIANTS): each names exactly the instruction sets ggml's kernels test for,
# on top of the x86-64 baseline. Not -march=x86-64-v3: that level also lets the compiler
# emit LZCNT and MOVBE, whose cpuinfo words some hypervisors hide, which would refuse the
# fast kernels on CPUs that run them. The runtime reads each runner's flags back from its
# build information, so the table below is the only list.
#
# Each variant is one cgo build of llama.cpp (2.5 minutes or more on 2 cores the first time);
# the Go build cache keeps it, so a rebuild relinks only. Variants not named are removed,
# so a runner left from another build is never picked.
# Usage: [STEPS=N] scripts/cpu-runners.sh <dir> [variant...]
set -euo pipefail
dir=${1:?usage: cpu-runners.sh <dir> [variant...]}
shift
GO=${GO:-go}

flags_of() {
  case $1 in
  x64) echo "" ;;
  sse42) echo "-msse4.2" ;;
  sandybridge) echo "-msse4.2 -mavx" ;;
  haswell) echo "-msse4.2 -mavx -mf16c -mavx2 -mbmi2 -mfma" ;;
  skylakex) echo "$(flags_of haswell) -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw" ;;
  icelake) echo "$(flags_of skylakex) -mavx512vbmi -mavx512vnni" ;;
  alderlake) echo "$(flags_of haswell) -mavxvnni" ;;
  *) return 1 ;;
  esac
}

for v in "$@"; do
  flags_of "$v" >/dev/null || {
    echo "unknown CPU variant '$v': x64 sse42 sandybridge haswell skylakex icelake alderlake" >&2
    exit 1
  }
done
if [ "$($GO env GOARCH)" != amd64 ]; then
  # ggml's x86 variants; elsewhere the kernels built into hearth are the only ones.
  rm -rf "$dir"
  exit 0
fi
mkdir -p "$dir"
for f in "$dir"/runner-*; do
  [ -e "$f" ] || continue
  keep=
  for v in "$@"; do [ "$f" = "$dir/runner-$v" ] && keep=1; done
  [ -n "$keep" ] || rm -f "$f"
done
# STEPS: the whole build's step count, when the Makefile runs this as its first steps.
steps=${STEPS:-$#}
step=0
for v in "$@"; do
  cflags="-O2 -g -march=x86-64 $(flags_of "$v")"
  step=$((step + 1))
  echo "step $step of $steps: runner-$v: compiles llama.cpp the first time (minutes), then links" >&2
  start=$(date +%s)
  CGO_CFLAGS="$cflags" CGO_CXXFLAGS="$cflags" $GO build -o "$dir/runner-$v" ./engine/ollama/cpurunner
  echo "runner-$v ($cflags): $(($(date +%s) - start))s" >&2
done
