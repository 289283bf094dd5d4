package ollama

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
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
// conversations: the message that stops being last, and enough before it for
// templates that look back a message or two.
const renderWindow = 6

// promptCacheBudget bounds the prompt text kept, over both generations: a 1,000-turn
// chain's prompt is a few hundred kilobytes.
const promptCacheBudget = 64 << 20

// PromptCacheStats says what incremental rendering holds and did.
type PromptCacheStats struct {
	// Entries and Bytes are the prompts kept and their text.
	Entries, Bytes int
	// Incremental counts renders spliced from a kept prompt; Full renders of the
	// whole conversation (first turns, misses, templates that are not incremental).
	Incremental, Full uint64
}

// ReadPromptCacheStats returns the process's prompt cache statistics.
func ReadPromptCacheStats() PromptCacheStats {
	prompts.mu.Lock()
	defer prompts.mu.Unlock()
	return PromptCacheStats{Entries: len(prompts.cur) + len(prompts.old), Bytes: prompts.curBytes + prompts.oldBytes,
		Incremental: prompts.incremental.Load(), Full: prompts.full.Load()}
}

var prompts = newPromptCache(promptCacheBudget)

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

// keyHasher writes the same bytes to two maphash states, for 128-bit keys.
type keyHasher struct{ h [2]maphash.Hash }

func newKeyHasher() *keyHasher {
	k := &keyHasher{}
	k.h[0].SetSeed(hashSeeds[0])
	k.h[1].SetSeed(hashSeeds[1])
	return k
}

// str writes s with its length, so that no two sequences of fields write the same bytes.
func (k *keyHasher) str(s string) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
	for i := range k.h {
		k.h[i].Write(n[:])
		k.h[i].WriteString(s)
	}
}

func (k *keyHasher) bytes(b []byte) {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
	for i := range k.h {
		k.h[i].Write(n[:])
		k.h[i].Write(b)
	}
}

func (k *keyHasher) sum() promptKey { return promptKey{k.h[0].Sum64(), k.h[1].Sum64()} }

// context writes what a prompt depends on besides the messages: everything RenderPrompt
// reads of show, the think value and the tools.
func (k *keyHasher) context(show *api.ShowResponse, rendererName, parserName string, tools []engine.Tool, think *api.ThinkValue) {
	k.str(show.Template)
	k.str(show.System)
	k.str(rendererName)
	k.str(parserName)
	k.str(show.Details.Family)
	k.str(fmt.Sprint(len(show.Messages), show.Capabilities))
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
	k.str(fmt.Sprint("tools ", len(tools)))
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
	k.str(fmt.Sprint(len(m.Images), len(m.ToolCalls)))
	for _, img := range m.Images {
		k.bytes(img)
	}
	for _, c := range m.ToolCalls {
		k.str(c.ID)
		k.str(fmt.Sprint(c.Index))
		k.str(c.Name)
		k.bytes(c.Arguments)
	}
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
		kh.message(&msgs[i])
		keys[i+1] = kh.sum()
	}
	if !images {
		if prev, p := prompts.longest(keys[:len(msgs)], minSplicePrefix); p >= 0 {
			if mode := detectMode(show, think, len(conv.Tools) > 0); mode != modeWhole {
				out, ok, err := splice(show, think, conv.Tools, msgs, p, prev, mode)
				if err != nil {
					return "", err
				}
				if ok {
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
	modeWhole    spliceMode = iota // not incremental: render whole
	modeWindow                     // the head and the prefix's last renderWindow messages
	modeLastUser                   // ... reaching back to the prefix's last user message
)

// splice renders msgs from prev, the prompt of msgs[:p] (see the top of this file); ok
// false means it cannot and the conversation must be rendered whole.
func splice(show *api.ShowResponse, think *api.ThinkValue, tools []engine.Tool, msgs []engine.Message, p int, prev string, mode spliceMode) (string, bool, error) {
	h := headLen(msgs)
	if h >= p || !roleBreak(msgs[h-1], msgs[h]) {
		return "", false, nil
	}
	s := p - renderWindow
	if mode == modeLastUser {
		for i := p - 1; i >= h; i-- {
			if msgs[i].Role == "user" {
				s = min(s, i)
				break
			}
		}
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
	var out strings.Builder
	out.Grow(len(prev) - (len(a) - c) + len(b) - c)
	out.WriteString(prev[:len(prev)-(len(a)-c)])
	out.WriteString(b[c:])
	return out.String(), true, nil
}

// headLen is the number of leading messages every reduced conversation keeps: the
// system messages at the start and the first message after them, which templates
// treat apart (index 0, the system prompt folded into the first user turn).
func headLen(msgs []engine.Message) int {
	h := 0
	for h < len(msgs) && msgs[h].Role == "system" {
		h++
	}
	return min(h+1, len(msgs))
}

// roleBreak reports whether the template layer keeps b apart from a message a before
// it (it merges consecutive messages of one role, tool results excepted).
func roleBreak(a, b engine.Message) bool { return a.Role != b.Role || b.Role == "tool" }

func sharedPrefixLen(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

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
	for _, m := range []spliceMode{modeWindow, modeLastUser} {
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
	return [][]engine.Message{plain, noSystem, tools, reasoning, mixed}
})
