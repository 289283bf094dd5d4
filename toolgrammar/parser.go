package toolgrammar

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// state is the parser's top-level state. Each state has a step function
// (Rob Pike's lexer, with an enum instead of function values so the hot
// loop stays a switch).
type state uint8

const (
	sText      state = iota // message text
	sReasoning              // inside reasoning delimiters
	sBare                   // deciding whether a bare '{' starts a call
	sJSON                   // inside a JSON object/array envelope
	sAfterObj               // after a JSON object call: Close, another object, or text
	sNJ                     // NameJSON call
	sAfterNJ                // after NameJSON arguments: fence, Close
	sGroup                  // between calls of a group
	sXML                    // XML parameter call
	sAfterXML               // after </function>: Close
	sSkip                   // malformed: skipping to a resync point
	sMalformed              // report the malformed span (consumes nothing)
	sHText                  // harmony: between messages
	sHHeader                // harmony: message header up to <|message|>
	sHReason                // harmony: analysis channel body
	sHBody                  // harmony: final/commentary body
	sHCall                  // harmony: call arguments
	sHAfter                 // harmony: after call arguments
)

// inCall tells the states whose bytes belong to a call's raw span.
func inCall(s state) bool {
	switch s {
	case sJSON, sNJ, sXML, sSkip, sHHeader, sHCall:
		return true
	}
	return false
}

// skipLimit bounds how much text a malformed call may swallow while looking
// for its closer, so a stray opener cannot stall the stream.
const skipLimit = 8 << 10

// Parser turns raw model output into events, incrementally. Feed it chunks
// split anywhere (mid-delimiter, mid-UTF-8); it holds back only bytes that
// could still be a delimiter or the rest of a character.
type Parser struct {
	f    *Format
	c    *compiled
	e    *Envelope
	opts Options
	typ  map[string]map[string]typeSet

	out  []Event
	seen int    // events of out already checked for a pause
	hold string // input not consumed yet
	at   int64  // stream offset of the current step's first byte
	st   state

	// Text and reasoning runs: leading whitespace is dropped, trailing
	// whitespace is held until the run continues.
	lead   bool
	ws     string
	wsBuf  []byte
	bareOK bool // a bare JSON call may start here (Llama)

	// Current call.
	raw      []byte
	rawStart int // per step: raw restarts at this offset of the step's input
	nCalls   int
	index    int // index of the begun call, -1 before CallBegin
	name     []byte
	nameStr  string // the begun call's name, as reported
	args     []byte
	emitted  int // bytes of args already sent as ArgumentsDelta
	vs       valueScanner
	sub      uint8
	esc      bool
	key      []byte
	role     uint8
	depth    int
	hasName  bool
	hasArgs  bool
	argsMode uint8
	strBuf   []byte
	arr      bool
	inGroup  bool
	fenced   bool
	noWrap   bool
	params   int
	vType    typeSet
	vStream  bool
	vFirst   bool
	vBuf     []byte
	hdr      []byte
	skipped  int
	reason   string
	afterMal state
}

// NewParser returns a parser for one generation in format f.
func NewParser(f *Format, opts Options) *Parser {
	if f.compiled == nil {
		// A hand-built format (not from LoadFormats): compile a private
		// copy, so a format shared between goroutines is never written.
		fc := *f
		fc.Tools.Open = append([]string(nil), f.Tools.Open...)
		if err := fc.compile(); err != nil {
			// An invalid format degrades to plain text rather than
			// panicking in the middle of a response.
			fc = Format{ID: f.ID}
			_ = fc.compile()
		}
		f = &fc
	}
	p := &Parser{f: f, c: f.compiled, e: &f.Tools, opts: opts, index: -1, lead: true, bareOK: true}
	p.typ = paramTypes(opts.Tools)
	switch {
	case f.Tools.Kind == Harmony && opts.StartInReasoning:
		p.st = sHReason
	case f.Tools.Kind == Harmony:
		p.st = sHText
	case opts.StartInReasoning && f.Reasoning != nil:
		p.st = sReasoning
	default:
		p.st = sText
	}
	return p
}

