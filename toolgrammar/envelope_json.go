package toolgrammar

import (
	"bytes"
	"encoding/json"
)

// jsonCall is the state of a JSON envelope (JSONObject, JSONArray): after
// Open, a call object {"name": ..., "arguments": {...}}, possibly inside an
// array, possibly with the OpenAI-style nesting {"type": "function",
// "function": {...}}, then Close. Other kinds keep one for a call the model
// wrote as a JSON object anyway (continueCall, openJSON), and a format
// without tools uses it for bare calls.
type jsonCall struct {
	sub      uint8  // where in the call object (j* below)
	arr      bool   // the calls are in an array
	esc      bool   // the previous byte of a string was a backslash
	key      []byte // the key being read
	role     uint8  // what the key's value is (r* below)
	depth    int    // 1 inside the "function" object of the nesting
	hasName  bool
	hasArgs  bool
	argsMode uint8  // how the arguments value is written (am* below)
	name     []byte // the name string as written
	strBuf   []byte // an arguments value that is not an object, as written
	vs       valueScanner
}

// Sub-states of a JSON call.
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
	jAfterObj // after a complete call: Close, another object, or text (sEnvelope)
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

func (j *jsonCall) reset() {
	j.name = j.name[:0]
	j.key = j.key[:0]
	j.esc = false
	j.depth = 0
	j.hasName, j.hasArgs = false, false
	j.argsMode = 0
	j.vs.reset()
}

func (j *jsonCall) open(p *Parser, _ string) {
	p.resetCall()
	j.reset()
	j.arr = p.e.Kind == JSONArray
	if j.arr {
		j.sub = jArrOpen
	} else {
		j.sub = jObjOpen
	}
	p.st = sCall
}

func (j *jsonCall) openJSON(p *Parser) {
	p.resetCall()
	j.reset()
	j.arr = false
	j.sub = jObjOpen
	p.st = sCall
}

// step runs the call object byte by byte through its sub-states; each
// handler consumes from s[i:] and says whether the step ends there.
func (j *jsonCall) step(p *Parser, s string, final bool) (int, bool) {
	if j.sub == jAfterObj {
		return j.afterObj(p, s, final)
	}
	i := 0
	for i < len(s) {
		var leave bool
		switch j.sub {
		case jArrOpen:
			i, leave = j.arrOpen(p, s, i)
		case jObjOpen:
			i, leave = j.objOpen(p, s, i)
		case jKeyOrEnd, jKey:
			i, leave = j.keyOrEnd(p, s, i)
		case jKeyStr:
			i, leave = j.keyStr(p, s, i)
		case jColon:
			i, leave = j.colon(p, s, i)
		case jValue:
			i, leave = j.value(p, s, i)
		case jNameStr:
			i, leave = j.nameStr(p, s, i)
		case jArgs:
			i, leave = j.args(p, s, i)
		case jSkipVal:
			i, leave = j.skipValue(p, s, i)
		case jAfterVal:
			i, leave = j.afterValue(p, s, i)
		case jArrNext:
			i, leave = j.arrNext(p, s, i)
		default:
			leave = true
		}
		if leave {
			return i, false
		}
	}
	return i, true
}

// fail gives the call up at s[i]; the step ends.
func (j *jsonCall) fail(p *Parser, i int, reason string) (int, bool) {
	p.fail(reason, p.c.hasClose)
	return i, true
}

// toAfter leaves the call's raw span: what follows is the closer, another
// call object or text.
func (j *jsonCall) toAfter(p *Parser) {
	j.sub = jAfterObj
	p.st = sEnvelope
}

// skipWSFrom returns the offset of the first byte at or after i that is
// not whitespace.
func skipWSFrom(s string, i int) int {
	for i < len(s) && isWS(s[i]) {
		i++
	}
	return i
}

func (j *jsonCall) arrOpen(p *Parser, s string, i int) (int, bool) {
	if i = skipWSFrom(s, i); i == len(s) {
		return i, false
	}
	switch s[i] {
	case '{':
		// A single call without the array: accept it.
		j.arr = false
	case '[':
		i++
	default:
		return j.fail(p, i, "expected '[' to open the calls")
	}
	j.sub = jObjOpen
	return i, false
}

func (j *jsonCall) objOpen(p *Parser, s string, i int) (int, bool) {
	if i = skipWSFrom(s, i); i == len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == ']' && j.arr:
		j.toAfter(p)
		return i + 1, true
	case c == '[' && !j.arr && !j.hasName:
		// Several calls as an array inside one envelope: accept it.
		j.arr = true
		return i + 1, false
	case c != '{':
		return j.fail(p, i, "expected '{' to open a call")
	}
	p.resetCall()
	j.reset()
	j.sub = jKeyOrEnd
	return i + 1, false
}

