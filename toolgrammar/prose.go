package toolgrammar

// Text and reasoning: the runs of deltas that all kinds emit, the text and
// reasoning states outside calls that every kind but harmony shares, and
// message bodies for a kind that carries text in messages of its own.

// emit appends an event, making its text valid UTF-8.
func (p *Parser) emit(k EventKind, text string, off int64) {
	p.out = append(p.out, Event{Kind: k, Text: validUTF8(text), Index: -1, Offset: off})
}

// emitRun adds s to the current text or reasoning run.
func (p *Parser) emitRun(k EventKind, s string, end int64) {
	if s == "" {
		return
	}
	if p.lead {
		i := 0
		for i < len(s) && isWS(s[i]) {
			i++
		}
		s = s[i:]
		if s == "" {
			return
		}
		p.lead = false
	}
	j := len(s)
	for j > 0 && isWS(s[j-1]) {
		j--
	}
	if j == 0 {
		p.addWS(s)
		return
	}
	if p.ws != "" {
		p.emit(k, p.heldWS(), end-int64(len(s)))
	}
	p.emit(k, s[:j], end-int64(len(s)-j))
	if j < len(s) {
		p.ws = s[j:]
	}
	if k == TextDelta {
		p.bareOK = false
	}
}

// addWS holds more trailing whitespace. The first piece is kept as a
// substring; later pieces go through a buffer so a long run of whitespace
// fed in small chunks stays linear.
func (p *Parser) addWS(s string) {
	if p.ws == "" {
		p.ws = s
		return
	}
	if len(p.wsBuf) == 0 {
		p.wsBuf = append(p.wsBuf, p.ws...)
	}
	p.wsBuf = append(p.wsBuf, s...)
	p.ws = "\x00" // non-empty marker: the text is in wsBuf
}

// heldWS returns the held whitespace and forgets it.
func (p *Parser) heldWS() string {
	s := p.ws
	if len(p.wsBuf) > 0 {
		s = string(p.wsBuf)
		p.wsBuf = p.wsBuf[:0]
	}
	p.ws = ""
	return s
}

// dropWS forgets held whitespace: the run ended at markup.
func (p *Parser) dropWS() {
	p.ws = ""
	p.wsBuf = p.wsBuf[:0]
}

// endRun drops the held trailing whitespace and starts a new run.
func (p *Parser) endRun() {
	p.ws = ""
	p.wsBuf = p.wsBuf[:0]
	p.lead = true
}

// stepText runs message text up to the next delimiter: markup to strip,
// reasoning, a call or a group of calls.
func (p *Parser) stepText(s string, final bool) (int, bool) {
	i := 0
	if p.lead {
		for i < len(s) && isWS(s[i]) {
			i++
		}
		if i == len(s) {
			return i, true
		}
		if p.bareOK && p.e.Bare && s[i] == '{' {
			yes, decided := isBareCall(p.c, s[i:], final)
			if !decided {
				return i, true
			}
			if yes {
				p.out = append(p.out, Event{Kind: CallOpen, Index: -1, Offset: p.at + int64(i)})
				p.raw = p.raw[:0]
				p.env.openJSON(p)
				return i, false
			}
			// Prose that starts with a brace.
			p.bareOK = false
			p.lead = false
		}
		if p.bareOK && len(p.bareTools) > 0 && p.nCalls == 0 && (s[i] == '[' || pyWordByte(s[i])) {
			yes, decided := isBarePythonStart(s[i:], p.bareTools, final)
			if !decided {
				return i, true
			}
			if yes {
				// Held back from here until the end of the output says whether
				// the answer is nothing but calls (Parser.Feed hands it over).
				p.startBare(p.at+int64(i), s[i] == '[')
				return i, true
			}
			p.bareOK = false
		}
	}
	j, k := p.c.text.find(s[i:], final)
	j += i
	p.emitRun(TextDelta, s[i:j], p.at+int64(j))
	if k < 0 {
		return j, true
	}
	d := p.c.text.ds[k]
	end := j + len(d.s)
	switch d.act {
	case aStrip, aReasonClose:
		// Markup with no content (or a closer without its opener).
	case aReasonOpen:
		p.endRun()
		p.st = sReasoning
	case aCallOpen, aGroupOpen:
		p.endRun()
		p.rawStart = j
		p.out = append(p.out, Event{Kind: CallOpen, Text: d.s, Index: -1, Offset: p.at + int64(end)})
		if d.act == aGroupOpen {
			p.inGroup = true
			p.st = sGroup
		} else {
			p.env.open(p, d.s)
		}
	}
	return end, false
}

// stepReasoning runs reasoning text up to its closer.
func (p *Parser) stepReasoning(s string, final bool) (int, bool) {
	j, k := p.c.reason.find(s, final)
	p.emitRun(ReasoningDelta, s[:j], p.at+int64(j))
	if k < 0 {
		return j, true
	}
	d := p.c.reason.ds[k]
	end := j + len(d.s)
	switch d.act {
	case aReasonClose:
		p.endRun()
		p.out = append(p.out, Event{Kind: ReasoningEnd, Index: -1, Offset: p.at + int64(end)})
		p.st = sText
	case aReasonOpen:
		// Swallowed when the reasoning started implicitly and the model
		// wrote the opener anyway; later it is content.
		if !p.lead {
			p.emitRun(ReasoningDelta, d.s, p.at+int64(end))
		}
	}
	return end, false
}

// startBody hands a message body to the Parser: text or reasoning (kind)
// up to any of end's delimiters, after which the envelope's step resumes.
func (p *Parser) startBody(end *delimSet, kind EventKind) {
	p.bodyEnd, p.bodyKind = end, kind
	p.st = sBody
}

// stepBody runs a message body up to its end. The end is consumed unless
// it is the start of the next message (aStop).
func (p *Parser) stepBody(s string, final bool) (int, bool) {
	j, k := p.bodyEnd.find(s, final)
	p.emitRun(p.bodyKind, s[:j], p.at+int64(j))
	if k < 0 {
		return j, true
	}
	d := p.bodyEnd.ds[k]
	end := j + len(d.s)
	if d.act == aStop {
		end = j
	}
	p.endRun()
	if p.bodyKind == ReasoningDelta {
		p.out = append(p.out, Event{Kind: ReasoningEnd, Index: -1, Offset: p.at + int64(end)})
	}
	p.st = sEnvelope
	return end, false
}
