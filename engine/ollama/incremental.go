package ollama

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ollama/ollama/api"

	"hearth/engine"
)

// Incremental rendering. A turn that continues a chain renders the whole conversation
// again (at turn 1,000 about 2,000 messages through text/template, tens of
// milliseconds), although all but its last few messages are the previous turn's
// conversation, whose prompt was rendered a moment ago. A template sees the whole message
// list, so the previous prompt cannot simply be extended: the last message before the
// new ones may render differently once it is no longer last, and a template may look at
// the conversation globally (the system message, the tools, the think setting, the
// index of the last user message). So the new prompt is spliced:
//
//	R(all) = R(prefix) minus the tail that changes + the new tail,
//
// where the changing tail and its replacement come from rendering two reduced
// conversations, the prefix's and the whole one's, each keeping only the head (the
// leading system messages and the first message after them) and the same last few
// messages of the prefix, then the new messages. Where the two reduced prompts part is
// where the prefix's prompt stops being part of the new one; everything after it is
// rendered from the reduced whole.
//
// Whether that identity holds is a property of the template (or built-in renderer): it
// is checked once per template, think value and tools-or-not on probe conversations of
// every shape hearth sends (plain turns, parallel calls and their results, reasoning,
// think tags in content, system messages later in the conversation, consecutive
// messages of one role, long tool loops). A template that fails with a window of the
// last few messages is tried with the window reaching back to the last user message
// (templates that treat messages after the last user message differently, like qwen3);
// one that fails both is always rendered whole. Each splice is also checked where it is
// cheap (the prefix's prompt must end with the reduced prefix's changing tail), and
// conversations with images (numbered across the whole prompt) or a system message
// among the skipped messages (templates collect every system message) are rendered
// whole.
//
// Prompts are remembered by a 128-bit hash of everything that goes into them (model
// template and renderer, think value, tools, messages), so a continuation finds its
// parent's prompt whether it came through previous_response_id or a client resending
// the whole history (store: false).

// renderWindow is the number of the prefix's last messages kept in the reduced
// conversations: the message that stops being last, and the one before it for
// templates that look back a message (tool results grouped into one turn). Each kept
// message costs its render twice per splice, some 10 µs through text/template.
const renderWindow = 2

// promptCacheBudget bounds the prompt text kept, over both generations: a 1,000-turn
// chain's prompt is a few hundred kilobytes.
const promptCacheBudget = 64 << 20

// PromptCacheStats says what incremental rendering holds and did.
type PromptCacheStats struct {
	// Entries and Bytes are the prompts kept and their text; Budget bounds Bytes.
	Entries, Bytes, Budget int
	// Incremental counts renders spliced from a kept prompt (or the very prompt
	// kept, rendered again); Full renders of the
	// whole conversation (first turns, misses, templates that are not incremental).
	Incremental, Full uint64
	// Resumed counts prompts saved by an earlier process that a render spliced onto.
	Resumed uint64
}

// ReadPromptCacheStats returns the process's prompt cache statistics.
func ReadPromptCacheStats() PromptCacheStats {
	prompts.mu.Lock()
	defer prompts.mu.Unlock()
	return PromptCacheStats{Entries: len(prompts.cur) + len(prompts.old), Bytes: prompts.curBytes + prompts.oldBytes, Budget: prompts.budget,
		Incremental: prompts.incremental.Load(), Full: prompts.full.Load(), Resumed: prompts.resumed.Load()}
}

var prompts = newPromptCache(promptCacheBudget)

// ResetPromptCache drops every kept prompt and zeroes the counts, as a new process
// starts: for tests of what a continuation after a restart costs and renders.
func ResetPromptCache() {
	prompts.mu.Lock()
	defer prompts.mu.Unlock()
	prompts.cur, prompts.old, prompts.curBytes, prompts.oldBytes = map[promptKey]string{}, map[promptKey]string{}, 0, 0
	prompts.incremental.Store(0)
	prompts.full.Store(0)
	prompts.resumed.Store(0)
}

type promptKey [2]uint64

// promptCache keeps rendered prompts by promptKey in two generations, like the server's
// item cache: when the current one has taken budget/2 bytes it becomes the old one and
// the previous old one is dropped; a hit in the old generation moves forward.
type promptCache struct {
	mu                 sync.Mutex
	cur, old           map[promptKey]string
	curBytes, oldBytes int
	budget             int

	incremental, full atomic.Uint64
	// resumed counts saved prompts taken up (engine.SavedPrompt).
	resumed atomic.Uint64
}