// Feed parses the next chunk of output. The returned slice is reused by the
// next call to Feed or Close. Feeding text the engine wrote itself (a
// prefill such as the opener before a constrained continuation) is the same
// as the model writing it.
func (p *Parser) Feed(chunk string) []Event {
	p.out = p.out[:0]
	p.seen = 0
	if p.plain(chunk) {
		return p.out
	}
	data := chunk
	if p.hold != "" {
		data = p.hold + chunk
	}
	// Never look at half a character: delimiters are whole characters and
	// deltas must be valid UTF-8.
	lim := len(data) - incompleteRuneSuffix(data)
	n := p.run(data[:lim], false)
	p.hold = data[n:]
	p.flushArgs()
	return p.out
}

// plain handles the most common chunk while streaming, a token of prose in
// the middle of a text or reasoning run, without the general machinery: it
// is exactly what stepText, stepReasoning or stepHBody would do with it.
func (p *Parser) plain(chunk string) bool {
	var set *delimSet
	kind := TextDelta
	switch p.st {
	case sText:
		set = p.c.text
	case sReasoning:
		set, kind = p.c.reason, ReasoningDelta
	case sHBody:
		set = p.c.hBody
	case sHReason:
		set, kind = p.c.hBody, ReasoningDelta
	default:
		return false
	}
	n := len(chunk)
	if n == 0 || p.hold != "" || p.lead || p.ws != "" || chunk[n-1] >= utf8.RuneSelf || isWS(chunk[n-1]) {
		return false
	}
	if set.one >= 0 {
		if strings.IndexByte(chunk, byte(set.one)) >= 0 {
			return false
		}
	} else {
		for i := 0; i < n; i++ {
			if set.first[chunk[i]] {
				return false
			}
		}
	}
	p.at += int64(n)
	p.emit(kind, chunk, p.at)
	if kind == TextDelta {
		p.bareOK = false
	}
	return true
}

// Close ends the output: held-back bytes are parsed as final, an
// unterminated call becomes Malformed, unterminated reasoning ends with
// Reason "unterminated". The parser must not be used afterwards.
func (p *Parser) Close() []Event {
	p.out = p.out[:0]
	p.seen = 0
	data := p.hold
	p.hold = ""
	p.run(data, true)
	switch {
	case p.st == sReasoning || p.st == sHReason:
		p.dropWS()
		p.out = append(p.out, Event{Kind: ReasoningEnd, Index: -1, Reason: "unterminated", Offset: p.at})
	case p.st == sSkip:
		// Malformed earlier, and its closer never came.
		p.malformed(p.reason)
	case inCall(p.st):
		p.flushArgs()
		p.malformed("unterminated call")
	}
	p.dropWS()
	return p.out
}

// run parses data and returns how many bytes were consumed.
func (p *Parser) run(data string, final bool) int {
	i := 0
	for i < len(data) || p.st == sMalformed {
		prev := p.st
		p.rawStart = -1
		s := data[i:]
		var n int
		var wait bool
		switch p.st {
		case sText:
			n, wait = p.stepText(s, final)
		case sReasoning:
			n, wait = p.stepReasoning(s, final)
		case sBare:
			n, wait = p.stepBare(s, final)
		case sJSON:
			n, wait = p.stepJSON(s, final)
		case sAfterObj:
			n, wait = p.stepAfterObj(s, final)
		case sNJ:
			n, wait = p.stepNJ(s, final)
		case sAfterNJ:
			n, wait = p.stepAfterNJ(s, final)
		case sGroup:
			n, wait = p.stepGroup(s, final)
		case sXML:
			n, wait = p.stepXML(s, final)
		case sAfterXML:
			n, wait = p.stepAfterXML(s, final)
		case sSkip:
			n, wait = p.stepSkip(s, final)
		case sMalformed:
			p.malformed(p.reason)
			p.st = p.afterMal
		case sHText:
			n, wait = p.stepHText(s, final)
		case sHHeader:
			n, wait = p.stepHHeader(s, final)
		case sHReason, sHBody:
			n, wait = p.stepHBody(s, final)
		case sHCall:
			n, wait = p.stepHCall(s, final)
		case sHAfter:
			n, wait = p.stepHAfter(s, final)
		}
		if p.rawStart >= 0 {
			p.raw = append(p.raw[:0], s[p.rawStart:n]...)
		} else if inCall(prev) {
			p.raw = append(p.raw, s[:n]...)
		}
		i += n
		p.at += int64(n)
		if wait {
			break
		}
		if p.pauseHere(final) {
			break
		}
	}
	return i
}

