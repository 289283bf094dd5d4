// Package jsonscan checks and scans JSON text faster than encoding/json does: hearth's
// request decoder takes bodies apart with it (decode_split.go), and storage checks what
// it is asked to store with Valid. Valid answers exactly what json.Valid answers
// (FuzzValidJSON, in package hearth, holds it to that).
package jsonscan

import "encoding/binary"

// SkipSpace returns the index of the first byte at or after i that is not JSON white
// space.
func SkipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// The string scans look at eight bytes at a time: a Codex history is mostly long
// strings (file contents, instructions), and a byte-at-a-time loop over them was a
// third of decoding it. SpecialIn reports whether any byte of w (eight bytes of a
// string, little-endian) is one a scan must stop at: a quote, a backslash or a
// control character. The tests are exact about whether such a byte exists (the
// classic "has a zero byte" and "has a byte less than n" word tricks).
func SpecialIn(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	less0x20 := (w - 0x20*ones) & ^w & highs
	return less0x20|hasZero(w^('"'*ones))|hasZero(w^('\\'*ones)) != 0
}

// Valid reports exactly what json.Valid reports (one JSON value, with optional
// white space around it; at most maxNestingDepth arrays and objects deep; strings
// without raw control characters and with valid escapes, and not checked for UTF-8),
// in a fraction of its time: json.Valid steps a state machine through a function call
// per byte, which made checking a 185 KB Codex body cost more than taking it apart.
// FuzzValidJSON (package hearth) holds it to json.Valid.
func Valid(b []byte) bool {
	var stackBuf [64]byte
	stack := stackBuf[:0] // the open '{' and '[', innermost last
	i := SkipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		ok := true
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxNestingDepth {
				return false
			}
			i = SkipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' and ']' are '{' and '[' plus 2
				i++
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i, ok = validKey(b, i); !ok {
					return false
				}
			}
			continue
		case c == '"':
			i, ok = validString(b, i)
		case c == '-' || '0' <= c && c <= '9':
			i, ok = validNumber(b, i)
		case c == 't':
			i, ok = validLiteral(b, i, "true")
		case c == 'f':
			i, ok = validLiteral(b, i, "false")
		case c == 'n':
			i, ok = validLiteral(b, i, "null")
		default:
			return false
		}
		if !ok {
			return false
		}
		// A value ended before i: close what it ends, or go on to the next member.
		for {
			i = SkipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = SkipSpace(b, i+1)
			if top == '{' {
				if i, ok = validKey(b, i); !ok {
					return false
				}
			}
			break
		}
	}
}

// maxNestingDepth is encoding/json's bound on nesting, which json.Valid applies.
const maxNestingDepth = 10000

// validKey checks an object's key and its colon at b[i:] and returns where the value
// starts.
func validKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return 0, false
	}
	i, ok := validString(b, i)
	if !ok {
		return 0, false
	}
	i = SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return SkipSpace(b, i+1), true
}

// validString checks the string literal at b[i] and returns its end.
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); {
		if i+8 <= len(b) && !SpecialIn(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
			continue
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return 0, false
		case c == '\\':
			if i+1 >= len(b) {
				return 0, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := Hex4(b[i+2:]); !ok {
					return 0, false
				}
				i += 6
			default:
				return 0, false
			}
		default:
			i++
		}
	}
	return 0, false
}

// validNumber checks the number at b[i] (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?)
// and returns its end.
func validNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i, i > start
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i, _ = digits(i)
	default:
		return 0, false
	}
	ok := true
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return 0, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return 0, false
		}
	}
	return i, true
}

func validLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// Hex4 reads the four hex digits of a \u escape.
func Hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
