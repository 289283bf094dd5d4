package toolgrammar

import (
	"unicode/utf8"
)

// valueScanner validates one JSON value incrementally and, when out is set,
// appends its compact form (whitespace outside strings dropped, everything
// else kept byte for byte, so key order and number spelling survive).
// It is lenient in one way models need: raw control characters inside
// strings are escaped instead of rejected.
type valueScanner struct {
	stack []byte // open containers: '{' or '['
	st    vsState
	lit   string // literal being matched (true/false/null)
	litN  int
	hexN  int  // \u digits still expected
	first byte // first byte of the value, to tell its kind
	done  bool
}

type vsState uint8

const (
	vsValue     vsState = iota // expect a value
	vsKeyOrEnd                 // after '{': key string or '}'
	vsKey                      // after ',' in an object: key string
	vsColon                    // after a key
	vsAfter                    // after a value inside a container: ',' or close
	vsElemOrEnd                // after '[': value or ']'
	vsString                   // inside a string value
	vsKeyString                // inside a key string
	vsEsc                      // after a backslash
	vsHex                      // inside \uXXXX
	vsLiteral                  // inside true/false/null
	vsNumMinus                 // after '-'
	vsNumZero                  // after leading 0
	vsNumInt                   // integer digits
	vsNumDot                   // after '.'
	vsNumFrac                  // fraction digits
	vsNumE                     // after e/E
	vsNumESign                 // after exponent sign
	vsNumExp                   // exponent digits
)

func (v *valueScanner) reset() {
	v.stack = v.stack[:0]
	v.st = vsValue
	v.done = false
	v.first = 0
}

// jsonErr is a scanning failure; the byte at the returned offset is the
// first one that cannot continue the value.
type jsonErr string

// scan consumes bytes of s. It returns the number of bytes consumed, and
// done once the value is complete (the byte after a top-level number or
// literal is not consumed). err is set when s[n] cannot continue the value.
// When final is true, a top-level number may end at the end of s.
func (v *valueScanner) scan(s string, out *[]byte, final bool) (n int, done bool, err jsonErr) {
	i := 0
	for i < len(s) {
		c := s[i]
		switch v.st {
		case vsString, vsKeyString:
			// Fast path: copy a run of plain string bytes at once.
			j := i
			for j < len(s) && s[j] != '"' && s[j] != '\\' && s[j] >= 0x20 {
				j++
			}
			if j > i {
				if out != nil {
					appendValidUTF8(out, s[i:j])
				}
				i = j
				continue
			}
			switch {
			case c == '"':
				v.emit(out, c)
				i++
				if v.st == vsKeyString {
					v.st = vsColon
				} else if v.afterValue() {
					return i, true, ""
				}
			case c == '\\':
				v.emit(out, c)
				i++
				if v.st == vsKeyString {
					v.lit = "k" // remember we are in a key
				} else {
					v.lit = ""
				}
				v.st = vsEsc
			default: // control character: escape it rather than fail
				if out != nil {
					*out = appendControlEscape(*out, c)
				}
				i++
			}
		case vsEsc:
			switch c {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				v.emit(out, c)
			case 'u':
				v.emit(out, c)
				v.hexN = 4
			default:
				return i, false, "invalid escape in string"
			}
			i++
			if v.hexN > 0 {
				v.st = vsHex
			} else {
				v.st = v.strState()
			}
		case vsHex:
			if !isHex(c) {
				return i, false, "invalid \\u escape"
			}
			v.emit(out, c)
			i++
			v.hexN--
			if v.hexN == 0 {
				v.st = v.strState()
			}
		case vsValue, vsElemOrEnd:
			if isWS(c) {
				i++
				continue
			}
			if v.st == vsElemOrEnd && c == ']' {
				v.emit(out, c)
				i++
				v.stack = v.stack[:len(v.stack)-1]
				if v.afterValue() {
					return i, true, ""
				}
				continue
			}
			if len(v.stack) == 0 && v.first == 0 {
				v.first = c
			}
			switch {
			case c == '{':
				v.stack = append(v.stack, '{')
				v.st = vsKeyOrEnd
			case c == '[':
				v.stack = append(v.stack, '[')
				v.st = vsElemOrEnd
			case c == '"':
				v.st = vsString
			case c == 't':
				v.lit, v.litN, v.st = "true", 1, vsLiteral
			case c == 'f':
				v.lit, v.litN, v.st = "false", 1, vsLiteral
			case c == 'n':
				v.lit, v.litN, v.st = "null", 1, vsLiteral
			case c == '-':
				v.st = vsNumMinus
			case c == '0':
				v.st = vsNumZero
			case c >= '1' && c <= '9':
				v.st = vsNumInt
			default:
				return i, false, "expected a JSON value"
			}
			v.emit(out, c)
			i++
		case vsKeyOrEnd, vsKey:
			if isWS(c) {
				i++
				continue
			}
			if c == '}' && v.st == vsKeyOrEnd {
				v.emit(out, c)
				i++
				v.stack = v.stack[:len(v.stack)-1]
				if v.afterValue() {
					return i, true, ""
				}
				continue
			}
			if c != '"' {
				return i, false, "expected an object key"
			}
			v.emit(out, c)
			i++
			v.st = vsKeyString
		case vsColon:
			if isWS(c) {
				i++
				continue
			}
			if c != ':' {
				return i, false, "expected ':' after object key"
			}
			v.emit(out, c)
			i++
			v.st = vsValue
		case vsAfter:
			if isWS(c) {
				i++
				continue
			}
			top := v.stack[len(v.stack)-1]
			switch {
			case c == ',':
				v.emit(out, c)
				i++
				if top == '{' {
					v.st = vsKey
				} else {
					v.st = vsValue
				}
			case (c == '}' && top == '{') || (c == ']' && top == '['):
				v.emit(out, c)
				i++
				v.stack = v.stack[:len(v.stack)-1]
				if v.afterValue() {
					return i, true, ""
				}
			default:
				return i, false, "expected ',' or the end of a container"
			}
		case vsLiteral:
			if c != v.lit[v.litN] {
				return i, false, "invalid literal"
			}
			v.emit(out, c)
			i++
			v.litN++
			if v.litN == len(v.lit) {
				if v.afterValue() {
					return i, true, ""
				}
			}
		default: // numbers
			next, ok := numStep(v.st, c)
			if !ok {
				if !numComplete(v.st) {
					return i, false, "invalid number"
				}
				// The number ended; c belongs to what follows.
				if v.afterValue() {
					return i, true, ""
				}
				continue
			}
			v.emit(out, c)
			i++
			v.st = next
		}
	}
	if final && len(v.stack) == 0 && v.st >= vsNumMinus && numComplete(v.st) {
		v.done = true
		return i, true, ""
	}
	return i, false, ""
}

