package toolgrammar

import (
	"bytes"
	"encoding/json"
)

// Sub-states of sJSON: the call object {"name": ..., "arguments": {...}},
// possibly inside an array, possibly with the OpenAI-style nesting
// {"type": "function", "function": {...}}.
const (
	jArrOpen uint8 = iota
	jObjOpen
	jKeyOrEnd
	jKey
	jKeyStr
	jColon
	jValue
	jNameStr
	jArgs
	jSkipVal
	jAfterVal
	jArrNext
)

// Roles of a key in the call object.
const (
	rOther uint8 = iota
	rName
	rArgs
	rFunc
)

// How the arguments value was written.
const (
	amStream uint8 = iota // an object: streamed as it comes
	amString              // a JSON string holding the object (some models do this)
	amOther               // anything else: null means {}, the rest is malformed
)

const maxKeyLen = 256

func (p *Parser) stepJSON(s string, final bool) (int, bool) {
	i := 0
	for i < len(s) {
		c := s[i]
		switch p.sub {
		case jArrOpen:
			if isWS(c) {
				i++
				continue
			}
			if c == '{' {
				// A single call without the array: accept it.
				p.arr = false
				p.sub = jObjOpen
				continue
			}
			if c != '[' {
				return p.jsonFail(i, "expected '[' to open the calls")
			}
			i++
			p.sub = jObjOpen
		case jObjOpen:
			if isWS(c) {
				i++
				continue
			}
			if c == ']' && p.arr {
				i++
				p.st = sAfterObj
				return i, false
			}
			if c == '[' && !p.arr && !p.hasName {
				// Several calls as an array inside one envelope: accept it.
				p.arr = true
				i++
				continue
			}
			if c != '{' {
				return p.jsonFail(i, "expected '{' to open a call")
			}
			p.resetCall()
			i++
			p.sub = jKeyOrEnd
		case jKeyOrEnd, jKey:
			if isWS(c) {
				i++
				continue
			}
			if c == '}' && p.sub == jKeyOrEnd {
				i++
				if n, ok := p.objEnd(i); !ok {
					return n, false
				}
				if !p.arr || p.opts.PauseAtDecisions {
					return i, false
				}
				continue
			}
			if c != '"' {
				return p.jsonFail(i, "expected a key in the call object")
			}
			i++
			p.key = p.key[:0]
			p.esc = false
			p.sub = jKeyStr
		case jKeyStr:
			j := i
			for j < len(s) && (p.esc || s[j] != '"') {
				p.esc = !p.esc && s[j] == '\\'
				j++
			}
			p.key = append(p.key, s[i:j]...)
			if len(p.key) > maxKeyLen {
				return p.jsonFail(j, "key too long")
			}
			i = j
			if i < len(s) {
				i++ // closing quote
				p.role = p.keyRole()
				p.sub = jColon
			}
		case jColon:
			if isWS(c) {
				i++
				continue
			}
			if c != ':' {
				return p.jsonFail(i, "expected ':' in the call object")
			}
			i++
			p.sub = jValue
		case jValue:
			if isWS(c) {
				i++
				continue
			}
			role := p.role
			if (role == rName && p.hasName) || (role == rArgs && p.hasArgs) || (role == rFunc && (c != '{' || p.depth > 0)) {
				role = rOther
			}
			switch role {
			case rName:
				if c != '"' {
					return p.jsonFail(i, "call name is not a string")
				}
				i++
				p.name = p.name[:0]
				p.esc = false
				p.sub = jNameStr
			case rArgs:
				p.vs.reset()
				p.strBuf = p.strBuf[:0]
				switch c {
				case '{':
					p.argsMode = amStream
				case '"':
					p.argsMode = amString
				default:
					p.argsMode = amOther
				}
				p.sub = jArgs
			case rFunc:
				i++
				p.depth = 1
				p.sub = jKeyOrEnd
			default:
				p.vs.reset()
				p.sub = jSkipVal
			}
		case jNameStr:
			j := i
			for j < len(s) && (p.esc || s[j] != '"') {
				p.esc = !p.esc && s[j] == '\\'
				j++
			}
			p.name = append(p.name, s[i:j]...)
			if len(p.name) > maxKeyLen {
				return p.jsonFail(j, "name too long")
			}
			i = j
			if i < len(s) {
				i++
				p.hasName = true
				p.begin(unquoteName(p.name), p.at+int64(i))
				p.sub = jAfterVal
				if p.opts.PauseAtDecisions {
					return i, false
				}
			}
		case jArgs:
			out := &p.args
			if p.argsMode != amStream {
				out = &p.strBuf
			}
			n, done, err := p.vs.scan(s[i:], out, false)
			i += n
			if err != "" {
				return p.jsonFail(i, "arguments: "+string(err))
			}
			if done {
				if msg := p.finishArgs(); msg != "" {
					return p.jsonFail(i, msg)
				}
				p.sub = jAfterVal
			}
		case jSkipVal:
			n, done, err := p.vs.scan(s[i:], nil, false)
			i += n
			if err != "" {
				return p.jsonFail(i, string(err))
			}
			if done {
				p.sub = jAfterVal
			}
		case jAfterVal:
			if isWS(c) {
				i++
				continue
			}
			switch {
			case c == ',':
				i++
				p.sub = jKey
			case c == '}' && p.depth > 0:
				i++
				p.depth = 0
			case c == '}':
				i++
				if n, ok := p.objEnd(i); !ok {
					return n, false
				}
				if !p.arr || p.opts.PauseAtDecisions {
					return i, false
				}
			default:
				return p.jsonFail(i, "expected ',' or '}' in the call object")
			}
		case jArrNext:
			if isWS(c) {
				i++
				continue
			}
			switch c {
			case ',':
				i++
				p.sub = jObjOpen
			case ']':
				i++
				p.st = sAfterObj
				return i, false
			default:
				return p.jsonFail(i, "expected ',' or ']' between calls")
			}
		}
	}
	return i, true
}

