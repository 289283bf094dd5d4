package ollama

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/envconfig"
	"github.com/ollama/ollama/types/model"

	"hearth/engine"
	"hearth/internal/cpubuild"
)

// Client is the part of Ollama's API client the seam uses; *api.Client implements it.
type Client interface {
	Show(ctx context.Context, req *api.ShowRequest) (*api.ShowResponse, error)
	Generate(ctx context.Context, req *api.GenerateRequest, fn api.GenerateResponseFunc) error
}

// Seam returns the engine's runtime seam over an Ollama API client: it translates the
// engine's requests into Ollama's and back, and gives each model the Ollama template
// rendering of its prompts.
func Seam(c Client) engine.Runtime { return newSeam(c, false, false) }

func newSeam(c Client, drain, embedded bool) seam {
	return seam{c: c, drain: drain, embedded: embedded, lp: &logprobsGate{}, tok: newTokenizers(embedded),
		bounds: &tokenBounds{kept: map[string]*engine.TokenBound{}}}
}

// Seam is the engine's runtime seam over this runtime. Over an external runtime it
// never leaves a generation's stream before its end (see drainSeam).
func (r *Runtime) Seam() engine.Runtime {
	var s seam
	if r.Embedded {
		// The embedded runtime's listener makes leaving a stream safe
		// (disconnectSafeListener), and leaving frees the slot at once.
		s = newSeam(r.Client, false, true)
	} else {
		s = newSeam(r.Client, true, false)
	}
	s.rt = r
	return s
}

// ModelNames are the models the runtime has (engine.ModelCatalog); none over a bare
// client (Seam).
func (s seam) ModelNames(ctx context.Context) []string {
	if s.rt == nil {
		return nil
	}
	list, err := s.rt.Models(ctx)
	if err != nil {
		return nil
	}
	names := make([]string, len(list))
	for i, m := range list {
		names[i] = m.Name
	}
	return names
}

// ModelPlaces is where the runtime keeps its models (engine.ModelCatalog).
func (s seam) ModelPlaces() []engine.ModelPlace {
	if s.rt == nil {
		return nil
	}
	return []engine.ModelPlace{{Runtime: s.rt.Label(), Embedded: s.rt.Embedded, Dir: s.rt.ModelsDir}}
}

// EmbeddedSeam is Seam for a client of the embedded runtime, directly or through a
// hearth's /api passthrough: its models also say whether the embedded runtime can run
// their architecture (architectures.go). An external runtime's models are its own
// business: what it cannot load, it refuses itself.
//
// Its tokenizers are read over the API, as an external runtime's: the client may be
// another process's (the CLI's), which has no model files of its own to read.
func EmbeddedSeam(c Client) engine.Runtime {
	s := newSeam(c, false, false)
	s.embedded = true
	return s
}

// DrainingSeam is Seam for a runtime hearth does not host: a generation its caller
// leaves (the callback's error, the context's end) is read to its end in the background
// instead of closing the connection mid-stream.
//
// Ollama (v0.17.4 to v0.24.0 at least, ollama/ollama#17131) wedges a model when a client leaves a stream at
// the wrong instant: its handler stops draining the chunk channel when the client is
// gone, and a chunk the generation goroutine already holds blocks it for ever inside the
// runner call that holds the model's slot; later requests to that model wait for
// minutes. Whatever the timing, a stream read to its done chunk ends the handler
// normally, so the slot is freed as soon as the generation ends (the engine ends phases
// with stop strings and budgets, so what is left is short). The caller returns at once;
// only the runtime's slot stays busy for the rest.
func DrainingSeam(c Client) engine.Runtime { return newSeam(c, true, false) }

type seam struct {
	c     Client
	drain bool
	// rt is the runtime the seam is of, for what a model_not_found says; nil over a
	// bare client.
	rt *Runtime
	// embedded: the runtime is this binary's own (EmbeddedSeam).
	embedded bool
	// lp remembers whether the runtime returns log probabilities (logprobs.go).
	lp *logprobsGate
	// tok keeps the tokenizers of the models whose tokens were counted (tokenize.go).
	tok *tokenizers
	// bounds keeps the token bounds of the models looked up (tokenbound.go).
	bounds *tokenBounds
}