func newPromptCache(budget int) *promptCache {
	return &promptCache{cur: map[promptKey]string{}, old: map[promptKey]string{}, budget: budget}
}

// longest returns the longest kept prompt of keys[i] for min <= i < len(keys), and i.
func (c *promptCache) longest(keys []promptKey, min int) (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(keys) - 1; i >= min; i-- {
		if p, ok := c.cur[keys[i]]; ok {
			return p, i
		}
		if p, ok := c.old[keys[i]]; ok {
			c.putLocked(keys[i], p)
			return p, i
		}
	}
	return "", -1
}

func (c *promptCache) put(k promptKey, p string) {
	c.mu.Lock()
	c.putLocked(k, p)
	c.mu.Unlock()
}

func (c *promptCache) putLocked(k promptKey, p string) {
	if len(p) > c.budget/2 {
		return
	}
	if _, ok := c.cur[k]; ok {
		return
	}
	if c.curBytes+len(p) > c.budget/2 {
		c.old, c.oldBytes = c.cur, c.curBytes
		c.cur, c.curBytes = map[promptKey]string{}, 0
	}
	c.cur[k] = p
	c.curBytes += len(p)
}

// hashSeeds are the two seeds of a promptKey; the cache lives in memory, so seeds of
// the process will do.
var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// keyHasher hashes length-prefixed fields into 128-bit keys, one key per message
// chained onto the previous one: the fields of a message (after the previous key) are
// gathered in buf and hashed in one go with two seeds, as a chain's whole history is
// hashed every turn.
type keyHasher struct {
	key promptKey
	buf []byte
}

func newKeyHasher() *keyHasher { return &keyHasher{buf: make([]byte, 16, 512)} }

// str adds s with its length, so that no two sequences of fields give the same bytes.
func (k *keyHasher) str(s string) {
	k.buf = binary.LittleEndian.AppendUint64(k.buf, uint64(len(s)))
	k.buf = append(k.buf, s...)
}

func (k *keyHasher) bytes(b []byte) {
	k.buf = binary.LittleEndian.AppendUint64(k.buf, uint64(len(b)))
	k.buf = append(k.buf, b...)
}

func (k *keyHasher) num(n int) { k.buf = binary.LittleEndian.AppendUint64(k.buf, uint64(n)) }

// sum hashes the fields added since the last sum onto the previous key and returns
// the new key.
func (k *keyHasher) sum() promptKey {
	binary.LittleEndian.PutUint64(k.buf[0:8], k.key[0])
	binary.LittleEndian.PutUint64(k.buf[8:16], k.key[1])
	k.key = promptKey{maphash.Bytes(hashSeeds[0], k.buf), maphash.Bytes(hashSeeds[1], k.buf)}
	k.buf = k.buf[:16]
	return k.key
}

// context adds what a prompt depends on besides the messages: everything RenderPrompt
// reads of show, the think value and the tools.
func (k *keyHasher) context(show *api.ShowResponse, rendererName, parserName string, tools []engine.Tool, think *api.ThinkValue) {
	k.str(show.Template)
	// The Jinja templates that render the model (the GGUF's, the family's), with the
	// tokenizer's BOS and EOS texts they are handed: a prompt kept from another
	// template is no prefix of this one's.
	if sources, err := TemplateSources(show); err == nil {
		for _, s := range sources {
			k.str(s.Kind)
			k.str(s.Text)
			k.str(s.BOS)
			k.str(s.EOS)
		}
	}
	k.str(show.System)
	k.str(rendererName)
	k.str(parserName)
	k.str(show.Details.Family)
	k.num(len(show.Capabilities))
	for _, c := range show.Capabilities {
		k.str(string(c))
	}
	k.num(len(show.Messages))
	for _, m := range show.Messages {
		k.str(m.Role)
		k.str(m.Content)
		k.str(m.Thinking)
	}
	if think == nil {
		k.str("think unset")
	} else {
		k.str(fmt.Sprintf("think %T %v", think.Value, think.Value))
	}
	k.num(len(tools))
	for _, t := range tools {
		k.str(t.Name)
		k.str(t.Description)
		k.bytes(t.Parameters)
	}
}

