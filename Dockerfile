# Multi-stage build of the same binary `make build` produces (the steps CI runs), with
# models and hearth's data in volumes. GPUs are best served by an Ollama that already
# runs on the host: `docker run ... hearth serve --ollama http://host:11434`.
FROM golang:1.26-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends nlohmann-json3-dev libstb-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The x86-64 level of the runtime's CPU kernels; empty means the building machine's
# (scripts/cpu-level.sh). x86-64 makes an image that runs on any x86-64 CPU.
ARG CPU_LEVEL=
RUN if [ -n "$CPU_LEVEL" ]; then make build CPU_LEVEL="$CPU_LEVEL"; else make build; fi

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libstdc++6 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/hearth /usr/local/bin/hearth
ENV OLLAMA_MODELS=/models HEARTH_DATA=/data HEARTH_ADDR=0.0.0.0:8080
VOLUME ["/models", "/data"]
EXPOSE 8080
ENTRYPOINT ["hearth"]
CMD ["serve"]