func (p *Parser) keyRole() uint8 {
	k := string(p.key)
	switch {
	case k == p.c.nameKey:
		return rName
	case k == p.c.argsKey:
		return rArgs
	case k == "function" && p.depth == 0:
		return rFunc
	}
	// Models trained on one spelling sometimes write the other.
	if p.c.argsKey != "arguments" && k == "arguments" || p.c.argsKey != "parameters" && k == "parameters" {
		return rArgs
	}
	return rOther
}

// finishArgs turns a completed arguments value into canonical arguments; it
// returns a reason when the value is not an object.
func (p *Parser) finishArgs() string {
	p.hasArgs = true
	switch p.argsMode {
	case amStream:
		return ""
	case amString:
		var inner string
		if json.Unmarshal(p.strBuf, &inner) != nil {
			return "arguments string is not valid JSON"
		}
		var b bytes.Buffer
		if json.Compact(&b, []byte(inner)) != nil || b.Len() == 0 || b.Bytes()[0] != '{' {
			return "arguments string does not hold a JSON object"
		}
		p.args = append(p.args[:0], b.Bytes()...)
	default:
		if string(p.strBuf) != "null" {
			return "arguments are not a JSON object"
		}
		p.args = append(p.args[:0], "{}"...)
	}
	return ""
}

// objEnd completes the call object whose '}' ends at s[:i].
func (p *Parser) objEnd(i int) (int, bool) {
	if !p.hasName {
		n, _ := p.jsonFail(i, "call has no name")
		return n, false
	}
	if !p.hasArgs {
		p.args = append(p.args[:0], "{}"...)
	}
	p.end(p.at + int64(i))
	if p.arr {
		// A later malformed span must not repeat this complete call.
		p.rawStart = i
		p.sub = jArrNext
	} else {
		p.st = sAfterObj
	}
	return i, true
}

func (p *Parser) jsonFail(i int, reason string) (int, bool) {
	p.fail(reason, p.c.hasClose)
	return i, false
}

// stepAfterObj follows a complete call object: the closer, another object
// in the same envelope (or a bare one), or text.
func (p *Parser) stepAfterObj(s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	if p.e.Close != "" {
		full, partial := prefixMatch(s[i:], p.e.Close, final)
		if partial {
			return i, true
		}
		if full {
			p.afterCall()
			return i + len(p.e.Close), false
		}
	}
	if s[i] == '{' && !p.arr {
		p.out = append(p.out, Event{Kind: CallOpen, Index: -1, Offset: p.at + int64(i)})
		p.startCall("")
		p.rawStart = i
		p.st, p.sub = sJSON, jObjOpen
		return i, false
	}
	if sep := p.e.Separator; sep != "" && !p.arr {
		full, partial := prefixMatch(s[i:], sep, final)
		if partial {
			return i, true
		}
		if full {
			// The separator is markup only between calls; before prose it
			// is prose. Look past it (and spaces) for the next object.
			j := i + len(sep)
			j += skipWS(s[j:])
			if j == len(s) && !final {
				return i, true
			}
			if j < len(s) && s[j] == '{' {
				return j, false
			}
		}
	}
	p.afterCall()
	return i, false
}
