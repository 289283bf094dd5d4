package toolgrammar

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// gemmaCall is the state of a GemmaCall envelope: Open, "call:", the name,
// then the arguments in Gemma's JSON-like syntax up to the object's end, then
// Close. The syntax differs from JSON in two ways: keys are bare words
// ({city:...}) and strings are quoted with a special token (Envelope.StringDelim,
// <|"|> in Gemma 4) and hold raw text, quotes and backslashes included. It is
// converted to JSON as it streams: a string value streams as JSON string
// fragments, numbers and literals are checked when they end. JSON strings
// ("...") are taken as they are, as Ollama's parser does, and so is a value in
// single quotes, which Gemma sometimes writes (Ollama repairs it), and an unquoted
// text value of a string parameter (Ollama repairs that too, by the tool's schema).
type gemmaCall struct {
	sub     uint8
	name    []byte
	stack   []byte // open containers: '{' or '['
	key     []byte // a bare key, or the raw body of a quoted one
	lastKey string // the last key of the arguments object, decoded
	lit     []byte // a number or literal value
	esc     bool   // in a quoted string: the previous byte was a backslash
	typ     map[string]map[string]typeSet
}

// Sub-states of a Gemma call.
const (
	gStart      uint8 = iota
	gName             // the name, up to '{'
	gKeyOrEnd         // after '{': a key or '}'
	gKey              // after ',' in an object: a key
	gBareKey          // inside a bare key
	gQuotedKey        // inside a "quoted" key
	gColon            // after a key
	gValue            // a value
	gElemOrEnd        // after '[': a value or ']'
	gString           // inside a delimited string
	gJSONString       // inside a "JSON string" value
	gSingle           // inside a 'single-quoted' value
	gSingleEnd        // after a single-quoted value: a stray delimiter is dropped
	gLiteral          // inside a number or literal
	gAfter            // after a value: ',' or the container's end
	gClose            // after the arguments: Close (sEnvelope)
	gRaw              // an unquoted text value of a string parameter
)

func (g *gemmaCall) open(p *Parser, _ string) {
	p.resetCall()
	g.name = g.name[:0]
	g.stack = g.stack[:0]
	g.sub = gStart
	p.st = sCall
}

// openJSON is never called: a Gemma format has no bare JSON calls.
func (g *gemmaCall) openJSON(p *Parser) { p.fail("unexpected JSON call", false) }

func (g *gemmaCall) fail(p *Parser, i int, reason string) (int, bool) {
	p.fail(reason, p.c.hasClose)
	return i, false
}

func (g *gemmaCall) step(p *Parser, s string, final bool) (int, bool) {
	switch g.sub {
	case gString:
		return g.stringStep(p, s, final)
	case gStart:
		return g.start(p, s, final)
	case gName:
		return g.nameStep(p, s)
	case gKeyOrEnd, gKey:
		return g.keyStart(p, s)
	case gBareKey:
		return g.bareKey(p, s)
	case gQuotedKey:
		return g.quotedKey(p, s)
	case gColon:
		return g.colon(p, s)
	case gValue, gElemOrEnd:
		return g.value(p, s, final)
	case gJSONString:
		return g.jsonString(p, s)
	case gSingle:
		return g.single(p, s)
	case gSingleEnd:
		return g.singleEnd(p, s, final)
	case gLiteral:
		return g.literal(p, s, final)
	case gAfter:
		return g.after(p, s)
	case gClose:
		return g.closeStep(p, s, final)
	case gRaw:
		return g.raw(p, s, final)
	}
	return 0, true
}

// start skips the "call:" prefix.
func (g *gemmaCall) start(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
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
	g.sub = gName
	return i, false
}

// nameStep reads the name up to the arguments' '{' and begins the call.
func (g *gemmaCall) nameStep(p *Parser, s string) (int, bool) {
	for j := 0; j < len(s); j++ {
		c := s[j]
		if c == '{' {
			g.name = append(g.name, s[:j]...)
			name := strings.TrimSpace(string(g.name))
			if name == "" {
				return g.fail(p, j, "empty call name")
			}
			p.begin(name, p.at+int64(j+1))
			p.args = append(p.args[:0], '{')
			g.stack = append(g.stack[:0], '{')
			g.sub = gKeyOrEnd
			return j + 1, false
		}
		if c == '}' || c == '[' || c == '"' || c == '<' || c == ':' {
			g.name = append(g.name, s[:j]...)
			return g.fail(p, j, "expected '{' after the call name")
		}
		if len(g.name)+j >= maxKeyLen {
			return g.fail(p, j, "call name too long")
		}
	}
	g.name = append(g.name, s...)
	return len(s), true
}

