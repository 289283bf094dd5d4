# hearth's build. The Ollama runtime's llama.cpp is compiled by cgo and needs three C
# headers the Go module zip leaves out; scripts/cgo-headers.sh provides them in
# $(INCLUDE) (and installs Debian packages when it may). $(INCLUDE) is in the user's cache
# directory, not the clone: Go's build cache (also there) keys each cgo compile by its
# flags, this include path among them, so every clone on the machine, and `make test`
# after `make build`, reuses one compile of llama.cpp per set of flags and only links.
CACHE_HOME := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)
MALGO_VERSION := $(shell sed -n 's/^malgo_version=//p' scripts/cgo-headers.sh)
INCLUDE ?= $(CACHE_HOME)/hearth/cgo-include/malgo-$(MALGO_VERSION)
export CGO_ENABLED := 1
export CGO_CPPFLAGS := -I$(INCLUDE) -I/usr/include
# The runtime's CPU kernels (llama.cpp's ggml, compiled by cgo). bin/hearth's own are
# built for any x86-64 CPU (CPU_LEVEL), and the model runner is built again for each of
# ggml's CPU variants in CPU_VARIANTS into lib/hearth (scripts/cpu-runners.sh); each
# runner start runs the best one this CPU supports, read with CPUID (docs/cpu.md). The
# build does not depend on the machine that builds it: bin/ and lib/ run anywhere.
# CPU_LEVEL=<-march value> (x86-64-v3, native) builds hearth's own kernels for that and,
# unless CPU_VARIANTS is given too, no variants: the single-build of before.
ifeq ($(origin CPU_LEVEL),undefined)
CPU_LEVEL := x86-64
CPU_VARIANTS ?= haswell skylakex
endif
CPU_VARIANTS ?=
export CGO_CFLAGS := -O2 -g -march=$(CPU_LEVEL)
export CGO_CXXFLAGS := -O2 -g -march=$(CPU_LEVEL)
RUNNERDIR := $(CURDIR)/lib/hearth
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# Test runs may set extra flags, e.g. make test TESTFLAGS='-run E2E -v'.
TESTFLAGS ?=
# GPU=vulkan / GPU=cuda (or both: GPU="vulkan cuda") also builds ggml's Vulkan or CUDA
# backend from the Ollama module's sources (scripts/gpu-backend.sh) into lib/ollama, where
# the runtime looks for backends beside bin/hearth (<exe>/../lib/ollama). Empty: the
# CPU-only build. CUDA_ARCHITECTURES picks the GPU architectures CUDA kernels are built
# for (default 80;86;89;90).
GPU ?=
ifneq ($(filter-out vulkan cuda,$(GPU)),)
$(error GPU=$(GPU): the GPU backends hearth builds are GPU=vulkan and GPU=cuda)
endif
LIBDIR := $(CURDIR)/lib/ollama
# make test-vulkan: the e2e tests that cover the responses path (text, reasoning, tool
# calls, enforced tool choice, budgets), run on the Vulkan device GGML_VK_VISIBLE_DEVICES
# names (VK_DEVICES; 0 is lavapipe on a machine without a GPU, which the runtime skips
# unless named, being a CPU-type device; empty lets ggml choose the GPUs).
VULKAN_TESTS ?= TestGPUOffloadE2E|TestResponsesE2E|TestResponsesChainE2E|TestToolChoiceE2E|TestMaxOutputTokensE2E|TestBudgetAcrossPhasesE2E|TestReasoningSummaryE2E|TestItemReferenceStepsE2E
VK_DEVICES ?= 0
# make test-external: the same e2e tests of the responses path, and the disconnect
# tests, over a stock `ollama serve` process that engine/ollama/testenv builds from the
# Ollama module hearth pins (once per machine, into the user cache directory) and reaches
# on loopback, as `hearth serve --ollama URL` reaches an Ollama the user runs.
# OLLAMA_BIN=/path/to/ollama runs that executable instead (any installed release, with
# what it needs beside it), to check hearth against another Ollama version; the tests of
# what only Ollama 0.30 and later do (TestRuntimeWithoutLlamaServerE2E) skip otherwise.
OLLAMA_BIN ?=
EXTERNAL_TESTS ?= TestLoadedLayersE2E|TestFileSearchE2E|TestEmbedModelE2E|TestResponsesE2E|TestResponsesChainE2E|TestToolChoiceE2E|TestMaxOutputTokensE2E|TestBudgetAcrossPhasesE2E|TestReasoningSummaryE2E|TestItemReferenceStepsE2E|TestEnforcedSectionE2E|TestEnforcedSectionDeterministicE2E|TestClientDisconnectE2E|TestExternalDisconnectsE2E|TestCacheScopeE2E|TestExtraServer|TestHostileSchemasE2E|TestUnsatisfiableToolSchemasE2E|TestLogprobsE2E|TestWebSearchE2E|TestToolSearchE2E|TestServerCompactionE2E|TestWebSocketStreamsE2E|TestOpenAISDK2026E2E|TestRuntimeWithoutLlamaServerE2E|TestTokenizerRunsE2E|TestChatCompletionsE2E|TestChatToolChoiceE2E|TestChatBudgetsE2E|TestChatResponseFormatE2E|TestChatStreamE2E|TestChatErrorsE2E|TestChatStoreE2E|TestChatVisionLogprobsE2E|TestChatDisconnectE2E|TestChatAdmissionE2E|TestMessagesE2E|TestMessagesToolLoopE2E|TestMessagesToolChoiceE2E|TestMessagesMaxTokensE2E|TestMessagesThinkingE2E|TestMessagesStreamE2E|TestMessagesErrorsE2E|TestMessagesClaudeCodeBodyE2E|TestMessagesDeferredToolsE2E|TestMessagesImageE2E|TestResponsesInputTokensE2E|TestAnthropicSDKE2E|TestModelAliasE2E|TestLongBoundToolSchemaE2E|TestMessagesStopSequencesE2E|TestEveryDoorCountsOnceE2E|TestMessagesPingWhileQueuedE2E

