package ollama

import (
	"slices"
	"strconv"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/envconfig"
	"github.com/ollama/ollama/fs/ggml"
)

// Which models the embedded runtime can run, decided before it tries.
//
// Ollama runs a model with one of two engines and picks one when it loads the model
// (llm/server.go, NewLlamaServer): its own engine (runner/ollamarunner) where the
// architecture requires it (ggml.KV.OllamaEngineRequired) or OLLAMA_NEW_ENGINE is set,
// provided the engine has the architecture (model.New looks up "<arch>_embed" for a
// model that pools its output) and the model has no separate projector; otherwise
// llama.cpp (runner/llamarunner), whose loader knows a fixed set of architectures
// (llama.cpp's src/llama-arch.cpp). A model that neither knows fails inside the load
// with "unable to load model: <blob path>", which reaches a client as a 500 and says
// nothing of why. hearth answers such a request itself, with the architecture and what
// to do. Neither list is exported by the module; TestEmbeddedArchitecturesMatchModule
// checks both against the module's sources, so an upgrade that changes them fails
// until they are copied again.

// ollamaEngineModels are the names registered with the Ollama engine
// (model.Register in model/models/*, all imported by model/models).
var ollamaEngineModels = []string{
	"bert", "bert_embed", "deepseek2", "deepseekocr", "gemma2", "gemma3", "gemma3_embed", "gemma3n",
	"gemma4", "glm4moelite", "glmocr", "gpt-oss", "gptoss", "laguna", "lfm2", "lfm2moe",
	"llama", "llama4", "mistral3", "mllama", "nemotron_h", "nemotron_h_moe", "nemotron_h_omni", "nomic-bert",
	"nomic-bert-moe", "nomic-bert-moe_embed", "nomic-bert_embed", "olmo3", "qwen2", "qwen25vl", "qwen3", "qwen35",
	"qwen35moe", "qwen3_embed", "qwen3moe", "qwen3next", "qwen3vl", "qwen3vlmoe",
}

// llamaCppArchitectures are the architectures llama.cpp's loader knows
// (LLM_ARCH_NAMES in the vendored llama/llama.cpp/src/llama-arch.cpp), less "clip",
// which names a projector's file, never a model's.
var llamaCppArchitectures = []string{
	"llama", "llama4", "deci", "falcon", "grok", "gpt2", "gptj", "gptneox",
	"mpt", "baichuan", "starcoder", "refact", "bert", "nomic-bert", "nomic-bert-moe", "neo-bert",
	"jina-bert-v2", "jina-bert-v3", "bloom", "stablelm", "qwen", "qwen2", "qwen2moe", "qwen2vl",
	"qwen3", "qwen3moe", "qwen3next", "qwen3vl", "qwen3vlmoe", "phi2", "phi3", "phimoe",
	"plamo", "plamo2", "codeshell", "orion", "internlm2", "minicpm", "minicpm3", "gemma",
	"gemma2", "gemma3", "gemma3n", "gemma-embedding", "starcoder2", "mamba", "mamba2", "jamba",
	"falcon-h1", "xverse", "command-r", "cohere2", "dbrx", "olmo", "olmo2", "olmoe",
	"openelm", "arctic", "deepseek", "deepseek2", "chatglm", "glm4", "glm4moe", "bitnet",
	"t5", "t5encoder", "jais", "nemotron", "nemotron_h", "nemotron_h_moe", "exaone", "exaone4",
	"rwkv6", "rwkv6qwen2", "rwkv7", "arwkv7", "granite", "granitemoe", "granitehybrid", "chameleon",
	"solar", "wavtokenizer-dec", "plm", "bailingmoe", "bailingmoe2", "dots1", "arcee", "afmoe",
	"ernie4_5", "ernie4_5-moe", "hunyuan-moe", "hunyuan-dense", "smollm3", "gpt-oss", "lfm2", "lfm2moe",
	"dream", "smallthinker", "llada", "llada-moe", "seed_oss", "grovemoe", "apertus", "minimax-m2",
	"cogvlm", "rnd1", "pangu-embedded", "mistral3",
}

// EmbeddedRuns reports whether the embedded runtime can load a model of architecture
// arch; pools is whether the model pools its output (an embedding model's
// <arch>.pooling_type), split whether its vision projector is a separate file. It
// follows the runtime's own choice of engine, OLLAMA_NEW_ENGINE included.
func EmbeddedRuns(arch string, pools, split bool) bool {
	if !split && (envconfig.NewEngine() || ggml.KV{"general.architecture": arch}.OllamaEngineRequired()) {
		name := arch
		if pools {
			name += "_embed"
		}
		if slices.Contains(ollamaEngineModels, name) {
			return true
		}
	}
	return slices.Contains(llamaCppArchitectures, arch)
}

// embeddedName is how hearth names the embedded runtime in what it tells clients.
var embeddedName = "the embedded runtime (Ollama " + RuntimeVersion + ")"

// unsupportedArchitecture returns the architecture of the model /api/show described
// when the embedded runtime cannot run it, "" when it can or when show does not say
// (a model that is not a GGUF file, or a cloud model).
func unsupportedArchitecture(show *api.ShowResponse) string {
	arch, _ := show.ModelInfo["general.architecture"].(string)
	if arch == "" || show.RemoteHost != "" || (show.Details.Format != "" && show.Details.Format != "gguf") {
		return ""
	}
	pools := false
	switch p := show.ModelInfo[arch+".pooling_type"].(type) {
	case float64: // JSON numbers, through the API client
		pools = p != 0
	case uint32:
		pools = p != 0
	case string:
		n, _ := strconv.Atoi(p)
		pools = n != 0
	}
	if EmbeddedRuns(arch, pools, len(show.ProjectorInfo) > 0) {
		return ""
	}
	return arch
}
