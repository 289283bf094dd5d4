#!/usr/bin/env bash
# Measures several runtimes behind one hearth on one machine: starts two `ollama serve`
# processes, each pinned with taskset to a core of its own (with the model's num_thread
# at 1, each stands for a host), each with its own models directory and
# OLLAMA_NUM_PARALLEL slots, then runs `hearth bench pool` over them and stops them.
#
#   scripts/pool-bench.sh [flags of hearth bench pool]
#
# Environment: HEARTH (default bin/hearth), OLLAMA (default bin/ollama, else `ollama` on
# the PATH; `make ollama` builds it from the module hearth pins), CORES (the two cores,
# default 0,1), SLOTS (OLLAMA_NUM_PARALLEL and hearth's slots per runtime, default 16),
# PORTS (default 11571,11572).
set -euo pipefail

hearth=${HEARTH:-bin/hearth}
ollama=${OLLAMA:-bin/ollama}
if [[ ! -x $ollama ]]; then
  ollama=$(command -v ollama || true)
fi
if [[ -z $ollama || ! -x $hearth ]]; then
  echo "pool-bench: needs $hearth and an ollama binary (make build ollama)" >&2
  exit 2
fi
command -v taskset >/dev/null || { echo "pool-bench: needs taskset (Debian: util-linux)" >&2; exit 2; }
IFS=, read -r core_a core_b <<<"${CORES:-0,1}"
IFS=, read -r port_a port_b <<<"${PORTS:-11571,11572}"
slots=${SLOTS:-16}

dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

start() { # core port name
  OLLAMA_HOST=127.0.0.1:$2 OLLAMA_MODELS=$dir/$3 OLLAMA_NUM_PARALLEL=$slots \
    OLLAMA_KEEP_ALIVE=-1 OLLAMA_NOPRUNE=1 \
    taskset -c "$1" "$ollama" serve >"$dir/$3.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do
    if curl -fsS "http://127.0.0.1:$2/api/version" >/dev/null 2>&1; then
      echo "pool-bench: runtime $3 on core $1 at 127.0.0.1:$2" >&2
      return
    fi
    sleep 0.2
  done
  echo "pool-bench: ollama serve on port $2 did not start:" >&2
  cat "$dir/$3.log" >&2
  exit 1
}
start "$core_a" "$port_a" a
start "$core_b" "$port_b" b

"$hearth" bench pool --runtime "http://127.0.0.1:$port_a" --runtime "http://127.0.0.1:$port_b" --slots "$slots" "$@"
