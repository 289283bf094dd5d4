package toolgrammar

import "strings"

// harmony is the state of the Harmony envelope (gpt-oss). Harmony owns the
// whole stream, not only the calls: the output is a sequence of messages,
// each a header up to <|message|> and a body. The analysis channel's body
// is reasoning, final and commentary bodies are text, and a message
// addressed to=functions.NAME is a call whose body is the JSON arguments.
type harmony struct {
	sub    uint8  // where in the stream (h* below)
	hdr    []byte // the header so far
	argsOn bool   // the arguments' '{' was seen
	vs     valueScanner
}

// Sub-states of harmony. hHeader and hCall are a call's raw span (sCall);
// the others are sEnvelope. A text or reasoning body is the Parser's
// (sBody), after which harmony is between messages again.
const (
	hText   uint8 = iota // between messages
	hHeader              // message header up to <|message|>
	hCall                // call arguments
	hAfter               // after call arguments
)

// maxHeader bounds a harmony message header; a longer one is not a header.
const maxHeader = 512

// open and openJSON are never called: harmony's text is its own (hText),
// where no opener or bare call is looked for.
func (h *harmony) open(p *Parser, _ string) {}
func (h *harmony) openJSON(p *Parser)       {}

func (h *harmony) step(p *Parser, s string, final bool) (int, bool) {
	switch h.sub {
	case hText:
		return h.text(p, s, final)
	case hHeader:
		return h.header(p, s, final)
	case hCall:
		return h.call(p, s, final)
	case hAfter:
		return h.after(p, s, final)
	}
	return 0, true
}

// fail gives the call up; the stream resumes between messages.
func (h *harmony) fail(p *Parser, reason string, hasResync bool) {
	p.fail(reason, hasResync)
	p.afterMal = sEnvelope
	h.sub = hText
}

// text is harmony's outside-a-message state. Output normally starts
// with a header (the prompt ends with <|start|>assistant), so text here is
// rare: a model that skipped the header.
func (h *harmony) text(p *Parser, s string, final bool) (int, bool) {
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
		h.hdr = h.hdr[:0]
		h.sub = hHeader
		p.st = sCall
	case aHChannel:
		p.endRun()
		p.rawStart = j
		h.hdr = append(h.hdr[:0], d.s...)
		h.sub = hHeader
		p.st = sCall
	}
	return end, false
}

func (h *harmony) header(p *Parser, s string, final bool) (int, bool) {
	j, k := p.c.hHeader.find(s, final)
	h.hdr = append(h.hdr, s[:j]...)
	if len(h.hdr) > maxHeader {
		h.fail(p, "harmony header too long", true)
		return j, false
	}
	if k < 0 {
		return j, true
	}
	d := p.c.hHeader.ds[k]
	if d.act == aStop {
		h.fail(p, "harmony header without "+p.e.Message, false)
		return j, false
	}
	end := j + len(d.s)
	channel, recipient := parseHeader(p.e, string(h.hdr))
	switch {
	case recipient != "":
		p.resetCall()
		p.out = append(p.out, Event{Kind: CallOpen, Index: -1, Offset: p.at + int64(end)})
		p.begin(recipient, p.at+int64(end))
		p.args = p.args[:0]
		h.vs.reset()
		h.argsOn = false
		h.sub = hCall
	case channel == p.e.ReasoningChannel:
		h.sub = hText
		p.startBody(p.c.hBody, ReasoningDelta)
	default:
		h.sub = hText
		p.startBody(p.c.hBody, TextDelta)
	}
	p.lead = true
	p.dropWS()
	return end, false
}

// parseHeader reads the channel and the function a header addresses, e.g.
// "<|channel|>commentary to=functions.get_weather <|constrain|>json".
func parseHeader(e *Envelope, h string) (channel, name string) {
	if i := strings.Index(h, e.Channel); i >= 0 {
		channel = headerToken(h[i+len(e.Channel):])
	}
	if i := strings.Index(h, "to="); i >= 0 {
		rec := headerToken(h[i+3:])
		switch {
		case strings.HasPrefix(rec, e.Recipient):
			name = rec[len(e.Recipient):]
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

func (h *harmony) call(p *Parser, s string, final bool) (int, bool) {
	i := 0
	if !h.argsOn {
		i = skipWS(s)
		if i == len(s) {
			return i, true
		}
		if s[i] != '{' {
			h.fail(p, "arguments must be a JSON object", true)
			return i, false
		}
		h.vs.reset()
		h.argsOn = true
	}
	n, done, err := h.vs.scan(s[i:], &p.args, false)
	i += n
	if err != "" {
		h.fail(p, "arguments: "+string(err), true)
		return i, false
	}
	if done {
		p.end(p.at + int64(i))
		h.sub = hAfter
		p.st = sEnvelope
		return i, false
	}
	return i, true
}

// after consumes the <|call|> (or <|end|>) after a call's arguments.
func (h *harmony) after(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	j, k := p.c.hAfter.find(s[i:], final)
	if k < 0 && j == 0 {
		return i, true
	}
	h.sub = hText
	if k >= 0 && j == 0 && p.c.hAfter.ds[k].act != aStop {
		return i + len(p.c.hAfter.ds[k].s), false
	}
	return i, false
}