func (j *jsonCall) keyOrEnd(p *Parser, s string, i int) (int, bool) {
	if i = skipWSFrom(s, i); i == len(s) {
		return i, false
	}
	if s[i] == '}' && j.sub == jKeyOrEnd {
		return j.objEnd(p, i+1)
	}
	if s[i] != '"' {
		return j.fail(p, i, "expected a key in the call object")
	}
	j.key = j.key[:0]
	j.esc = false
	j.sub = jKeyStr
	return i + 1, false
}

func (j *jsonCall) keyStr(p *Parser, s string, i int) (int, bool) {
	k := i
	for k < len(s) && (j.esc || s[k] != '"') {
		j.esc = !j.esc && s[k] == '\\'
		k++
	}
	j.key = append(j.key, s[i:k]...)
	if len(j.key) > maxKeyLen {
		return j.fail(p, k, "key too long")
	}
	if k < len(s) {
		k++ // closing quote
		j.role = j.keyRole(p.c)
		j.sub = jColon
	}
	return k, false
}

func (j *jsonCall) colon(p *Parser, s string, i int) (int, bool) {
	if i = skipWSFrom(s, i); i == len(s) {
		return i, false
	}
	if s[i] != ':' {
		return j.fail(p, i, "expected ':' in the call object")
	}
	j.sub = jValue
	return i + 1, false
}

// value starts the value of a key by the key's role: the name, the
// arguments, the nested function object, or anything else to skip.
func (j *jsonCall) value(p *Parser, s string, i int) (int, bool) {
	if i = skipWSFrom(s, i); i == len(s) {
		return i, false
	}
	c := s[i]
	role := j.role
	if (role == rName && j.hasName) || (role == rArgs && j.hasArgs) || (role == rFunc && (c != '{' || j.depth > 0)) {
		role = rOther
	}
	switch role {
	case rName:
		if c != '"' {
			return j.fail(p, i, "call name is not a string")
		}
		i++
		j.name = j.name[:0]
		j.esc = false
		j.sub = jNameStr
	case rArgs:
		j.vs.reset()
		j.strBuf = j.strBuf[:0]
		switch c {
		case '{':
			j.argsMode = amStream
		case '"':
			j.argsMode = amString
		default:
			j.argsMode = amOther
		}
		j.sub = jArgs
	case rFunc:
		i++
		j.depth = 1
		j.sub = jKeyOrEnd
	default:
		j.vs.reset()
		j.sub = jSkipVal
	}
	return i, false
}

func (j *jsonCall) nameStr(p *Parser, s string, i int) (int, bool) {
	k := i
	for k < len(s) && (j.esc || s[k] != '"') {
		j.esc = !j.esc && s[k] == '\\'
		k++
	}
	j.name = append(j.name, s[i:k]...)
	if len(j.name) > maxKeyLen {
		return j.fail(p, k, "name too long")
	}
	if k == len(s) {
		return k, false
	}
	k++
	j.hasName = true
	p.begin(unquoteName(j.name), p.at+int64(k))
	j.sub = jAfterVal
	return k, p.opts.PauseAtDecisions
}

func (j *jsonCall) args(p *Parser, s string, i int) (int, bool) {
	out := &p.args
	if j.argsMode != amStream {
		out = &j.strBuf
	}
	n, done, err := j.vs.scan(s[i:], out, false)
	i += n
	if err != "" {
		return j.fail(p, i, "arguments: "+string(err))
	}
	if done {
		if msg := j.finishArgs(p); msg != "" {
			return j.fail(p, i, msg)
		}
		j.sub = jAfterVal
	}
	return i, false
}

func (j *jsonCall) skipValue(p *Parser, s string, i int) (int, bool) {
	n, done, err := j.vs.scan(s[i:], nil, false)
	i += n
	if err != "" {
		return j.fail(p, i, string(err))
	}
	if done {
		j.sub = jAfterVal
	}
	return i, false
}

func (j *jsonCall) afterValue(p *Parser, s string, i int) (int, bool) {
	if i = skipWSFrom(s, i); i == len(s) {
		return i, false
	}
	switch c := s[i]; {
	case c == ',':
		j.sub = jKey
	case c == '}' && j.depth > 0:
		j.depth = 0
	case c == '}':
		return j.objEnd(p, i+1)
	default:
		return j.fail(p, i, "expected ',' or '}' in the call object")
	}
	return i + 1, false
}