.PHONY: all build runners run test vet fmt headers node chromium postgres jaeger clean bench vulkan-backend cuda-backend test-vulkan test-cuda test-external ollama bench-pool

all: build

headers: $(INCLUDE)/miniaudio/miniaudio.h

$(INCLUDE)/miniaudio/miniaudio.h: scripts/cgo-headers.sh
	bash scripts/cgo-headers.sh $(INCLUDE)

# The build's steps, numbered as they run: a runner per CPU variant, a GPU backend per
# GPU, then bin/hearth. Each compiles llama.cpp the first time (minutes) and links after.
BUILD_STEPS := $(words $(CPU_VARIANTS) $(GPU) hearth)

build: headers runners $(addsuffix -backend,$(GPU))
	@echo "step $(BUILD_STEPS) of $(BUILD_STEPS): bin/hearth (CGO_CFLAGS=$(CGO_CFLAGS)): compiles llama.cpp the first time, then links" >&2
	@start=$$(date +%s); $(GO) build -ldflags '$(LDFLAGS)' -o bin/hearth ./cmd/hearth && \
		echo "bin/hearth: $$(($$(date +%s) - start))s" >&2

# The model runner per CPU variant (see CPU_VARIANTS above); variants not listed are removed.
runners: headers
	GO=$(GO) STEPS=$(BUILD_STEPS) bash scripts/cpu-runners.sh $(RUNNERDIR) $(CPU_VARIANTS)

run: build
	./bin/hearth serve $(ARGS)

# bin/ollama: Ollama's own server (`ollama serve`) built from the module version hearth
# pins, with the same kernels, to measure hearth over external runtimes on one machine.
# It has no runner variants of its own: it is built with the flags of the variant hearth's
# runners run on this machine (internal/cpubuild/cpuflags).
OLLAMA_VERSION = $(shell $(GO) list -m -f '{{.Version}}' github.com/ollama/ollama | sed 's/^v//')
ollama: headers runners
	flags="$$($(GO) run ./internal/cpubuild/cpuflags $(RUNNERDIR))" && \
	CGO_CFLAGS="$$flags" CGO_CXXFLAGS="$$flags" \
	$(GO) build -ldflags '-X github.com/ollama/ollama/version.Version=$(OLLAMA_VERSION)' -o bin/ollama github.com/ollama/ollama

# Several runtimes behind one hearth, measured: two `ollama serve` pinned to a core each
# (scripts/pool-bench.sh; ARGS go to `hearth bench pool`).
bench-pool: build ollama
	bash scripts/pool-bench.sh $(ARGS)

