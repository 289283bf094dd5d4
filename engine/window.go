package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"hearth"
)

// DefaultContextLength is the context window hearth asks the runtime for when neither
// the model's Modelfile (PARAMETER num_ctx) nor the environment (HEARTH_CONTEXT_LENGTH,
// then OLLAMA_CONTEXT_LENGTH) says otherwise. The runtime's own CPU default is 4096,
// which an agent's system prompt alone fills (Codex sends about 10k tokens); 16384 fits
// a real agent turn and costs a small model 1-2 GB of KV cache. A model trained on less
// gets its trained context.
const DefaultContextLength = 16384

// defaultContextFromEnv reads the default window from the environment.
func defaultContextFromEnv() int {
	for _, k := range []string{"HEARTH_CONTEXT_LENGTH", "OLLAMA_CONTEXT_LENGTH"} {
		if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv(k))); err == nil && n > 0 {
			return n
		}
	}
	return DefaultContextLength
}

// ContextWindow is the num_ctx hearth sends for m: the Modelfile's num_ctx when the
// model sets one (its author chose it), else the engine's default, and never more than
// the model was trained on. hearth sends it with every request, so the runtime never
// falls back to its own default, and the window hearth checks prompts against is the
// one the runtime allocates.
func (e *Engine) ContextWindow(m *Model) int {
	n := m.NumCtx
	if n <= 0 {
		n = e.DefaultContext
	}
	if n <= 0 {
		n = DefaultContextLength
	}
	trained := m.ContextLength
	if trained <= 0 && m.Format != nil {
		trained = m.Format.ContextLength
	}
	if trained > 0 && n > trained {
		n = trained
	}
	return n
}

// promptFit decides whether prompts fit the window with room for the output, asking the
// runtime for exact counts only when a free upper bound cannot settle it.
type promptFit struct {
	e *Engine
	// rt is the job's runtime (Job.rt), where the count runs as the generation will.
	rt     Runtime
	gen    GenerateRequest // model and options of the real request
	window int
	// reserve is the room the output needs: max_output_tokens, or one token when the
	// request sets no budget (the output then ends at the window, as incomplete).
	reserve int
	// exact remembers the last exact count, to estimate others by their length.
	exactTokens, exactBytes int
	// bound is the model's token bound (nil when unknown); atLeast is set when the
	// last refusal's count came from it, a lower bound rather than a count.
	bound   *TokenBound
	atLeast bool
}

// fits reports whether prompt (with images) fits, and the exact token count when it was
// needed to tell.
//
// Every token of a byte-level BPE or byte-fallback tokenizer covers at least one byte,
// so len(prompt) plus BOS and EOS bounds the count from above: a prompt that fits by
// that bound needs no runtime call (most requests). Otherwise the runtime counts: a
// raw generation of one token reports prompt_eval_count, and the evaluated prompt stays
// in the KV cache, where the real request finds it again, so the count costs about one
// decoded token. A prompt longer than the window is refused by the runtime itself.
func (f *promptFit) fits(ctx context.Context, prompt string, images [][]byte) (bool, int, error) {
	f.atLeast = false
	if len(images) == 0 && len(prompt)+2+f.reserve <= f.window {
		return true, 0, nil
	}
	// A prompt the vocabulary alone shows to be too long never reaches a tokenizer:
	// the runtime's tokenizer is C++ that a long run of punctuation can crash, and
	// megabytes of text cost it seconds before it refuses them.
	if n := f.bound.Min(prompt); n+f.reserve > f.window {
		f.atLeast = true
		return false, n, nil
	}
	n, tooLong, err := f.count(ctx, prompt, images)
	if err != nil {
		return false, 0, err
	}
	if tooLong {
		return false, f.window + 1, nil
	}
	f.exactTokens, f.exactBytes = n, len(prompt)
	return n+f.reserve <= f.window, n, nil
}

// hopeless reports whether prompt clearly cannot fit, estimated from the density of
// the last exactly counted prompt; such a prompt is not worth a runtime call.
func (f *promptFit) hopeless(prompt string) bool {
	if f.exactBytes == 0 {
		return false
	}
	est := f.exactTokens * len(prompt) / f.exactBytes
	return est+f.reserve > f.window+f.window/4
}

func (f *promptFit) count(ctx context.Context, prompt string, images [][]byte) (n int, tooLong bool, err error) {
	req := f.gen
	req.Prompt, req.Images, req.Format = prompt, images, nil
	req.Options.MaxTokens = 1
	req.Stream = false
	err = f.rt.Generate(ctx, &req, func(r Chunk) error {
		if r.Done {
			n = r.PromptEvalCount
		}
		return nil
	})
	if isInputTooLong(err) {
		return 0, true, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("count prompt tokens: %w", err)
	}
	return n, false, nil
}

