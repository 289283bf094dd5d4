package toolgrammar

import (
	"errors"
	"math/rand/v2"
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
)

// patternAsGo translates a pattern of JSONStringPattern into Go syntax: the two
// dialects differ only in how a class spells a code point (\uXXXX, \UXXXXXXXX).
func patternAsGo(t *testing.T, p string) *regexp.Regexp {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case strings.HasPrefix(p[i:], `\\`):
			b.WriteString(`\\`)
			i++
		case strings.HasPrefix(p[i:], `\u`):
			b.WriteString(`\x{` + p[i+2:i+6] + `}`)
			i += 5
		case strings.HasPrefix(p[i:], `\U`):
			b.WriteString(`\x{` + p[i+2:i+10] + `}`)
			i += 9
		default:
			b.WriteByte(p[i])
		}
	}
	re, err := regexp.Compile(b.String())
	if err != nil {
		t.Fatalf("pattern %q is not a regular expression: %v", p, err)
	}
	return re
}

// checkDialect fails unless p uses only what llama.cpp's pattern reader understands:
// ^...$, literals (a backslash only before a backslash or a syntax character), classes
// of \u/\U escapes and ranges, groups without flags, | * + ? and {m,n}.
func checkDialect(t *testing.T, p string) {
	t.Helper()
	// llama.cpp strips the last character as the $ anchor; the scan below then fails a
	// body that ends in a lone backslash.
	if !strings.HasPrefix(p, "^") || !strings.HasSuffix(p, "$") {
		t.Fatalf("pattern %q does not start with ^ and end with $", p)
	}
	class := regexp.MustCompile(`^\[(\\u[0-9A-F]{4}|\\U[0-9A-F]{8}|-)+\]`)
	count := regexp.MustCompile(`^\{[0-9]+(,[0-9]*)?\}`)
	s := p[1 : len(p)-1]
	depth := 0
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\':
			if i+1 >= len(s) || !strings.ContainsRune(`\`+patternSpecial, rune(s[i+1])) {
				t.Fatalf("pattern %q: escape %q at %d is not a literal", p, s[i:min(i+2, len(s))], i)
			}
			i += 2
		case c == '[':
			m := class.FindString(s[i:])
			if m == "" {
				t.Fatalf("pattern %q: class at %d is not made of \\u/\\U escapes", p, i)
			}
			i += len(m)
		case c == '{':
			m := count.FindString(s[i:])
			if m == "" {
				t.Fatalf("pattern %q: bad count at %d", p, i)
			}
			i += len(m)
		case c == '(':
			if strings.HasPrefix(s[i:], "(?") || strings.HasPrefix(s[i:], "()") {
				t.Fatalf("pattern %q: group at %d has flags or is empty", p, i)
			}
			depth++
			i++
		case c == ')':
			depth--
			i++
		case c == ']' || c == '}' || c == '.' || c == '^' || c == '$':
			t.Fatalf("pattern %q: bare %q at %d", p, c, i)
		default:
			if c < 0x20 {
				t.Fatalf("pattern %q: raw control character at %d", p, i)
			}
			i++
		}
	}
	if depth != 0 {
		t.Fatalf("pattern %q: unbalanced groups", p)
	}
}

// patternAlphabet holds characters a JSON spelling treats differently: quotes,
// backslashes, control characters (short escapes and \u00XX ones), syntax characters
// of the pattern dialect, multi-byte runes.
var patternAlphabet = []string{"a", "b", "c", "d", "e", "Z", "0", "9", ".", "_", "(", ")", "-", "/", " ", `"`, `\`, "\n", "\t", "\r", "\x01", "\x1b", "\x7f", "é", "α", "😀", "{", "$"}

func randomStrings(r *rand.Rand, n, maxLen int) []string {
	out := []string{""}
	for range n {
		var b strings.Builder
		for range r.IntN(maxLen + 1) {
			b.WriteString(patternAlphabet[r.IntN(len(patternAlphabet))])
		}
		out = append(out, b.String())
	}
	return out
}

func TestJSONStringPatternMatchesWhatTheExpressionMatches(t *testing.T) {
	cases := []struct {
		re      string
		matches []string // also checked to match, so the random strings are not all misses
	}{
		{`\d+(\.\d+)?`, []string{"0", "12.5"}},
		{`^[a-z_]+\(\)$`, []string{"run_all()"}},
		{`"[^"]*"`, []string{`""`, `"a\b"`}},
		{`a|b|`, []string{"", "a", "b"}},
		{`(?i)hello`, []string{"HeLLo"}},
		{`.*`, []string{"", "a\"\\\t\x01é😀"}},
		{`(?s).+`, []string{"\n"}},
		{`[^a]{2,3}`, []string{"\n\"", "bcd"}},
		{`x{2}y+z{0,2}`, []string{"xxy", "xxyyzz"}},
		{`\\n`, []string{`\n`}},
		{`[\x00-\x1f]+`, []string{"\x01\n\x1b\t\r\x00"}},
		{`\p{Greek}+`, []string{"αβ"}},
		{`(ab|cd)*e?`, []string{"", "abcde"}},
		{`[\t\n ]*end`, []string{"\t\n end"}},
		{`😀+é`, []string{"😀😀é"}},
		{`[^\n]*\n`, []string{"a\"\\\n"}},
		{`(a|ab)(c|bcd)(d*)`, []string{"abcd", "ac"}},
		{`[{}$()|.*+?\[\]^-]+`, []string{"{}$()|.*+?[]^-"}},
		{`(?:x|y){0,}z`, []string{"z", "xyxz"}},
	}
	r := rand.New(rand.NewPCG(1, 2))
	corpus := randomStrings(r, 4000, 6)
	for _, tc := range cases {
		want := regexp.MustCompile(`\A(?:` + tc.re + `)\z`)
		parsed, err := syntax.Parse(tc.re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		p, err := JSONStringPattern(parsed)
		if err != nil {
			t.Errorf("%s: %v", tc.re, err)
			continue
		}
		checkDialect(t, p)
		got := patternAsGo(t, p)
		for _, s := range tc.matches {
			if !want.MatchString(s) {
				t.Fatalf("%s: example %q does not match the expression itself", tc.re, s)
			}
		}
		for _, s := range append(corpus, tc.matches...) {
			if w, g := want.MatchString(s), got.MatchString(JSONStringSpelling(s)); w != g {
				t.Errorf("%s: %q: the expression says %v, the pattern %s of %q says %v", tc.re, s, w, p, JSONStringSpelling(s), g)
				break
			}
		}
	}
}

// A JSON decoder reads \u001B and \u001b alike, so the pattern accepts both.
func TestJSONStringPatternAcceptsEitherHexCase(t *testing.T) {
	parsed, err := syntax.Parse(`[\x00-\x1f]`, syntax.Perl)
	if err != nil {
		t.Fatal(err)
	}
	p, err := JSONStringPattern(parsed)
	if err != nil {
		t.Fatal(err)
	}
	re := patternAsGo(t, p)
	for _, s := range []string{`\u001b`, `\u001B`, `\u000b`, `\u000B`, `\n`, `\b`} {
		if !re.MatchString(s) {
			t.Errorf("pattern %s does not accept %s", p, s)
		}
	}
	for _, s := range []string{"\n", `\u000a`, `\u0041`, `\/`} {
		if re.MatchString(s) {
			t.Errorf("pattern %s accepts %q, which is not the JSON spelling of a control character", p, s)
		}
	}
}

func TestJSONStringPatternNotExpressible(t *testing.T) {
	for _, re := range []string{``, `^$`, `a\bb`, `a^b`, `a$b`, `x{300}`, `[^\x00-\x{10FFFF}]`, `(?m)a$\nb`} {
		parsed, err := syntax.Parse(re, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := JSONStringPattern(parsed); !errors.Is(err, ErrNotExpressible) {
			t.Errorf("%q: got pattern %q, err %v; want ErrNotExpressible", re, p, err)
		}
	}
}

func TestJSONStringSpelling(t *testing.T) {
	in := "a\"\\/\b\f\n\r\t\x01\x1f\x7fé😀"
	want := `a\"\\/\b\f\n\r\t\u0001\u001f` + "\x7fé😀"
	if got := JSONStringSpelling(in); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