// drainLimit bounds how long a left generation is read in the background: past it the
// connection is closed anyway (a generation that long was given no budget, and holding
// its slot for ever would be worse than the wedge it risks).
var drainLimit = 5 * time.Minute

func (s seam) Model(ctx context.Context, name string) (*engine.ModelInfo, error) {
	if !model.ParseName(name).IsValid() {
		// A name the runtime cannot parse names no model it could have; asked, the
		// runtime answers 500 for some ("a:b:c") and 400 for others.
		return nil, fmt.Errorf("%w: %q", engine.ErrModelNotFound, name)
	}
	show, err := s.c.Show(ctx, &api.ShowRequest{Model: name})
	if err != nil {
		var se api.StatusError
		if errors.As(err, &se) && (se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusBadRequest ||
			se.StatusCode == http.StatusForbidden) {
			// 400 is the runtime refusing the name itself (Show has no other
			// input), 403 a cloud model ("<name>:cloud") with the runtime's cloud
			// off: for the client that model does not exist either.
			return nil, fmt.Errorf("%w: %q", engine.ErrModelNotFound, name)
		}
		return nil, statusError(err)
	}
	// The runtime renders some models with another renderer than their Modelfile's,
	// chosen by the model's name (gemma4's sizes): the name is known here.
	if show, err = ResolveRenderer(name, show); err != nil {
		return nil, err
	}
	if show, err = withParserCapabilities(show); err != nil {
		return nil, err
	}
	show = withGGUFChat(show, s.ggufChat(ctx, name))
	renderer, parser, err := ModelRenderer(show)
	if err != nil {
		return nil, err
	}
	info := &engine.ModelInfo{
		Template: show.Template, Family: show.Details.Family, Families: show.Details.Families,
		Renderer: renderer, Parser: parser,
		ContextLength: contextLength(show.ModelInfo),
		NumCtx:        modelNumCtx(show.Parameters),
		Stop:          modelStops(show.Parameters),
		Prompt:        NewRenderer(show),
		NoLogprobs:    s.lp.check(ctx, s.c),
		Tokens:        s.tokenBound(ctx, name, show),
	}
	info.Architecture, _ = show.ModelInfo["general.architecture"].(string)
	if s.embedded && unsupportedArchitecture(show) != "" {
		info.UnsupportedBy = embeddedName
	}
	for _, c := range show.Capabilities {
		info.Capabilities = append(info.Capabilities, string(c))
	}
	return info, nil
}

// noSilentCuts is the value of the truncate and shift fields the engine's NoSilentCuts
// asks for; shared, as the api request takes pointers.
var noSilentCuts = false

// APIRequest is the Ollama /api/generate request for req: raw, with thinking off (raw
// text must come back whole: with thinking on, the runtime would move <think> text into
// a separate field).
func APIRequest(req *engine.GenerateRequest) *api.GenerateRequest {
	opts := apiOptions(req.Options)
	if len(req.Stop) > 0 {
		opts["stop"] = req.Stop
	}
	stream := req.Stream
	g := &api.GenerateRequest{
		Model: req.Model, Prompt: req.Prompt, Raw: true, Options: opts,
		Format: req.Format, Stream: &stream,
		Think: &api.ThinkValue{Value: false},
	}
	for _, img := range req.Images {
		g.Images = append(g.Images, api.ImageData(img))
	}
	if req.NoSilentCuts {
		// Request fields, not options: as options the runtime ignores them.
		g.Truncate, g.Shift = &noSilentCuts, &noSilentCuts
	}
	if req.KeepAlive != nil {
		g.KeepAlive = &api.Duration{Duration: *req.KeepAlive}
	}
	if req.Logprobs {
		g.Logprobs, g.TopLogprobs = true, req.TopLogprobs
	}
	return g
}