func (k *keyHasher) message(m *engine.Message) {
	k.str(m.Role)
	k.str(m.Content)
	k.str(m.Thinking)
	k.str(m.ToolName)
	k.str(m.ToolCallID)
	k.num(len(m.Images))
	for _, img := range m.Images {
		k.bytes(img)
	}
	k.num(len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		k.str(c.ID)
		k.num(c.Index)
		k.str(c.Name)
		k.bytes(c.Arguments)
	}
}

// keptKeys is what a render keeps for the next turn's (engine.Conversation.Rendered):
// the messages it hashed that never change (engine.Conversation.Stable) and their keys
// (keys[i] is of msgs[:i]).
type keptKeys struct {
	msgs []engine.Message
	keys []promptKey
}

// sameMessage reports whether a and b have the same fields, the ones a promptKey
// hashes.
func sameMessage(a, b *engine.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.Thinking != b.Thinking || a.ToolName != b.ToolName ||
		a.ToolCallID != b.ToolCallID || len(a.Images) != len(b.Images) || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.Images {
		if string(a.Images[i]) != string(b.Images[i]) {
			return false
		}
	}
	for i := range a.ToolCalls {
		x, y := &a.ToolCalls[i], &b.ToolCalls[i]
		if x.ID != y.ID || x.Index != y.Index || x.Name != y.Name || string(x.Arguments) != string(y.Arguments) {
			return false
		}
	}
	return true
}

// stableDigest names msgs rendered with everything else a prompt depends on (the
// fields a promptKey hashes), for prompts saved across processes: SHA-256 rather
// than maphash, whose seeds are the process's, over the same length-prefixed fields,
// after the build of hearth and Ollama that renders (a new build may render the same
// messages otherwise).
func stableDigest(show *api.ShowResponse, rendererName, parserName string, tools []engine.Tool, think *api.ThinkValue, msgs []engine.Message) []byte {
	h := sha256.New()
	kh := newKeyHasher()
	flush := func() {
		h.Write(kh.buf[16:])
		kh.buf = kh.buf[:16]
	}
	kh.str(renderBuild())
	kh.context(show, rendererName, parserName, tools, think)
	flush()
	for i := range msgs {
		kh.message(&msgs[i])
		flush()
	}
	return h.Sum(nil)
}

// renderBuild names the build that renders prompts: hearth's revision and Ollama's
// module version, as the Go toolchain stamped them. A build without a revision (go
// test, go run outside a checkout) is "devel": its saved prompts are trusted by
// later devel builds, which a developer changing the renderer must keep in mind.
var renderBuild = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	id := bi.Main.Path + " " + bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			id += " " + s.Key + "=" + s.Value
		}
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/ollama/ollama" {
			id += " " + d.Path + "@" + d.Version
		}
	}
	return id
})

// PromptDigest names conv rendered with think across processes (engine.PromptDigester).
func (r renderer) PromptDigest(conv *engine.Conversation, think *engine.Think) ([]byte, bool) {
	if r.show.RemoteHost != "" || len(conv.Images) > 0 {
		return nil, false
	}
	for i := range conv.Messages {
		if len(conv.Messages[i].Images) > 0 {
			return nil, false
		}
	}
	rendererName, parserName, err := ModelRenderer(r.show)
	if err != nil {
		return nil, false
	}
	var tv *api.ThinkValue
	if think != nil {
		tv = &api.ThinkValue{Value: think.Value}
	}
	return stableDigest(r.show, rendererName, parserName, conv.Tools, tv, conv.Messages), true
}