# Node.js 20+ and npm for the tests that run JavaScript clients (scripts/node.sh installs
# Debian's packages when it may); HEARTH_SKIP_NODE=1 skips those tests instead.
node:
	bash scripts/node.sh

# Chromium for the console's browser test (scripts/chromium.sh installs Debian's package
# when it may); HEARTH_SKIP_BROWSER=1 skips that test instead.
chromium:
	bash scripts/chromium.sh

postgres:
	bash scripts/postgres.sh

# bin/jaeger: Jaeger v2, the Go tool tools/jaeger/go.mod pins (its own module, so that
# its dependencies do not move hearth's), for the tracing test that exports to it
# (TestTracingJaegerE2E). Built once; go's build cache makes a rebuild cheap.
jaeger:
	cd tools/jaeger && CGO_ENABLED=0 $(GO) build -o $(CURDIR)/bin/jaeger github.com/jaegertracing/jaeger/cmd/jaeger

# The end-to-end tests start the embedded runtime and create script models in a
# temporary models directory; they need no network, except npm ci for the JavaScript
# clients' pinned packages on the first run (docs/testing.md).
# The tests' runtime runs the runner variants of lib/hearth, as bin/hearth would.
# The PostgreSQL tests start a throwaway cluster (scripts/postgres.sh provides the
# binaries) and fail rather than skip when they cannot; the tracing test runs bin/jaeger
# and fails, rather than skips, when it cannot.
test: headers runners node chromium postgres jaeger
	$(GO) vet ./...
	HEARTH_RUNNER_DIR=$(RUNNERDIR) HEARTH_JAEGER=$(CURDIR)/bin/jaeger HEARTH_TEST_POSTGRES_REQUIRED=$(if $(filter 1,$(HEARTH_SKIP_POSTGRES)),,1) \
		$(GO) test -count=1 -timeout 60m $(TESTFLAGS) ./...

vulkan-backend cuda-backend:
	@echo "step $$(( $(words $(CPU_VARIANTS)) + $$(printf '%s\n' $(GPU) | grep -n -x -m1 '$(@:-backend=)' | cut -d: -f1) )) of $(BUILD_STEPS): the $(@:-backend=) backend into $(LIBDIR)" >&2
	bash scripts/gpu-backend.sh $(@:-backend=) $(LIBDIR)

# The test binary is built into bin/ so that the runtime finds lib/ollama beside it as it
# finds it beside bin/hearth; it runs in its package directory, as go test runs it.
test-vulkan: headers
	bash scripts/gpu-backend.sh vulkan --device $(LIBDIR)
	$(GO) test -c -o bin/server-vulkan.test ./server
	cd server && HEARTH_TEST_GPU=vulkan GGML_VK_VISIBLE_DEVICES=$(VK_DEVICES) \
		../bin/server-vulkan.test -test.count=1 -test.timeout 30m -test.run '$(VULKAN_TESTS)' $(TESTFLAGS)

# make test-cuda: the CUDA build (make build GPU=cuda's backend, an hour on 2 cores the
# first time, then cached) on a machine without an NVIDIA GPU: hearth starts, says why it
# runs on the CPU, and answers. make test runs the same test with a stand-in library.
test-cuda: headers runners
	bash scripts/gpu-backend.sh cuda $(LIBDIR)
	HEARTH_RUNNER_DIR=$(RUNNERDIR) HEARTH_TEST_CUDA_LIB=$(LIBDIR) $(GO) test -count=1 -run 'TestCUDABackendFallsBackToCPU' -v ./cmd/hearth

test-external: headers
	HEARTH_TEST_RUNTIME=external $(if $(OLLAMA_BIN),HEARTH_TEST_OLLAMA=$(abspath $(OLLAMA_BIN))) $(GO) test -count=1 -timeout 30m -run '$(EXTERNAL_TESTS)' $(TESTFLAGS) ./server ./engine/ollama/testenv

# hearth against the runtime's own endpoints on bench script models, loopback only;
# e.g. make bench ARGS='--quick' or ARGS='--runs 9 --json'.
bench: build
	./bin/hearth bench $(ARGS)

vet: headers
	$(GO) vet ./...

fmt:
	gofmt -w .

clean:
	rm -rf bin .cache lib