// apiOptions are o by Ollama's option names; a zero or nil field is left out, so
// that the model's own parameter (or Ollama's default) applies.
func apiOptions(o engine.Options) map[string]any {
	opts := map[string]any{}
	if o.ContextWindow > 0 {
		opts["num_ctx"] = o.ContextWindow
	}
	if o.MaxTokens > 0 {
		opts["num_predict"] = o.MaxTokens
	}
	if o.Temperature != nil {
		opts["temperature"] = *o.Temperature
	}
	if o.TopP != nil {
		opts["top_p"] = *o.TopP
	}
	if o.TopK != nil {
		opts["top_k"] = *o.TopK
	}
	if o.PresencePenalty != nil {
		opts["presence_penalty"] = *o.PresencePenalty
	}
	if o.FrequencyPenalty != nil {
		opts["frequency_penalty"] = *o.FrequencyPenalty
	}
	if o.Seed != nil {
		opts["seed"] = *o.Seed
	}
	return opts
}

func chunk(r api.GenerateResponse) engine.Chunk {
	return engine.Chunk{
		Text: r.Response, Done: r.Done, DoneReason: r.DoneReason,
		PromptEvalCount: r.PromptEvalCount, EvalCount: r.EvalCount,
		LoadDuration: r.LoadDuration, PromptEvalDuration: r.PromptEvalDuration,
		EvalDuration: r.EvalDuration, TotalDuration: r.TotalDuration,
		Logprobs: logprobs(r.Logprobs),
	}
}

func (s seam) Generate(ctx context.Context, req *engine.GenerateRequest, fn func(engine.Chunk) error) error {
	var got atomic.Bool
	seen := func(c engine.Chunk) error {
		got.Store(true)
		return fn(c)
	}
	err := s.generate(ctx, req, seen)
	if err == nil || ctx.Err() != nil {
		return err
	}
	if got.Load() || !runnerDied(err) {
		// A stream the runner's death broke off comes as the stream's error, not as
		// a status.
		if runnerMessage(err.Error()) {
			slog.Error("the model runner stopped during a generation", s.runnerDeath(req.Model, err)...)
		}
		return err
	}
	// The model's runner died before this request had anything from it: most likely
	// another request's input killed it (or the machine did), and the runtime starts
	// a new runner for the next request. Once: a request whose own input kills the
	// runner fails the second time, with the runtime's error and this one's account.
	slog.Warn("the model runner died before answering; trying once more on a new runner", s.runnerDeath(req.Model, err)...)
	if err = s.generate(ctx, req, seen); err != nil && runnerDied(err) && !got.Load() {
		slog.Error("the model runner stopped twice while evaluating a prompt", s.runnerDeath(req.Model, err)...)
		return &engine.StatusError{StatusCode: http.StatusInternalServerError,
			Message: "the model runner stopped twice while evaluating this request's prompt (retried once on a new runner): " + err.Error()}
	} else if err != nil && runnerDied(err) && ctx.Err() == nil {
		slog.Error("the model runner stopped during a generation", s.runnerDeath(req.Model, err)...)
	}
	return err
}

// runnerDeath is what hearth's log says of a runner that died: the model, the runtime's
// error and, in the embedded runtime, the runner's last lines of output, which say why
// more often than the runtime's error does (a failed allocation, an assertion). The
// client's error has none of them (RuntimeFailure): they name this machine's paths.
func (s seam) runnerDeath(model string, err error) []any {
	attrs := []any{"model", model, "error", err}
	if !s.embedded {
		return attrs
	}
	if tail := runnerTail(model); len(tail) > 0 {
		attrs = append(attrs, "runner_output", strings.Join(tail, "\n"))
	}
	return attrs
}

// runnerDied reports whether err is the runtime saying that the model's runner process
// died or stopped answering (Ollama's llm server: the runner's connection failed, its
// stream broke off, or its process was gone when the request came).
func runnerDied(err error) bool {
	var se *engine.StatusError
	if !errors.As(err, &se) || se.StatusCode < 500 {
		return false
	}
	return runnerMessage(se.Message)
}

