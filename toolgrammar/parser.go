package toolgrammar

import (
	"strings"
	"unicode/utf8"
)

// The parser is a state machine in two layers. The Parser owns what every
// envelope kind shares: the input, the events, the text and reasoning runs,
// the current call's index, arguments and raw span, groups of calls and
// malformed spans. Each envelope kind (envelope_*.go) owns the inside of its
// calls: where it is in the call and the buffers it needs, in its own small
// struct behind the envelope interface.
//
// Every state has a step function in the style of Rob Pike's lexer: it
// parses from the start of its input, emits events, sets the next state and
// returns how many bytes it consumed and whether it must wait for more
// input. The shared states are an enum so the hot loop stays a switch.

// state is the Parser's shared state.
type state uint8

const (
	sText      state = iota // message text
	sReasoning              // inside reasoning delimiters
	sGroup                  // between the calls of a group
	sCall                   // the envelope's own states, inside a call's raw span
	sEnvelope               // the envelope's own states outside a call's raw span
	sBody                   // a message body of the envelope's: text or reasoning up to its end
	sSkip                   // malformed: skipping to a resync point
	sMalformed              // report the malformed span (consumes nothing)
)

// envelope is one kind of tool-call envelope with the state of its calls.
// Its step runs while the Parser is in sCall or sEnvelope; it moves the
// Parser between those two (bytes that belong to the call's raw span or
// not), and hands the stream back with Parser.afterCall or Parser.fail. A
// kind that carries text and reasoning in messages of its own (harmony)
// hands a message's body to the Parser with Parser.startBody.
type envelope interface {
	// open starts a call after the opener o, one of Envelope.Open.
	open(p *Parser, o string)
	// openJSON starts a call the model wrote as a bare JSON call object
	// (Envelope.Bare).
	openJSON(p *Parser)
	// step parses s in the kind's current state.
	step(p *Parser, s string, final bool) (n int, wait bool)
}

// newEnvelope returns the state of the calls of format f.
func newEnvelope(f *Format, opts Options) envelope {
	switch f.Tools.Kind {
	case NameJSON:
		return &nameJSONCall{}
	case XMLParams:
		return &xmlCall{typ: paramTypes(opts.Tools)}
	case Harmony:
		h := &harmony{}
		if f.Tools.KeyOpen != "" {
			h.x.typ = paramTypes(opts.Tools)
			h.tools = map[string]bool{}
			for _, t := range opts.Tools {
				h.tools[t.Name] = true
			}
		}
		return h
	case GemmaCall:
		return &gemmaCall{typ: paramTypes(opts.Tools)}
	case PythonCall:
		return &pythonCall{}
	}
	// JSON envelopes; a format without tools may still allow bare calls.
	return &jsonCall{}
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
	env  envelope

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
	bareOK bool // a bare call may start here: no text since the start or the last call

	// Bare Python calls (envelope_python_bare.go): the tools they may name, and
	// the answer held back while it may still be nothing but such calls.
	bareTools []string
	bare      *pythonBare

	// In sBody: what ends the body, and what its deltas are.
	bodyEnd  *delimSet
	bodyKind EventKind

	// The current call, as every kind reports it.
	raw      []byte // the call's raw span, for Malformed
	rawStart int    // per step: raw restarts at this offset of the step's input
	nCalls   int
	index    int    // index of the begun call, -1 before CallBegin
	nameStr  string // the begun call's name, as reported
	args     []byte // canonical arguments so far
	emitted  int    // bytes of args already sent as ArgumentsDelta
	inGroup  bool

	// A malformed call: why, how much the skip swallowed, where to resume.
	reason   string
	skipped  int
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
	p.env = newEnvelope(f, opts)
	if f.Tools.Kind == PythonCall && f.Tools.Bare {
		p.bareTools = bareCallTools(opts)
	}
	switch {
	case f.Tools.Kind == Harmony:
		// Harmony's messages carry the text and reasoning.
		p.st = sEnvelope
		switch {
		case opts.StartInReasoning:
			p.startBody(p.c.hBody, ReasoningDelta)
		case f.Tools.Channel == "":
			// Without channels (Glimmer) the recipient follows the role, and
			// the prompt ends with both: the output starts in the header.
			p.env.(*harmony).sub = hHeader
			p.st = sCall
		}
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
	if p.bare != nil {
		p.feedBare(chunk, false)
		p.flushArgs()
		return p.out
	}
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
	if p.bare != nil {
		// The answer may be nothing but bare calls from here on.
		rest := p.hold
		p.hold = ""
		p.feedBare(rest, false)
	}
	p.flushArgs()
	return p.out
}

// plain handles the most common chunk while streaming, a token of prose in
// the middle of a text or reasoning run, without the general machinery: it
// is exactly what the run's step would do with it.
func (p *Parser) plain(chunk string) bool {
	var set *delimSet
	kind := TextDelta
	switch p.st {
	case sText:
		set = p.c.text
	case sReasoning:
		set, kind = p.c.reason, ReasoningDelta
	case sBody:
		set, kind = p.bodyEnd, p.bodyKind
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
	if p.bare != nil {
		p.feedBare("", true)
	} else {
		data := p.hold
		p.hold = ""
		if n := p.run(data, true); p.bare != nil {
			p.feedBare(data[n:], true)
		}
	}
	switch p.st {
	case sReasoning:
		p.unterminatedReasoning()
	case sBody:
		if p.bodyKind == ReasoningDelta {
			p.unterminatedReasoning()
		}
	case sSkip:
		// Malformed earlier, and its closer never came.
		p.malformed(p.reason)
	case sCall:
		if h, ok := p.env.(*harmony); ok && h.emptyHeader() {
			break
		}
		p.flushArgs()
		p.malformed("unterminated call")
	}
	p.dropWS()
	return p.out
}

func (p *Parser) unterminatedReasoning() {
	p.dropWS()
	p.out = append(p.out, Event{Kind: ReasoningEnd, Index: -1, Reason: "unterminated", Offset: p.at})
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
		case sGroup:
			n, wait = p.stepGroup(s, final)
		case sCall, sEnvelope:
			n, wait = p.env.step(p, s, final)
		case sBody:
			n, wait = p.stepBody(s, final)
		case sSkip:
			n, wait = p.stepSkip(s, final)
		case sMalformed:
			p.malformed(p.reason)
			p.st = p.afterMal
		}
		if p.rawStart >= 0 {
			p.raw = append(p.raw[:0], s[p.rawStart:n]...)
		} else if prev == sCall || prev == sSkip {
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
// point. The engine discards it when it continues differently. An answer
// held back as possible bare calls is not pending: it is being parsed.
func (p *Parser) Pending() string { return p.hold }

// Discard drops Pending, and an answer held back as possible bare calls, so
// the output ends at the last event's Offset (with PauseAtDecisions, exactly
// at the decision point).
func (p *Parser) Discard() {
	p.hold = ""
	p.bare = nil
}