// keyStart expects a key (or, right after '{', the object's end).
func (g *gemmaCall) keyStart(p *Parser, s string) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	g.key = g.key[:0]
	switch c := s[i]; {
	case c == '}' && g.sub == gKeyOrEnd:
		return g.closeContainer(p, i, c)
	case c == '"':
		g.esc = false
		g.sub = gQuotedKey
		return i + 1, false
	case gemmaKeyByte(c):
		g.sub = gBareKey
		return i, false
	}
	return g.fail(p, i, "expected a key")
}

// gemmaKeyByte tells the bytes of a bare key. Ollama's parser takes letters,
// digits and '_'; any byte that is not the syntax's own is taken here, so a
// key like "max-results" written bare (the renderer writes keys as they are)
// still reads.
func gemmaKeyByte(c byte) bool {
	return c > ' ' && !strings.ContainsRune(`{}[],:"'<`, rune(c))
}

func (g *gemmaCall) bareKey(p *Parser, s string) (int, bool) {
	j := 0
	for j < len(s) && gemmaKeyByte(s[j]) {
		j++
	}
	g.key = append(g.key, s[:j]...)
	if len(g.key) > maxKeyLen {
		return g.fail(p, j, "key too long")
	}
	if j == len(s) {
		return j, true
	}
	g.writeKey(p, string(g.key))
	g.sub = gColon
	return j, false
}

// quotedKey reads a JSON-quoted key up to its closing quote.
func (g *gemmaCall) quotedKey(p *Parser, s string) (int, bool) {
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case g.esc:
			g.esc = false
		case c == '\\':
			g.esc = true
		case c == '"':
			g.key = append(g.key, s[:j]...)
			var key string
			if json.Unmarshal([]byte(`"`+string(g.key)+`"`), &key) != nil {
				return g.fail(p, j, "invalid quoted key")
			}
			g.writeKey(p, key)
			g.sub = gColon
			return j + 1, false
		}
	}
	g.key = append(g.key, s...)
	if len(g.key) > maxKeyLen {
		return g.fail(p, len(s), "key too long")
	}
	return len(s), true
}

func (g *gemmaCall) writeKey(p *Parser, key string) {
	if len(g.stack) == 1 {
		g.lastKey = key
	}
	p.args = append(p.args, '"')
	p.args = appendJSONString(p.args, key)
	p.args = append(p.args, '"', ':')
}

func (g *gemmaCall) colon(p *Parser, s string) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	if s[i] != ':' {
		return g.fail(p, i, "expected ':' after a key")
	}
	g.sub = gValue
	return i + 1, false
}

// value starts a value (or, right after '[', the array's end).
func (g *gemmaCall) value(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	c := s[i]
	if q := p.e.StringDelim; c == q[0] {
		full, partial := prefixMatch(s[i:], q, final)
		if partial {
			return i, true
		}
		if full {
			p.args = append(p.args, '"')
			g.sub = gString
			return i + len(q), false
		}
	}
	switch {
	case c == ']' && g.sub == gElemOrEnd:
		return g.closeContainer(p, i, c)
	case c == '{' || c == '[':
		p.args = append(p.args, c)
		g.stack = append(g.stack, c)
		g.sub = gKeyOrEnd
		if c == '[' {
			g.sub = gElemOrEnd
		}
		return i + 1, false
	case c == '"':
		p.args = append(p.args, '"')
		g.esc = false
		g.sub = gJSONString
		return i + 1, false
	case c == '\'':
		p.args = append(p.args, '"')
		g.esc = false
		g.sub = gSingle
		return i + 1, false
	case c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n':
		g.lit = g.lit[:0]
		g.sub = gLiteral
		return i, false
	case g.sub == gValue && g.rawAllowed(p):
		// Text without quotes as a string parameter's value ({city:Paris}):
		// Ollama's repair quotes it, by the schema.
		p.args = append(p.args, '"')
		g.sub = gRaw
		return i, false
	}
	return g.fail(p, i, "expected a value")
}