func (j *jsonCall) arrNext(p *Parser, s string, i int) (int, bool) {
	if i = skipWSFrom(s, i); i == len(s) {
		return i, false
	}
	switch s[i] {
	case ',':
		j.sub = jObjOpen
		return i + 1, false
	case ']':
		j.toAfter(p)
		return i + 1, true
	}
	return j.fail(p, i, "expected ',' or ']' between calls")
}

func (j *jsonCall) keyRole(c *compiled) uint8 {
	k := string(j.key)
	switch {
	case k == c.nameKey:
		return rName
	case k == c.argsKey:
		return rArgs
	case k == "function" && j.depth == 0:
		return rFunc
	}
	// Models trained on one spelling sometimes write the other.
	if c.argsKey != "arguments" && k == "arguments" || c.argsKey != "parameters" && k == "parameters" {
		return rArgs
	}
	return rOther
}

// finishArgs turns a completed arguments value into canonical arguments; it
// returns a reason when the value is not an object.
func (j *jsonCall) finishArgs(p *Parser) string {
	j.hasArgs = true
	switch j.argsMode {
	case amStream:
		return ""
	case amString:
		var inner string
		if json.Unmarshal(j.strBuf, &inner) != nil {
			return "arguments string is not valid JSON"
		}
		var b bytes.Buffer
		if json.Compact(&b, []byte(inner)) != nil || b.Len() == 0 || b.Bytes()[0] != '{' {
			return "arguments string does not hold a JSON object"
		}
		p.args = append(p.args[:0], b.Bytes()...)
	default:
		if string(j.strBuf) != "null" {
			return "arguments are not a JSON object"
		}
		p.args = append(p.args[:0], "{}"...)
	}
	return ""
}

// objEnd completes the call object whose '}' ends at s[:i]; the step ends
// unless more calls of an array may follow at once.
func (j *jsonCall) objEnd(p *Parser, i int) (int, bool) {
	if !j.hasName {
		return j.fail(p, i, "call has no name")
	}
	if !j.hasArgs {
		p.args = append(p.args[:0], "{}"...)
	}
	p.end(p.at + int64(i))
	if !j.arr {
		j.toAfter(p)
		return i, true
	}
	// A later malformed span must not repeat this complete call.
	p.rawStart = i
	j.sub = jArrNext
	return i, p.opts.PauseAtDecisions
}

// afterObj follows a complete call object: the closer, another object in
// the same envelope (or a bare one), or text.
func (j *jsonCall) afterObj(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	if c := p.e.Close; c != "" {
		full, partial := prefixMatch(s[i:], c, final)
		if partial {
			return i, true
		}
		if full {
			p.afterCall()
			return i + len(c), false
		}
	}
	if s[i] == '{' && !j.arr {
		p.out = append(p.out, Event{Kind: CallOpen, Index: -1, Offset: p.at + int64(i)})
		p.resetCall()
		j.reset()
		j.arr = p.e.Kind == JSONArray
		j.sub = jObjOpen
		p.st = sCall
		p.rawStart = i
		return i, false
	}
	if sep := p.e.Separator; sep != "" && !j.arr {
		full, partial := prefixMatch(s[i:], sep, final)
		if partial {
			return i, true
		}
		if full {
			// The separator is markup only between calls; before prose it
			// is prose. Look past it (and spaces) for the next object.
			k := skipWSFrom(s, i+len(sep))
			if k == len(s) && !final {
				return i, true
			}
			if k < len(s) && s[k] == '{' {
				return k, false
			}
		}
	}
	p.afterCall()
	return i, false
}

// isBareCall decides whether s, which starts with '{' at the start of the
// output or right after a call, is a call (Envelope.Bare), by its first
// key; undecided while the key may still come.
func isBareCall(c *compiled, s string, final bool) (yes, decided bool) {
	i := skipWSFrom(s, 1)
	switch {
	case i == len(s):
		return false, final || i > 64
	case s[i] != '"':
		return false, true
	}
	k := i + 1
	for k < len(s) && s[k] != '"' && s[k] != '\\' && k-i < 64 {
		k++
	}
	switch {
	case k < len(s) && s[k] == '"':
		key := s[i+1 : k]
		return key == c.nameKey || key == c.argsKey || key == "type" || key == "function", true
	case k == len(s) && !final && k-i < 64:
		return false, false
	}
	return false, true
}

// continueCall parses the rest of a call, opened already by another kind,
// as a JSON call object or an array of them.
func (j *jsonCall) continueCall(arr bool) {
	j.reset()
	j.arr = arr
	if arr {
		j.sub = jArrOpen
	} else {
		j.sub = jObjOpen
	}
}
