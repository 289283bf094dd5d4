package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"hearth"
)

// Runtime is hearth's seam to whatever runs the models: what the engine needs of one,
// in the engine's own types. engine/ollama implements it for the embedded Ollama runtime
// and for an Ollama server at a URL; another runtime (or a fake, in unit tests of
// control flow) plugs in here without the engine knowing its wire types.
type Runtime interface {
	// Model describes the named model. A model the runtime does not have is an error
	// that wraps ErrModelNotFound.
	Model(ctx context.Context, name string) (*ModelInfo, error)
	// Generate runs one raw generation, calling fn for every chunk in order; the last
	// chunk of a finished generation has Done set and carries the counts. An error
	// from fn stops the generation and is returned. A refusal by the runtime (a bad
	// request, a prompt over the window) is a *StatusError.
	Generate(ctx context.Context, req *GenerateRequest, fn func(Chunk) error) error
	// CheckFormat reports why the runtime could not constrain a generation with
	// schema, a `format` JSON schema (it cannot turn it into a grammar, or the
	// grammar would fail or exhaust the runner), or nil. The engine asks before it
	// sends a schema, so that one the runtime cannot take is the client's 400 rather
	// than a failed generation; it remembers the answers.
	// It stops, with ctx's error, when ctx ends.
	CheckFormat(ctx context.Context, schema []byte) error
}

// ErrModelNotFound is wrapped by Runtime.Model's error for a model the runtime does not
// have (or a name it cannot parse, which names no model it could have).
var ErrModelNotFound = errors.New("model not found")

// ErrInputTooLong is wrapped by a runtime's refusal of a prompt longer than the window
// (GenerateRequest.NoSilentCuts asks it to refuse rather than cut the prompt): the
// engine then drops old turns, or says that the input does not fit.
var ErrInputTooLong = errors.New("the input exceeds the context window")

// StatusError is a runtime's refusal of a request, with its HTTP status and message.
type StatusError struct {
	StatusCode int
	Message    string
	// Err is what the refusal means in the engine's terms (ErrInputTooLong), when it
	// is one the engine acts on; nil otherwise.
	Err error
}

func (e *StatusError) Error() string { return e.Message }

func (e *StatusError) Unwrap() error { return e.Err }

// GenerateRequest is one raw generation: the prompt is sent as is (hearth renders the
// template itself) and the output comes back as text.
type GenerateRequest struct {
	Model  string
	Prompt string
	// Images are the prompt's images in order, as encoded files (PNG, JPEG...).
	Images [][]byte
	// Options are the sampling and window settings, in hearth's words; the runtime
	// maps them onto its own.
	Options Options
	// Stop are the strings that end the generation; the model's own stop strings are
	// not applied in raw mode, so the engine sends them here with its own.
	Stop []string
	// Format constrains the output: `"json"` or a JSON schema (the runtime turns it
	// into a grammar). Empty: no constraint.
	Format json.RawMessage
	// NoSilentCuts asks the runtime to refuse a prompt over the window rather than
	// truncate it, and to end a generation at the window rather than shift the
	// context: budgets and the window are hearth's to enforce.
	NoSilentCuts bool
	// KeepAlive is how long the model stays loaded after the request; nil: the
	// runtime's default.
	KeepAlive *time.Duration
	// Stream false asks for one chunk at the end; true streams chunk by chunk.
	Stream bool
	// Logprobs asks for the log probability of every generated token, in the chunks'
	// Logprobs; TopLogprobs (0-20) for that many likeliest alternatives at each
	// position as well. Only asked of a model whose ModelInfo.NoLogprobs is empty.
	Logprobs    bool
	TopLogprobs int
}

// Options are a generation's sampling and window settings. A runtime maps each onto its
// own option (engine/ollama: num_ctx, num_predict, temperature, top_p, top_k,
// presence_penalty, frequency_penalty); a zero or nil field is not sent, so the
// runtime's or the model's default applies.
type Options struct {
	// ContextWindow is the window, in tokens, the runtime runs the model with: the one
	// the engine checked the prompt against, so it is always set.
	ContextWindow int
	// MaxTokens bounds the tokens generated; 0: no bound but the window.
	MaxTokens int
	// Temperature, TopP, PresencePenalty and FrequencyPenalty are the request's
	// sampling fields as the client sent them; nil: not set.
	Temperature, TopP, PresencePenalty, FrequencyPenalty *float64
	// Seed is the sampler's seed (the request's Seed); nil: the runtime's own.
	Seed *int
	// TopK samples from the k likeliest tokens; nil: not set.
	TopK *int
}

// Chunk is one piece of a generation's output; the last has Done set and the counts.
type Chunk struct {
	Text       string
	Done       bool
	DoneReason string // "stop", "length", ...
	// PromptEvalCount is the number of prompt tokens evaluated (the whole prompt as
	// the runtime counts it); EvalCount the number of generated tokens.
	PromptEvalCount int
	EvalCount       int
	// Durations, as the runtime measured them.
	LoadDuration, PromptEvalDuration, EvalDuration, TotalDuration time.Duration
	// Logprobs are the tokens this chunk's Text was generated from, in order, with
	// their log probabilities (GenerateRequest.Logprobs); their text, concatenated,
	// is the chunk's Text as far as the runtime cut nothing out of it (a stop).
	Logprobs []hearth.LogProb
}