// pauseHere reports whether the last step produced a decision point and
// the engine asked to stop at those.
func (p *Parser) pauseHere(final bool) bool {
	if !p.opts.PauseAtDecisions || final {
		return false
	}
	for ; p.seen < len(p.out); p.seen++ {
		if p.out[p.seen].Kind.IsDecisionPoint() {
			p.seen++
			return true
		}
	}
	return false
}

// Pending returns the output fed but not parsed yet: bytes that may still
// be a delimiter, and with PauseAtDecisions whatever followed the decision
// point. The engine discards it when it continues differently.
func (p *Parser) Pending() string { return p.hold }

// Discard drops Pending, so the output ends at the last event's Offset
// (with PauseAtDecisions, exactly at the decision point).
func (p *Parser) Discard() { p.hold = "" }

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
			p.st = sBare
			return i, false
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
			p.startCall(d.s)
		}
	case aHStart, aHChannel:
		// unreachable outside harmony
	}
	return end, false
}

// startCall enters the envelope after opener o.
func (p *Parser) startCall(o string) {
	p.resetCall()
	switch p.e.Kind {
	case JSONObject:
		p.st, p.sub, p.arr = sJSON, jObjOpen, false
	case JSONArray:
		p.st, p.sub, p.arr = sJSON, jArrOpen, true
	case NameJSON:
		p.st, p.sub = sNJ, njStart
	case XMLParams:
		p.st, p.sub = sXML, xStart
		if o == p.e.NameOpen {
			// Qwen3-Coder sometimes drops the <tool_call> wrapper.
			p.noWrap, p.sub = true, xName
		}
	}
}

func (p *Parser) resetCall() {
	p.index = -1
	p.name = p.name[:0]
	p.args = p.args[:0]
	p.emitted = 0
	p.key = p.key[:0]
	p.esc = false
	p.depth = 0
	p.hasName, p.hasArgs = false, false
	p.argsMode = 0
	p.fenced, p.noWrap = false, false
	p.params = 0
	p.vs.reset()
}

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

// stepBare decides whether a '{' at the start of the output (or after a
// call) is a call, by its first key; otherwise it is text.
func (p *Parser) stepBare(s string, final bool) (int, bool) {
	i := 1
	for i < len(s) && isWS(s[i]) {
		i++
	}
	yes, decided := false, false
	switch {
	case i == len(s):
		decided = final || i > 64
	case s[i] != '"':
		decided = true
	default:
		j := i + 1
		for j < len(s) && s[j] != '"' && s[j] != '\\' && j-i < 64 {
			j++
		}
		switch {
		case j < len(s) && s[j] == '"':
			k := s[i+1 : j]
			yes = k == p.c.nameKey || k == p.c.argsKey || k == "type" || k == "function"
			decided = true
		case j == len(s) && !final && j-i < 64:
		default:
			decided = true
		}
	}
	if !decided {
		return 0, true
	}
	if yes {
		p.out = append(p.out, Event{Kind: CallOpen, Index: -1, Offset: p.at})
		p.startCall("")
		p.raw = p.raw[:0]
		p.st, p.sub, p.arr = sJSON, jObjOpen, false
		return 0, false
	}
	p.bareOK = false
	p.st = sText
	p.lead = false
	return 0, false
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
	p.name = append(p.name[:0], name...)
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

// fail starts malformed handling at the current byte: with a closer the
// parser skips to it, otherwise the span ends here and the byte is text.
func (p *Parser) fail(reason string, hasResync bool) {
	p.reason = reason
	p.skipped = 0
	if p.e.Kind == Harmony {
		p.afterMal = sHText
	} else {
		p.afterMal = sText
	}
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
	p.startCall(d.s)
	return end, false
}

// afterCall is where a call that needs nothing more returns to.
func (p *Parser) afterCall() {
	if p.inGroup {
		p.st = sGroup
	} else {
		p.st = sText
	}
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
