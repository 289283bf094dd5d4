package toolgrammar

import "strings"

// maxHeader bounds a harmony message header; a longer one is not a header.
const maxHeader = 512

// stepHText is harmony's outside-a-message state. Output normally starts
// with a header (the prompt ends with <|start|>assistant), so text here is
// rare: a model that skipped the header.
func (p *Parser) stepHText(s string, final bool) (int, bool) {
	j, k := p.c.text.find(s, final)
	p.emitRun(TextDelta, s[:j], p.at+int64(j))
	if k < 0 {
		return j, true
	}
	d := p.c.text.ds[k]
	end := j + len(d.s)
	switch d.act {
	case aHStart:
		p.endRun()
		p.rawStart = j
		p.hdr = p.hdr[:0]
		p.st = sHHeader
	case aHChannel:
		p.endRun()
		p.rawStart = j
		p.hdr = append(p.hdr[:0], d.s...)
		p.st = sHHeader
	}
	return end, false
}

func (p *Parser) stepHHeader(s string, final bool) (int, bool) {
	j, k := p.c.hHeader.find(s, final)
	p.hdr = append(p.hdr, s[:j]...)
	if len(p.hdr) > maxHeader {
		p.fail("harmony header too long", true)
		return j, false
	}
	if k < 0 {
		return j, true
	}
	d := p.c.hHeader.ds[k]
	if d.act == aStop {
		p.fail("harmony header without "+p.e.Message, false)
		return j, false
	}
	end := j + len(d.s)
	channel, recipient := p.parseHeader(string(p.hdr))
	switch {
	case recipient != "":
		p.resetCall()
		p.out = append(p.out, Event{Kind: CallOpen, Index: -1, Offset: p.at + int64(end)})
		p.begin(recipient, p.at+int64(end))
		p.args = p.args[:0]
		p.sub = 0
		p.st = sHCall
	case channel == p.e.ReasoningChannel:
		p.st = sHReason
	default:
		p.st = sHBody
	}
	p.lead = true
	p.dropWS()
	return end, false
}

// parseHeader reads the channel and the function a header addresses, e.g.
// "<|channel|>commentary to=functions.get_weather <|constrain|>json".
func (p *Parser) parseHeader(h string) (channel, name string) {
	if i := strings.Index(h, p.e.Channel); i >= 0 {
		channel = headerToken(h[i+len(p.e.Channel):])
	}
	if i := strings.Index(h, "to="); i >= 0 {
		rec := headerToken(h[i+3:])
		switch {
		case strings.HasPrefix(rec, p.e.Recipient):
			name = rec[len(p.e.Recipient):]
		case rec != "" && rec != "assistant" && rec != "user" && rec != "all":
			name = rec // a built-in tool such as browser.search
		}
	}
	return channel, name
}

func headerToken(s string) string {
	s = strings.TrimLeft(s, " \t\n")
	i := 0
	for i < len(s) && !isWS(s[i]) && s[i] != '<' {
		i++
	}
	return s[:i]
}

// stepHBody runs an analysis (reasoning) or final/commentary (text) body.
func (p *Parser) stepHBody(s string, final bool) (int, bool) {
	kind := TextDelta
	if p.st == sHReason {
		kind = ReasoningDelta
	}
	j, k := p.c.hBody.find(s, final)
	p.emitRun(kind, s[:j], p.at+int64(j))
	if k < 0 {
		return j, true
	}
	d := p.c.hBody.ds[k]
	end := j + len(d.s)
	if d.act == aStop {
		end = j
	}
	p.endRun()
	if kind == ReasoningDelta {
		p.out = append(p.out, Event{Kind: ReasoningEnd, Index: -1, Offset: p.at + int64(end)})
	}
	p.st = sHText
	return end, false
}

func (p *Parser) stepHCall(s string, final bool) (int, bool) {
	i := 0
	if p.sub == 0 {
		i = skipWS(s)
		if i == len(s) {
			return i, true
		}
		if s[i] != '{' {
			p.fail("arguments must be a JSON object", true)
			return i, false
		}
		p.vs.reset()
		p.sub = 1
	}
	n, done, err := p.vs.scan(s[i:], &p.args, false)
	i += n
	if err != "" {
		p.fail("arguments: "+string(err), true)
		return i, false
	}
	if done {
		p.end(p.at + int64(i))
		p.st = sHAfter
		return i, false
	}
	return i, true
}

// stepHAfter consumes the <|call|> (or <|end|>) after a call's arguments.
func (p *Parser) stepHAfter(s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	j, k := p.c.hAfter.find(s[i:], final)
	if k < 0 && j == 0 {
		return i, true
	}
	p.st = sHText
	if k >= 0 && j == 0 && p.c.hAfter.ds[k].act != aStop {
		return i + len(p.c.hAfter.ds[k].s), false
	}
	return i, false
}