// ModelInfo is what the runtime says of a model.
type ModelInfo struct {
	// Template is the model's chat template text, for format detection.
	Template string
	// Family and Families name the model's architecture family ("qwen3", "llama").
	Family   string
	Families []string
	// Renderer and Parser name the runtime's built-in renderer and output parser for
	// the model, when it has them.
	Renderer, Parser string
	// Capabilities as the runtime lists them ("completion", "tools", "thinking",
	// "vision", ...).
	Capabilities []string
	// ContextLength is the model's trained context, 0 when unknown.
	ContextLength int
	// NumCtx is the model's configured context window, 0 when it sets none.
	NumCtx int
	// Tokens bounds the model's token counts from its vocabulary (tokenbound.go);
	// nil when the runtime does not say what the vocabulary is.
	Tokens *TokenBound
	// Stop are the model's own stop strings.
	Stop []string
	// Prompt renders conversations into this model's prompt text, exactly as the
	// runtime's own chat path would.
	Prompt PromptRenderer
	// Architecture is the model's architecture as its weights name it ("llama",
	// "qwen3"), when the runtime says.
	Architecture string
	// UnsupportedBy, when set, names the runtime that cannot run models of this
	// Architecture ("the embedded runtime (Ollama 0.24.0)"): every request for the
	// model is then a 400 (ErrUnsupportedArchitecture) instead of a failed load.
	// Empty when the runtime can, or decides when it loads the model.
	UnsupportedBy string
	// NoLogprobs says why the runtime cannot return log probabilities of this
	// model's tokens (an Ollama older than the release that added them); empty when
	// it can. A request that asks for them is then a 400.
	NoLogprobs string
}

// PromptRenderer renders conversations into a model's prompt: the runtime's own
// template rendering, which the engine does not know.
type PromptRenderer interface {
	// ToolParameters returns a function tool's parameters (a JSON schema; empty when
	// the tool has none) as the model's prompt shows them: a runtime may keep only
	// the keywords its templates show, and fill in what a template needs. An error
	// says why the prompt cannot show the schema. BuildConversation puts the result in
	// the conversation's Tools.
	ToolParameters(schema json.RawMessage) (json.RawMessage, error)
	// RenderPrompt renders conv; think nil means not set. It must leave conv as it
	// was: a conversation is rendered again (truncation, the next turn).
	RenderPrompt(conv *Conversation, think *Think) (string, error)
}

// Think is the template's think value: a bool, or a level ("low", "medium", "high")
// for families that have levels. A nil *Think means not set.
type Think struct {
	Value any
}

// Bool reports whether thinking is on, in any way.
func (t *Think) Bool() bool {
	if t == nil {
		return false
	}
	switch v := t.Value.(type) {
	case bool:
		return v
	case string:
		return v == "high" || v == "medium" || v == "low"
	}
	return false
}

// LoadedModel is one model a runtime holds in memory now.
type LoadedModel struct {
	Name string
	// Size is the bytes the loaded model takes; VRAM the part of it on a GPU.
	Size, VRAM    int64
	ContextLength int
	ExpiresAt     time.Time
	// Layers says which device runs how many of the model's layers; nil where the
	// runtime does not say (an external Ollama's /api/ps reports only Size and VRAM).
	Layers *Layers
	// Runtime is the label of the runtime that holds it, when several serve as one
	// (engine/pool); empty for a single runtime.
	Runtime string
	// CPUKernels names the build of the CPU kernels its runner runs (a CPU variant such
	// as "haswell", or "builtin"); empty where the runtime does not say (an external
	// Ollama).
	CPUKernels string
}

// Processor says where a loaded model's weights are, from Size and VRAM, in ollama ps's
// words: "100% GPU", "30%/70% CPU/GPU" or "100% CPU"; empty when the size is unknown.
func (m LoadedModel) Processor() string {
	switch {
	case m.Size <= 0:
		return ""
	case m.VRAM <= 0:
		return "100% CPU"
	case m.VRAM >= m.Size:
		return "100% GPU"
	}
	gpu := int(float64(m.VRAM) * 100 / float64(m.Size))
	return fmt.Sprintf("%d%%/%d%% CPU/GPU", 100-gpu, gpu)
}

// Layers is how a runtime placed a loaded model's layers: Total counts them as the
// runtime does (the repeating blocks plus the output layer), Devices are the devices
// holding some, in the runtime's order, and CPU is the rest.
type Layers struct {
	Total   int
	Devices []DeviceLayers
	CPU     int
}

// String says how the layers are placed, for people: "29/29 Vulkan0",
// "20/29 Vulkan0, 9/29 CPU", or "0/29 (CPU)" when no device has any.
func (l Layers) String() string {
	if len(l.Devices) == 0 {
		return fmt.Sprintf("0/%d (CPU)", l.Total)
	}
	parts := make([]string, 0, len(l.Devices)+1)
	for _, d := range l.Devices {
		parts = append(parts, fmt.Sprintf("%d/%d %s", d.Layers, l.Total, d.Device))
	}
	if l.CPU > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d CPU", l.CPU, l.Total))
	}
	return strings.Join(parts, ", ")
}

// DeviceLayers is how many layers one device runs; Device is the runtime's name for it
// (ggml's "Vulkan0", "CUDA0").
type DeviceLayers struct {
	Device string
	Layers int
}

// ListedModel is one model a runtime has.
type ListedModel struct {
	// Name is the model's full name ("qwen3:8b"); Model the name it was pulled as.
	Name, Model string
	ModifiedAt  time.Time
	// Runtimes are the labels of the runtimes that have it, when several serve as one
	// (engine/pool); empty for a single runtime.
	Runtimes []string
}
