#!/usr/bin/env bash
# Builds one of ggml's GPU backends from the Ollama module's own sources (CMake over the
# module tree) and installs it where the embedded runtime looks for backends:
# <lib-dir>/libggml-base.so* and <lib-dir>/<backend dir>/libggml-<backend>.so, with
# <lib-dir> = lib/ollama beside bin/ (the runtime's ml.LibOllamaPath is <exe>/../lib/ollama
# on Linux, and its discovery only probes subdirectories of it that hold a ggml library).
#
#   vulkan  shaders compiled with glslc; needs cmake, glslc, libvulkan-dev (Debian main).
#   cuda    kernels compiled with nvcc for the GPU architectures in CUDA_ARCHITECTURES
#           (default 80;86;89;90: A100, RTX 30xx/A10, RTX 40xx/L4/L40, H100/H200); needs
#           Debian 12's nvidia-cuda-toolkit (CUDA 11.8, in the non-free component). The
#           CUDA runtime libraries the backend links (cudart, cublas, cublasLt) are copied
#           beside it, as Ollama's releases do, so lib/ollama moves to a machine that has
#           only NVIDIA's driver.
#
# The build lives outside the clone, keyed by the module version, the backend's flags and
# its compilers, so a machine compiles the kernels (the slow part) once per key; later calls
# only copy.   ${XDG_CACHE_HOME:-~/.cache}/hearth/ggml-<backend>/<module-version>-<hash>/
# Debian packages are installed the way scripts/cgo-headers.sh installs C headers: with
# apt-get when it may, else it prints the exact command and fails.
# --device (vulkan) also makes sure a Vulkan device driver is installed (Mesa's, with
# lavapipe, a Vulkan device on the CPU), for tests on a machine without a GPU driver.
# Usage: scripts/gpu-backend.sh <vulkan|cuda> [--device] <lib-dir>
set -euo pipefail
backend=${1:?usage: gpu-backend.sh <vulkan|cuda> [--device] <lib-dir>}
shift
device=
if [ "${1:-}" = --device ]; then device=1; shift; fi
libdir=${1:?usage: gpu-backend.sh <vulkan|cuda> [--device] <lib-dir>}
jobs=${GPU_BUILD_JOBS:-${VULKAN_BUILD_JOBS:-$(nproc)}}

install_packages() {
  [ $# -gt 0 ] || return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing $* with apt-get" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; } >&2
  elif command -v sudo >/dev/null && command -v apt-get >/dev/null && sudo -n true 2>/dev/null; then
    { sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; } >&2
  else
    echo "missing the $backend build tools; install them with:" >&2
    echo "  sudo apt-get install -y $*" >&2
    exit 1
  fi
}

missing=()
command -v cmake >/dev/null || missing+=(cmake)
case $backend in
vulkan)
  command -v glslc >/dev/null || missing+=(glslc)
  [ -f /usr/include/vulkan/vulkan.h ] || missing+=(libvulkan-dev)
  if [ -n "$device" ] && ! ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1; then
    missing+=(mesa-vulkan-drivers)
  fi
  ;;
cuda)
  if ! command -v nvcc >/dev/null; then
    # The toolkit is in Debian's non-free component, which a stock sources list leaves
    # out; enabling a component is the user's decision, so say how instead of doing it.
    if ! apt-cache policy nvidia-cuda-toolkit 2>/dev/null | grep -q 'Candidate: [0-9]'; then
      echo "nvcc not found, and apt has no nvidia-cuda-toolkit: it is in Debian's non-free component." >&2
      echo "Enable it (add 'contrib non-free' to Components in /etc/apt/sources.list.d/debian.sources)," >&2
      echo "then: sudo apt-get update && sudo apt-get install -y nvidia-cuda-toolkit" >&2
      echo "(or put a CUDA toolkit's bin directory, with nvcc, on the PATH)" >&2
      exit 1
    fi
    missing+=(nvidia-cuda-toolkit)
  fi
  ;;
*)
  echo "gpu-backend.sh: unknown backend $backend (vulkan or cuda)" >&2
  exit 2
  ;;
esac
install_packages "${missing[@]}"

moddir=$(go list -m -f '{{.Dir}}' github.com/ollama/ollama)
modver=$(go list -m -f '{{.Version}}' github.com/ollama/ollama)
if [ -z "$moddir" ] || [ ! -f "$moddir/ml/backend/ggml/ggml/src/ggml-$backend/CMakeLists.txt" ]; then
  echo "the Ollama module's ggml-$backend sources are not in the module cache (go mod download)" >&2
  exit 1
