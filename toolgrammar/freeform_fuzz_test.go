package toolgrammar

import (
	"regexp"
	"testing"
	"unicode/utf8"
)

// FuzzFreeform compiles any definition as Lark and as a regex, and checks any input
// against what compiles. Invariants: no panic; a pattern is always in the dialect
// llama.cpp reads; for a regex with a pattern, the pattern accepts exactly the JSON
// spelling of the inputs the expression matches.
func FuzzFreeform(f *testing.F) {
	for _, def := range []string{editLark, calcLark, `start: "a" | "b"+`, "start: /[^\\n]*/ LF\n%import common.LF", "?start: x ~ 2..3\nx: \"(\" start? \")\"", `[0-9]+(\.[0-9]+)?`, `(?i)ab|c*`, `a\b`} {
		f.Add(def, "BEGIN\nremove x\nEND\n")
		f.Add(def, "(1+2)*3")
	}
	f.Fuzz(func(t *testing.T, def, input string) {
		if len(def) > 2048 || len(input) > 512 {
			return
		}
		if lf, err := CompileFreeform(SyntaxLark, def); err == nil {
			if lf.Pattern != "" {
				checkDialect(t, lf.Pattern)
			}
			_ = lf.Check(input)
		}
		rf, err := CompileFreeform(SyntaxRegex, def)
		if err != nil || rf.Pattern == "" {
			return
		}
		checkDialect(t, rf.Pattern)
		if !utf8.ValidString(input) {
			return
		}
		want := rf.Check(input) == nil
		if got := regexp.MustCompile(patternAsGo(t, rf.Pattern).String()).MatchString(JSONStringSpelling(input)); got != want {
			t.Errorf("regex %q, input %q: the expression says %v, the pattern %s says %v", def, input, want, rf.Pattern, got)
		}
	})
}
