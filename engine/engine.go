// Package engine runs one response: it picks the model's format, renders the prompt from
// the model's own template, generates in raw mode through the runtime, and turns the raw
// text into items with toolgrammar, reporting them to a hearth.Builder. It knows nothing
// of HTTP or SQL.
//
// # Constraints, budgets and usage
//
// tool_choice, allowed_tools, strict tools, parallel_tool_calls and max_tool_calls are
// enforced while generating, with every tool still in the prompt (see enforce.go): a
// request with nothing to enforce is one streaming generation; otherwise the output is
// generated in phases, stopped at the parser's decision points and continued in raw
// mode under a JSON-schema `format`. Tool calls are validated against the client's
// schema before they reach the client.
//
// Token accounting, and how exact it is:
//
//   - input_tokens is the runtime's prompt_eval_count for the rendered prompt. The
//     enforced path gets it by running its first phase for one token (a phase stopped
//     early reports no counts); continuations re-read the output so far as prompt,
//     which is not counted again.
//   - output_tokens counts every generated token of every phase, including tokens the
//     engine took back (a disallowed call's name, text where a call was required, a
//     call that failed validation): eval_count for a phase that finished, the number
//     of streamed chunks (one per token) for one the engine stopped. Text the engine
//     writes itself (openers, closers) is not generated and not counted.
//     max_output_tokens bounds that same count: each phase gets the remaining budget
//     as num_predict.
//   - reasoning_tokens counts the generated chunks that carried reasoning text.
//   - cached_tokens estimates the prompt tokens the runtime's KV cache held from the
//     previous request hearth sent to the model (see cachedTokens): exact at points
//     the runtime counted, interpolated between them; and only when that request was
//     of the same cache group (Inputs.CacheGroup: one key, or the keys an admin grouped).
//
// The context window is num_ctx, sent with every request (see ContextWindow). A prompt
// is checked against it before anything streams, with max_output_tokens reserved: a
// byte-count upper bound settles most prompts, the runtime counts the rest exactly.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"hearth"
	"hearth/internal/seal"
	"hearth/toolgrammar"
)

// Engine runs responses against one runtime.
type Engine struct {
	rt      Runtime
	formats *toolgrammar.Registry
	log     *slog.Logger
	// names keeps the runtime's model names a model_not_found compares with.
	names catalogNames

	// DefaultContext is the context window for models whose Modelfile sets none
	// (see ContextWindow); New reads it from the environment.
	DefaultContext int
	// kinds are the hosted tool kinds requests may use (RegisterHosted).
	kinds []HostedKind
	// Seal seals the encrypted_content of reasoning and compaction items and opens it
	// when they come back. New gives a fresh key, good for one process; a server sets
	// the key kept in its data directory so blobs outlive restarts.
	Seal *seal.Key

	// KVSlots says how many sequences the runtime labelled runtime keeps per model
	// in its KV cache (its parallel slots; "" is a runtime outside a pool), for
	// cached_tokens (kvslots.go); nil means one. The server sets admission's slots.
	KVSlots func(runtime string) int

	// Aliases serve models under other names (--model-alias): the core resolves a
	// request's model with them before anything else reads it, and an unknown name's
	// error says how to add one. nil: none.
	Aliases *Aliases

	mu     sync.Mutex
	models map[string]cachedModel
	kv     map[string]*kvSlots
	// grammars remembers which schemas the runtime can turn into a grammar (nil) or
	// not (why): an agent loop sends the same tools every turn, and converting and
	// parsing them costs milliseconds.
	grammars map[grammarKey]error
	// warnedMarkup holds the models whose unknown renderer or parser was logged, so
	// each is logged once per process however often its show is refreshed.
	warnedMarkup map[string]bool
}

// modelCacheTTL bounds how long a model's /api/show answer is reused: long enough that
// a busy agent loop does not ask for every turn, short enough that a re-created model
// (new template) is picked up without a restart.
const modelCacheTTL = 10 * time.Second

type cachedModel struct {
	m       *Model
	fetched time.Time
}

// New returns an Engine over rt with the model formats of formats.
func New(rt Runtime, formats *toolgrammar.Registry, log *slog.Logger) *Engine {
	if log == nil {
		log = slog.Default()
	}
	return &Engine{rt: rt, formats: formats, log: log, DefaultContext: defaultContextFromEnv(), Seal: seal.NewKey(),
		models: map[string]cachedModel{}, kv: map[string]*kvSlots{}, grammars: map[grammarKey]error{},
		warnedMarkup: map[string]bool{}}
}

// Model is what the engine knows of one model.
type Model struct {
	Name string
	// Info is what the runtime says of the model.
	Info   *ModelInfo
	Format *toolgrammar.Format
	// UnknownMarkup, when set, names the runtime's renderer or parser that no format
	// matches (toolgrammar.ByUnknownRenderer): Format is then for plain text only, and
	// requests with tools are refused (ErrUnknownMarkup).
	UnknownMarkup string
	// ContextLength is the model's trained context, when /api/show says it.
	ContextLength int
	// NumCtx is the Modelfile's num_ctx parameter, 0 when it sets none.
	NumCtx int
	// Stop are the model's own stop strings; raw generation replaces them, so the
	// engine sends them itself.
	Stop []string
}

