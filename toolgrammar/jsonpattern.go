package toolgrammar

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A custom tool's input reaches the model as one JSON string argument, and the runtime
// constrains it with a JSON schema: {"type":"string","pattern":P}. llama.cpp's
// json-schema-to-grammar turns P into grammar rules that match the characters between
// the string's quotes as they are written, escapes included, not the decoded value.
// So P cannot be the tool's regular expression: "a\nb" must be matched as the six
// characters a \ n b, a '"' in the input as \" , and a class like [^x] must not let
// the model write a bare quote or a raw newline, which would end or break the JSON.
//
// JSONStringPattern therefore rewrites a regular expression over the input into one
// over its JSON text, in which every character has one canonical spelling (the one
// encoding/json would pick, with \b and \f short forms and \u00XX, either case, for the
// other control characters). The result uses only what llama.cpp's pattern reader
// understands: literals, [..] classes of \uXXXX / \UXXXXXXXX escapes, groups,
// alternation, * + ? and {m,n}. It starts with ^ and ends with $, which that reader
// requires.

// maxPatternRepeat bounds the counts of {m,n}: llama.cpp expands a count into that many
// copies of the rule, so a large one makes a grammar far bigger than the pattern.
const maxPatternRepeat = 256

// ErrNotExpressible is wrapped by JSONStringPattern for a regular expression that has
// no equivalent in the pattern dialect (anchors inside the expression, word
// boundaries, an expression that matches nothing or only the empty string, counts
// above maxPatternRepeat).
var ErrNotExpressible = errors.New("toolgrammar: not expressible as a JSON string pattern")

// JSONStringPattern returns the pattern of the JSON text of strings that re matches
// in full (re is anchored at both ends, whatever it says). ^ and $ (and \A, \z) are
// allowed at its very start and end, where they are no-ops.
func JSONStringPattern(re *syntax.Regexp) (string, error) {
	re = stripEdgeAnchors(re)
	if matchesOnlyEmpty(re) {
		return "", fmt.Errorf("%w: the expression matches only the empty string", ErrNotExpressible)
	}
	var c patternConv
	frag, err := c.emit(re)
	if err != nil {
		return "", err
	}
	return "^" + frag.s + "$", nil
}

// fragment is a piece of pattern; atom says it is one class or one parenthesised group,
// which a quantifier may follow as it is; empty that it matches only "".
type fragment struct {
	s     string
	atom  bool
	empty bool
}

type patternConv struct{}

func (c *patternConv) emit(re *syntax.Regexp) (fragment, error) {
	switch re.Op {
	case syntax.OpNoMatch:
		return fragment{}, fmt.Errorf("%w: the expression (or a part of it) matches nothing", ErrNotExpressible)
	case syntax.OpEmptyMatch:
		return fragment{empty: true}, nil
	case syntax.OpLiteral:
		var parts []fragment
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				if fold := foldRanges(r); len(fold) > 2 {
					parts = append(parts, classFragment(fold))
					continue
				}
			}
			parts = append(parts, fragment{s: literalPattern(r)})
		}
		return concatFragments(parts), nil
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return fragment{}, fmt.Errorf("%w: an empty character class matches nothing", ErrNotExpressible)
		}
		return classFragment(re.Rune), nil
	case syntax.OpAnyCharNotNL:
		return classFragment([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}), nil
	case syntax.OpAnyChar:
		return classFragment([]rune{0, unicode.MaxRune}), nil
	case syntax.OpCapture:
		return c.emit(re.Sub[0])
	case syntax.OpConcat:
		var parts []fragment
		for _, sub := range re.Sub {
			f, err := c.emit(sub)
			if err != nil {
				return fragment{}, err
			}
			parts = append(parts, f)
		}
		return concatFragments(parts), nil
	case syntax.OpAlternate:
		var alts []string
		optional := false
		for _, sub := range re.Sub {
			f, err := c.emit(sub)
			if err != nil {
				return fragment{}, err
			}
			if f.empty {
				// llama.cpp's reader has no empty alternative: (a|) is written (a)?.
				optional = true
				continue
			}
			if !slices.Contains(alts, f.s) {
				alts = append(alts, f.s)
			}
		}
		if len(alts) == 0 {
			return fragment{empty: true}, nil
		}
		g := fragment{s: alts[0]}
		if len(alts) > 1 {
			g = fragment{s: "(" + strings.Join(alts, "|") + ")", atom: true}
		}
		if optional {
			return fragment{s: g.groupForQuantifier() + "?"}, nil
		}
		return g, nil
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		f, err := c.emit(re.Sub[0])
		if err != nil || f.empty {
			return f, err
		}
		op := map[syntax.Op]string{syntax.OpStar: "*", syntax.OpPlus: "+", syntax.OpQuest: "?"}[re.Op]
		return fragment{s: f.groupForQuantifier() + op}, nil
	case syntax.OpRepeat:
		if re.Min > maxPatternRepeat || re.Max > maxPatternRepeat {
			return fragment{}, fmt.Errorf("%w: a repetition count above %d", ErrNotExpressible, maxPatternRepeat)
		}
		f, err := c.emit(re.Sub[0])
		if err != nil || f.empty {
			return f, err
		}
		switch {
		case re.Max == 0:
			return fragment{empty: true}, nil
		case re.Min == re.Max:
			if re.Min == 1 {
				return f, nil
			}
			return fragment{s: f.groupForQuantifier() + "{" + strconv.Itoa(re.Min) + "}"}, nil
		case re.Max < 0:
			return fragment{s: f.groupForQuantifier() + "{" + strconv.Itoa(re.Min) + ",}"}, nil
		}
		return fragment{s: f.groupForQuantifier() + "{" + strconv.Itoa(re.Min) + "," + strconv.Itoa(re.Max) + "}"}, nil
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return fragment{}, fmt.Errorf("%w: an anchor (^, $, \\A, \\z) inside the expression", ErrNotExpressible)
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return fragment{}, fmt.Errorf("%w: a word boundary (\\b, \\B)", ErrNotExpressible)
	}
	return fragment{}, fmt.Errorf("%w: regular expression operator %v", ErrNotExpressible, re.Op)
}

