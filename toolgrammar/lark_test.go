package toolgrammar

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

// editLark is a file-edit envelope in the style of agents' patch tools: regular (no
// rule refers back to itself), with literals, regexps, alternatives over several
// lines, optional parts, repetitions, an alias and an import.
const editLark = `// An edit: one or more operations between BEGIN and END.
start: "BEGIN" NL op+ "END" NL?
op: create
  | remove
  | edit
create: "create " path NL body_line*
remove: "remove " path NL
edit: "edit " path NL move? (hunk | change)+
move: "move to " path NL
path: /[^\n]+/
body_line: ">" /[^\n]*/ NL -> line
hunk: "@@" [" " /[^\n]+/] NL
change: ("+" | "-" | " ") /[^\n]*/ NL   # one changed line
%import common.LF -> NL
`

var editExamples = []string{
	"BEGIN\ncreate a.txt\n>hello\n>\"quoted\" \\ back\nEND\n",
	"BEGIN\nremove old.go\nEND",
	"BEGIN\nedit main.go\nmove to cmd/main.go\n@@ func main()\n-\tfmt.Println(1)\n+\tfmt.Println(2)\n \nEND\n",
	"BEGIN\ncreate é😀\nremove x\nedit y\n@@\n+z\nEND\n",
}

// calcLark is recursive (parenthesised expressions), so it has no pattern; %ignore
// lets spaces appear between tokens.
const calcLark = `?start: sum
?sum: product | sum ("+" | "-") product
?product: atom | product ("*" | "/") atom
?atom: NUMBER | "-" atom | "(" sum ")"
%import common.NUMBER
%import common.WS_INLINE
%ignore WS_INLINE
`

func mustFreeform(t *testing.T, syn, def string) *Freeform {
	t.Helper()
	f, err := CompileFreeform(syn, def)
	if err != nil {
		t.Fatalf("CompileFreeform(%s): %v", syn, err)
	}
	return f
}

// mutations returns s with one rune deleted, inserted or replaced, at random places.
func mutations(r *rand.Rand, s string, n int) []string {
	runes := []rune(s)
	var out []string
	for range n {
		i := r.IntN(len(runes) + 1)
		c := []rune(patternAlphabet[r.IntN(len(patternAlphabet))])
		var m []rune
		switch r.IntN(3) {
		case 0:
			if i == len(runes) {
				continue
			}
			m = append(append(m, runes[:i]...), runes[i+1:]...)
		case 1:
			m = append(append(append(m, runes[:i]...), c...), runes[i:]...)
		default:
			if i == len(runes) {
				continue
			}
			m = append(append(append(m, runes[:i]...), c...), runes[i+1:]...)
		}
		out = append(out, string(m))
	}
	return out
}

// A regular grammar gets a pattern, and three readings of it agree on every input:
// the Earley parser (Check), the inlined regular expression, and the JSON-string
// pattern applied to the input's JSON spelling.
func TestLarkRegularGrammarReadingsAgree(t *testing.T) {
	f := mustFreeform(t, SyntaxLark, editLark)
	if f.Pattern == "" {
		t.Fatalf("no pattern: %s", f.Unconstrained)
	}
	checkDialect(t, f.Pattern)
	g, err := ParseLark(editLark)
	if err != nil {
		t.Fatal(err)
	}
	inlined := regexp.MustCompile(`\A(?:` + g.regexpOf().String() + `)\z`)
	pattern := patternAsGo(t, f.Pattern)
	r := rand.New(rand.NewPCG(3, 4))
	accepted := 0
	for _, ex := range editExamples {
		if err := f.Check(ex); err != nil {
			t.Fatalf("%q: %v", ex, err)
		}
		for _, s := range append(mutations(r, ex, 300), ex) {
			earley, _, err := f.cfg.recognize([]rune(s), earleyBudget)
			if err != nil {
				t.Fatal(err)
			}
			if earley {
				accepted++
			}
			if re := inlined.MatchString(s); re != earley {
				t.Fatalf("%q: Earley says %v, the inlined expression %v", s, earley, re)
			}
			if check := f.Check(s) == nil; check != earley {
				t.Fatalf("%q: Earley says %v, Check %v", s, earley, check)
			}
			if p := pattern.MatchString(JSONStringSpelling(s)); p != earley {
				t.Fatalf("%q: Earley says %v, the pattern %v", s, earley, p)
			}
		}
	}
	if accepted < 50 {
		t.Fatalf("only %d inputs accepted: the mutations test too little", accepted)
	}
}