// renderKeyed renders conv as RenderPrompt does, reusing a kept prompt of a prefix of
// its messages where the template allows.
func renderKeyed(show *api.ShowResponse, conv *engine.Conversation, think *api.ThinkValue) (string, error) {
	if show.RemoteHost != "" {
		return RenderPrompt(show, conv, think)
	}
	rendererName, parserName, err := ModelRenderer(show)
	if err != nil {
		return "", err
	}
	msgs := conv.Messages
	kh := newKeyHasher()
	kh.context(show, rendererName, parserName, conv.Tools, think)
	keys := make([]promptKey, len(msgs)+1)
	keys[0] = kh.sum()
	images := false
	for i := range msgs {
		images = images || len(msgs[i].Images) > 0
	}
	// The messages the previous turn's render hashed need no hashing again: their
	// keys are kept, and the messages compared (the engine hands over the very
	// strings, so a comparison is a pointer's).
	start := 0
	if prior, ok := conv.Prior.(*keptKeys); ok && prior.keys[0] == keys[0] {
		n := min(len(prior.msgs), len(msgs))
		if n > 0 && &prior.msgs[0] == &msgs[0] {
			start = n // the same messages, in the same array, never written since
		}
		for start < n && sameMessage(&prior.msgs[start], &msgs[start]) {
			start++
		}
		copy(keys[1:start+1], prior.keys[1:start+1])
		kh.key = keys[start]
	}
	for i := start; i < len(msgs); i++ {
		kh.message(&msgs[i])
		keys[i+1] = kh.sum()
	}
	// Only the messages that never change: the array may go on with the next turn's.
	stable := min(conv.Stable, len(msgs))
	conv.Rendered = &keptKeys{msgs: msgs[:stable:stable], keys: keys[:stable+1]}
	if !images {
		// The longest kept prefix; the whole conversation itself when it was rendered
		// before (a retried request, the window check rendering again).
		prev, p := prompts.longest(keys, minSplicePrefix)
		if r := conv.Resume; r != nil && r.Messages > p && r.Messages >= minSplicePrefix && r.Messages <= len(msgs) &&
			string(stableDigest(show, rendererName, parserName, conv.Tools, think, msgs[:r.Messages])) == string(r.Digest) {
			// A prompt saved by an earlier process (engine/saved.go), of these very
			// messages: as good as one kept here.
			prompts.put(keys[r.Messages], r.Prompt)
			prev, p = r.Prompt, r.Messages
			prompts.resumed.Add(1)
		}
		if p == len(msgs) {
			prompts.incremental.Add(1)
			return prev, nil
		}
		if p >= 0 {
			if mode := detectMode(show, think, len(conv.Tools) > 0); mode != modeWhole {
				// A reduced conversation the template refuses is no answer about the
				// whole one: that is rendered whole below, and fails there if at all.
				out, ok, err := splice(show, think, conv.Tools, msgs, p, prev, mode)
				if err == nil && ok {
					prompts.incremental.Add(1)
					prompts.put(keys[len(msgs)], out)
					return out, nil
				}
			}
		}
	}
	out, err := RenderPrompt(show, conv, think)
	if err != nil {
		return "", err
	}
	prompts.full.Add(1)
	if !images { // images are numbered across the prompt: never spliced
		prompts.put(keys[len(msgs)], out)
	}
	return out, nil
}

// minSplicePrefix is the shortest prefix worth splicing onto: shorter conversations
// render whole in about the time the two reduced renders take.
const minSplicePrefix = renderWindow + 4

// spliceMode is how far back a template's reduced conversations must reach.
type spliceMode uint8

const (
	modeWhole         spliceMode = iota // not incremental: render whole
	modeWindow                          // the head and the prefix's last renderWindow messages
	modeLastAssistant                   // ... reaching back to the prefix's last assistant message
	modeLastUser                        // ... and to its last user message
)