// isInputTooLong recognises the runtime's refusal of a prompt longer than the window.
func isInputTooLong(err error) bool { return errors.Is(err, ErrInputTooLong) }

// turnRanges returns the turns truncation may drop, oldest first, as [start, end)
// message ranges: each user message with everything up to the next user message. The
// last user turn is never dropped, and neither are system messages, which Drop keeps
// wherever they are. Calls stay with their outputs because both sit inside one turn.
func turnRanges(msgs []Message) [][2]int {
	var users []int
	for i, m := range msgs {
		if m.Role == "user" {
			users = append(users, i)
		}
	}
	var out [][2]int
	for k := 0; k+1 < len(users); k++ {
		out = append(out, [2]int{users[k], users[k+1]})
	}
	return out
}

// withoutTurns returns a copy of c without the messages of the first n turns of
// turnRanges (system messages stay), and the images of the remaining messages.
func (c *Conversation) withoutTurns(turns [][2]int) *Conversation {
	drop := map[int]bool{}
	for _, r := range turns {
		for i := r[0]; i < r[1]; i++ {
			if c.Messages[i].Role != "system" {
				drop[i] = true
			}
		}
	}
	out := *c
	out.Messages = nil
	out.Images = nil
	out.frozen = 0 // a new array, the conversation's own

	for i, m := range c.Messages {
		if drop[i] {
			continue
		}
		out.Messages = append(out.Messages, m)
		out.Images = append(out.Images, m.Images...)
	}
	out.Stable = len(out.Messages)
	return &out
}

// fitWindow makes the job's prompt fit the window: it checks the rendered prompt and,
// with truncation "auto", drops the oldest whole turns until it fits. With truncation
// disabled (the default) a prompt that does not fit is a 400 context_length_exceeded,
// the code clients such as Codex react to by compacting.
func (j *Job) fitWindow(ctx context.Context, render func(*Conversation) (string, error)) error {
	f := &promptFit{e: j.e, rt: j.rt, gen: j.gen, window: j.window, reserve: 1, bound: j.Model.Info.Tokens}
	if j.req.MaxOutputTokens != nil && !j.req.BudgetIsCap {
		f.reserve = *j.req.MaxOutputTokens
	}
	ok, n, err := f.fits(ctx, j.Prompt, j.conv.Images)
	if err != nil || ok {
		return err
	}
	tooLong := func(tokens int, truncated bool) error {
		what := fmt.Sprintf("The input (%d tokens)", tokens)
		switch {
		case f.atLeast && tokens <= j.window:
			what = fmt.Sprintf("The input (at least %d tokens)", tokens)
		case tokens > j.window:
			what = fmt.Sprintf("The input (more than %d tokens)", j.window)
		}
		budget := ""
		if j.req.MaxOutputTokens != nil {
			budget = fmt.Sprintf(" plus max_output_tokens (%d)", *j.req.MaxOutputTokens)
		}
		hint := `Shorten the input, lower max_output_tokens, or set truncation to "auto".`
		if truncated {
			what += " after dropping every earlier turn"
			hint = "Shorten the last turn or the instructions, or lower max_output_tokens."
		}
		err := hearth.ContextLengthExceeded(fmt.Sprintf("%s%s exceeds the context window of model '%s' (%d tokens). %s",
			what, budget, j.Model.Name, j.window, hint))
		if field, n := j.fieldOverWindow(f); field != "" {
			err.Param = field
			err.Message = fmt.Sprintf("'%s' alone is at least %d tokens: it cannot fit the context window of model '%s' (%d tokens). %s",
				field, n, j.Model.Name, j.window, hint)
		}
		return err
	}
	if j.req.Truncation != hearth.TruncationAuto {
		return tooLong(n, false)
	}
	turns := turnRanges(j.conv.Messages)
	for k := 1; k <= len(turns); k++ {
		c := j.conv.withoutTurns(turns[:k])
		prompt, err := render(c)
		if err != nil {
			return err
		}
		if k < len(turns) && len(c.Images) == 0 && f.hopeless(prompt) {
			continue
		}
		ok, n, err = f.fits(ctx, prompt, c.Images)
		if err != nil {
			return err
		}
		if ok {
			j.e.log.Info("truncated input to fit the context window", "model", j.Model.Name, "turns_dropped", k, "window", j.window)
			j.conv, j.Prompt = c, prompt
			j.gen.Prompt, j.gen.Images = prompt, c.Images
			return nil
		}
	}
	return tooLong(n, true)
}