// groupForQuantifier wraps f so that a quantifier applies to all of it. A group is
// added even around a plain literal: llama.cpp's reader would otherwise apply {m,n}
// to the whole literal run before it, and * only to its last character.
func (f fragment) groupForQuantifier() string {
	if f.atom {
		return f.s
	}
	return "(" + f.s + ")"
}

func concatFragments(parts []fragment) fragment {
	var b strings.Builder
	n := 0
	var only fragment
	for _, p := range parts {
		if p.empty {
			continue
		}
		if strings.Contains(p.s, "|") && !p.atom {
			// An unparenthesised alternation would swallow its neighbours.
			p = fragment{s: "(" + p.s + ")", atom: true}
		}
		b.WriteString(p.s)
		only = p
		n++
	}
	switch n {
	case 0:
		return fragment{empty: true}
	case 1:
		return only
	}
	return fragment{s: b.String()}
}

// patternSpecial are the characters llama.cpp's pattern reader treats as syntax; a
// backslash before one makes it literal.
const patternSpecial = `|.()[]{}*+?^$`

// literalPattern is the pattern that matches the JSON spelling of r.
func literalPattern(r rune) string {
	var b strings.Builder
	for _, c := range jsonSpelling(r) {
		switch {
		case c == '\\':
			b.WriteString(`\\`)
		case strings.ContainsRune(patternSpecial, c):
			b.WriteByte('\\')
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// jsonSpelling is how r is written inside a JSON string: itself, or its escape.
func jsonSpelling(r rune) string {
	switch r {
	case '"':
		return `\"`
	case '\\':
		return `\\`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x20 {
		return fmt.Sprintf(`\u%04x`, r)
	}
	if !utf8.ValidRune(r) {
		return string(utf8.RuneError)
	}
	return string(r)
}

// JSONStringSpelling writes s as the text between the quotes of a JSON string, with
// the spellings the patterns of JSONStringPattern accept (lowercase \u00xx).
func JSONStringSpelling(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteString(jsonSpelling(r))
	}
	return b.String()
}

// classFragment matches the JSON spelling of any rune in ranges (lo, hi pairs): the
// runes written as themselves in one [..] class, the escaped ones as alternatives.
func classFragment(ranges []rune) fragment {
	var plain []rune
	var alts []string
	var ctrl [2][]rune // control characters written \u000X and \u001X, by their last digit
	add := func(lo, hi rune) {
		if lo <= hi {
			plain = append(plain, lo, hi)
		}
	}
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		for r := lo; r <= hi && r < 0x20; r++ {
			switch r {
			case '\b', '\f', '\n', '\r', '\t':
				alts = append(alts, literalPattern(r))
			default:
				ctrl[r>>4] = append(ctrl[r>>4], r&0xF)
			}
		}
		if hi < 0x20 {
			continue
		}
		lo = max(lo, 0x20)
		for _, special := range []rune{'"', '\\'} {
			if lo <= special && special <= hi {
				alts = append(alts, literalPattern(special))
				add(lo, special-1)
				lo = special + 1
			}
		}
		add(lo, hi)
	}
	for high, digits := range ctrl {
		if len(digits) == 0 {
			continue
		}
		// Either case of a hex digit reads the same to a JSON decoder.
		var set []rune
		for _, d := range digits {
			set = append(set, hexDigitRunes(d)...)
		}
		alts = append(alts, `\\u00`+strconv.Itoa(high)+bracketClass(runesToRanges(set)))
	}
	if len(plain) > 0 {
		alts = append([]string{bracketClass(plain)}, alts...)
	}
	if len(alts) == 1 {
		return fragment{s: alts[0], atom: strings.HasPrefix(alts[0], "[")}
	}
	return fragment{s: "(" + strings.Join(alts, "|") + ")", atom: true}
}

func hexDigitRunes(d rune) []rune {
	if d < 10 {
		return []rune{'0' + d}
	}
	return []rune{'a' + d - 10, 'A' + d - 10}
}

// runesToRanges turns a set of runes into sorted lo, hi pairs.
func runesToRanges(set []rune) []rune {
	slices.Sort(set)
	set = slices.Compact(set)
	var out []rune
	for _, r := range set {
		if n := len(out); n > 0 && out[n-1] == r-1 {
			out[n-1] = r
			continue
		}
		out = append(out, r, r)
	}
	return out
}

// bracketClass writes ranges as a [..] class of \u / \U escapes, which both
// llama.cpp's grammar reader and a test's translation into Go syntax read exactly.
func bracketClass(ranges []rune) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i+1 < len(ranges); i += 2 {
		b.WriteString(runeEscape(ranges[i]))
		if ranges[i+1] != ranges[i] {
			b.WriteByte('-')
			b.WriteString(runeEscape(ranges[i+1]))
		}
	}
	b.WriteByte(']')
	return b.String()
}

func runeEscape(r rune) string {
	if r <= 0xFFFF {
		return fmt.Sprintf(`\u%04X`, r)
	}
	return fmt.Sprintf(`\U%08X`, r)
}

// foldRanges is the class of the runes that fold to r (r included).
func foldRanges(r rune) []rune {
	set := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		set = append(set, f)
	}
	return runesToRanges(set)
}