// splice renders msgs from prev, the prompt of msgs[:p] (see the top of this file); ok
// false means it cannot and the conversation must be rendered whole.
func splice(show *api.ShowResponse, think *api.ThinkValue, tools []engine.Tool, msgs []engine.Message, p int, prev string, mode spliceMode) (string, bool, error) {
	h := headLen(msgs)
	if h >= p || !roleBreak(msgs[h-1], msgs[h]) {
		return "", false, nil
	}
	// The window counts messages other than system ones: templates and renderers may
	// show those elsewhere, or not at all.
	s := p
	for n := 0; s > h && n < renderWindow; {
		if s--; msgs[s].Role != "system" {
			n++
		}
	}
	// Templates that treat the last assistant message (lfm2 keeps only its think
	// block) or the messages after the last user message (qwen3) apart need the
	// window to reach back to them.
	back := func(role string) bool {
		for i := p - 1; i >= h; i-- {
			if msgs[i].Role == role {
				s = min(s, i)
				return true
			}
		}
		return false
	}
	if mode >= modeLastAssistant {
		back("assistant")
	}
	if mode >= modeLastUser && !back("user") &&
		slices.ContainsFunc(msgs[p:], func(m engine.Message) bool { return m.Role == "user" }) {
		// The prefix's last user message is in the head, and a new one moves the last
		// user message: every message between them renders otherwise now (qwen3's
		// templates drop the reasoning of turns before the last user message), and
		// the head is not re-rendered from the prefix's side.
		return "", false, nil
	}
	// The cut must fall where the template layer's collation (consecutive messages of
	// one role are merged) breaks anyway, join the head as the whole does, and keep
	// the parity of indexes for templates that alternate.
	for s > h && ((s-h)%2 != 0 || !roleBreak(msgs[s-1], msgs[s]) || !roleBreak(msgs[h-1], msgs[s])) {
		s--
	}
	if s <= h+1 {
		return "", false, nil
	}
	for i := h; i < s; i++ {
		if msgs[i].Role == "system" {
			return "", false, nil // collected into .System by every template
		}
	}
	reduced := make([]engine.Message, 0, h+len(msgs)-s)
	reduced = append(reduced, msgs[:h]...)
	reduced = append(reduced, msgs[s:]...)
	a, err := RenderPrompt(show, &engine.Conversation{Messages: reduced[:h+p-s], Tools: tools}, think)
	if err != nil {
		return "", false, err
	}
	b, err := RenderPrompt(show, &engine.Conversation{Messages: reduced, Tools: tools}, think)
	if err != nil {
		return "", false, err
	}
	c := sharedPrefixLen(a, b)
	if !strings.HasSuffix(prev, a[c:]) {
		return "", false, nil
	}
	return prev[:len(prev)-(len(a)-c)] + b[c:], true, nil
}

// headLen is the number of leading messages every reduced conversation keeps: the
// system messages at the start and the first message after them, which templates
// treat apart (index 0, the system prompt folded into the first user turn), with the
// messages of its role that follow it (the template layer merges them into one; Codex
// starts with three user messages).
func headLen(msgs []engine.Message) int {
	h := 0
	for h < len(msgs) && msgs[h].Role == "system" {
		h++
	}
	h = min(h+1, len(msgs))
	for h < len(msgs) && !roleBreak(msgs[h-1], msgs[h]) {
		h++
	}
	return h
}

// roleBreak reports whether the template layer keeps b apart from a message a before
// it (it merges consecutive messages of one role, tool results excepted).
func roleBreak(a, b engine.Message) bool { return a.Role != b.Role || b.Role == "tool" }

var sharedPrefixLen = engine.SharedPrefixLen

// modeKey is what a splice mode is detected for.
type modeKey struct {
	ctx   promptKey
	tools bool
}

var modes sync.Map // modeKey -> spliceMode