// rawAllowed tells whether the value being read may be unquoted text: a
// top-level parameter whose schema allows a string.
func (g *gemmaCall) rawAllowed(p *Parser) bool {
	return len(g.stack) == 1 && g.typ[p.nameStr][g.lastKey]&tString != 0
}

// raw streams an unquoted string value. As Ollama's repair reads it, the value
// runs to a ',' that is followed by another parameter of the tool and ':', or to
// the arguments' last '}' (before the closer), or to the closer (the object then
// closes too). A ',' or '}' is held until what follows it tells.
func (g *gemmaCall) raw(p *Parser, s string, final bool) (int, bool) {
	for j := 0; j < len(s); j++ {
		var end, wait bool
		switch {
		case s[j] == ',':
			end, wait = g.rawNextKey(p, s[j+1:], final)
		case s[j] == '}':
			k := skipWS(s[j+1:])
			full, partial := prefixMatch(s[j+1+k:], p.e.Close, final)
			end, wait = full, partial || (j+1+k == len(s) && !final)
		case s[j] == p.e.Close[0]:
			full, partial := prefixMatch(s[j:], p.e.Close, final)
			if partial {
				wait = true
			} else if full {
				// The closer ends the value and the object.
				p.args = appendJSONString(p.args, strings.TrimRightFunc(s[:j], unicode.IsSpace))
				p.args = append(p.args, '"', '}')
				g.stack = g.stack[:0]
				p.end(p.at + int64(j))
				g.sub = gClose
				p.st = sEnvelope
				return j, false
			}
		}
		if wait {
			// The whitespace before the held byte is held too: the value's
			// end would drop it.
			n := len(strings.TrimRightFunc(s[:j], unicode.IsSpace))
			p.args = appendJSONString(p.args, s[:n])
			return n, true
		}
		if end {
			p.args = appendJSONString(p.args, strings.TrimRightFunc(s[:j], unicode.IsSpace))
			p.args = append(p.args, '"')
			g.sub = gAfter
			return j, false
		}
	}
	if final {
		p.args = appendJSONString(p.args, s)
		return len(s), true
	}
	// Trailing whitespace may end the value: hold it.
	n := len(strings.TrimRightFunc(s, unicode.IsSpace))
	p.args = appendJSONString(p.args, s[:n])
	return n, true
}

// rawNextKey tells whether s, what follows a ',' in an unquoted value, starts
// the next parameter of the tool (its name and ':'), or must wait to tell.
func (g *gemmaCall) rawNextKey(p *Parser, s string, final bool) (end, wait bool) {
	i := skipWS(s)
	k := i
	for k < len(s) && gemmaKeyByte(s[k]) && k-i <= maxKeyLen {
		k++
	}
	c := k + skipWS(s[k:])
	if c == len(s) {
		return false, !final && k-i <= maxKeyLen
	}
	_, known := g.typ[p.nameStr][s[i:k]]
	return k > i && s[c] == ':' && known, false
}

// stringStep streams a delimited string up to its closing delimiter. Its
// content is raw text. The call's closer inside the string means the model
// left the last string open ({key:<|"|>value}<tool_call|>): as Ollama's
// repair does, the string ends before a last '}' (or at the end) and the
// object closes there. Trailing whitespace and one '}' or ']' are held back
// until it is clear they are content.
func (g *gemmaCall) stringStep(p *Parser, s string, final bool) (int, bool) {
	q := p.e.StringDelim
	j, k := p.c.gString.find(s, final)
	if k < 0 {
		n := j - gemmaHeldTail(s[:j])
		if final {
			n = j
		}
		p.args = appendJSONString(p.args, s[:n])
		return n, true
	}
	if p.c.gString.ds[k].s == q {
		p.args = appendJSONString(p.args, s[:j])
		p.args = append(p.args, '"')
		g.sub = gAfter
		return j + len(q), false
	}
	// The closer: repair a last string left open, only at the top level.
	if len(g.stack) != 1 {
		// Report what a string arriving in pieces would have reported by now,
		// so that the deltas before the failure do not depend on the cuts.
		p.args = appendJSONString(p.args, s[:j-gemmaHeldTail(s[:j])])
		return g.fail(p, j, "string not closed")
	}
	content := strings.TrimRightFunc(s[:j], unicode.IsSpace)
	content = strings.TrimSuffix(content, "}")
	p.args = appendJSONString(p.args, content)
	p.args = append(p.args, '"', '}')
	g.stack = g.stack[:0]
	p.end(p.at + int64(j))
	g.sub = gClose
	p.st = sEnvelope
	return j, false
}

