#!/usr/bin/env bash
# Builds ggml's Vulkan backend from the Ollama module's own sources (CMake over the module
# tree, shaders compiled with glslc) and installs it where the embedded runtime looks for
# backends: <lib-dir>/libggml-base.so* and <lib-dir>/vulkan/libggml-vulkan.so, with
# <lib-dir> = lib/ollama beside bin/ (the runtime's ml.LibOllamaPath is <exe>/../lib/ollama
# on Linux, and its discovery only probes subdirectories of it that hold a ggml library).
#
# The build lives outside the clone, keyed by the module version and the CMake flags, so a
# machine compiles the shaders (the slow part) once per key; later calls only copy.
#   ${XDG_CACHE_HOME:-~/.cache}/hearth/ggml-vulkan/<module-version>-<flags-hash>/
# Debian packages are installed the way scripts/cgo-headers.sh installs C headers: with
# apt-get when it may, else it prints the exact command and fails.
# --device also makes sure a Vulkan device driver is installed (Mesa's, with lavapipe, a
# Vulkan device on the CPU), for tests on a machine without a GPU driver.
# Usage: scripts/vulkan-backend.sh [--device] <lib-dir>
set -euo pipefail
device=
if [ "${1:-}" = --device ]; then device=1; shift; fi
libdir=${1:?usage: vulkan-backend.sh [--device] <lib-dir>}
jobs=${VULKAN_BUILD_JOBS:-$(nproc)}

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v glslc >/dev/null || missing+=(glslc)
[ -f /usr/include/vulkan/vulkan.h ] || missing+=(libvulkan-dev)
if [ -n "$device" ] && ! ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1; then
  missing+=(mesa-vulkan-drivers)
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing ${missing[*]} with apt-get" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >&2
  elif command -v sudo >/dev/null && command -v apt-get >/dev/null && sudo -n true 2>/dev/null; then
    { sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >&2
  else
    echo "missing the Vulkan build tools; install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

moddir=$(go list -m -f '{{.Dir}}' github.com/ollama/ollama)
modver=$(go list -m -f '{{.Version}}' github.com/ollama/ollama)
if [ -z "$moddir" ] || [ ! -f "$moddir/ml/backend/ggml/ggml/src/ggml-vulkan/CMakeLists.txt" ]; then
  echo "the Ollama module's ggml-vulkan sources are not in the module cache (go mod download)" >&2
  exit 1
fi

# Everything that changes the library goes into the key. GGML_NATIVE=OFF: the library is
# copied beside the binary and may run on another machine (its CPU code is glue, not kernels).
flags=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CCACHE=OFF -DOLLAMA_RUNNER_DIR=vulkan)
key="$modver-$(printf '%s\n' recipe-2 "${flags[@]}" "$(glslc --version | head -1)" "$(c++ --version | head -1)" \
  | sha256sum | cut -c1-12)"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hearth/ggml-vulkan/$key

if [ ! -f "$cache/done" ]; then
  echo "building ggml-vulkan $key in $cache (first time on this machine: long, mostly shaders)" >&2
  rm -rf "$cache"
  mkdir -p "$cache/src/ml/backend/ggml"
  # A writable copy of the sources CMake reads (9 MB; the module cache is read-only), with
  # the shader feature tests the module zip leaves out: without them ggml's CMake takes
  # glslc's "cannot open input file" for support of every extension it probes (cooperative
  # matrices, integer dot product, bfloat16) and the build fails on a glslc without them.
  cp "$moddir/CMakeLists.txt" "$cache/src/"
  cp -r "$moddir/ml/backend/ggml/ggml" "$cache/src/ml/backend/ggml/"
  chmod -R u+w "$cache/src"
  tests=$cache/src/ml/backend/ggml/ggml/src/ggml-vulkan/vulkan-shaders/feature-tests
  mkdir -p "$tests"
  for t in coopmat:GL_KHR_cooperative_matrix coopmat2:GL_NV_cooperative_matrix2 \
           integer_dot:GL_EXT_integer_dot_product bfloat16:GL_EXT_bfloat16; do
    [ -f "$tests/${t%%:*}.comp" ] ||
      printf '#version 460\n\n#extension %s : require\n\nvoid main()\n{\n}\n' "${t#*:}" > "$tests/${t%%:*}.comp"
  done
  # ggml-vulkan.cpp asks the validation layer for best-practice checks with
  # VK_EXT_layer_settings, which Vulkan headers older than 1.3.272 (Debian 12 has 1.3.239)
  # do not declare; without those headers it now creates its instance without the setting,
  # which changes nothing unless the validation layer is enabled.
  vk=$cache/src/ml/backend/ggml/ggml/src/ggml-vulkan/ggml-vulkan.cpp
  first='    VkBool32 enable_best_practice = layer_settings;'
  last='    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, &app_info, layers, extensions, &layer_setting_info);'
  a=$(grep -nxF "$first" "$vk" | cut -d: -f1)
  b=$(grep -nxF "$last" "$vk" | cut -d: -f1)
  if [ "$(printf '%s\n' $a | wc -l)" = 1 ] && [ "$(printf '%s\n' $b | wc -l)" = 1 ] && [ -n "$a" ] && [ -n "$b" ]; then
    sed -i -e "${a}i #if defined(VK_EXT_layer_settings)" \
      -e "${b}a #else\n    vk::InstanceCreateInfo instance_create_info(vk::InstanceCreateFlags{}, \&app_info, layers, extensions);\n#endif" "$vk"
  fi
  cmake -S "$cache/src" -B "$cache/build" "${flags[@]}" >&2
  # Only the Vulkan backend and the ggml-base it links to: the CPU kernels are in the
  # binary already (cgo), and a second CPU backend library would be loaded beside them.
  cmake --build "$cache/build" --target ggml-vulkan -j "$jobs" >&2
  mkdir -p "$cache/lib/vulkan"
  cp -P "$cache"/build/lib/ollama/libggml-base.so* "$cache/lib/"
  cp -P "$cache"/build/lib/ollama/libggml-vulkan.so* "$cache/lib/vulkan/"
  touch "$cache/done"
fi

mkdir -p "$libdir/vulkan"
cp -P "$cache"/lib/libggml-base.so* "$libdir/"
cp -P "$cache"/lib/vulkan/libggml-vulkan.so* "$libdir/vulkan/"
echo "ggml-vulkan $key installed in $libdir" >&2
