# Multi-stage build of the same binary `make build` produces (the steps CI runs), with
# models and hearth's data in volumes. --build-arg GPU=vulkan adds ggml's Vulkan backend
# (make build GPU=vulkan) in /usr/local/lib/ollama, beside /usr/local/bin/hearth as the
# runtime looks for it; run it with the GPU passed in (e.g. --device /dev/dri, or NVIDIA's
# container toolkit). A GPU with CUDA is also served well by an Ollama that already runs on
# the host: `docker run ... hearth serve --ollama http://host:11434`.
FROM golang:1.26-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends nlohmann-json3-dev libstb-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Empty: hearth's own CPU kernels for any x86-64 CPU, and ggml's CPU variants as runners
# in lib/hearth, the best of which each runner start picks (docs/cpu.md): the image runs
# at full speed on any x86-64 host. A -march value builds that one level instead.
ARG CPU_LEVEL=
# GPU=vulkan: the build script installs cmake, glslc and libvulkan-dev with apt-get.
ARG GPU=
RUN if [ -n "$CPU_LEVEL" ]; then make build GPU="$GPU" CPU_LEVEL="$CPU_LEVEL"; else make build GPU="$GPU"; fi \
 && mkdir -p lib/ollama lib/hearth

FROM debian:bookworm-slim
ARG GPU=
# The Vulkan loader and Mesa's drivers (AMD, Intel; lavapipe on the CPU); NVIDIA's container
# toolkit mounts its own driver.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libstdc++6 \
    $([ "$GPU" = vulkan ] && echo libvulkan1 mesa-vulkan-drivers) \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/hearth /usr/local/bin/hearth
COPY --from=build /src/lib/ollama /usr/local/lib/ollama
COPY --from=build /src/lib/hearth /usr/local/lib/hearth
ENV OLLAMA_MODELS=/models HEARTH_DATA=/data HEARTH_ADDR=0.0.0.0:8080
VOLUME ["/models", "/data"]
EXPOSE 8080
ENTRYPOINT ["hearth"]
CMD ["serve"]