// gemmaHeldTail is how much of the end of a string's content may still be
// the end of an object whose string was left open: trailing whitespace, one
// '}' or ']', and whitespace before it.
func gemmaHeldTail(s string) int {
	t := strings.TrimRightFunc(s, unicode.IsSpace)
	if strings.HasSuffix(t, "}") || strings.HasSuffix(t, "]") {
		t = strings.TrimRightFunc(t[:len(t)-1], unicode.IsSpace)
	}
	return len(s) - len(t)
}

// jsonString copies a JSON string value, checking its escapes.
func (g *gemmaCall) jsonString(p *Parser, s string) (int, bool) {
	start := 0
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case g.esc:
			g.esc = false
			if !strings.ContainsRune(`"\/bfnrtu`, rune(c)) {
				// What came before the backslash is reported first, as it is when
				// the string arrives in pieces, so the deltas do not depend on
				// where the output was cut.
				appendValidUTF8(&p.args, s[start:j-1])
				return g.fail(p, j, "invalid escape in string")
			}
		case c == '\\':
			g.esc = true
		case c == '"':
			appendValidUTF8(&p.args, s[start:j+1])
			g.sub = gAfter
			return j + 1, false
		case c < 0x20:
			appendValidUTF8(&p.args, s[start:j])
			p.args = appendControlEscape(p.args, c)
			start = j + 1
		}
	}
	n := len(s)
	if g.esc {
		// A backslash at the end is read again with the byte it escapes, so
		// an invalid escape fails before any of it is reported.
		g.esc = false
		n--
	}
	appendValidUTF8(&p.args, s[start:n])
	return n, true
}

// single streams a single-quoted value as a string. A backslash keeps the
// next quote in the string and is kept itself, as in Ollama's repair.
func (g *gemmaCall) single(p *Parser, s string) (int, bool) {
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case g.esc:
			g.esc = false
		case c == '\\':
			g.esc = true
		case c == '\'':
			p.args = appendJSONString(p.args, s[:j])
			p.args = append(p.args, '"')
			g.sub = gSingleEnd
			return j + 1, false
		}
	}
	p.args = appendJSONString(p.args, s)
	return len(s), true
}

// singleEnd drops a string delimiter written right after a single-quoted
// value ('value'<|"|>), which Ollama's repair drops too.
func (g *gemmaCall) singleEnd(p *Parser, s string, final bool) (int, bool) {
	full, partial := prefixMatch(s, p.e.StringDelim, final)
	if partial {
		return 0, true
	}
	g.sub = gAfter
	if full {
		return len(p.e.StringDelim), false
	}
	return 0, false
}

// literal collects a number, true, false or null up to what ends it.
func (g *gemmaCall) literal(p *Parser, s string, final bool) (int, bool) {
	j := 0
	for j < len(s) && !isWS(s[j]) && !strings.ContainsRune(",}]<", rune(s[j])) {
		j++
	}
	g.lit = append(g.lit, s[:j]...)
	if len(g.lit) > maxKeyLen {
		return g.fail(p, j, "value too long")
	}
	if j == len(s) && !final {
		return j, true
	}
	if !json.Valid(g.lit) || !(g.lit[0] == '-' || g.lit[0] <= '9' || string(g.lit) == "true" || string(g.lit) == "false" || string(g.lit) == "null") {
		if g.rawAllowed(p) {
			// Not a literal but text, as a string parameter's value
			// ({path:notes/a.txt}, {city:new york}): unquoted text, read as
			// raw does (Ollama's repair skips a value that begins like a
			// literal; taking it is kinder and reads the same otherwise).
			p.args = append(p.args, '"')
			p.args = appendJSONString(p.args, string(g.lit))
			g.sub = gRaw
			return j, false
		}
		return g.fail(p, j, "invalid value "+string(g.lit))
	}
	p.args = append(p.args, g.lit...)
	g.sub = gAfter
	return j, false
}

