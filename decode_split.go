package hearth

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"

	"hearth/internal/jsonscan"
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
		if i+8 <= len(inner) && !jsonscan.SpecialIn(binary.LittleEndian.Uint64(inner[i:])) {
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
			r, ok := jsonscan.Hex4(inner[i+1:])
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
				r2, ok := jsonscan.Hex4(inner[i+3:])
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

// splitArray returns the elements of a JSON array, each as its raw bytes.
func splitArray(raw []byte) ([]json.RawMessage, bool) {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, false
	}
	elems := []json.RawMessage{}
	i = jsonscan.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return elems, jsonscan.SkipSpace(raw, i+1) == len(raw)
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
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	fields := map[string]json.RawMessage{}
	i = jsonscan.SkipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return fields, jsonscan.SkipSpace(raw, i+1) == len(raw)
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
		i = jsonscan.SkipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = jsonscan.SkipSpace(raw, i+1)
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
	i := jsonscan.SkipSpace(raw, end)
	switch {
	case i < len(raw) && raw[i] == ',':
		return jsonscan.SkipSpace(raw, i+1), false, true
	case i < len(raw) && raw[i] == closing:
		return 0, true, jsonscan.SkipSpace(raw, i+1) == len(raw)
	}
	return 0, false, false
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
