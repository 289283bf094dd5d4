package toolgrammar

import "strings"

// harmony is the state of the Harmony envelope (gpt-oss). Harmony owns the
// whole stream, not only the calls: the output is a sequence of messages,
// each a header up to <|message|> and a body. The analysis channel's body
// is reasoning, final and commentary bodies are text, and a message
// addressed to=functions.NAME is a call whose body is the JSON arguments.
//
// Glimmer writes the same messages without channels: the header is the
// recipient alone (to=self is reasoning, to=user or none is text), and a
// call's body is an XML parameter block (Envelope.KeyOpen set: the
// envelope's XML fields describe it), which an xmlCall reads. Its prompt
// ends with "<|start|>assistant", so its output starts inside a header.
type harmony struct {
	sub    uint8  // where in the stream (h* below)
	hdr    []byte // the header so far
	argsOn bool   // the arguments' '{' was seen
	vs     valueScanner

	// XML bodies (Glimmer): the call's parameters, the tools' names, and the
	// recipient of the message whose body is being read.
	x         xmlCall
	tools     map[string]bool
	recipient string
}

// Sub-states of harmony. hHeader and hCall are a call's raw span (sCall);
// the others are sEnvelope. A text or reasoning body is the Parser's
// (sBody), after which harmony is between messages again.
const (
	hText      uint8 = iota // between messages
	hHeader                 // message header up to <|message|>
	hCall                   // call arguments
	hAfter                  // after call arguments
	hBodyStart              // XML bodies: a call's block or text, after the header
	hXML                    // XML bodies: the call's block, read by h.x
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
	case hBodyStart:
		return h.bodyStart(p, s, final)
	case hXML:
		return h.xml(p, s, final)
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
		if p.e.Channel == "" && strings.TrimSpace(string(h.hdr)) == "" {
			// Glimmer's output starts in the header the prompt opened; a
			// model that writes the start token again opens the same one.
			h.hdr = h.hdr[:0]
			return j + len(d.s), false
		}
		h.fail(p, "harmony header without "+p.e.Message, false)
		return j, false
	}
	end := j + len(d.s)
	channel, recipient := parseHeader(p.e, string(h.hdr))
	switch {
	case p.e.ReasoningRecipient != "" && recipient == p.e.ReasoningRecipient:
		h.sub = hText
		p.startBody(p.c.hBody, ReasoningDelta)
	case p.e.KeyOpen != "":
		// The body decides: a call's block, or text.
		h.recipient = recipient
		h.sub = hBodyStart
		p.st = sEnvelope
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
	if e.Channel != "" {
		if i := strings.Index(h, e.Channel); i >= 0 {
			channel = headerToken(h[i+len(e.Channel):])
		}
	}
	if i := strings.Index(h, "to="); i >= 0 {
		rec := headerToken(h[i+3:])
		switch {
		case e.Recipient != "" && strings.HasPrefix(rec, e.Recipient):
			name = rec[len(e.Recipient):]
		case rec != "" && rec != "assistant" && rec != "user" && rec != "all":
			name = rec // a built-in tool such as browser.search, or Glimmer's tool
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

// bodyStart reads the start of a message body when calls are XML blocks
// (Glimmer): the block's opener makes it a call, whatever the header
// addressed (models write it to the user, or to no one, too; Ollama's
// parser reads those as calls as well when the request has tools), and
// anything else is text.
func (h *harmony) bodyStart(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) && !final {
		return i, true
	}
	o := p.e.Open[0]
	full, partial := prefixMatch(s[i:], o, final)
	if partial {
		return i, true
	}
	if !full || len(h.tools) == 0 {
		h.sub = hText
		p.startBody(p.c.hBody, TextDelta)
		return i, false
	}
	end := i + len(o)
	p.rawStart = i
	p.out = append(p.out, Event{Kind: CallOpen, Text: o, Index: -1, Offset: p.at + int64(end)})
	h.x.open(p, o)
	h.x.checkName = h.invokeName
	h.sub = hXML
	return end, false
}

// xml runs the call's block in h.x, and takes the stream back when the
// call ends (the message's end follows) or fails (text resumes between
// messages).
func (h *harmony) xml(p *Parser, s string, final bool) (int, bool) {
	n, wait := h.x.step(p, s, final)
	switch p.st {
	case sText:
		// The block is complete (xmlCall's afterCall).
		p.st = sEnvelope
		h.sub = hAfter
	case sSkip, sMalformed:
		p.afterMal = sEnvelope
		h.sub = hText
	}
	return n, wait
}

// invokeName resolves the name a block invokes to a tool of the request
// as Ollama's Glimmer parser does (a name as written, or ns.fn for a tool
// fn whose namespace, the part of its name before a dot, is ns), and
// refuses a block that invokes another tool than the header's recipient.
func (h *harmony) invokeName(name string) (string, string) {
	name = h.resolve(name)
	if rec := h.resolve(h.recipient); h.tools[rec] && rec != name {
		return "", "the header's recipient " + rec + " is not the invoked " + name
	}
	return name, ""
}

func (h *harmony) resolve(name string) string {
	if h.tools[name] {
		return name
	}
	if ns, fn, ok := strings.Cut(name, "."); ok && h.tools[fn] {
		if fnNS, _, _ := strings.Cut(fn, "."); fnNS == ns {
			return fn
		}
	}
	return name
}

// emptyHeader reports whether the stream ends in a header nothing was
// written into: Glimmer's output that ended before it began.
func (h *harmony) emptyHeader() bool {
	return h.sub == hHeader && strings.TrimSpace(string(h.hdr)) == ""
}