// detectMode returns the splice mode of show's template for think, with tools shown or
// not, checking it on the probe conversations the first time.
func detectMode(show *api.ShowResponse, think *api.ThinkValue, tools bool) spliceMode {
	rendererName, parserName, err := ModelRenderer(show)
	if err != nil {
		return modeWhole
	}
	kh := newKeyHasher()
	kh.context(show, rendererName, parserName, nil, think)
	key := modeKey{kh.sum(), tools}
	if m, ok := modes.Load(key); ok {
		return m.(spliceMode)
	}
	var probeTools []engine.Tool
	if tools {
		probeTools = []engine.Tool{
			{Name: "get_weather", Description: "Weather of a city", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time", Description: "Local time", Parameters: []byte(`{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}`)},
		}
	}
	mode := modeWhole
	for _, m := range []spliceMode{modeWindow, modeLastAssistant, modeLastUser} {
		if probe(show, think, probeTools, m) {
			mode = m
			break
		}
	}
	modes.Store(key, mode)
	return mode
}

// probe reports whether every splice of mode onto every prefix of the probe
// conversations equals the whole render.
func probe(show *api.ShowResponse, think *api.ThinkValue, tools []engine.Tool, mode spliceMode) bool {
	for _, conv := range probeConversations() {
		whole := make([]string, len(conv)+1)
		for i := 1; i <= len(conv); i++ {
			p, err := RenderPrompt(show, &engine.Conversation{Messages: conv[:i], Tools: tools}, think)
			if err != nil {
				return false
			}
			whole[i] = p
		}
		for p := minSplicePrefix; p < len(conv); p++ {
			for _, d := range []int{1, 2, 3, 5} {
				if p+d > len(conv) {
					break
				}
				got, ok, err := splice(show, think, tools, conv[:p+d], p, whole[p], mode)
				if err != nil || ok && got != whole[p+d] {
					return false
				}
			}
		}
	}
	return true
}

// probeConversations are the shapes a template is checked on before its prompts are
// spliced.
var probeConversations = sync.OnceValue(func() [][]engine.Message {
	sys := func(s string) engine.Message { return engine.Message{Role: "system", Content: s} }
	user := func(s string) engine.Message { return engine.Message{Role: "user", Content: s} }
	asst := func(s string) engine.Message { return engine.Message{Role: "assistant", Content: s} }
	thinking := func(t, s string) engine.Message { return engine.Message{Role: "assistant", Thinking: t, Content: s} }
	call := func(t string, names ...string) engine.Message {
		m := engine.Message{Role: "assistant", Thinking: t}
		for i, n := range names {
			m.ToolCalls = append(m.ToolCalls, engine.ToolCall{ID: fmt.Sprintf("call_%s_%d", n, i), Index: i, Name: n,
				Arguments: []byte(fmt.Sprintf(`{"city":"Paris %d"}`, i))})
		}
		return m
	}
	result := func(name, s string) engine.Message {
		return engine.Message{Role: "tool", ToolName: name, ToolCallID: "call_" + name + "_0", Content: s}
	}
	plain := []engine.Message{sys("You are terse.")}
	for i := range 8 {
		plain = append(plain, user(fmt.Sprintf("Question %d?", i)), asst(fmt.Sprintf("Answer %d.", i)))
	}
	noSystem := slices.Clone(plain[1:])
	// Codex starts with its instructions, a developer message and three user
	// messages (instructions files, the environment, the task).
	codex := []engine.Message{sys("Instructions."), sys("Developer."), user("AGENTS.md."), user("Environment."), user("Task.")}
	for i := range 6 {
		codex = append(codex, call(fmt.Sprintf("Step %d.", i), "get_weather"), result("get_weather", "ok"))
	}
	codex = append(codex, asst("Done."), user("Again."), call("", "get_time"), result("get_time", "noon"), asst("Noon."))
	// A history that starts with the model's greeting: the head has no user message,
	// so a template that treats the last user message apart shows it in the probes.
	greeting := []engine.Message{sys("Be kind."), asst("Hello! How can I help?")}
	for i := range 3 {
		greeting = append(greeting, user(fmt.Sprintf("Task %d.", i)), user("Details."), call("", "get_time"),
			result("get_time", "noon"), call("", "get_weather"), result("get_weather", "sun"), asst("Done."))
	}
	greeting = greeting[:len(greeting)-1]

	var tools []engine.Message
	tools = append(tools, sys("Use the tools."), user("Weather and time in Paris?"))
	for i := range 5 {
		tools = append(tools, call(fmt.Sprintf("Step %d.", i), "get_weather", "get_time"),
			result("get_weather", fmt.Sprintf("sunny %d", i)), result("get_time", "noon"))
	}
	tools = append(tools, thinking("Done.", "Sunny at noon."), user("And tomorrow?"), call("", "get_weather"),
		result("get_weather", "rain"), asst("Rain."), user("Thanks."), asst("You are welcome."))

	var reasoning []engine.Message
	reasoning = append(reasoning, user("Think first."))
	for i := range 7 {
		reasoning = append(reasoning, thinking(fmt.Sprintf("Reasoning %d.", i), fmt.Sprintf("Answer %d.", i)),
			user(fmt.Sprintf("Next %d?", i)))
		if i%3 == 1 {
			reasoning = append(reasoning, asst(fmt.Sprintf("<think>Inline %d.</think>Tagged answer.", i)), user("More."))
		}
	}

	var mixed []engine.Message
	mixed = append(mixed, sys("First system."), sys("Second system."), user("Hello."), asst("Hi."))
	for i := range 4 {
		mixed = append(mixed, user(fmt.Sprintf("Part %d.", i)), user("And more."), call("", "get_time"), result("get_time", "noon"),
			asst("Noted."), asst("Anything else?"))
	}
	mixed = append(mixed, sys("Late system."), user("Last?"), asst("Yes."), user("Bye."))

	// Answers with think blocks (in the field and in the content) followed by
	// several messages before the next answer: templates that keep the reasoning of
	// the last answer only.
	var late []engine.Message
	late = append(late, sys("Reason."), user("Start."))
	for i := range 4 {
		late = append(late, thinking(fmt.Sprintf("Why %d.", i), fmt.Sprintf("<think>Inline %d.</think>Answer %d.", i, i)),
			sys(fmt.Sprintf("Be brief %d.", i)), user("Go on."), user("Really."),
			call(fmt.Sprintf("Check %d.", i), "get_weather", "get_time", "get_weather"),
			result("get_weather", "sun"), result("get_time", "noon"), result("get_weather", "sun"))
	}
	late = append(late, asst("Done."), user("Bye."))
	// Inputs of two and three messages (a system message and a question, three
	// results) after a think block in the content, at both parities. A system message
	// stops splices after it (it would be among the skipped messages), so each probe
	// ends with the one it has.
	inline := func(i int) engine.Message { return asst(fmt.Sprintf("<think>Inline %d.</think>Answer %d.", i, i)) }
	convs := [][]engine.Message{plain, noSystem, codex, greeting, tools, reasoning, mixed, late}
	for parity := range 2 {
		multi := []engine.Message{user("Start.")}
		if parity == 1 {
			multi = append(multi, asst("Hello."), user("Hi."))
		}
		for i := range 3 {
			c := call("", "get_weather", "get_time", "get_weather")
			c.Content = fmt.Sprintf("<think>Calls %d.</think>", i)
			multi = append(multi, inline(i), user("Go on."), c,
				result("get_weather", "sun"), result("get_time", "noon"), result("get_weather", "rain"))
		}
		multi = append(multi, inline(9), sys("Note."), user("One more."), inline(10), user("Last."))
		convs = append(convs, multi)
	}
	// And conversations of random shape, for the combinations no list thinks of.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 8 {
		var conv []engine.Message
		if rng.IntN(2) == 0 {
			conv = append(conv, sys("You are helpful."))
		}
		if i%4 == 3 {
			conv = append(conv, asst("Hello."))
		}
		for turn := range 16 {
			conv = appendProbeTurn(rng, conv, turn, i%2 == 0)
		}
		convs = append(convs, conv)
	}
	return convs
})

