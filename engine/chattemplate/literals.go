package chattemplate

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// reencodeStrings rewrites the string literals of a tag body so that the library reads
// them as Jinja2 does. Jinja2 decodes a literal with Python's escapes (\r, \xHH,
// \uHHHH, \UHHHHHHHH, octal, \a \b \f \v); the library knows only \n, \t, \\ and the
// quotes. Each literal is decoded here and written back with those four escapes only.
func reencodeStrings(body string) string {
	if !strings.ContainsAny(body, `'"`) {
		return body
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\'' && c != '"' {
			b.WriteByte(c)
			continue
		}
		j := skipString(body, i)
		if j < 0 {
			b.WriteString(body[i:])
			break
		}
		writeStringLiteral(&b, pyUnescape(body[i+1:j-1]))
		i = j - 1
	}
	return b.String()
}

// writeStringLiteral writes s as a single-quoted literal the library decodes to s.
func writeStringLiteral(b *strings.Builder, s string) {
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
}

// pyUnescape decodes Python's string escapes as Jinja2 applies them to a literal
// (unicode-escape); an unknown escape stays as written.
func pyUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '\n':
			// A backslash before a line end joins the lines.
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n < len(s)+0 && i+1+n <= len(s) {
				if r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil && utf8.ValidRune(rune(r)) {
					b.WriteRune(rune(r))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		default:
			if e >= '0' && e <= '7' {
				k := i
				for k < len(s) && k < i+3 && s[k] >= '0' && s[k] <= '7' {
					k++
				}
				r, _ := strconv.ParseUint(s[i:k], 8, 32)
				b.WriteRune(rune(r))
				i = k - 1
				continue
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}
