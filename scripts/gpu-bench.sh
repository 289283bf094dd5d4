#!/usr/bin/env bash
# Measures hearth on each GPU backend built beside it, and on the CPU, with `hearth bench`
# (hearth /v1/responses against the runtime's own /api/generate in the same run: time to
# first token, decode rate, a conversation, a tool call, concurrent streams), and prints
# one table with a column pair per backend.
#
# Run it where bin/hearth, lib/hearth and lib/ollama sit together, as
# `make build GPU="cuda vulkan"` leaves them (copy the three to the GPU machine; it needs
# NVIDIA's driver for CUDA and a Vulkan driver for Vulkan, nothing else). Each backend is
# chosen with the runtime's own OLLAMA_LLM_LIBRARY (a subdirectory of lib/ollama; "cpu"
# names none, so the models run on the CPU).
#
# Usage: scripts/gpu-bench.sh [-o DIR] [-b "cuda_v11 vulkan cpu"] [-- hearth bench flags]
#   -o DIR   where the JSON reports and table.md go (default: gpu-bench-<date>)
#   -b LIST  the backends to measure (default: every subdirectory of lib/ollama, then cpu)
#   flags after -- go to every `hearth bench` (default: --layers 32 --width 4096 --runs 3,
#   a 7B-sized model that keeps a GPU busy; on a CPU try -- --quick --layers 2 --width 512)
# HEARTH=path/to/hearth picks the binary (default: bin/hearth).
set -euo pipefail
out=gpu-bench-$(date -u +%Y%m%dT%H%M%SZ)
backends=
while getopts o:b: opt; do
  case $opt in
  o) out=$OPTARG ;;
  b) backends=$OPTARG ;;
  *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(--layers 32 --width 4096 --runs 3)

hearth=${HEARTH:-bin/hearth}
[ -x "$hearth" ] || { echo "no $hearth: build it (make build GPU=cuda) or set HEARTH" >&2; exit 1; }
lib=$(dirname "$(readlink -f "$hearth")")/../lib/ollama
if [ -z "$backends" ]; then
  for d in "$lib"/*/; do
    [ -d "$d" ] && ls "$d"/*ggml-* >/dev/null 2>&1 && backends+="$(basename "$d") "
  done
  backends+=cpu
fi
mkdir -p "$out"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/nvidia-smi.csv" || true

tables=()
for b in $backends; do
  echo "== $b: $hearth bench ${flags[*]}" >&2
  start=$(date +%s)
  # OLLAMA_LLM_LIBRARY keeps the runtime's discovery to that backend's directory; the
  # report's gpu_devices then says which devices the models ran on (none: the CPU).
  if OLLAMA_LLM_LIBRARY=$b "$hearth" bench --json "${flags[@]}" > "$out/$b.json" 2> "$out/$b.log"; then
    echo "   done in $(( $(date +%s) - start )) s" >&2
    tables+=("$b=$out/$b.json")
  else
    echo "   failed after $(( $(date +%s) - start )) s; last lines of $out/$b.log:" >&2
    tail -5 "$out/$b.log" >&2
  fi
done
[ ${#tables[@]} -gt 0 ] || { echo "no backend ran" >&2; exit 1; }
"$hearth" bench table "${tables[@]}" | tee "$out/table.md"
echo "reports in $out" >&2
