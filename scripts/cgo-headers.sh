#!/usr/bin/env bash
# Provides the C headers that the Go module zip of github.com/ollama/ollama leaves out
# (its vendor/ directories are stripped), so that the cgo build of llama.cpp succeeds.
#   nlohmann/json_fwd.hpp  <- Debian nlohmann-json3-dev (in /usr/include)
#   stb/stb_image.h        <- Debian libstb-dev        (in /usr/include)
#   miniaudio/miniaudio.h  <- Go module github.com/gen2brain/malgo, copied into $1
# Usage: scripts/cgo-headers.sh <include-dir>  (the Makefile's INCLUDE, in the user cache
# directory and named by malgo_version below, which the Makefile reads from this file)
set -euo pipefail
inc=${1:?usage: cgo-headers.sh <include-dir>}
malgo_version=v0.11.24

missing=()
[ -f /usr/include/nlohmann/json_fwd.hpp ] || missing+=(nlohmann-json3-dev)
[ -f /usr/include/stb/stb_image.h ] || missing+=(libstb-dev)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]} with apt-get" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >&2
  elif command -v sudo >/dev/null && command -v apt-get >/dev/null && sudo -n true 2>/dev/null; then
    { sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >&2
  else
    echo "missing C headers; install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

if [ ! -f "$inc/miniaudio/miniaudio.h" ]; then
  dir=$(GOFLAGS=-mod=mod go mod download -json "github.com/gen2brain/malgo@$malgo_version" \
        | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  if [ -z "$dir" ] || [ ! -f "$dir/miniaudio.h" ]; then
    echo "could not fetch github.com/gen2brain/malgo@$malgo_version from the Go module proxy" >&2
    exit 1
  fi
  mkdir -p "$inc/miniaudio"
  cp "$dir/miniaudio.h" "$inc/miniaudio/miniaudio.h"
  chmod u+w "$inc/miniaudio/miniaudio.h"
fi
