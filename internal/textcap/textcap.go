// Package textcap cuts text a client sent (an id, a name, a path) to a bound before it
// is quoted in an error message, a header or a log line: a 100 KB name must not make a
// 100 KB error.
package textcap

// Model bounds a model name in errors and logs: it comes from the request unvalidated.
const Model = 128

// Cut cuts s to at most n bytes, at a rune boundary, marking the cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "…"
}
