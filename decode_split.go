package hearth

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// The request decoder walks a body that json.Unmarshal has already checked (the
// top-level decode of every Decode* entry point, and json.Unmarshal before it calls
// Item.UnmarshalJSON): decoding each nested array, object and string with
// json.Unmarshal again scanned the same bytes once per level, four or five times in
// all, which made a Codex-sized history (185 KB) cost milliseconds. These helpers take
// the common shapes apart in one pass. Anything they do not expect sends the caller
// back to json.Unmarshal, which then gives the error it always gave.

// plainString is the value of a JSON string literal, decoded in one pass: the bytes
// between its quotes, with the escapes JSON has (\n, \", \uXXXX with surrogate pairs,
// ...) replaced. It refuses what json.Unmarshal would change or refuse otherwise: bytes
// that are not UTF-8 (replaced there), control characters, a lone surrogate, a bad
// escape; the caller then asks json.Unmarshal.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	esc := false
	for i := 0; i < len(inner); i++ {
		if i+8 <= len(inner) && !specialIn(binary.LittleEndian.Uint64(inner[i:])) {
			i += 7 // eight bytes that need no look
			continue
		}
		c := inner[i]
		if c < 0x20 || c == '"' {
			return "", false
		}
		esc = esc || c == '\\'
	}
	if !utf8.Valid(inner) {
		return "", false
	}
	if !esc {
		return string(inner), true
	}
	out := make([]byte, 0, len(inner))
	for i := 0; i < len(inner); i++ {
		if c := inner[i]; c != '\\' {
			// The run up to the next escape, in one copy.
			n := bytes.IndexByte(inner[i:], '\\')
			if n < 0 {
				n = len(inner) - i
			}
			out = append(out, inner[i:i+n]...)
			i += n - 1
			continue
		}
		i++
		if i >= len(inner) {
			return "", false
		}
		switch inner[i] {
		case '"', '\\', '/':
			out = append(out, inner[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(inner[i+1:])
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// A pair, or json.Unmarshal's replacement character for a lone half:
				// leave that case to it.
				if i+2 >= len(inner) || inner[i+1] != '\\' || inner[i+2] != 'u' {
					return "", false
				}
				r2, ok := hex4(inner[i+3:])
				if !ok {
					return "", false
				}
				r = utf16.DecodeRune(r, r2)
				if r == utf8.RuneError {
					return "", false
				}
				i += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return string(out), true
}

func hex4(b []byte) (rune, bool) {
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

// splitArray returns the elements of a JSON array, each as its raw bytes.
func splitArray(raw []byte) ([]json.RawMessage, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	elems := []json.RawMessage{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return elems, skipSpace(raw, i+1) == len(raw)
	}
	for {
		end, ok := skipValue(raw, i)
		if !ok {
			return nil, false
		}
		elems = append(elems, json.RawMessage(raw[i:end]))
		next, closed, ok := afterValue(raw, end, ']')
		if !ok {
			return nil, false
		}
		if closed {
			return elems, true
		}
		i = next
	}
}

// splitObject returns the members of a JSON object by key (the last of duplicates,
// as json.Unmarshal keeps), each value as its raw bytes. A key with escapes is
// decoded with json.Unmarshal.
func splitObject(raw []byte) (map[string]json.RawMessage, bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	fields := map[string]json.RawMessage{}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return fields, skipSpace(raw, i+1) == len(raw)
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, false
		}
		kend, ok := skipValue(raw, i)
		if !ok {
			return nil, false
		}
		key, ok := plainString(raw[i:kend])
		if !ok {
			if json.Unmarshal(raw[i:kend], &key) != nil {
				return nil, false
			}
		}
		i = skipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipSpace(raw, i+1)
		end, ok := skipValue(raw, i)
		if !ok {
			return nil, false
		}
		fields[key] = json.RawMessage(raw[i:end])
		next, closed, ok := afterValue(raw, end, '}')
		if !ok {
			return nil, false
		}
		if closed {
			return fields, true
		}
		i = next
	}
}

// afterValue reads what follows a member that ends at end: a comma (next is where the
// following member starts) or the list's closing bracket, which must end raw (closed).
func afterValue(raw []byte, end int, closing byte) (next int, closed, ok bool) {
	i := skipSpace(raw, end)
	switch {
	case i < len(raw) && raw[i] == ',':
		return skipSpace(raw, i+1), false, true
	case i < len(raw) && raw[i] == closing:
		return 0, true, skipSpace(raw, i+1) == len(raw)
	}
	return 0, false, false
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value that starts at raw[i]: a string, an
// array or object (brackets matched, strings skipped), or a scalar up to the next
// delimiter. Scalars and nested values are checked when they are decoded.
func skipValue(raw []byte, i int) (int, bool) {
	if i >= len(raw) {
		return 0, false
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '[', '{':
		depth := 0
		for i < len(raw) {
			switch raw[i] {
			case '"':
				end, ok := skipString(raw, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	case ',', ':', ']', '}':
		return 0, false
	}
	start := i
	for i < len(raw) {
		switch raw[i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return i, i > start
		}
		i++
	}
	return i, true
}

// skipString returns the end of the string literal that starts at raw[i]. It jumps
// from quote to quote (bytes.IndexByte is vectorised): a quote ends the string unless
// an odd run of backslashes precedes it, since escapes pair up from the left and the
// run's first backslash cannot be the escaped character of the byte before it.
func skipString(raw []byte, i int) (int, bool) {
	start := i + 1
	for at := start; at < len(raw); {
		q := bytes.IndexByte(raw[at:], '"')
		if q < 0 {
			return 0, false
		}
		q += at
		k := q
		for k > start && raw[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1, true
		}
		at = q + 1
	}
	return 0, false
}

// The string scans look at eight bytes at a time: a Codex history is mostly long
// strings (file contents, instructions), and a byte-at-a-time loop over them was a
// third of decoding it. specialIn reports whether any byte of w (eight bytes of a
// string, little-endian) is one a scan must stop at: a quote, a backslash or a
// control character. The tests are exact about whether such a byte exists (the
// classic "has a zero byte" and "has a byte less than n" word tricks).
func specialIn(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	less0x20 := (w - 0x20*ones) & ^w & highs
	return less0x20|hasZero(w^('"'*ones))|hasZero(w^('\\'*ones)) != 0
}

// validJSON reports exactly what json.Valid reports (one JSON value, with optional
// white space around it; at most maxNestingDepth arrays and objects deep; strings
// without raw control characters and with valid escapes, and not checked for UTF-8),
// in a fraction of its time: json.Valid steps a state machine through a function call
// per byte, which made checking a 185 KB Codex body cost more than taking it apart.
// FuzzValidJSON holds it to json.Valid.
func validJSON(b []byte) bool {
	var stackBuf [64]byte
	stack := stackBuf[:0] // the open '{' and '[', innermost last
	i := skipSpace(b, 0)
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
			i = skipSpace(b, i+1)
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
			i = skipSpace(b, i)
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
			i = skipSpace(b, i+1)
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
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return 0, false
	}
	return skipSpace(b, i+1), true
}

// validString checks the string literal at b[i] and returns its end.
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); {
		if i+8 <= len(b) && !specialIn(binary.LittleEndian.Uint64(b[i:])) {
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
				if _, ok := hex4(b[i+2:]); !ok {
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
