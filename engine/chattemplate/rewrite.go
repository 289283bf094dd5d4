package chattemplate

import (
	"errors"
	"strings"
)

// rewriteFilters compiles every `EXPR | tojson(ARGS)` of a template into
// `__hearth_tojson(EXPR, ARGS)`, a call of this package's encoder, which writes
// Hugging Face's tojson byte for byte (key order kept with indent, floats as Python
// writes them, ensure_ascii and sort_keys honoured); `| string` likewise becomes
// Python's str(). The library looks filters up only
// among its own builtins, so a call of a variable the render supplies is the one way to
// put another tojson in place without changing the library.
//
// Jinja binds a filter tighter than any operator, so EXPR is the postfix chain before
// the bar: names joined by dots, subscripts, calls, earlier filters, literals and
// parenthesised groups, stopping at an operator or a keyword.
func rewriteFilters(src string) (string, error) {
	var out strings.Builder
	for i := 0; i < len(src); {
		open := strings.Index(src[i:], "{")
		if open < 0 || open+1 >= len(src[i:]) {
			out.WriteString(src[i:])
			break
		}
		open += i
		var closer string
		switch src[open+1] {
		case '{':
			closer = "}}"
		case '%':
			closer = "%}"
		case '#':
			end := strings.Index(src[open+2:], "#}")
			if end < 0 {
				return "", errors.New("unclosed comment")
			}
			stop := open + 2 + end + 2
			out.WriteString(src[i:stop])
			i = stop
			continue
		default:
			out.WriteString(src[i : open+1])
			i = open + 1
			continue
		}
		bodyStart := open + 2
		end, ok := tagEnd(src, bodyStart, closer)
		if !ok {
			return "", errors.New("unclosed tag")
		}
		body := src[bodyStart:end]
		out.WriteString(src[i:bodyStart])
		if closer == "%}" && isRawTag(body) {
			// A raw block's text is not Jinja: copy it through its endraw as it is.
			stop := strings.Index(src[end:], "endraw")
			if stop < 0 {
				return "", errors.New("unclosed raw block")
			}
			close := strings.Index(src[end+stop:], "%}")
			if close < 0 {
				return "", errors.New("unclosed raw block")
			}
			out.WriteString(src[bodyStart : end+stop+close+2])
			i = end + stop + close + 2
			continue
		}
		for {
			next, changed := rewriteOne(body)
			if !changed {
				break
			}
			body = next
		}
		if closer == "}}" {
			body = wrapPrint(body)
		}
		out.WriteString(body)
		out.WriteString(closer)
		i = end + 2
	}
	return out.String(), nil
}

func isRawTag(body string) bool {
	return strings.Trim(strings.TrimSpace(body), "-+ \t\n") == "raw"
}

// tagEnd is where closer ends the tag whose body starts at from, outside string literals.
func tagEnd(src string, from int, closer string) (int, bool) {
	for j := from; j < len(src); j++ {
		switch c := src[j]; c {
		case '\'', '"':
			k := skipString(src, j)
			if k < 0 {
				return 0, false
			}
			j = k - 1
		default:
			if strings.HasPrefix(src[j:], closer) {
				return j, true
			}
		}
	}
	return 0, false
}

// skipString is the offset after the string literal starting at i, -1 if unclosed.
func skipString(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j + 1
		}
	}
	return -1
}

type tok struct {
	kind       byte // 'n' name, 's' string, '0' number, or the punctuation character
	start, end int
	text       string
}

func tokenize(s string) []tok {
	var toks []tok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'' || c == '"':
			j := skipString(s, i)
			if j < 0 {
				j = len(s)
			}
			toks = append(toks, tok{'s', i, j, s[i:j]})
			i = j
		case isNameByte(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			toks = append(toks, tok{'n', i, j, s[i:j]})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (isNameByte(s[j]) || s[j] == '.') {
				j++
			}
			toks = append(toks, tok{'0', i, j, s[i:j]})
			i = j
		default:
			toks = append(toks, tok{c, i, i + 1, s[i : i+1]})
			i++
		}
	}
	return toks
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// rewritten are the filters compiled into calls of this package's functions: tojson
// (Hugging Face's json.dumps) and string (Python's str(), which writes floats as
// repr does: 1.0, not the library's 1).
var rewritten = map[string]string{"tojson": tojsonFunc, "string": stringFunc}

