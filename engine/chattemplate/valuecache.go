package chattemplate

import (
	"encoding/binary"
	"regexp"
	"strings"
	"sync"

	"github.com/ardanlabs/jinja"
)

// Converted messages and tools are kept between renders. Turn N+1 of a chain hands the
// template the messages and tools of turn N again, and converting them into template
// values (dicts, the tool calls' arguments and the tools' schemas decoded from JSON) is
// about 40% of the time of a long render and half the allocations of a short one. The key is the message's whole content, so a hit is the same message, never a
// lookalike; the cache keeps two generations and drops the older when the newer has
// grown past half the budget, so it holds at least the messages of the chains rendered
// lately and never more than valueCacheBudget bytes of keys.
//
// A cached value is shared by every render that meets the message, so it must not
// change: templates that could change a value in place (the library, unlike Hugging
// Face's immutable sandbox, runs list.append, dict.update and `set x.y = ...` on any
// dict) are rendered without the cache (see mutatesValues).

// valueCacheBudget bounds the bytes of keys kept, over both generations (the values
// take a few times their keys): a 1,000-turn chain's 4,000 messages are about 600 KB of
// keys, so several long chains stay cached.
const valueCacheBudget = 8 << 20

type valueCache struct {
	sync.Mutex
	cur, old   map[string]jinja.Value
	bytes      int
	hits, miss uint64
}

var messageValues = valueCache{cur: map[string]jinja.Value{}, old: map[string]jinja.Value{}}

// cachedValue returns the value convert makes for key, converted once per distinct key.
func cachedValue(key string, convert func() jinja.Value) jinja.Value {
	c := &messageValues
	c.Lock()
	if v, ok := c.cur[key]; ok {
		c.hits++
		c.Unlock()
		return v
	}
	if v, ok := c.old[key]; ok {
		c.hits++
		c.put(key, v)
		c.Unlock()
		return v
	}
	c.miss++
	c.Unlock()
	v := convert()
	c.Lock()
	c.put(key, v)
	c.Unlock()
	return v
}

// put stores v in the current generation, making it the old one past half the budget.
func (c *valueCache) put(key string, v jinja.Value) {
	if _, ok := c.cur[key]; ok {
		return
	}
	if c.bytes+len(key) > valueCacheBudget/2 {
		c.old, c.cur, c.bytes = c.cur, map[string]jinja.Value{}, 0
	}
	c.cur[key] = v
	c.bytes += len(key)
}

// cacheKey is every field of the message, each prefixed by its length, so that two
// messages have the same key only when they are the same message.
func (m Message) cacheKey() string {
	var b strings.Builder
	b.WriteByte('m')
	num := func(n int) {
		var buf [binary.MaxVarintLen64]byte
		b.Write(buf[:binary.PutUvarint(buf[:], uint64(n))])
	}
	field := func(s string) {
		num(len(s))
		b.WriteString(s)
	}
	flag := func(on bool) {
		if on {
			b.WriteByte(1)
		} else {
			b.WriteByte(0)
		}
	}
	field(m.Role)
	flag(m.Content.Null)
	flag(m.Content.IsParts)
	field(m.Content.Text)
	num(len(m.Content.Parts))
	for _, p := range m.Content.Parts {
		field(p.Type)
		num(len(p.Fields))
		for _, f := range p.Fields {
			field(f.Key)
			field(string(f.Value))
		}
	}
	flag(m.ReasoningContent != nil)
	if m.ReasoningContent != nil {
		field(*m.ReasoningContent)
	}
	flag(m.Thinking != nil)
	if m.Thinking != nil {
		field(*m.Thinking)
	}
	flag(m.ToolCalls != nil)
	num(len(m.ToolCalls))
	for _, c := range m.ToolCalls {
		field(c.ID)
		field(c.Type)
		field(c.Function.Name)
		field(string(c.Function.Arguments))
	}
	field(m.ToolCallID)
	field(m.Name)
	return b.String()
}

// cacheKey is every field of the tool, as Message.cacheKey writes a message's.
func (t Tool) cacheKey() string {
	var b strings.Builder
	b.WriteByte('t')
	for _, s := range []string{t.Type, t.Function.Name, t.Function.Description, string(t.Function.Parameters)} {
		var buf [binary.MaxVarintLen64]byte
		b.Write(buf[:binary.PutUvarint(buf[:], uint64(len(s)))])
		b.WriteString(s)
	}
	if t.Function.Parameters == nil {
		b.WriteByte(0) // no parameters, apart from empty ones
	}
	return b.String()
}

// ValueCacheStats says how often a message's converted value was found.
func ValueCacheStats() (hits, misses uint64, entries int) {
	c := &messageValues
	c.Lock()
	defer c.Unlock()
	return c.hits, c.miss, len(c.cur) + len(c.old)
}

var (
	mutatingCall = regexp.MustCompile(`\.\s*(append|pop|insert|update|extend|remove|clear|setdefault|sort|reverse)\s*\(`)
	attributeSet = regexp.MustCompile(`\bset\s+(\w+)\s*\.\s*\w+\s*=`)
)

// mutatesValues says whether a template may change a value it was handed: it calls a
// method that changes a list or dict, or assigns an attribute of something other than a
// namespace it made itself.
func mutatesValues(source string) bool {
	if mutatingCall.MatchString(source) {
		return true
	}
	for _, m := range attributeSet.FindAllStringSubmatch(source, -1) {
		ns := regexp.MustCompile(`\bset\s+` + regexp.QuoteMeta(m[1]) + `\s*=\s*namespace\s*\(`)
		if !ns.MatchString(source) {
			return true
		}
	}
	return false
}