func (v *valueScanner) strState() vsState {
	if v.lit == "k" {
		v.lit = ""
		return vsKeyString
	}
	return vsString
}

// afterValue moves past a completed value and reports whether it was the
// top-level one.
func (v *valueScanner) afterValue() bool {
	if len(v.stack) == 0 {
		v.done = true
		return true
	}
	v.st = vsAfter
	return false
}

func (v *valueScanner) emit(out *[]byte, c byte) {
	if out != nil {
		*out = append(*out, c)
	}
}

func numStep(st vsState, c byte) (vsState, bool) {
	digit := c >= '0' && c <= '9'
	switch st {
	case vsNumMinus:
		if c == '0' {
			return vsNumZero, true
		}
		if digit {
			return vsNumInt, true
		}
	case vsNumZero, vsNumInt:
		if digit && st == vsNumInt {
			return vsNumInt, true
		}
		if c == '.' {
			return vsNumDot, true
		}
		if c == 'e' || c == 'E' {
			return vsNumE, true
		}
	case vsNumDot:
		if digit {
			return vsNumFrac, true
		}
	case vsNumFrac:
		if digit {
			return vsNumFrac, true
		}
		if c == 'e' || c == 'E' {
			return vsNumE, true
		}
	case vsNumE:
		if c == '+' || c == '-' {
			return vsNumESign, true
		}
		if digit {
			return vsNumExp, true
		}
	case vsNumESign, vsNumExp:
		if digit {
			return vsNumExp, true
		}
	}
	return st, false
}

func numComplete(st vsState) bool {
	return st == vsNumZero || st == vsNumInt || st == vsNumFrac || st == vsNumExp
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isWS(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

func appendControlEscape(b []byte, c byte) []byte {
	switch c {
	case '\n':
		return append(b, '\\', 'n')
	case '\t':
		return append(b, '\\', 't')
	case '\r':
		return append(b, '\\', 'r')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	}
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
}

// appendValidUTF8 appends s, replacing each byte that is not part of a valid
// UTF-8 sequence by U+FFFD. Replacing per byte (not per run) keeps the result
// independent of where the input was split.
func appendValidUTF8(out *[]byte, s string) {
	if utf8.ValidString(s) {
		*out = append(*out, s...)
		return
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			*out = append(*out, "\uFFFD"...)
		} else {
			*out = append(*out, s[i:i+size]...)
		}
		i += size
	}
}

// validUTF8 returns s with invalid bytes replaced, allocating only when
// needed.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	appendValidUTF8(&b, s)
	return string(b)
}

// incompleteRuneSuffix returns the length of a trailing, possibly complete
// later, UTF-8 sequence prefix of s (0 to 3 bytes).
func incompleteRuneSuffix(s string) int {
	n := len(s)
	for k := 1; k <= 3 && k <= n; k++ {
		c := s[n-k]
		if c < 0x80 {
			return 0
		}
		if c >= 0xC0 { // a leading byte
			need := 0
			switch {
			case c >= 0xF0 && c <= 0xF4:
				need = 4
			case c >= 0xE0:
				need = 3
			case c >= 0xC2 && c <= 0xDF:
				need = 2
			default:
				return 0
			}
			if k < need && utf8.FullRuneInString(s[n-k:]) == false {
				return k
			}
			return 0
		}
	}
	return 0
}