// stopWords end an operand: Jinja's operators and statement words.
var stopWords = map[string]bool{
	"and": true, "or": true, "not": true, "in": true, "is": true, "if": true, "else": true,
	"elif": true, "for": true, "set": true, "print": true, "do": true, "return": true,
}

// rewriteOne rewrites the first tojson filter of a tag body.
func rewriteOne(body string) (string, bool) {
	toks := tokenize(body)
	for p := 1; p+1 < len(toks); p++ {
		if toks[p].kind != '|' || toks[p+1].kind != 'n' {
			continue
		}
		fn, ok := rewritten[toks[p+1].text]
		if !ok {
			continue
		}
		// A bar of `||` is not a filter (Jinja has none); a name after tojson would be.
		if toks[p-1].kind == '|' {
			continue
		}
		first, ok := operandStart(toks, p-1)
		if !ok {
			return body, false
		}
		argsText, end := "", toks[p+1].end
		if p+2 < len(toks) && toks[p+2].kind == '(' {
			closeAt := matchForward(toks, p+2)
			if closeAt < 0 {
				return body, false
			}
			argsText = strings.TrimSpace(body[toks[p+2].end:toks[closeAt].start])
			end = toks[closeAt].end
		}
		operand := strings.TrimSpace(body[toks[first].start:toks[p].start])
		call := fn + "(" + operand
		if argsText != "" {
			call += ", " + argsText
		}
		call += ")"
		return body[:toks[first].start] + call + body[end:], true
	}
	return body, false
}

// operandStart walks back from the token at j (the last token before the bar) over the
// postfix chain, and returns the index of its first token.
func operandStart(toks []tok, j int) (int, bool) {
	start := -1
	for j >= 0 {
		t := toks[j]
		group := false
		switch {
		case t.kind == ')' || t.kind == ']' || t.kind == '}':
			k := matchBackward(toks, j)
			if k < 0 {
				return 0, false
			}
			start, j, group = k, k-1, true
		case t.kind == 'n' && !stopWords[t.text], t.kind == 's', t.kind == '0':
			start, j = j, j-1
		default:
			return start, start >= 0
		}
		if j < 0 {
			break
		}
		prev := toks[j]
		switch {
		case prev.kind == '.' || prev.kind == '|':
			// An attribute of what comes before, or an earlier filter of the chain.
			j--
		case group && (prev.kind == 'n' && !stopWords[prev.text] || prev.kind == ')' || prev.kind == ']'):
			// A call or subscript of what comes before.
		default:
			return start, start >= 0
		}
	}
	return start, start >= 0
}

var pairs = map[byte]byte{')': '(', ']': '[', '}': '{'}

func matchBackward(toks []tok, j int) int {
	depth := 0
	for k := j; k >= 0; k-- {
		switch toks[k].kind {
		case ')', ']', '}':
			depth++
		case '(', '[', '{':
			depth--
			if depth == 0 {
				if pairs[toks[j].kind] != toks[k].kind {
					return -1
				}
				return k
			}
		}
	}
	return -1
}

func matchForward(toks []tok, j int) int {
	depth := 0
	for k := j; k < len(toks); k++ {
		switch toks[k].kind {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

// wrapPrint makes the expression of an output tag a call of this package's printer, so
// that a value is written as Python's str() writes it (None, True, 1.0, lists and dicts
// as repr) where the library writes "", true, 1; the whitespace-control signs stay
// outside.
func wrapPrint(body string) string {
	lead, expr, trail := "", body, ""
	if t := strings.TrimLeft(expr, " \t\n\r"); strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+") {
		lead = expr[:len(expr)-len(t)+1]
		expr = t[1:]
	}
	if t := strings.TrimRight(expr, " \t\n\r"); strings.HasSuffix(t, "-") {
		trail = expr[len(t)-1:]
		expr = t[:len(t)-1]
	}
	if strings.TrimSpace(expr) == "" {
		return body
	}
	return lead + " " + printFunc + "(" + strings.TrimSpace(expr) + ") " + trail
}
