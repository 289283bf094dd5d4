package toolgrammar

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// pythonCall is the state of a PythonCall envelope: Open, then one or more calls
// in Python's call syntax, NAME(key="value", n=1, flags=[True, None]), separated by
// newlines or commas and maybe in a list ([f(), g()]), then Close (Olmo 3's
// <function_calls>, LFM2's <|tool_call_start|>). Arguments are
// converted to JSON as they stream: quoted strings (either quote, Python escapes) as
// JSON strings, True/False/None (and true/false/null/nil) as JSON literals, numbers,
// lists and dicts; any other unquoted value is text, as Ollama's parser reads it.
type pythonCall struct {
	sub   uint8
	name  []byte
	stack []byte // open containers: '[' or '{'
	key   []byte // a dict key or an argument name
	lit   []byte // an unquoted value
	quote byte   // the quote of the string being read
	inKey bool   // the string being read is a dict key
	first bool   // no call of the envelope begun yet
}

// Sub-states of a Python call.
const (
	pyBetween   uint8 = iota // before a call's name, or the closer
	pyName                   // the name, up to '('
	pyArgOrEnd               // after '(': an argument or ')'
	pyArg                    // after ',': an argument name
	pyArgName                // inside an argument name
	pyEq                     // after an argument name: '='
	pyValue                  // a value
	pyElemOrEnd              // after '[': a value or ']'
	pyDictKeyOr              // after '{': a key or '}'
	pyDictKey                // after ',' in a dict: a key
	pyBareKey                // inside an unquoted dict key
	pyColon                  // after a dict key: ':'
	pyString                 // inside a quoted string
	pyLiteral                // inside an unquoted value
	pyAfter                  // after a value: ',' or the container's end
)

func (y *pythonCall) open(p *Parser, _ string) {
	p.resetCall()
	y.first = true
	y.sub = pyBetween
	p.st = sCall
}

// openJSON is never called: a Python call format has no bare JSON calls.
func (y *pythonCall) openJSON(p *Parser) { p.fail("unexpected JSON call", false) }

func (y *pythonCall) fail(p *Parser, i int, reason string) (int, bool) {
	p.fail(reason, p.c.hasClose)
	return i, false
}

func (y *pythonCall) step(p *Parser, s string, final bool) (int, bool) {
	switch y.sub {
	case pyString:
		return y.stringStep(p, s, final)
	case pyBetween:
		return y.between(p, s, final)
	case pyName:
		return y.nameStep(p, s)
	case pyArgOrEnd, pyArg:
		return y.argStart(p, s)
	case pyArgName, pyBareKey:
		return y.word(p, s)
	case pyEq, pyColon:
		return y.separator(p, s)
	case pyValue, pyElemOrEnd:
		return y.value(p, s)
	case pyDictKeyOr, pyDictKey:
		return y.dictKey(p, s)
	case pyLiteral:
		return y.literal(p, s, final)
	case pyAfter:
		return y.after(p, s)
	}
	return 0, true
}

func pyWordByte(c byte) bool {
	return c == '_' || c == '.' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// between expects the next call's name, or the closer. A call after the first of
// the envelope is reported with a CallOpen of its own (no opener text), so an
// engine can take it back or constrain it like the first.
func (y *pythonCall) between(p *Parser, s string, final bool) (int, bool) {
	i := 0
	for i < len(s) && (isWS(s[i]) || s[i] == ',' || s[i] == ']' || (s[i] == '[' && y.first)) {
		// Separators, and the brackets of a list of calls.
		i++
	}
	if i == len(s) {
		return i, true
	}
	full, partial := prefixMatch(s[i:], p.e.Close, final)
	if partial {
		return i, true
	}
	if full {
		p.afterCall()
		return i + len(p.e.Close), false
	}
	if !pyWordByte(s[i]) {
		return y.fail(p, i, "expected a call")
	}
	if !y.first {
		p.out = append(p.out, Event{Kind: CallOpen, Index: -1, Offset: p.at + int64(i)})
		p.resetCall()
		p.st = sCall
		p.rawStart = i
	}
	y.first = false
	y.name = y.name[:0]
	y.sub = pyName
	return i, false
}

// nameStep reads the name up to '(' and begins the call.
func (y *pythonCall) nameStep(p *Parser, s string) (int, bool) {
	j := 0
	for j < len(s) && pyWordByte(s[j]) {
		j++
	}
	y.name = append(y.name, s[:j]...)
	if len(y.name) > maxKeyLen {
		return y.fail(p, j, "call name too long")
	}
	if j == len(s) {
		return j, true
	}
	if s[j] != '(' {
		return y.fail(p, j, "expected '(' after the call name")
	}
	p.begin(string(y.name), p.at+int64(j+1))
	p.args = append(p.args[:0], '{')
	y.stack = y.stack[:0]
	y.sub = pyArgOrEnd
	return j + 1, false
}

// argStart expects an argument name (or, right after '(', the call's end).
func (y *pythonCall) argStart(p *Parser, s string) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	if s[i] == ')' && y.sub == pyArgOrEnd {
		return y.endCall(p, i)
	}
	if !pyWordByte(s[i]) {
		return y.fail(p, i, "expected an argument name")
	}
	y.key = y.key[:0]
	y.sub = pyArgName
	return i, false
}

