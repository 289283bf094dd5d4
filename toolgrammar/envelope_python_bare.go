package toolgrammar

import (
	"slices"
	"strings"
)

// Bare Python calls. LFM2 models sometimes answer with nothing but their calls,
// without the <|tool_call_start|> and <|tool_call_end|> markers:
//
//	[get_weather(city="Paris")]
//	get_weather(city="Paris")
//
// Ollama's lfm2 parser reads such an answer as calls when the request has tools
// and every call names one of them; anything else is text. Whether an answer is
// nothing but calls is known only at the end of the output, so from the first
// byte that may begin one (at the start of the answer, after any reasoning: a
// known tool's name and "(", maybe after "[") the answer is held back. A second
// Parser, started inside the envelope, reads it as it comes and keeps its
// events; the answer stops being held back as soon as that parser meets
// something that is not a call of a known tool (text after the calls, an
// unknown name, a marker). Then the held bytes go through the text path as if
// there were no bare calls: text comes out exactly as it would without this
// fallback, in order, nothing lost. At the end of the output a complete answer
// of calls releases the kept events: the same CallOpen, CallBegin,
// ArgumentsDelta and CallEnd a call between the markers gives, at the offsets of
// the answer (the arguments in one delta per call).

// pythonBare is an answer held back as possible bare calls.
type pythonBare struct {
	calls *Parser // inside the envelope from the answer's first byte
	start int64   // the answer's offset in the output
	buf   []byte  // the answer so far, as written
	list  bool    // it opened with "[": the calls are in a list
	// evs are the calls' events but their arguments' deltas, released when the
	// answer is complete: each call's arguments then go out as one delta, since
	// nothing of them could stream before.
	evs []Event
	// lastEnd is the offset in buf after the last complete call's ")".
	lastEnd int
	// ends counts the complete calls.
	ends int
}

// bareCallTools returns the names a bare call may name under opts.
func bareCallTools(opts Options) []string {
	if opts.BareCallTools != nil {
		return opts.BareCallTools
	}
	names := make([]string, 0, len(opts.Tools))
	for _, t := range opts.Tools {
		names = append(names, t.Name)
	}
	return names
}

// maxBareLead bounds the blanks isBarePythonStart waits through after "[".
const maxBareLead = 64

// isBarePythonStart decides whether s, the start of an answer, begins a bare
// call: "[" (blanks after it allowed), then one of names, then "(". Undecided
// while s may still grow into that.
func isBarePythonStart(s string, names []string, final bool) (yes, decided bool) {
	i := 0
	if s[0] == '[' {
		i = skipWSFrom(s, 1)
		if i > maxBareLead {
			return false, true
		}
	}
	j := i
	for j < len(s) && pyWordByte(s[j]) {
		j++
	}
	if j == len(s) {
		return false, final || !anyHasPrefix(names, s[i:j])
	}
	if s[j] != '(' {
		return false, true
	}
	for _, n := range names {
		if n == s[i:j] {
			return true, true
		}
	}
	return false, true
}

func anyHasPrefix(names []string, prefix string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// startBare holds the answer back from offset at: a parser of the same format
// starts there, inside the envelope, and reads what Feed hands over.
func (p *Parser) startBare(at int64, list bool) {
	calls := &Parser{f: p.f, c: p.c, e: p.e, opts: Options{Malformed: MalformedAsError}, index: -1, lead: true, at: at}
	calls.env = newEnvelope(p.f, calls.opts)
	calls.env.open(calls, "")
	// The first call opens where the answer starts, as a bare JSON call opens
	// at its "{"; the calls parser reports those after it.
	open := Event{Kind: CallOpen, Index: -1, Offset: at}
	p.bare = &pythonBare{calls: calls, start: at, list: list, evs: []Event{open}}
}

// feedBare hands the held-back answer its next bytes (final: the output ends
// after them). While the answer may still be nothing but calls nothing comes
// out; a complete one at the end releases its calls; anything else sends the
// held bytes through the text path.
func (p *Parser) feedBare(s string, final bool) {
	b := p.bare
	b.buf = append(b.buf, s...)
	ok := b.take(p, b.calls.Feed(s))
	if ok && !final {
		return
	}
	if ok {
		ok = b.take(p, b.calls.Close()) && b.complete()
	}
	p.bare = nil
	if ok {
		for _, ev := range b.evs {
			if ev.Kind == CallEnd {
				p.out = append(p.out, Event{Kind: ArgumentsDelta, Text: ev.Text, Index: ev.Index, Offset: ev.Offset})
			}
			p.out = append(p.out, ev)
		}
		p.at += int64(len(b.buf))
		p.nCalls = b.calls.nCalls
		p.lead = true
		return
	}
	// Not calls: the answer is what the text path makes of it, no bare call
	// looked for again.
	p.bareOK = false
	data := string(b.buf)
	if final {
		p.run(data, true)
		return
	}
	lim := len(data) - incompleteRuneSuffix(data)
	n := p.run(data[:lim], false)
	p.hold = data[n:]
}

// take keeps the calls' events; false when they show the answer is not
// nothing but calls of the known tools.
func (b *pythonBare) take(p *Parser, evs []Event) bool {
	for _, ev := range evs {
		switch ev.Kind {
		case CallOpen:
			// A call after the first: only blanks and commas may come
			// between two calls (a "]" closes the list).
			if strings.ContainsRune(string(b.buf[b.lastEnd:ev.Offset-b.start]), ']') {
				return false
			}
		case CallBegin:
			if !slices.Contains(p.bareTools, ev.Name) {
				return false
			}
		case ArgumentsDelta:
			continue
		case CallEnd:
			b.ends++
			b.lastEnd = int(ev.Offset - b.start)
		default:
			// Text, reasoning, a malformed call.
			return false
		}
		b.evs = append(b.evs, ev)
	}
	c := b.calls
	switch {
	case c.st != sCall && c.st != sEnvelope:
		// The envelope's closer, or a call that failed.
		return false
	case c.st == sCall:
		if y, ok := c.env.(*pythonCall); ok && y.sub == pyName && !anyHasPrefix(p.bareTools, string(y.name)) {
			// A name no known tool has: prose after a call.
			return false
		}
	}
	return true
}

// complete reports whether the answer, all read, is a call or more, closed by
// "]" when it opened with "[", with nothing but blanks and commas after the last.
func (b *pythonBare) complete() bool {
	if b.ends == 0 {
		return false
	}
	tail := strings.TrimSpace(strings.ReplaceAll(string(b.buf[b.lastEnd:]), ",", " "))
	if b.list {
		return tail == "]"
	}
	return tail == ""
}