fi

# Everything that changes the library goes into the key. GGML_NATIVE=OFF: the library is
# copied beside the binary and may run on another machine (its CPU code is glue, not kernels).
flags=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_CCACHE=OFF)
# Ollama's CMakeLists configures every GPU language whose compiler it finds, and CUDA with
# CUDA_ARCHITECTURES "native", which fails the whole configuration on a machine with nvcc
# and no NVIDIA GPU. A build of another backend turns the others off; that changes what
# CMake configures, not the library built, so it stays out of the cache key.
configure=()
case $backend in
vulkan)
  dir=vulkan
  configure+=(-DCMAKE_CUDA_COMPILER=OFF -DCMAKE_HIP_COMPILER=OFF)
  flags+=(-DOLLAMA_RUNNER_DIR=$dir)
  key="$modver-$(printf '%s\n' recipe-2 "${flags[@]}" "$(glslc --version | head -1)" "$(c++ --version | head -1)" \
    | sha256sum | cut -c1-12)"
  ;;
cuda)
  # The runtime's discovery probes every subdirectory of lib/ollama; Ollama names its CUDA
  # ones by major version (cuda_v12, cuda_v13), so this one is cuda_v11, Debian 12's.
  cudaver=$(nvcc --version | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1.\2/p')
  dir=cuda_v${cudaver%%.*}
  archs=${CUDA_ARCHITECTURES:-80;86;89;90}
  flags+=(-DOLLAMA_RUNNER_DIR=$dir "-DCMAKE_CUDA_ARCHITECTURES=$archs")
  configure+=(-DCMAKE_HIP_COMPILER=OFF)
  key="$modver-$(printf '%s\n' recipe-1 "${flags[@]}" "$(nvcc --version | tail -1)" "$(c++ --version | head -1)" \
    | sha256sum | cut -c1-12)"
  ;;
esac
cache=${XDG_CACHE_HOME:-$HOME/.cache}/hearth/ggml-$backend/$key

if [ ! -f "$cache/done" ]; then
  echo "building ggml-$backend $key in $cache (first time on this machine: long)" >&2
  # A build that was stopped part-way (the CUDA kernels take hours on a small machine)
  # resumes: its sources are copied once, and CMake rebuilds only what is missing.
  if [ ! -f "$cache/src/.complete" ]; then
    rm -rf "$cache"
    mkdir -p "$cache/src/ml/backend/ggml"
    # A writable copy of the sources CMake reads (the module cache is read-only).
    cp "$moddir/CMakeLists.txt" "$cache/src/"
    cp -r "$moddir/ml/backend/ggml/ggml" "$cache/src/ml/backend/ggml/"
    chmod -R u+w "$cache/src"
    if [ "$backend" = vulkan ]; then
      # The shader feature tests the module zip leaves out: without them ggml's CMake takes
      # glslc's "cannot open input file" for support of every extension it probes (cooperative
      # matrices, integer dot product, bfloat16) and the build fails on a glslc without them.
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
    fi
    touch "$cache/src/.complete"
  fi
  cmake -S "$cache/src" -B "$cache/build" "${flags[@]}" "${configure[@]}" >&2
  # Only the GPU backend and the ggml-base it links to: the CPU kernels are in the binary
  # and its runner variants already (cgo), and a second CPU backend library would be
  # loaded beside them.
  cmake --build "$cache/build" --target "ggml-$backend" -j "$jobs" >&2
  mkdir -p "$cache/lib/$dir"
  cp -P "$cache"/build/lib/ollama/libggml-base.so* "$cache/lib/"
  cp -P "$cache"/build/lib/ollama/libggml-"$backend".so* "$cache/lib/$dir/"
  if [ "$backend" = cuda ]; then
    # The CUDA runtime libraries the backend was linked against, found the way the
    # dynamic loader finds them on this machine (the driver's libcuda.so.1 is not among
    # them: it comes with the driver on the machine that runs hearth).
    ldd "$cache/lib/$dir/libggml-cuda.so" | awk '/lib(cudart|cublas|cublasLt)\.so/ {print $3}' |
      while read -r lib; do
        cp -L "$lib" "$cache/lib/$dir/$(basename "$lib")"
      done
  fi
  touch "$cache/done"
fi

mkdir -p "$libdir/$dir"
cp -P "$cache"/lib/libggml-base.so* "$libdir/"
cp -P "$cache"/lib/"$dir"/* "$libdir/$dir/"
echo "ggml-$backend $key installed in $libdir/$dir" >&2