// word reads an argument name or an unquoted dict key.
func (y *pythonCall) word(p *Parser, s string) (int, bool) {
	j := 0
	for j < len(s) && pyWordByte(s[j]) {
		j++
	}
	y.key = append(y.key, s[:j]...)
	if len(y.key) > maxKeyLen {
		return y.fail(p, j, "name too long")
	}
	if j == len(s) {
		return j, true
	}
	y.writeKey(p, string(y.key))
	if y.sub == pyArgName {
		y.sub = pyEq
	} else {
		y.sub = pyColon
	}
	return j, false
}

func (y *pythonCall) writeKey(p *Parser, key string) {
	p.args = append(p.args, '"')
	p.args = appendJSONString(p.args, key)
	p.args = append(p.args, '"', ':')
}

// separator expects '=' after an argument name, ':' after a dict key.
func (y *pythonCall) separator(p *Parser, s string) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	want := byte('=')
	if y.sub == pyColon {
		want = ':'
	}
	if s[i] != want {
		return y.fail(p, i, "expected "+string(want))
	}
	y.sub = pyValue
	return i + 1, false
}

// dictKey expects a dict key (or, right after '{', the dict's end).
func (y *pythonCall) dictKey(p *Parser, s string) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	switch c := s[i]; {
	case c == '}' && y.sub == pyDictKeyOr:
		return y.closeContainer(p, i, c)
	case c == '"' || c == '\'':
		y.quote, y.inKey = c, true
		y.key = y.key[:0]
		y.sub = pyString
		return i + 1, false
	case pyWordByte(c):
		y.key = y.key[:0]
		y.sub = pyBareKey
		return i, false
	}
	return y.fail(p, i, "expected a dict key")
}

// value starts a value (or, right after '[', the list's end).
func (y *pythonCall) value(p *Parser, s string) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	switch c := s[i]; {
	case c == ']' && y.sub == pyElemOrEnd:
		return y.closeContainer(p, i, c)
	case c == '"' || c == '\'':
		y.quote, y.inKey = c, false
		p.args = append(p.args, '"')
		y.sub = pyString
		return i + 1, false
	case c == '[' || c == '{':
		p.args = append(p.args, c)
		y.stack = append(y.stack, c)
		y.sub = pyElemOrEnd
		if c == '{' {
			y.sub = pyDictKeyOr
		}
		return i + 1, false
	case c == ',' || c == ')' || c == ']' || c == '}':
		return y.fail(p, i, "expected a value")
	}
	y.lit = y.lit[:0]
	y.sub = pyLiteral
	return i, false
}

// pyEscapes translates a Python string escape into JSON string content.
var pyEscapes = map[byte]string{
	'"': `\"`, '\'': `'`, '\\': `\\`, '/': `/`, 'n': `\n`, 't': `\t`, 'r': `\r`, 'b': `\b`, 'f': `\f`,
}

// stringStep streams a quoted string, its escapes translated to JSON's. A dict key
// is collected and written whole.
func (y *pythonCall) stringStep(p *Parser, s string, final bool) (int, bool) {
	out := &p.args
	if y.inKey {
		out = &y.key
	}
	start := 0
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case c == y.quote:
			*out = appendJSONString(*out, s[start:j])
			if y.inKey {
				var key string
				if json.Unmarshal([]byte(`"`+string(y.key)+`"`), &key) != nil {
					return y.fail(p, j, "invalid dict key")
				}
				y.writeKey(p, key)
				y.sub = pyColon
			} else {
				p.args = append(p.args, '"')
				y.sub = pyAfter
			}
			return j + 1, false
		case c == '\\':
			*out = appendJSONString(*out, s[start:j])
			if j+1 == len(s) {
				if final {
					return y.fail(p, j, "unterminated string")
				}
				return j, true
			}
			e := s[j+1]
			if e == 'u' {
				if j+6 > len(s) {
					if final {
						return y.fail(p, j, "unterminated string")
					}
					return j, true
				}
				r, err := strconv.ParseUint(s[j+2:j+6], 16, 16)
				if err != nil {
					return y.fail(p, j, "invalid \\u escape")
				}
				if r >= 0xd800 && r < 0xe000 {
					// Half of a surrogate pair: JSON takes the escape as it is.
					*out = append(*out, s[j:j+6]...)
				} else {
					// The character itself, as JSON writes it (the renderer
					// escapes <, > and & this way).
					*out = appendJSONString(*out, string(rune(r)))
				}
				j += 5
			} else if t, ok := pyEscapes[e]; ok {
				*out = append(*out, t...)
				j++
			} else {
				// An escape Python would keep as written.
				*out = append(*out, `\\`...)
				j++
				*out = appendJSONString(*out, s[j:j+1])
			}
			start = j + 1
		}
	}
	*out = appendJSONString(*out, s[start:])
	if len(y.key) > maxKeyLen {
		return y.fail(p, len(s), "dict key too long")
	}
	return len(s), true
}

