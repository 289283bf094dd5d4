#!/usr/bin/env bash
# Usage: scripts/ollama-release.sh VERSION DIR [SRC]
#
# Puts a released Ollama in DIR (x86-64 Linux), to run hearth's tests over it (docs/testing.md):
#
#   scripts/ollama-release.sh 0.32.15 $HOME/ollama-0.32.15
#   make test-external OLLAMA_BIN=$HOME/ollama-0.32.15/bin/ollama
#
# DIR/bin/ollama is the release's `ollama` command, built from the Go module proxy
# (`go install github.com/ollama/ollama@vVERSION`, about a minute: since 0.30 it has no
# llama.cpp of its own to compile), or from SRC, a directory holding that version's
# sources (a checkout of its tag), for a version the proxy does not serve.
#
# Ollama 0.30 and later run GGUF models in llama.cpp's `llama-server` (and validate a
# created model with `llama-quantize`), which their releases ship in lib/ollama beside
# bin/ and build with CMake from a llama.cpp commit fetched from GitHub. Without network
# access to that, this script takes both tools from Debian's llama.cpp package
# (unstable, "sid"; Debian 12 has none), with the C library and the ggml they were built
# against, into DIR/debian, and writes DIR/lib/ollama/llama-server and llama-quantize as
# small scripts that run them through that C library's own loader, so they run on an
# older Debian or Ubuntu. Debian's llama.cpp is not the commit the release pins: its
# flags and HTTP API are those of its own version (docs/runtime.md says what was checked).
# Nothing is installed on the system; apt reads its package lists into DIR/debian/apt.
#
# The Debian archive is the one the system's apt already uses (the first source whose
# release file says origin Debian, label Debian, in `apt-cache policy`), or
# DEBIAN_ARCHIVE=URL when set (a mirror, a proxy, a snapshot); DEBIAN_SUITE names the
# suite (default sid) and DEBIAN_KEYRING the keyring that signs it (default Debian's
# archive keyring).
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
fi
version=${1#v}
dir=$(mkdir -p "$2" && cd "$2" && pwd)
GO=${GO:-go}
# Releases stamp their version, which clients (hearth too) read from /api/version.
ldflags="-X github.com/ollama/ollama/version.Version=$version"

if [ $# -eq 3 ]; then
	echo "ollama $version: go build in $3 into $dir/bin"
	(cd "$3" && CGO_ENABLED=1 "$GO" build -ldflags "$ldflags" -o "$dir/bin/ollama" .)
else
	echo "ollama $version: go install into $dir/bin"
	GOBIN="$dir/bin" CGO_ENABLED=1 "$GO" install -ldflags "$ldflags" "github.com/ollama/ollama@v$version"
fi

# Releases before 0.30 run models in-process: nothing else to provide.
IFS=. read -r major minor _ <<<"$version"
if [ "$major" -eq 0 ] && [ "$minor" -lt 30 ]; then
	echo "ollama $version runs models in-process: $dir/bin/ollama is all it needs"
	exit 0
fi

deb="$dir/debian"
apt="$deb/apt"
mkdir -p "$apt/etc/sources.list.d" "$apt/etc/preferences.d" "$apt/state/lists/partial" \
	"$apt/cache/archives/partial" "$deb/pkgs" "$deb/root"
archive=${DEBIAN_ARCHIVE:-}
if [ -z "$archive" ]; then
	# apt-cache policy prints each source's address, then its release line
	# ("release v=12.15,o=Debian,a=oldstable,n=bookworm,l=Debian,c=main,b=amd64").
	archive=$(apt-cache policy 2>/dev/null | awk '
		$1 ~ /^[0-9]+$/ && $2 ~ /^[a-z+]+:\/\// { uri = $2; next }
		$1 == "release" && uri != "" && $0 ~ /[ ,]o=Debian(,|$)/ && $0 ~ /,l=Debian(,|$)/ { print uri; exit }
		{ uri = "" }') || true
fi
if [ -z "$archive" ]; then
	echo "$0: no Debian archive in this system's apt sources (apt-cache policy);" \
		"set DEBIAN_ARCHIVE to one, e.g. DEBIAN_ARCHIVE=https://<a Debian mirror>/debian" >&2
	exit 1
fi
suite=${DEBIAN_SUITE:-sid}
keyring=${DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
echo "Debian $suite from $archive"
echo "deb [signed-by=$keyring] $archive $suite main" >"$apt/etc/sources.list"
opts=(-o "Dir::Etc=$apt/etc" -o "Dir::State=$apt/state" -o "Dir::Cache=$apt/cache"
	-o "Dir::Etc::SourceList=$apt/etc/sources.list" -o "Dir::Etc::SourceParts=$apt/etc/sources.list.d"
	-o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d" -o APT::Architecture=amd64
	-o Debug::NoLocking=1)
echo "Debian sid's llama.cpp tools into $deb"
apt-get "${opts[@]}" -q update >/dev/null
# The tools, their libraries, and the C and C++ runtimes they need from sid.
(cd "$deb/pkgs" && apt-get "${opts[@]}" -q download \
	llama.cpp-tools libllama0 libggml0 \
	libc6 libstdc++6 libgcc-s1 libgomp1 libssl3t64 zlib1g libzstd1 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
for p in "$deb"/pkgs/*.deb; do dpkg-deb -x "$p" "$deb/root"; done
"$deb/root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path \
	"$deb/root/usr/lib/x86_64-linux-gnu:$deb/root/usr/lib/x86_64-linux-gnu/llama" \
	"$deb/root/usr/bin/llama-server" --version 2>&1 | sed -n 1p

mkdir -p "$dir/lib/ollama"
for tool in llama-server llama-quantize; do
	cat >"$dir/lib/ollama/$tool" <<EOF
#!/bin/sh
# Debian sid's $tool, run with the C library it was built against through that
# library's loader (written by hearth's scripts/ollama-release.sh).
R='$deb/root'
L="\$R/usr/lib/x86_64-linux-gnu"
# Debian's ggml looks for its CPU kernels only under /usr/lib: name the best this CPU runs.
cpu=x64
if grep -q ' avx512f ' /proc/cpuinfo; then cpu=skylakex; elif grep -q ' avx2 ' /proc/cpuinfo; then cpu=haswell; fi
export GGML_BACKEND_PATH="\$L/ggml/backends0/libggml-cpu-\$cpu.so"
exec "\$L/ld-linux-x86-64.so.2" --library-path "\$L:\$L/llama:\$L/ggml/backends0" "\$R/usr/bin/$tool" "\$@"
EOF
	chmod +x "$dir/lib/ollama/$tool"
done
echo "done: make test-external OLLAMA_BIN=$dir/bin/ollama"