// stripEdgeAnchors removes ^ / \A at the start and $ / \z at the end of re: the
// whole input is matched anyway.
func stripEdgeAnchors(re *syntax.Regexp) *syntax.Regexp {
	re = stripAnchor(re, true)
	return stripAnchor(re, false)
}

func stripAnchor(re *syntax.Regexp, start bool) *syntax.Regexp {
	isAnchor := func(r *syntax.Regexp) bool {
		if start {
			return r.Op == syntax.OpBeginText || r.Op == syntax.OpBeginLine
		}
		return r.Op == syntax.OpEndText || r.Op == syntax.OpEndLine
	}
	switch {
	case isAnchor(re):
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}
	case re.Op == syntax.OpConcat && len(re.Sub) > 0:
		cp := *re
		cp.Sub = slices.Clone(re.Sub)
		i := 0
		if !start {
			i = len(cp.Sub) - 1
		}
		cp.Sub[i] = stripAnchor(cp.Sub[i], start)
		return &cp
	case re.Op == syntax.OpCapture:
		cp := *re
		cp.Sub = []*syntax.Regexp{stripAnchor(re.Sub[0], start)}
		return &cp
	case re.Op == syntax.OpAlternate:
		// ^a|^b: each alternative starts at the start.
		cp := *re
		cp.Sub = make([]*syntax.Regexp, len(re.Sub))
		for i, s := range re.Sub {
			cp.Sub[i] = stripAnchor(s, start)
		}
		return &cp
	}
	return re
}

// matchesOnlyEmpty reports whether re can match nothing but "" (llama.cpp's reader has
// no way to write an empty pattern).
func matchesOnlyEmpty(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return true
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return matchesOnlyEmpty(re.Sub[0])
	case syntax.OpRepeat:
		return re.Max == 0 || matchesOnlyEmpty(re.Sub[0])
	case syntax.OpConcat, syntax.OpAlternate:
		for _, s := range re.Sub {
			if !matchesOnlyEmpty(s) {
				return false
			}
		}
		return true
	}
	return false
}