// HasCapability reports whether the runtime lists capability c ("vision", "tools",
// "thinking", ...) for the model.
func (m *Model) HasCapability(c string) bool {
	for _, have := range m.Info.Capabilities {
		if string(have) == c {
			return true
		}
	}
	return false
}

// Model looks a model up in the runtime; an unknown name is hearth's model_not_found.
func (e *Engine) Model(ctx context.Context, name string) (*Model, error) {
	return e.model(ctx, e.rt, name)
}

// model is Model asking rt (the engine's runtime bound to a response's placement).
func (e *Engine) model(ctx context.Context, rt Runtime, name string) (*Model, error) {
	e.mu.Lock()
	c, ok := e.models[name]
	e.mu.Unlock()
	if ok && time.Since(c.fetched) < modelCacheTTL {
		return c.m, nil
	}
	info, err := rt.Model(ctx, name)
	if errors.Is(err, ErrModelNotFound) {
		he := e.Aliases.ModelNotFound(name)
		// The whole catalog, not rt (a placement's one runtime): the name may be
		// near one another runtime has.
		looked := e.names.explain(ctx, e.rt, name, he)
		// Claude Code shows its own words for a 404 ("There's an issue with the
		// selected model"), not the server's: the operator finds the fix here.
		e.log.Warn("unknown model", "model", name, "looked_in", strings.Join(looked, "; "), "fix", he.Message)
		return nil, he
	}
	if err != nil {
		return nil, fmt.Errorf("runtime show %s: %w", name, err)
	}
	m := &Model{Name: name, Info: info}
	d := e.formats.Explain(toolgrammar.ModelInfo{
		Name: name, Family: info.Family, Families: info.Families,
		Template: info.Template, Renderer: info.Renderer, Parser: info.Parser,
	})
	m.Format = d.Format
	if d.By == toolgrammar.ByUnknownRenderer {
		m.UnknownMarkup = d.Unknown
	}
	m.ContextLength = info.ContextLength
	m.Stop = info.Stop
	m.NumCtx = info.NumCtx
	e.mu.Lock()
	e.models[name] = cachedModel{m: m, fetched: time.Now()}
	warn := m.UnknownMarkup != "" && !e.warnedMarkup[name]
	if warn {
		e.warnedMarkup[name] = true
	}
	e.mu.Unlock()
	if warn {
		e.log.Warn("no tool-call format for this model's renderer: it answers in plain text, requests with tools are refused; add a format to models.json (--models-file)",
			"model", name, "runtime_markup", m.UnknownMarkup)
	}
	return m, nil
}

// CodeUnsupportedArchitecture is the error code of ErrUnsupportedArchitecture.
const CodeUnsupportedArchitecture = "model_architecture_unsupported"

// ErrUnsupportedArchitecture is the refusal of the model name whose architecture the
// runtime cannot run (info.UnsupportedBy): a client error, since the model is the
// request's choice, that says where else it can be served.
func ErrUnsupportedArchitecture(name string, info *ModelInfo) *hearth.Error {
	return hearth.InvalidRequest("model", CodeUnsupportedArchitecture, fmt.Sprintf(
		"The model %q has the architecture %q, which %s cannot run; serve it from an Ollama that can (hearth serve --runtime URL).",
		name, info.Architecture, info.UnsupportedBy))
}

// EmbeddingOnly reports whether the model makes embeddings and cannot generate: the
// runtime lists "embedding" and not "completion" among its capabilities.
func (m *Model) EmbeddingOnly() bool {
	return m.HasCapability("embedding") && !m.HasCapability("completion")
}

// CodeModelNotGenerative is the error code of ErrEmbeddingModel.
const CodeModelNotGenerative = "model_not_generative"

// ErrEmbeddingModel is the refusal of a response (or a compaction) from an embedding
// model, which has no text to generate: the runtime would fail in the middle of it.
func ErrEmbeddingModel(name string) *hearth.Error {
	return hearth.InvalidRequest("model", CodeModelNotGenerative, fmt.Sprintf(
		"The model %q is an embedding model: it makes vectors, not responses. Use it with POST /v1/embeddings, or choose a model that generates text.", name))
}

// ErrUnknownMarkup is the refusal of tools for a model whose runtime renderer or parser
// hearth has no format for (Model.UnknownMarkup).
func ErrUnknownMarkup(m *Model) *hearth.Error {
	return hearth.InvalidRequest("tools", "model_tool_format_unknown", fmt.Sprintf(
		"The model %q is rendered by the runtime's %s, for which hearth has no tool-call format, so it cannot be given tools; "+
			"send the request without tools, or add a format for it (models.json, --models-file).", m.Name, m.UnknownMarkup))
}