// fieldOverWindow names the field of the request that alone cannot fit the window by
// the model's token bound (the largest such), so that the 400 says which text to
// shorten; "" when none does (the input as a whole is too long) or the bound is unknown.
func (j *Job) fieldOverWindow(f *promptFit) (string, int) {
	if f.bound == nil {
		return "", 0
	}
	best, most := "", 0
	consider := func(field, text string) {
		if n := f.bound.Min(text); n+f.reserve > f.window && n > most {
			best, most = field, n
		}
	}
	consider("instructions", j.req.Instructions)
	for i, t := range j.req.Tools {
		consider(fmt.Sprintf("tools[%d].description", i), t.Description)
	}
	for i, it := range j.req.Input {
		for k, p := range it.Content {
			text := p.Text
			if file, ok := p.FileText(); ok {
				text = file
			}
			consider(fmt.Sprintf("input[%d].content[%d]", i, k), text)
		}
		consider(fmt.Sprintf("input[%d].output", i), it.Output.Text)
		for k, p := range it.Output.Parts {
			consider(fmt.Sprintf("input[%d].output[%d]", i, k), p.Text)
		}
		consider(fmt.Sprintf("input[%d].arguments", i), it.Arguments)
	}
	return best, most
}

// promptCache is a token sequence hearth left in one of the runtime's KV cache slots
// (a request's prompt and generated text; kvslots.go), to report cached_tokens: the
// runtime reuses the longest common token prefix with it, and does not report how much
// it reused. marks are points of text whose exact token count the
// runtime reported (prompt_eval_count of a request, plus eval_count at the end).
type promptCache struct {
	text  string
	marks []cacheMark
	// images are the digests of the sequence's images, by the N of their [img-N]
	// tags: the same tag text can stand for another image, which the runtime does
	// not reuse.
	images []imageDigest
	// group is the cache group of the response that left the sequence (kvslots.go).
	group string
}

type imageDigest [sha256.Size]byte

func imageDigests(images [][]byte) []imageDigest {
	out := make([]imageDigest, len(images))
	for i, img := range images {
		out[i] = sha256.Sum256(img)
	}
	return out
}

var imageTag = regexp.MustCompile(`\[img-(\d+)\]`)

// sharedImagePrefix cuts the shared prefix l of a prompt (whose images are images)
// with prev at the first image tag that stands for another image there.
func sharedImagePrefix(prev promptCache, prompt string, images []imageDigest, l int) int {
	for _, m := range imageTag.FindAllStringSubmatchIndex(prompt[:l], -1) {
		n, _ := strconv.Atoi(prompt[m[2]:m[3]])
		if n >= len(images) || n >= len(prev.images) || images[n] != prev.images[n] {
			return m[0]
		}
	}
	return l
}

type cacheMark struct{ bytes, tokens int }

// cachedTokens estimates how many of the inputTokens of prompt the runtime's KV cache
// holds from the model's previous sequence prev. The common prefix is found in
// characters and converted to tokens at the last exactly counted point within it, plus
// the text after that point at the density of the span it lies in, minus the token
// the boundary cuts. So it is exact when the prompt shares a whole earlier prompt (a
// conversation that goes on, a retried request) and close otherwise. The runtime
// always re-evaluates the prompt's last token, so at most inputTokens-1 are cached.
// Another client of the same runtime can evict the cache without hearth knowing; then
// this overstates.
func cachedTokens(prev promptCache, prompt string, images [][]byte, inputTokens int) int {
	if prev.text == "" || len(prev.marks) == 0 || inputTokens <= 1 {
		return 0
	}
	l := SharedPrefixLen(prev.text, prompt)
	if strings.Contains(prompt[:l], "[img-") {
		l = sharedImagePrefix(prev, prompt, imageDigests(images), l)
	}
	n, lo := 0, cacheMark{}
	for _, m := range prev.marks {
		if m.bytes > l {
			if span := m.bytes - lo.bytes; span > 0 && l > lo.bytes {
				n = lo.tokens + (m.tokens-lo.tokens)*(l-lo.bytes)/span - 1
			}
			break
		}
		lo, n = m, m.tokens
	}
	return max(0, min(n, inputTokens-1))
}

// SharedPrefixLen is the length of the longest common prefix of a and b. Prompts run
// to hundreds of kilobytes and mostly agree: it compares 64-byte blocks (a vectorised
// string comparison) before it looks for the byte that differs.
func SharedPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && a[i:i+64] == b[i:i+64] {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// PromptTokens counts the tokens of the job's prompt (with its images) the way its
// generation will: the runtime evaluates the rendered prompt with the model's own
// tokenizer, on the runtime the job runs on, and reports prompt_eval_count, which is
// what the response's usage reports as its input tokens. The evaluated prompt stays in
// the runtime's KV cache, where a generation of the same prompt finds it again.
func (j *Job) PromptTokens(ctx context.Context) (int, error) {
	f := promptFit{e: j.e, rt: j.rt, gen: j.gen, window: j.window}
	n, tooLong, err := f.count(ctx, j.Prompt, j.gen.Images)
	if err != nil {
		return 0, err
	}
	if tooLong {
		return 0, hearth.ContextLengthExceeded(fmt.Sprintf(
			"The input does not fit the model's context window of %d tokens.", j.window))
	}
	return n, nil
}