// runnerMessage reports whether msg is one of the runtime's words for a runner that
// died or stopped answering.
func runnerMessage(msg string) bool {
	for _, m := range []string{
		"model runner has unexpectedly stopped",
		"llama runner process no longer running",
		"an error was encountered while running the model",
		"llama runner process has terminated",
		// The runtime's health check of a runner that died as the request came.
		"health resp:",
	} {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

func (s seam) generate(ctx context.Context, req *engine.GenerateRequest, fn func(engine.Chunk) error) error {
	if !s.drain {
		err := s.c.Generate(ctx, APIRequest(req), func(r api.GenerateResponse) error { return fn(chunk(r)) })
		return statusError(err)
	}
	return s.generateDraining(ctx, req, fn)
}

// generateDraining runs the generation on a context the caller cannot cancel and
// calls fn for its chunks until the caller leaves (fn's error, ctx's end); then it
// returns, and the rest of the stream is read and dropped in the background.
func (s seam) generateDraining(ctx context.Context, req *engine.GenerateRequest, fn func(engine.Chunk) error) error {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var (
		mu   sync.Mutex // held while fn runs: once left is set, fn is never called
		left bool
		// streaming: a chunk came. Before the first, the runtime's handler has
		// sent nothing (the request waits for the model or evaluates the prompt),
		// and leaving frees its slot at once: the generation ends on the
		// cancelled request before it has a chunk to block on.
		streaming bool
	)
	leave := func() {
		left = true
		if !streaming {
			cancel()
			return
		}
		time.AfterFunc(drainLimit, cancel)
	}
	fnErr := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		err := s.c.Generate(rctx, APIRequest(req), func(r api.GenerateResponse) error {
			mu.Lock()
			defer mu.Unlock()
			streaming = true
			if left {
				return nil
			}
			if ctx.Err() != nil {
				leave()
				return nil
			}
			if err := fn(chunk(r)); err != nil {
				leave()
				fnErr <- err
			}
			return nil
		})
		done <- statusError(err)
	}()
	select {
	case err := <-done:
		select {
		case ferr := <-fnErr:
			return ferr
		default:
		}
		mu.Lock()
		gone := left
		mu.Unlock()
		if (gone || err != nil) && ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	case err := <-fnErr:
		return err
	case <-ctx.Done():
		mu.Lock()
		if !left {
			leave()
		}
		mu.Unlock()
		select {
		case err := <-fnErr:
			// fn failed just before ctx ended; its error is the caller's.
			return err
		default:
		}
		return ctx.Err()
	}
}

// statusError turns the runtime's refusal into the engine's StatusError; other errors
// (the callback's own, transport errors) pass unchanged, except one that says the
// prompt is over the window, which wraps engine.ErrInputTooLong as a refusal does.
func statusError(err error) error {
	var se api.StatusError
	if err == nil {
		return nil
	}
	if !errors.As(err, &se) {
		if strings.Contains(err.Error(), inputTooLong) {
			return tooLong{err}
		}
		return err
	}
	msg := se.ErrorMessage
	if msg == "" {
		msg = se.Error()
	}
	out := &engine.StatusError{StatusCode: se.StatusCode, Message: msg}
	if strings.Contains(msg, inputTooLong) {
		out.Err = engine.ErrInputTooLong
	}
	if out.StatusCode < 500 && runnerFault.MatchString(msg) {
		// Ollama's embed handler answers any error without a status of its own as a
		// 400, its runner's dying mid-request included: that is the runtime's fault,
		// not the request's.
		out.StatusCode = http.StatusBadGateway
	}
	return out
}

// runnerFault matches the errors of Ollama's server with its runner: a connection
// that failed (Go's net words: refused, reset, closed, EOF before the answer, a
// deadline) or an answer it could not read.
var runnerFault = regexp.MustCompile(`(?i)do embedding request|error reading embed response|unmarshal tokenize response|unexpected server status|` +
	`connection refused|connection reset|broken pipe|use of closed network connection|: EOF$|unexpected EOF|i/o timeout|` +
	`server not responding|runner process (has )?(terminated|no longer running)`)

// inputTooLong is how Ollama's runner refuses a prompt longer than num_ctx when
// truncate is false (its errorInputTooLong, sent as a 400).
const inputTooLong = "exceeds the context length"

// tooLong is a runtime error, other than a refusal, that says the prompt is over the
// window: it reads as the runtime's own words and is engine.ErrInputTooLong.
type tooLong struct{ error }

func (e tooLong) Is(target error) bool { return target == engine.ErrInputTooLong }
func (e tooLong) Unwrap() error        { return e.error }

// contextLength finds "<architecture>.context_length" in /api/show's model_info.
func contextLength(info map[string]any) int {
	arch, _ := info["general.architecture"].(string)
	if v, ok := info[arch+".context_length"].(float64); ok {
		return int(v)
	}
	return 0
}

// modelStops reads the `stop` lines of /api/show's parameters text, where each is
// written as `stop "<text>"`.
func modelStops(params string) []string {
	var stops []string
	for _, line := range strings.Split(params, "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok || name != "stop" {
			continue
		}
		value = strings.TrimSpace(value)
		if unq, err := unquote(value); err == nil {
			value = unq
		}
		stops = append(stops, value)
	}
	return stops
}

