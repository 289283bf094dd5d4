package chattemplate

import (
	"errors"
	"strings"
)

// prepare turns a template's text into the text the library compiles to the same
// output Jinja2 renders, in one pass over its tags:
//
//   - Whitespace: Jinja2's rules as Hugging Face sets them (trim_blocks, lstrip_blocks,
//     the - and + markers of each tag) are applied here, to the text between tags. The
//     library applies trim_blocks and lstrip_blocks itself but to the nearest text even
//     across an output tag (so `{{ x }}\n{% endfor %}` loses its newline), so the markers
//     are removed and any text those rules of the library would touch (leading newline,
//     trailing blanks) is written as a string literal, which they leave alone.
//   - Filters: every `EXPR | tojson(ARGS)` becomes `__hearth_tojson(EXPR, ARGS)`, a call
//     of this package's encoder, which writes Hugging Face's tojson byte for byte (key
//     order kept with indent, floats as Python writes them, ensure_ascii and sort_keys
//     honoured); `| string` likewise becomes Python's str(). The library looks filters
//     up only among its own builtins, so a call of a variable the render supplies is the
//     one way to put another in place without changing the library.
//   - Output: the expression of each output tag is printed as Python's str() prints it.
//
// Jinja binds a filter tighter than any operator, so EXPR is the postfix chain before
// the bar: names joined by dots, subscripts, calls, earlier filters, literals and
// parenthesised groups, stopping at an operator or a keyword.
func prepare(src string) (string, error) {
	segs, err := lex(src)
	if err != nil {
		return "", err
	}
	applyWhitespace(src, segs)
	var out strings.Builder
	for _, sg := range segs {
		switch sg.kind {
		case segText:
			writeText(&out, sg.text)
		case segComment:
			// Renders nothing; its whitespace rules are applied.
		case segRaw:
			writeLiteral(&out, sg.text)
		case segExpr, segStmt:
			body := reencodeStrings(sg.body)
			for {
				next, changed := rewriteOne(body)
				if !changed {
					break
				}
				body = next
			}
			body = splitBraces(body)
			if sg.kind == segExpr {
				out.WriteString("{{ ")
				out.WriteString(printCall(body))
				out.WriteString(" }}")
			} else {
				out.WriteString("{% ")
				out.WriteString(strings.TrimSpace(body))
				out.WriteString(" %}")
			}
		}
	}
	return out.String(), nil
}

type segKind int

const (
	segText segKind = iota
	segExpr
	segStmt
	segComment
	segRaw // the text of a raw block
)

type seg struct {
	kind segKind
	text string // segText, segRaw
	body string // segExpr, segStmt: the tag's content without delimiters and markers
	// left and right are the whitespace markers ('-', '+' or 0) of a tag.
	left, right byte
	// start is where the text begins in the source, after what the tag before it
	// trimmed: Jinja2's lstrip_blocks asks whether that is the start of a line.
	start int
}

// lex splits a template into text and tags as Jinja2's lexer does: a tag ends at its
// closer outside string literals and brackets, a raw block is text up to its endraw.
func lex(src string) ([]seg, error) {
	var segs []seg
	textStart := 0
	addText := func(end int) {
		if end > textStart {
			segs = append(segs, seg{kind: segText, text: src[textStart:end], start: textStart})
		}
	}
	for i := 0; i < len(src); {
		if src[i] != '{' || i+1 >= len(src) || (src[i+1] != '{' && src[i+1] != '%' && src[i+1] != '#') {
			i++
			continue
		}
		addText(i)
		kind, closer := segExpr, "}}"
		switch src[i+1] {
		case '%':
			kind, closer = segStmt, "%}"
		case '#':
			kind, closer = segComment, "#}"
		}
		j := i + 2
		var left byte
		if j < len(src) && (src[j] == '-' || src[j] == '+') {
			left = src[j]
			j++
		}
		var end int
		if kind == segComment {
			k := strings.Index(src[j:], "#}")
			if k < 0 {
				return nil, errors.New("unclosed comment")
			}
			end = j + k
		} else {
			var ok bool
			end, ok = tagEnd(src, j, closer)
			if !ok {
				return nil, errors.New("unclosed tag")
			}
		}
		body := src[j:end]
		var right byte
		if n := len(body); n > 0 && (body[n-1] == '-' || body[n-1] == '+') {
			right = body[n-1]
			body = body[:n-1]
		}
		segs = append(segs, seg{kind: kind, body: body, left: left, right: right})
		i = end + 2
		textStart = i
		if kind == segStmt && isRawTag(body) {
			// The raw block's text runs to the endraw tag; the tags themselves render
			// nothing, and the text is handed over as a string literal.
			segs[len(segs)-1].kind = segComment
			k := rawEnd(src, i)
			if k < 0 {
				return nil, errors.New("unclosed raw block")
			}
			if k > i {
				segs = append(segs, seg{kind: segRaw, text: src[i:k], start: i})
			}
			j := k + 2
			var left byte
			if src[j] == '-' || src[j] == '+' {
				left = src[j]
			}
			close := strings.Index(src[j:], "%}")
			b := src[j:][:close]
			var right byte
			if n := len(b); n > 0 && (b[n-1] == '-' || b[n-1] == '+') {
				right = b[n-1]
			}
			segs = append(segs, seg{kind: segComment, left: left, right: right})
			i = j + close + 2
			textStart = i
		}
	}
	addText(len(src))
	return segs, nil
}