// literal collects an unquoted value up to what ends it and converts it.
func (y *pythonCall) literal(p *Parser, s string, final bool) (int, bool) {
	j := 0
	for j < len(s) && !strings.ContainsRune(",)]}\n<", rune(s[j])) {
		j++
	}
	y.lit = append(y.lit, s[:j]...)
	if len(y.lit) > maxKeyLen {
		return y.fail(p, j, "value too long")
	}
	if j == len(s) && !final {
		return j, true
	}
	p.args = appendPythonLiteral(p.args, strings.TrimSpace(string(y.lit)))
	y.sub = pyAfter
	return j, false
}

// appendPythonLiteral writes an unquoted value as JSON: Python's and JSON's
// literals, numbers, and anything else as a string (as Ollama's parser does).
func appendPythonLiteral(b []byte, v string) []byte {
	switch v {
	case "True", "true":
		return append(b, "true"...)
	case "False", "false":
		return append(b, "false"...)
	case "None", "null", "nil":
		return append(b, "null"...)
	}
	if json.Valid([]byte(v)) && jsonKind([]byte(v)) == tNumber {
		return append(b, v...)
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && !strings.ContainsAny(v, "nN") {
		return strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	b = append(b, '"')
	b = appendJSONString(b, v)
	return append(b, '"')
}

// after expects ',' or the end of the container (or call) a value was in.
func (y *pythonCall) after(p *Parser, s string) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	c := s[i]
	switch {
	case c == ',':
		p.args = append(p.args, ',')
		switch {
		case len(y.stack) == 0:
			y.sub = pyArg
		case y.stack[len(y.stack)-1] == '{':
			y.sub = pyDictKey
		default:
			y.sub = pyValue
		}
		return i + 1, false
	case c == ')' && len(y.stack) == 0:
		return y.endCall(p, i)
	case (c == ']' || c == '}') && len(y.stack) > 0:
		return y.closeContainer(p, i, c)
	}
	return y.fail(p, i, "expected ',' or the end of a call, list or dict")
}

func (y *pythonCall) closeContainer(p *Parser, i int, c byte) (int, bool) {
	open := y.stack[len(y.stack)-1]
	if (open == '{') != (c == '}') {
		return y.fail(p, i, "mismatched "+string(c))
	}
	p.args = append(p.args, c)
	y.stack = y.stack[:len(y.stack)-1]
	y.sub = pyAfter
	return i + 1, false
}

// endCall ends the call at the ')' at s[i]; the envelope goes on to the next call
// or its closer.
func (y *pythonCall) endCall(p *Parser, i int) (int, bool) {
	p.args = append(p.args, '}')
	p.end(p.at + int64(i+1))
	y.sub = pyBetween
	p.st = sEnvelope
	return i + 1, false
}

// PythonArguments writes a call's arguments, a JSON object, as Python keyword
// arguments through the call's ')' and the envelope's closer: what the model writes
// after ArgumentsPrefix(name). Values are written as JSON, as Ollama's renderer
// writes them (its strings are valid Python strings; true, false and null are read
// back as literals).
func (f *Format) PythonArguments(args string) (string, error) {
	e := &f.Tools
	if e.Kind != PythonCall {
		return "", fmt.Errorf("toolgrammar: format %s has no Python call syntax", f.ID)
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("toolgrammar: arguments %.100q are not a JSON object", args)
	}
	var sb strings.Builder
	for n := 0; dec.More(); n++ {
		tok, err := dec.Token()
		if err != nil {
			return "", fmt.Errorf("toolgrammar: arguments %.100q: %w", args, err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return "", fmt.Errorf("toolgrammar: arguments %.100q: %w", args, err)
		}
		if n > 0 {
			sb.WriteString(", ")
		}
		key, _ := tok.(string)
		sb.WriteString(key + "=")
		// Compact JSON with <, > and & escaped, as json.Marshal writes them in
		// the renderer: no string can then hold the closer.
		var c, h bytes.Buffer
		if err := json.Compact(&c, raw); err != nil {
			return "", fmt.Errorf("toolgrammar: arguments %.100q: %w", args, err)
		}
		json.HTMLEscape(&h, c.Bytes())
		sb.Write(h.Bytes())
	}
	if _, err := dec.Token(); err != nil {
		return "", fmt.Errorf("toolgrammar: arguments %.100q: %w", args, err)
	}
	sb.WriteString(")")
	if e.CallList {
		sb.WriteString("]")
	}
	sb.WriteString(e.Close)
	return sb.String(), nil
}