func unquote(s string) (string, error) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, "\n", `\t`, "\t").Replace(s[1 : len(s)-1]), nil
	}
	return s, errors.New("not quoted")
}

// modelNumCtx reads `num_ctx <n>` from /api/show's parameters text.
func modelNumCtx(params string) int {
	for _, line := range strings.Split(params, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "num_ctx" {
			if n, err := strconv.Atoi(f[1]); err == nil {
				return n
			}
		}
	}
	return 0
}

// Models lists the models the runtime has.
func (r *Runtime) Models(ctx context.Context) ([]engine.ListedModel, error) {
	list, err := r.Client.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]engine.ListedModel, len(list.Models))
	for i, m := range list.Models {
		out[i] = engine.ListedModel{Name: m.Name, Model: m.Model, ModifiedAt: m.ModifiedAt}
	}
	return out, nil
}

// Loaded lists the models the runtime holds in memory now (its /api/ps).
func (r *Runtime) Loaded(ctx context.Context) ([]engine.LoadedModel, error) {
	ps, err := r.Client.ListRunning(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]engine.LoadedModel, len(ps.Models))
	for i, m := range ps.Models {
		out[i] = engine.LoadedModel{Name: m.Name, Size: m.Size, VRAM: m.SizeVRAM, ContextLength: m.ContextLength, ExpiresAt: m.ExpiresAt}
		// Only the embedded runtime's placements are known (layers.go); an external
		// Ollama's /api/ps reports no layers, and hearth does not guess them.
		if r.Embedded {
			out[i].Layers = loadedLayers(m.Name)
			out[i].CPUKernels = cpubuild.Selected().Chosen.Name
		}
	}
	return out, nil
}

// Target is the base address of the runtime's own HTTP API, for a passthrough; an
// embedded runtime's is reachable only through Transport.
func (r *Runtime) Target() *url.URL { return r.URL }

// PassthroughTarget is where Ollama's own API answers and the transport that reaches
// it: the server forwards /api (and Ollama's OpenAI-compatible routes) there unchanged.
func (r *Runtime) PassthroughTarget() (*url.URL, http.RoundTripper) { return r.URL, r.Transport() }

// Label is "embedded" for the runtime inside hearth, host:port for one at a URL.
func (r *Runtime) Label() string {
	if r.Embedded {
		return "embedded"
	}
	return r.URL.Host
}

// IsEmbedded reports whether the runtime runs inside this process.
func (r *Runtime) IsEmbedded() bool { return r.Embedded }

// ggufChat reads the chat template and BOS/EOS texts of the model's GGUF file from the
// models directory (OLLAMA_MODELS, else ~/.ollama/models: the embedded runtime's, and
// an external runtime's when it shares it), nil when hearth cannot read it. For an
// external runtime the file counts only when the runtime lists the model with the
// manifest's digest: its models directory may be another one, holding another model of
// that name.
func (s seam) ggufChat(ctx context.Context, name string) *ggufChat {
	c, err := readGGUFChat(envconfig.Models(), name)
	if err != nil {
		return nil
	}
	if s.embedded {
		return c
	}
	l, ok := s.c.(interface {
		List(context.Context) (*api.ListResponse, error)
	})
	if !ok {
		return nil
	}
	list, err := l.List(ctx)
	if err != nil {
		return nil
	}
	want := model.ParseName(name)
	for _, m := range list.Models {
		if (model.ParseName(m.Name).EqualFold(want) || model.ParseName(m.Model).EqualFold(want)) && m.Digest == c.Digest {
			return c
		}
	}
	return nil
}

// ModelsDirectory is where the runtime keeps its models, when known (always for the
// embedded runtime): what a model_not_found says hearth looked in.
func (r *Runtime) ModelsDirectory() string { return r.ModelsDir }