// rawEnd is the offset of the "{%" of the endraw tag closing a raw block from i.
func rawEnd(src string, i int) int {
	for {
		k := strings.Index(src[i:], "{%")
		if k < 0 {
			return -1
		}
		k += i
		rest := strings.TrimLeft(src[k+2:], "-+ \t\n\r")
		if strings.HasPrefix(rest, "endraw") {
			return k
		}
		i = k + 2
	}
}

func isRawTag(body string) bool {
	return strings.TrimSpace(body) == "raw"
}

// applyWhitespace applies Jinja2's whitespace rules to the text segments: a "-" marker
// strips all whitespace on its side; otherwise lstrip_blocks strips the blanks before
// a block or comment tag that starts its line, and trim_blocks one newline after one.
// The text of a raw block is left as it is, except at its ends.
func applyWhitespace(src string, segs []seg) {
	for i := range segs {
		sg := &segs[i]
		if sg.kind == segText || sg.kind == segRaw {
			continue
		}
		block := sg.kind == segStmt || sg.kind == segComment
		if i > 0 && (segs[i-1].kind == segText || segs[i-1].kind == segRaw) {
			prev := &segs[i-1]
			switch {
			case sg.left == '-':
				prev.text = strings.TrimRight(prev.text, " \t\n\r\f\v")
			case block && sg.left != '+':
				l := strings.LastIndexByte(prev.text, '\n') + 1
				lineStart := prev.start == 0 || src[prev.start-1] == '\n'
				if (l > 0 || lineStart) && l < len(prev.text) && strings.TrimLeft(prev.text[l:], " \t\r\f\v") == "" {
					prev.text = prev.text[:l]
				}
			}
		}
		if i+1 < len(segs) && (segs[i+1].kind == segText || segs[i+1].kind == segRaw) {
			next := &segs[i+1]
			switch {
			case sg.right == '-':
				trimmed := strings.TrimLeft(next.text, " \t\n\r\f\v")
				next.start += len(next.text) - len(trimmed)
				next.text = trimmed
			case block && sg.right != '+' && strings.HasPrefix(next.text, "\n"):
				next.text = next.text[1:]
				next.start++
			}
		}
	}
}

// writeText writes text the library's own trim_blocks and lstrip_blocks could change
// (a leading newline, trailing blanks), or that ends in "{", as a string literal, which
// they do not touch.
func writeText(out *strings.Builder, text string) {
	if text == "" {
		return
	}
	last := text[len(text)-1]
	// A final "{" would join the next tag's opener ("{{%").
	if text[0] != '\n' && text[0] != '\r' && last != ' ' && last != '\t' && last != '{' {
		out.WriteString(text)
		return
	}
	writeLiteral(out, text)
}

// writeLiteral writes text as an output of a string literal.
func writeLiteral(out *strings.Builder, text string) {
	if text == "" {
		return
	}
	out.WriteString("{{ '")
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '\\':
			out.WriteString(`\\`)
		case '\'':
			out.WriteString(`\'`)
		case '\n':
			out.WriteString(`\n`)
		case '\t':
			out.WriteString(`\t`)
		default:
			out.WriteByte(c)
		}
	}
	out.WriteString("' }}")
}

// splitBraces writes "}}" outside string literals as "} }": the library's scanner ends
// an output tag at the first "}}", even inside a dict literal, where Jinja2 does not.
func splitBraces(body string) string {
	if !strings.Contains(body, "}}") {
		return body
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c == '\'' || c == '"' {
			j := skipString(body, i)
			if j < 0 {
				j = len(body)
			}
			b.WriteString(body[i:j])
			i = j - 1
			continue
		}
		b.WriteByte(c)
		if c == '}' && i+1 < len(body) && body[i+1] == '}' {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// tagEnd is where closer ends the tag whose body starts at from: outside string
// literals and brackets, as Jinja2's lexer balances them.
func tagEnd(src string, from int, closer string) (int, bool) {
	depth := 0
	for j := from; j < len(src); j++ {
		switch c := src[j]; c {
		case '\'', '"':
			k := skipString(src, j)
			if k < 0 {
				return 0, false
			}
			j = k - 1
		case '(', '[', '{':
			depth++
		case ')', ']':
			depth--
		case '}':
			if depth > 0 {
				depth--
				continue
			}
			if strings.HasPrefix(src[j:], closer) {
				return j, true
			}
		default:
			if depth == 0 && strings.HasPrefix(src[j:], closer) {
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

// printCall makes the expression of an output tag a call of this package's printer, so
// that a value is written as Python's str() writes it (None, True, 1.0, lists and dicts
// as repr) where the library writes "", true, 1.
func printCall(expr string) string {
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return expr
	}
	return printFunc + "(" + expr + ")"
}