func TestLarkViolationSaysWhere(t *testing.T) {
	f := mustFreeform(t, SyntaxLark, editLark)
	cases := []struct {
		input     string
		offset    int
		line, col int
		msg       string
	}{
		{"BEGIN\ncreate a\nhello\nEND\n", 15, 3, 1, `line 3, column 1 ('h')`},
		{"BEGIN\nedit a\n", 13, 3, 1, "ends before"},
		{"BEGAN\n", 3, 1, 4, `line 1, column 4 ('A')`},
	}
	for _, tc := range cases {
		err := f.Check(tc.input)
		var v *InputViolation
		if !errors.As(err, &v) {
			t.Fatalf("%q: got %v, want an InputViolation", tc.input, err)
		}
		if v.Offset != tc.offset || v.Line != tc.line || v.Column != tc.col || !strings.Contains(v.Msg, tc.msg) {
			t.Errorf("%q: got offset %d line %d col %d %q; want %d, %d, %d, %q", tc.input, v.Offset, v.Line, v.Column, v.Msg, tc.offset, tc.line, tc.col, tc.msg)
		}
	}
}

func TestLarkRecursiveGrammarIsCheckedNotConstrained(t *testing.T) {
	f := mustFreeform(t, SyntaxLark, calcLark)
	if f.Pattern != "" || !strings.Contains(f.Unconstrained, "recursive") {
		t.Fatalf("pattern %q, unconstrained %q: want no pattern because the grammar is recursive", f.Pattern, f.Unconstrained)
	}
	if got := string(f.InputSchema()); got != string(FreeformParameters) {
		t.Errorf("InputSchema = %s, want the plain string schema", got)
	}
	for _, ok := range []string{"1", "(1+2)*3", " ( 1 + -2.5e3 ) / 4 ", "((((7))))", "1 -2"} {
		if err := f.Check(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "(1+2", "1+*2", "1 2", "()", "1+2)"} {
		if err := f.Check(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLarkFeatures(t *testing.T) {
	cases := []struct {
		name, grammar string
		accept        []string
		reject        []string
	}{
		{"range and case-insensitive literal", `start: "a".."c" "x"i`, []string{"ax", "cX"}, []string{"dx", "a"}},
		{"counted repetition", `start: "ab" ~ 2..3 "c" ~ 1`, []string{"ababc", "abababc"}, []string{"abc", "ababababc"}},
		{"optional brackets and ?", `start: ["+"] "1" "0"?`, []string{"1", "+10"}, []string{"++1"}},
		{"priorities, inline and keep markers, aliases", "?start.2: item+\n!item: WORD -> w | INT\nWORD.3: /[a-z]+/\n%import common.INT", []string{"ab12c"}, []string{"AB"}},
		{"imports in parentheses", "start: CNAME \"=\" ESCAPED_STRING\n%import common (CNAME, ESCAPED_STRING)", []string{`x_1="a\"b"`}, []string{`1x="a"`, `x="a`}},
		{"ignore", "start: WORD (\",\" WORD)*\n%import common.WORD\n%import common.WS\n%ignore WS", []string{"a, b ,c ", " a\n,b"}, []string{"a b"}},
		{"regexp flags", `start: /abc/i /a.b/s`, []string{"ABCa\nb"}, []string{"abca\n\nb"}},
		{"escapes in strings", `start: "\t\"\\\u00e9\n"`, []string{"\t\"\\é\n"}, []string{`\t`}},
		{"first alternative on its own line", "start:\n    | \"a\"\n    | \"b\"", []string{"a", "b"}, []string{""}},
		{"empty alternative", `start: "a" ("b" | )`, []string{"a", "ab"}, []string{"b"}},
		{"C comment terminal", "start: C_COMMENT\n%import common.C_COMMENT", []string{"/* a * b */", "/***/"}, []string{"/* a */ */"}},
	}
	for _, tc := range cases {
		f, err := CompileFreeform(SyntaxLark, tc.grammar)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		for _, s := range tc.accept {
			if err := f.Check(s); err != nil {
				t.Errorf("%s: %q: %v", tc.name, s, err)
			}
		}
		for _, s := range tc.reject {
			if f.Check(s) == nil {
				t.Errorf("%s: %q accepted", tc.name, s)
			}
		}
	}
}

func TestLarkErrors(t *testing.T) {
	cases := []struct{ grammar, want string }{
		{`rule: "a"`, "no start rule"},
		{"start: a\n", "line 1: a is not defined"},
		{"start: A\nA: b\nb: \"x\"", "line 2: terminal A refers to rule b"},
		{"start: \"a\n", "line 1: unterminated string"},
		{"start: /a\n", "line 1: unterminated regular expression"},
		{"start: /a(/", "line 1: regular expression /a(/"},
		{"start: /(?<=a)b/", "regular expression"},
		{"start: /^a/", "anchors and word boundaries"},
		{"start: \"a\"\nstart: \"b\"", "line 2: start is defined twice"},
		{"%import python.NAME\nstart: NAME", "only terminals of Lark's common library"},
		{"%import common.NOPE\nstart: \"a\"", "common has no terminal NOPE"},
		{"%declare X\nstart: \"a\"", "%declare is not supported"},
		{"start: _sep{\"a\"}", "templates"},
		{"start: \"a\" ~ 3..2", "bounds reversed"},
		{"start: \"ab\"..\"c\"", "two single characters"},
		{"start: \"a\" )", "unexpected \")\""},
		{"start: /x/q", "flag 'q'"},
		{"start: \"a\" @", "unexpected character '@'"},
		{"start: " + strings.Repeat("(", 101) + `"a"` + strings.Repeat(")", 101), "nested more than 100 deep"},
		{"start: a0\n" + manyRules(5001), "more than 5000 rules"},
	}
	for _, tc := range cases {
		_, err := CompileFreeform(SyntaxLark, tc.grammar)
		var ge *GrammarError
		if !errors.As(err, &ge) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want a GrammarError containing %q", tc.grammar, err, tc.want)
		}
	}
}

func TestCompileFreeformRegex(t *testing.T) {
	f := mustFreeform(t, SyntaxRegex, `[a-z]+@[a-z]+\.(com|org)`)
	if err := f.Check("me@example.org"); err != nil {
		t.Error(err)
	}
	// The whole input must match: no implicit search.
	err := f.Check("write to me@example.org")
	var v *InputViolation
	if !errors.As(err, &v) || v.Offset != -1 || !strings.Contains(v.Msg, "does not match the regular expression") {
		t.Errorf("got %v, want a violation of the regular expression", err)
	}
	if _, err := CompileFreeform(SyntaxRegex, `a(`); err == nil || !strings.Contains(err.Error(), "invalid regular expression") {
		t.Errorf("a( compiled: %v", err)
	}
	if _, err := CompileFreeform("peg", `x`); err == nil {
		t.Error("unknown syntax compiled")
	}
	// A word boundary cannot be constrained; the input is still checked.
	wb := mustFreeform(t, SyntaxRegex, `\bgo\b.*`)
	if wb.Pattern != "" || wb.Unconstrained == "" {
		t.Errorf("pattern %q for a word boundary", wb.Pattern)
	}
	if wb.Check("go fast") != nil || wb.Check("gopher") == nil {
		t.Error("word boundary expression checks wrongly")
	}
	text := mustFreeform(t, "", "")
	if text.Check("anything \x00 at all") != nil || string(text.InputSchema()) != string(FreeformParameters) {
		t.Error("free text is constrained")
	}
}

// The Earley recogniser, on grammars built straight from regular expressions, agrees
// with Go's regexp: nullable rules, nested repetitions and alternatives included.
func TestEarleyAgreesWithRegexp(t *testing.T) {
	exprs := []string{`(a|ab)(c|bcd)(d*)`, `(a*)*b`, `(a?){3}a{3}`, `((ab)*|c+)?d`, `[^"\\]*`, `(?i)é+x`, `(a|)*`, `x{2,4}(y|z){0,2}`, `.*\n.*`}
	r := rand.New(rand.NewPCG(5, 6))
	corpus := randomStrings(r, 3000, 7)
	// Every string of up to 4 letters over a small alphabet, so that the expressions'
	// matches (rare among random strings) are well covered.
	level := []string{""}
	for range 4 {
		var next []string
		for _, s := range level {
			for _, c := range "abcdxyz" {
				next = append(next, s+string(c))
			}
		}
		corpus = append(corpus, next...)
		level = next
	}
	corpus = append(corpus, "\n", "ex", "ééx", "ÉÉX", "éX", "Éx", "aaaaa", "aaaaaa", "\n\n", "a\nb")
	for _, expr := range exprs {
		re, err := syntax.Parse(expr, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		b := &cfgBuilder{c: &cfg{}}
		top := b.c.newNT()
		b.c.addProd(top, b.regexp(re))
		b.c.start = top
		b.c.computeNullable()
		want := regexp.MustCompile(`\A(?:` + expr + `)\z`)
		matched := 0
		for _, s := range corpus {
			ok, _, err := b.c.recognize([]rune(s), earleyBudget)
			if err != nil {
				t.Fatal(err)
			}
			if ok != want.MatchString(s) {
				t.Errorf("%s: %q: Earley says %v", expr, s, ok)
				break
			}
			if ok {
				matched++
			}
		}
		if matched < 3 {
			t.Errorf("%s: only %d strings of the corpus match: the comparison tests too little", expr, matched)
		}
	}
}

func TestEarleyBudget(t *testing.T) {
	f := mustFreeform(t, SyntaxLark, calcLark)
	_, _, err := f.cfg.recognize([]rune(strings.Repeat("(1+", 50)+"1"+strings.Repeat(")", 50)), 100)
	if !errors.As(err, new(earleyBudgetError)) {
		t.Errorf("got %v, want the budget error", err)
	}
	// Check reports it: an input it could not check is not passed.
	err = f.Check(strings.Repeat("1+", 50_000) + "1")
	if !errors.As(err, new(earleyBudgetError)) {
		t.Errorf("got %v, want the budget error", err)
	}
}

// manyRules is a chain a0: a1, a1: a2, ... of n rules.
func manyRules(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "a%d: a%d\n", i, i+1)
	}
	return b.String()
}