// appendProbeTurn appends a turn of random shape to conv: the client's input (the
// results of the calls just made, or a question, sometimes two, sometimes after a
// system message when system is set) and the model's answer (reasoning or not, think
// tags in the content, one to three calls, or text).
func appendProbeTurn(rng *rand.Rand, conv []engine.Message, turn int, system bool) []engine.Message {
	var pending []engine.ToolCall
	if n := len(conv); n > 0 {
		pending = conv[n-1].ToolCalls
	}
	if len(pending) > 0 && rng.IntN(4) > 0 {
		for _, c := range pending {
			conv = append(conv, engine.Message{Role: "tool", ToolName: c.Name, ToolCallID: c.ID, Content: fmt.Sprintf("result %d", turn)})
		}
	} else {
		if system && rng.IntN(6) == 0 {
			conv = append(conv, engine.Message{Role: "system", Content: fmt.Sprintf("Note %d.", turn)})
		}
		conv = append(conv, engine.Message{Role: "user", Content: fmt.Sprintf("Question %d?", turn)})
		if rng.IntN(5) == 0 {
			conv = append(conv, engine.Message{Role: "user", Content: "More."})
		}
	}
	out := engine.Message{Role: "assistant"}
	if rng.IntN(2) == 0 {
		out.Thinking = fmt.Sprintf("Thinking %d.", turn)
	}
	switch k := rng.IntN(6); {
	case k < 3:
		for i := range 1 + rng.IntN(3) {
			name := []string{"get_weather", "get_time"}[rng.IntN(2)]
			out.ToolCalls = append(out.ToolCalls, engine.ToolCall{ID: fmt.Sprintf("call_%d_%d", turn, i), Index: i, Name: name,
				Arguments: []byte(fmt.Sprintf(`{"city":"Paris","n":%d}`, turn))})
		}
		if rng.IntN(3) == 0 {
			out.Content = "Let me check."
		}
	case k == 3:
		out.Content = fmt.Sprintf("<think>Inline %d.</think>Answer %d.", turn, turn)
	default:
		out.Content = fmt.Sprintf("Answer %d.", turn)
	}
	return append(conv, out)
}