// after expects ',' or the end of the container a value was in.
func (g *gemmaCall) after(p *Parser, s string) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	switch c := s[i]; c {
	case ',':
		p.args = append(p.args, ',')
		if g.stack[len(g.stack)-1] == '{' {
			g.sub = gKey
		} else {
			g.sub = gValue
		}
		return i + 1, false
	case '}', ']':
		return g.closeContainer(p, i, c)
	}
	return g.fail(p, i, "expected ',' or the end of an object or array")
}

// closeContainer ends the innermost object or array with c at s[i]; the
// outermost one ends the call.
func (g *gemmaCall) closeContainer(p *Parser, i int, c byte) (int, bool) {
	open := g.stack[len(g.stack)-1]
	if (open == '{') != (c == '}') {
		return g.fail(p, i, "mismatched "+string(c))
	}
	p.args = append(p.args, c)
	g.stack = g.stack[:len(g.stack)-1]
	if len(g.stack) > 0 {
		g.sub = gAfter
		return i + 1, false
	}
	p.end(p.at + int64(i+1))
	g.sub = gClose
	p.st = sEnvelope
	return i + 1, false
}

// closeStep consumes the closer after the arguments.
func (g *gemmaCall) closeStep(p *Parser, s string, final bool) (int, bool) {
	i := skipWS(s)
	if i == len(s) {
		return i, true
	}
	full, partial := prefixMatch(s[i:], p.e.Close, final)
	if partial {
		return i, true
	}
	if full {
		i += len(p.e.Close)
	}
	p.afterCall()
	return i, false
}

// GemmaArguments writes a call's arguments, a JSON object, in the format's
// Gemma syntax through the call's closer: what the model writes after
// ArgumentsPrefix(name). Keys keep the JSON's order and are written bare
// when they are words (quoted otherwise); strings go between the string
// delimiters (as a JSON string when they contain the delimiter); numbers and
// literals as they are.
func (f *Format) GemmaArguments(args string) (string, error) {
	e := &f.Tools
	if e.Kind != GemmaCall {
		return "", fmt.Errorf("toolgrammar: format %s has no Gemma call syntax", f.ID)
	}
	var b strings.Builder
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", fmt.Errorf("toolgrammar: arguments %.100q are not a JSON object", args)
	}
	if err := writeGemmaObject(&b, dec, e.StringDelim); err != nil {
		return "", fmt.Errorf("toolgrammar: arguments %.100q: %w", args, err)
	}
	// The outer object's '{' is ArgumentsPrefix's.
	return strings.TrimPrefix(b.String(), "{") + e.Close, nil
}

// writeGemmaObject writes an object whose '{' dec has just read.
func writeGemmaObject(b *strings.Builder, dec *json.Decoder, q string) error {
	b.WriteByte('{')
	for n := 0; dec.More(); n++ {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if n > 0 {
			b.WriteByte(',')
		}
		key, _ := tok.(string)
		if gemmaBareKey(key) {
			b.WriteString(key)
		} else {
			b.Write(quoteJSON(key))
		}
		b.WriteByte(':')
		if err := writeGemmaValue(b, dec, q); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	b.WriteByte('}')
	return nil
}

func writeGemmaValue(b *strings.Builder, dec *json.Decoder, q string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return writeGemmaObject(b, dec, q)
		}
		b.WriteByte('[')
		for n := 0; dec.More(); n++ {
			if n > 0 {
				b.WriteByte(',')
			}
			if err := writeGemmaValue(b, dec, q); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
		b.WriteByte(']')
	case string:
		if strings.Contains(v, q) {
			b.Write(quoteJSON(v))
		} else {
			b.WriteString(q + v + q)
		}
	case json.Number:
		b.WriteString(v.String())
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	}
	return nil
}

// gemmaBareKey tells a key Ollama's parser reads bare: letters, digits, '_'.
func gemmaBareKey(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return utf8.ValidString(k)
}
