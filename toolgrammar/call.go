package toolgrammar

import (
	"encoding/json"
	"strings"
)

// What every envelope kind does with a call: report it (CallBegin,
// ArgumentsDelta, CallEnd), move on after it (the next call of a group, or
// text), or give it up as Malformed.

// resetCall forgets the previous call before a new one starts. The kind
// resets its own state in its open.
func (p *Parser) resetCall() {
	p.index = -1
	p.args = p.args[:0]
	p.emitted = 0
}

// flushArgs sends the arguments produced since the last delta.
func (p *Parser) flushArgs() {
	if p.index >= 0 && p.emitted < len(p.args) {
		p.out = append(p.out, Event{Kind: ArgumentsDelta, Text: string(p.args[p.emitted:]), Index: p.index, Offset: p.at})
		p.emitted = len(p.args)
	}
}

// begin reports the call's name.
func (p *Parser) begin(name string, off int64) {
	p.index = p.nCalls
	p.nCalls++
	p.nameStr = validUTF8(name)
	p.out = append(p.out, Event{Kind: CallBegin, Name: p.nameStr, Index: p.index, Offset: off})
}

// end reports the completed call.
func (p *Parser) end(off int64) {
	p.flushArgs()
	p.out = append(p.out, Event{Kind: CallEnd, Name: p.nameStr, Text: string(p.args), Index: p.index, Offset: off})
	p.index = -1
	p.bareOK = true
	p.lead = true
	p.dropWS()
}

// afterCall is where a call that needs nothing more returns to.
func (p *Parser) afterCall() {
	if p.inGroup {
		p.st = sGroup
	} else {
		p.st = sText
	}
}

// stepGroup runs between the calls of a group: the next call's opener or
// the group's closer.
func (p *Parser) stepGroup(s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	j, k := p.c.group.find(s[i:], final)
	if k < 0 && j == 0 {
		return i, true // partial delimiter
	}
	if k < 0 || j != 0 {
		// Anything else ends the group: back to text.
		p.inGroup = false
		p.st = sText
		return i, false
	}
	d := p.c.group.ds[k]
	end := i + len(d.s)
	if d.act == aGroupClose {
		p.inGroup = false
		p.st = sText
		p.endRun()
		return end, false
	}
	p.rawStart = i
	p.out = append(p.out, Event{Kind: CallOpen, Text: d.s, Index: -1, Offset: p.at + int64(end)})
	p.env.open(p, d.s)
	return end, false
}

// fail starts malformed handling at the current byte: with a closer the
// parser skips to it, otherwise the span ends here and the byte is text.
// The stream resumes in text; a kind that owns its text sets afterMal.
func (p *Parser) fail(reason string, hasResync bool) {
	p.reason = reason
	p.skipped = 0
	p.afterMal = sText
	if hasResync {
		p.st = sSkip
	} else {
		p.st = sMalformed
	}
}

func (p *Parser) stepSkip(s string, final bool) (int, bool) {
	j, k := p.c.skip.find(s, final)
	if p.skipped+j > skipLimit {
		n := skipLimit - p.skipped
		if n < 0 {
			n = 0
		}
		p.st = sMalformed
		return n, false
	}
	p.skipped += j
	if k < 0 {
		return j, true
	}
	d := p.c.skip.ds[k]
	p.st = sMalformed
	if d.act == aStop {
		return j, false
	}
	return j + len(d.s), false
}

// malformed reports the raw span of the current call.
func (p *Parser) malformed(reason string) {
	p.flushArgs()
	raw := string(p.raw)
	p.out = append(p.out, Event{Kind: Malformed, Text: validUTF8(raw), Reason: reason, Index: p.index, Offset: p.at})
	p.raw = p.raw[:0]
	p.index = -1
	p.inGroup = false
	if p.opts.Malformed == MalformedAsText && raw != "" {
		p.emit(TextDelta, raw, p.at)
		p.lead = false
		p.bareOK = false
	} else {
		p.lead = true
	}
	p.dropWS()
}

func skipWS(s string) int {
	i := 0
	for i < len(s) && isWS(s[i]) {
		i++
	}
	return i
}

// appendJSONString appends s as the content of a JSON string (no quotes).
func appendJSONString(b []byte, s string) []byte {
	// Validate once, not per run between escapes (multi-line values have
	// an escape per line).
	s = validUTF8(s)
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		if c == '"' || c == '\\' {
			b = append(b, '\\', c)
		} else {
			b = appendControlEscape(b, c)
		}
		start = i + 1
	}
	return append(b, s[start:]...)
}

// unquoteName decodes a JSON string body (without quotes).
func unquoteName(raw []byte) string {
	if !strings.ContainsRune(string(raw), '\\') {
		return string(raw)
	}
	var s string
	if json.Unmarshal([]byte(`"`+string(raw)+`"`), &s) != nil {
		return string(raw)
	}
	return s
}
