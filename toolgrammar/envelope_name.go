package toolgrammar

// nameJSONCall is the state of a NameJSON envelope: Open, the bare name, a
// name terminator, maybe a call id, then the JSON arguments (Mistral v11,
// DeepSeek).
type nameJSONCall struct {
	sub    uint8  // where in the call (nj* below)
	name   []byte // the name as written
	idLen  int    // bytes of the call id so far
	fenced bool   // the arguments are inside ```json ... ```
	vs     valueScanner
	json   jsonCall // a call written in the older JSON shape
}

// Sub-states of a NameJSON call.
const (
	njStart uint8 = iota
	njName
	njID
	njArgs0
	njFenceLang
	njArgs
	njAfter // after the arguments: the closing fence and Close (sEnvelope)
	njJSON  // the call is in the older JSON shape: n.json has the stream
)

const maxIDLen = 128

func (n *nameJSONCall) open(p *Parser, _ string) {
	p.resetCall()
	n.name = n.name[:0]
	n.fenced = false
	n.vs.reset()
	n.sub = njStart
	p.st = sCall
}

func (n *nameJSONCall) openJSON(p *Parser) {
	n.json.openJSON(p)
	n.sub = njJSON
}

func (n *nameJSONCall) step(p *Parser, s string, final bool) (int, bool) {
	switch n.sub {
	case njArgs:
		return n.args(p, s)
	case njStart:
		return n.start(p, s, final)
	case njName:
		return n.nameStep(p, s, final)
	case njID:
		return n.id(p, s, final)
	case njArgs0:
		return n.args0(p, s, final)
	case njFenceLang:
		return n.fenceLang(s, final)
	case njAfter:
		return n.after(p, s, final)
	case njJSON:
		return n.json.step(p, s, final)
	}
	return 0, true
}

func (n *nameJSONCall) fail(p *Parser, i int, reason string) (int, bool) {
	p.fail(reason, p.c.hasClose)
	return i, false
}

// start skips the name prefix, or sees the older JSON shape.
func (n *nameJSONCall) start(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	if c := s[i]; c == '[' || c == '{' {
		// A model of a name-outside family that writes the older JSON
		// shape anyway ([TOOL_CALLS][{"name": ...}]): parse it as such.
		n.json.continueCall(c == '[')
		n.sub = njJSON
		return i, false
	}
	if pre := p.e.NamePrefix; pre != "" {
		full, partial := prefixMatch(s[i:], pre, final)
		if partial {
			return i, true
		}
		if full {
			i += len(pre)
		}
	}
	n.name = n.name[:0]
	n.sub = njName
	return i, false
}

// nameStep reads the name up to a terminator and begins the call.
func (n *nameJSONCall) nameStep(p *Parser, s string, final bool) (int, bool) {
	j, k := p.c.nameEnd.find(s, final)
	for b := 0; b < j; b++ {
		if c := s[b]; c <= ' ' || c == '{' || c == '}' || c == '"' || c == '[' || c == '<' {
			n.name = append(n.name, s[:b]...)
			return n.fail(p, b, "invalid character in call name")
		}
	}
	n.name = append(n.name, s[:j]...)
	if len(n.name) > maxKeyLen {
		return n.fail(p, j, "call name too long")
	}
	if k < 0 {
		return j, true
	}
	if len(n.name) == 0 {
		return n.fail(p, j, "empty call name")
	}
	d := p.c.nameEnd.ds[k]
	end := j + len(d.s)
	p.begin(string(n.name), p.at+int64(end))
	p.args = p.args[:0]
	n.idLen = 0
	if d.act == aIDMarker {
		n.sub = njID
	} else {
		n.sub = njArgs0
	}
	return end, false
}

// args0 waits for the arguments' '{', past an optional fence.
func (n *nameJSONCall) args0(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	if p.e.Fence && !n.fenced && s[i] == '`' {
		full, partial := prefixMatch(s[i:], "```", final)
		if partial {
			return i, true
		}
		if full {
			n.fenced = true
			n.sub = njFenceLang
			return i + 3, false
		}
	}
	if s[i] != '{' {
		return n.fail(p, i, "arguments must be a JSON object")
	}
	n.vs.reset()
	n.sub = njArgs
	return i, false
}

// id skips a call id up to ArgsMarker.
func (n *nameJSONCall) id(p *Parser, s string, final bool) (int, bool) {
	j, k := p.c.argsMark.find(s, final)
	n.idLen += j
	if n.idLen > maxIDLen {
		return n.fail(p, j, "call id too long")
	}
	if k < 0 {
		return j, true
	}
	n.sub = njArgs0
	return j + len(p.e.ArgsMarker), false
}

// fenceLang skips the "json" after an opening fence.
func (n *nameJSONCall) fenceLang(s string, final bool) (int, bool) {
	full, partial := prefixMatch(s, "json", final)
	if partial {
		return 0, true
	}
	n.sub = njArgs0
	if full {
		return 4, false
	}
	return 0, false
}

// args streams the arguments object and ends the call with it.
func (n *nameJSONCall) args(p *Parser, s string) (int, bool) {
	m, done, err := n.vs.scan(s, &p.args, false)
	if err != "" {
		return n.fail(p, m, "arguments: "+string(err))
	}
	if done {
		p.end(p.at + int64(m))
		n.sub = njAfter
		p.st = sEnvelope
		return m, false
	}
	return m, true
}

// after consumes the closing fence and closer after the arguments.
func (n *nameJSONCall) after(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	if n.fenced {
		full, partial := prefixMatch(s[i:], "```", final)
		if partial {
			return i, true
		}
		n.fenced = false
		if full {
			return i + 3, false
		}
	}
	if c := p.e.Close; c != "" {
		full, partial := prefixMatch(s[i:], c, final)
		if partial {
			return i, true
		}
		if full {
			i += len(c)
		}
	}
	p.afterCall()
	return i, false
}
