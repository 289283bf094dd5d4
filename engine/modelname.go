package engine

import "strings"

// ModelName is a model's name in its parts, as clients and runtimes write it:
// [host/][namespace/]model[:tag]. It is the naming of the model registries hearth's
// runtimes pull from ("qwen3:8b", "hf.co/org/model:Q4_K_M"), so that a name is judged
// the same way before any runtime is asked.
type ModelName struct {
	// Host and Namespace are empty when the name leaves them out (the registry's
	// defaults apply).
	Host, Namespace string
	Model           string
	// Tag is "latest" when the name leaves it out.
	Tag string
	// malformed: a separator with nothing on one side ("a/", "m:").
	malformed bool
}

// DefaultModelTag is the tag of a name that has none.
const DefaultModelTag = "latest"

// ParseModelName splits name into its parts. A name with a scheme before its host
// ("https://host/ns/m") keeps only the host.
func ParseModelName(name string) ModelName {
	var n ModelName
	s := name
	cut := func(sep string) (string, string, bool) {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			return s, "", false
		}
		before, after := s[:i], s[i+len(sep):]
		if before == "" || after == "" {
			n.malformed = true
		}
		return before, after, true
	}
	if strings.LastIndex(s, ":") > strings.LastIndex(s, "/") {
		s, n.Tag, _ = cut(":")
	}
	if n.Tag == "" && !n.malformed {
		n.Tag = DefaultModelTag
	}
	var ok bool
	if s, n.Model, ok = cut("/"); !ok {
		n.Model = s
		return n
	}
	if s, n.Namespace, ok = cut("/"); !ok {
		n.Namespace = s
		return n
	}
	if _, host, ok := strings.Cut(s, "://"); ok {
		s = host
	}
	n.Host = s
	return n
}

// Valid reports whether every part is one a model name may have: letters, digits, '_'
// and '-' (and '.', except in a namespace; ':' only in a host for its port), starting
// with a letter, digit or '_', at most 80 bytes (a host 350). A name that is not
// valid names no model a runtime could hold, so it is refused without asking one.
func (n ModelName) Valid() bool {
	if n.malformed {
		return false
	}
	return (n.Host == "" || validNamePart(n.Host, 350, true, true)) &&
		(n.Namespace == "" || validNamePart(n.Namespace, 80, false, false)) &&
		validNamePart(n.Model, 80, true, false) &&
		validNamePart(n.Tag, 80, true, false)
}

func validNamePart(s string, maxLen int, dot, colon bool) bool {
	if len(s) < 1 || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		case i == 0:
			return false
		case c == '-', c == '.' && dot, c == ':' && colon:
		default:
			return false
		}
	}
	return true
}
