package toolgrammar

// Sub-states of sNJ: Open, the bare name, a name terminator, maybe a call
// id, then the JSON arguments (Mistral v11, DeepSeek).
const (
	njStart uint8 = iota
	njName
	njID
	njArgs0
	njFenceLang
	njArgs
)

const maxIDLen = 128

func (p *Parser) stepNJ(s string, final bool) (int, bool) {
	switch p.sub {
	case njStart:
		i := skipWS(s)
		if i == len(s) {
			return i, true
		}
		if c := s[i]; c == '[' || c == '{' {
			// A model of a name-outside family that writes the older JSON
			// shape anyway ([TOOL_CALLS][{"name": ...}]): parse it as such.
			p.st, p.arr = sJSON, c == '['
			if p.arr {
				p.sub = jArrOpen
			} else {
				p.sub = jObjOpen
			}
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
		p.name = p.name[:0]
		p.sub = njName
		return i, false
	case njName:
		j, k := p.c.nameEnd.find(s, final)
		for b := 0; b < j; b++ {
			if c := s[b]; c <= ' ' || c == '{' || c == '}' || c == '"' || c == '[' || c == '<' {
				p.name = append(p.name, s[:b]...)
				return p.njFail(b, "invalid character in call name")
			}
		}
		p.name = append(p.name, s[:j]...)
		if len(p.name) > maxKeyLen {
			return p.njFail(j, "call name too long")
		}
		if k < 0 {
			return j, true
		}
		if len(p.name) == 0 {
			return p.njFail(j, "empty call name")
		}
		d := p.c.nameEnd.ds[k]
		end := j + len(d.s)
		p.begin(string(p.name), p.at+int64(end))
		p.args = p.args[:0]
		p.skipped = 0
		if d.act == aIDMarker {
			p.sub = njID
		} else {
			p.sub = njArgs0
		}
		return end, false
	case njID:
		j, k := p.c.argsMark.find(s, final)
		p.skipped += j
		if p.skipped > maxIDLen {
			return p.njFail(j, "call id too long")
		}
		if k < 0 {
			return j, true
		}
		p.sub = njArgs0
		return j + len(p.e.ArgsMarker), false
	case njArgs0:
		i := skipWS(s)
		if i == len(s) {
			return i, true
		}
		if p.e.Fence && !p.fenced && s[i] == '`' {
			full, partial := prefixMatch(s[i:], "```", final)
			if partial {
				return i, true
			}
			if full {
				p.fenced = true
				p.sub = njFenceLang
				return i + 3, false
			}
		}
		if s[i] != '{' {
			return p.njFail(i, "arguments must be a JSON object")
		}
		p.vs.reset()
		p.sub = njArgs
		return i, false
	case njFenceLang:
		full, partial := prefixMatch(s, "json", final)
		if partial {
			return 0, true
		}
		p.sub = njArgs0
		if full {
			return 4, false
		}
		return 0, false
	case njArgs:
		n, done, err := p.vs.scan(s, &p.args, false)
		if err != "" {
			return p.njFail(n, "arguments: "+string(err))
		}
		if done {
			p.end(p.at + int64(n))
			p.st = sAfterNJ
			return n, false
		}
		return n, true
	}
	return 0, true
}

func (p *Parser) njFail(i int, reason string) (int, bool) {
	p.fail(reason, p.c.hasClose)
	return i, false
}

// stepAfterNJ consumes the closing fence and closer after the arguments.
func (p *Parser) stepAfterNJ(s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	if p.fenced {
		full, partial := prefixMatch(s[i:], "```", final)
		if partial {
			return i, true
		}
		p.fenced = false
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
