package toolgrammar

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A Lark grammar (the syntax OpenAI's custom tools take for format "grammar", syntax
// "lark") is read here as a context-free grammar over characters: rules and terminals
// alike expand into sequences, alternatives and repetitions, string literals and
// regular expressions are leaves. Lark's lexer (longest match, priorities) is not
// modelled, so a grammar whose meaning hangs on lexing order may accept a little more
// here. What is supported:
//
//	rule: a b | c -> alias     rules (lowercase) and TERMINALS (uppercase), ?rule, !rule,
//	    | d                    priorities (rule.2:, TERM.2:), alternatives on further lines
//	"text"  "text"i  "a".."z"  literals, case-insensitive literals, character ranges
//	/regex/flags               Go regexp syntax (RE2), flags i, m, s
//	(x)  [x]  x?  x*  x+       groups, optional, repetitions
//	x ~ 3   x ~ 2..5           counted repetitions
//	%import common.NAME [-> ALIAS]    common.lark's terminals (LF, WS, INT, CNAME, ...)
//	%import common (A, B)
//	%ignore TERM | "x" | /re/  what may appear before any terminal of a rule and at the end
//	// comment   # comment
//
// Templates, %declare, %override and %extend, and other imports are errors.

// larkNode is an expression of a Lark grammar.
type larkNode struct {
	op       larkOp
	subs     []*larkNode
	name     string         // larkRef: the definition it names
	re       *syntax.Regexp // larkLeaf
	min, max int            // larkRepeat; max -1 is unbounded
	line     int
}

type larkOp uint8

const (
	larkSeq larkOp = iota
	larkAlt
	larkRef
	larkLeaf
	larkRepeat
)

// larkDef is one rule or terminal.
type larkDef struct {
	name     string
	terminal bool
	body     *larkNode
	line     int
}

// larkGrammar is a parsed grammar: its definitions by name (imported ones under
// "common.NAME") and the names users wrote mapped to them.
type larkGrammar struct {
	defs   map[string]*larkDef
	alias  map[string]string // name as written in the grammar -> key in defs
	ignore []*larkNode
}

// GrammarError is a Lark grammar (or regular expression) the tool's definition cannot
// be read as. Line is 1-based, 0 when unknown.
type GrammarError struct {
	Line int
	Msg  string
}

func (e *GrammarError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

func larkErr(line int, format string, args ...any) *GrammarError {
	return &GrammarError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// ---- lexer ----

type larkTokKind uint8

const (
	ltEOF larkTokKind = iota
	ltNewline
	ltName
	ltString
	ltRegexp
	ltNumber
	ltDirective // %name
	ltPunct     // : | ( ) [ ] * + ? ~ .. -> , { } .
)

type larkTok struct {
	kind larkTokKind
	text string // punctuation, name, directive name, number; the decoded value of a string
	flag string // a string's "i", a regexp's flags
	line int
}

func lexLark(src string) ([]larkTok, error) {
	var toks []larkTok
	line := 1
	depth := 0 // inside ( ) or [ ]: newlines do not end a definition
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			if depth == 0 && (len(toks) == 0 || toks[len(toks)-1].kind != ltNewline) {
				toks = append(toks, larkTok{kind: ltNewline, line: line})
			}
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '#' || strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"':
			s, n, err := lexLarkString(src[i:], line)
			if err != nil {
				return nil, err
			}
			i += n
			flag := ""
			if i < len(src) && src[i] == 'i' && (i+1 == len(src) || !isNameByte(src[i+1])) {
				flag = "i"
				i++
			}
			toks = append(toks, larkTok{kind: ltString, text: s, flag: flag, line: line})
		case c == '/' && !strings.HasPrefix(src[i:], "//"):
			j := i + 1
			var body strings.Builder
			for ; j < len(src) && src[j] != '/'; j++ {
				if src[j] == '\n' {
					return nil, larkErr(line, "unterminated regular expression")
				}
				if src[j] == '\\' && j+1 < len(src) {
					if src[j+1] == '/' {
						body.WriteByte('/')
					} else {
						body.WriteString(src[j : j+2])
					}
					j++
					continue
				}
				body.WriteByte(src[j])
			}
			if j >= len(src) {
				return nil, larkErr(line, "unterminated regular expression")
			}
			j++
			k := j
			for k < len(src) && isNameByte(src[k]) {
				k++
			}
			toks = append(toks, larkTok{kind: ltRegexp, text: body.String(), flag: src[j:k], line: line})
			i = k
		case c == '%':
			j := i + 1
			for j < len(src) && isNameByte(src[j]) {
				j++
			}
			toks = append(toks, larkTok{kind: ltDirective, text: src[i+1 : j], line: line})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(src) && src[j] >= '0' && src[j] <= '9' {
				j++
			}
			toks = append(toks, larkTok{kind: ltNumber, text: src[i:j], line: line})
			i = j
		case isNameByte(c) || ((c == '?' || c == '!') && i+1 < len(src) && isNameStart(src[i+1]) && atLineStart(toks)):
			j := i + 1
			for j < len(src) && isNameByte(src[j]) {
				j++
			}
			toks = append(toks, larkTok{kind: ltName, text: src[i:j], line: line})
			i = j
		case strings.HasPrefix(src[i:], ".."), strings.HasPrefix(src[i:], "->"):
			toks = append(toks, larkTok{kind: ltPunct, text: src[i : i+2], line: line})
			i += 2
		case strings.ContainsRune(":|()[]*+?~,{}.", rune(c)):
			switch c {
			case '(', '[':
				depth++
			case ')', ']':
				depth = max(0, depth-1)
			}
			toks = append(toks, larkTok{kind: ltPunct, text: string(c), line: line})
			i++
		default:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return nil, larkErr(line, "unexpected character %q", r)
		}
	}
	toks = append(toks, larkTok{kind: ltNewline, line: line}, larkTok{kind: ltEOF, line: line})
	return toks, nil
}

func atLineStart(toks []larkTok) bool {
	return len(toks) == 0 || toks[len(toks)-1].kind == ltNewline
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameByte(c byte) bool  { return isNameStart(c) || c >= '0' && c <= '9' }

// lexLarkString decodes a "..." literal with Python's escapes; an unknown escape keeps
// its backslash, as Python does.
func lexLarkString(s string, line int) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), i + 1, nil
		case '\n':
			return "", 0, larkErr(line, "unterminated string")
		case '\\':
			if i+1 >= len(s) {
				return "", 0, larkErr(line, "unterminated string")
			}
			i++
			switch e := s[i]; e {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'f':
				b.WriteByte('\f')
			case 'v':
				b.WriteByte('\v')
			case 'b':
				b.WriteByte('\b')
			case 'a':
				b.WriteByte('\a')
			case '0':
				b.WriteByte(0)
			case '\\', '"', '\'':
				b.WriteByte(e)
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if i+n >= len(s) {
					return "", 0, larkErr(line, "truncated \\%c escape in string", e)
				}
				v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
				if err != nil || !utf8.ValidRune(rune(v)) {
					return "", 0, larkErr(line, "invalid \\%c escape in string", e)
				}
				b.WriteRune(rune(v))
				i += n
			default:
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, larkErr(line, "unterminated string")
}

// ---- parser ----

// Limits on a grammar's size: the compilers walk it recursively, and a request body
// can hold a grammar deep enough to exhaust the stack.
const (
	maxLarkDefs  = 5000
	maxLarkDepth = 100 // nested ( ) and [ ]
)

type larkParser struct {
	toks  []larkTok
	pos   int
	depth int
	g     *larkGrammar
	// prefix is "common." while reading the common library: its names are its own.
	prefix string
}

func (p *larkParser) peek() larkTok { return p.toks[p.pos] }
func (p *larkParser) next() larkTok {
	t := p.toks[p.pos]
	if t.kind != ltEOF {
		p.pos++
	}
	return t
}
func (p *larkParser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == ltPunct && t.text == s
}

func (p *larkParser) expectPunct(s string) error {
	t := p.next()
	if t.kind != ltPunct || t.text != s {
		return larkErr(t.line, "expected %q, found %s", s, describeTok(t))
	}
	return nil
}

func describeTok(t larkTok) string {
	switch t.kind {
	case ltEOF:
		return "the end of the grammar"
	case ltNewline:
		return "the end of the line"
	case ltString:
		return strconv.Quote(t.text)
	case ltRegexp:
		return "/" + t.text + "/"
	case ltDirective:
		return "%" + t.text
	}
	return fmt.Sprintf("%q", t.text)
}

// parseLark reads src into g (which may already hold definitions).
func parseLark(src string, g *larkGrammar, prefix string) error {
	toks, err := lexLark(src)
	if err != nil {
		return err
	}
	p := &larkParser{toks: toks, g: g, prefix: prefix}
	for {
		t := p.peek()
		switch t.kind {
		case ltEOF:
			return nil
		case ltNewline:
			p.next()
		case ltDirective:
			if err := p.directive(); err != nil {
				return err
			}
		case ltName:
			if err := p.definition(); err != nil {
				return err
			}
		default:
			return larkErr(t.line, "expected a rule, a terminal or a %%directive, found %s", describeTok(t))
		}
	}
}

func isTerminalName(name string) bool {
	name = strings.TrimLeft(name, "_")
	return name != "" && unicode.IsUpper(rune(name[0]))
}

func (p *larkParser) definition() error {
	t := p.next()
	name := strings.TrimLeft(t.text, "?!")
	if p.isPunct("{") {
		return larkErr(t.line, "rule templates (%s{...}) are not supported", name)
	}
	if p.isPunct(".") {
		// A priority: meaningful to Lark's lexer and parser, not to the language.
		p.next()
		if n := p.next(); n.kind != ltNumber {
			return larkErr(n.line, "expected a priority number after %s., found %s", name, describeTok(n))
		}
	}
	if err := p.expectPunct(":"); err != nil {
		return err
	}
	// The first alternative may start on the next line with "|", as the others do.
	if p.peek().kind == ltNewline && p.toks[p.pos+1].kind == ltPunct && p.toks[p.pos+1].text == "|" {
		p.next()
	}
	if p.isPunct("|") {
		p.next()
	}
	body, err := p.expansions(true)
	if err != nil {
		return err
	}
	if n := p.next(); n.kind != ltNewline {
		return larkErr(n.line, "unexpected %s in the definition of %s", describeTok(n), name)
	}
	key := p.prefix + name
	if len(p.g.defs) >= maxLarkDefs {
		return larkErr(t.line, "the grammar has more than %d rules and terminals", maxLarkDefs)
	}
	if prev, dup := p.g.defs[key]; dup {
		return larkErr(t.line, "%s is defined twice (first on line %d)", name, prev.line)
	}
	p.g.defs[key] = &larkDef{name: name, terminal: isTerminalName(name), body: body, line: t.line}
	if p.prefix == "" {
		p.g.alias[name] = key
	}
	return nil
}

// expansions reads alternatives; at the top of a definition an alternative may start
// on a new line with "|".
func (p *larkParser) expansions(top bool) (*larkNode, error) {
	line := p.peek().line
	var alts []*larkNode
	for {
		seq, err := p.alias()
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if top && p.peek().kind == ltNewline && p.toks[p.pos+1].kind == ltPunct && p.toks[p.pos+1].text == "|" {
			p.next()
		}
		if !p.isPunct("|") {
			break
		}
		p.next()
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &larkNode{op: larkAlt, subs: alts, line: line}, nil
}

func (p *larkParser) alias() (*larkNode, error) {
	line := p.peek().line
	var items []*larkNode
	for {
		t := p.peek()
		if t.kind == ltNewline || t.kind == ltEOF || t.kind == ltPunct && (t.text == "|" || t.text == ")" || t.text == "]" || t.text == "->") {
			break
		}
		it, err := p.expr()
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	if p.isPunct("->") {
		// An alias names the tree node; the language is unchanged.
		p.next()
		if n := p.next(); n.kind != ltName {
			return nil, larkErr(n.line, "expected a name after ->, found %s", describeTok(n))
		}
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return &larkNode{op: larkSeq, subs: items, line: line}, nil
}

func (p *larkParser) expr() (*larkNode, error) {
	atom, err := p.atom()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != ltPunct {
		return atom, nil
	}
	switch t.text {
	case "?":
		p.next()
		return &larkNode{op: larkRepeat, subs: []*larkNode{atom}, min: 0, max: 1, line: t.line}, nil
	case "*":
		p.next()
		return &larkNode{op: larkRepeat, subs: []*larkNode{atom}, min: 0, max: -1, line: t.line}, nil
	case "+":
		p.next()
		return &larkNode{op: larkRepeat, subs: []*larkNode{atom}, min: 1, max: -1, line: t.line}, nil
	case "~":
		p.next()
		lo, err := p.count()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.isPunct("..") {
			p.next()
			if hi, err = p.count(); err != nil {
				return nil, err
			}
		}
		if hi < lo {
			return nil, larkErr(t.line, "repetition ~ %d..%d has its bounds reversed", lo, hi)
		}
		return &larkNode{op: larkRepeat, subs: []*larkNode{atom}, min: lo, max: hi, line: t.line}, nil
	}
	return atom, nil
}

// maxLarkRepeat bounds ~ counts, as Go's regexp bounds {m,n}.
const maxLarkRepeat = 1000

func (p *larkParser) count() (int, error) {
	t := p.next()
	if t.kind != ltNumber {
		return 0, larkErr(t.line, "expected a number after ~, found %s", describeTok(t))
	}
	n, err := strconv.Atoi(t.text)
	if err != nil || n > maxLarkRepeat {
		return 0, larkErr(t.line, "repetition count %s is above %d", t.text, maxLarkRepeat)
	}
	return n, nil
}

func (p *larkParser) atom() (*larkNode, error) {
	t := p.next()
	switch t.kind {
	case ltPunct:
		if t.text == "(" || t.text == "[" {
			if p.depth >= maxLarkDepth {
				return nil, larkErr(t.line, "groups are nested more than %d deep", maxLarkDepth)
			}
			p.depth++
			defer func() { p.depth-- }()
		}
		switch t.text {
		case "(":
			n, err := p.expansions(false)
			if err != nil {
				return nil, err
			}
			return n, p.expectPunct(")")
		case "[":
			n, err := p.expansions(false)
			if err != nil {
				return nil, err
			}
			if err := p.expectPunct("]"); err != nil {
				return nil, err
			}
			return &larkNode{op: larkRepeat, subs: []*larkNode{n}, min: 0, max: 1, line: t.line}, nil
		}
	case ltString:
		if p.isPunct("..") {
			p.next()
			hi := p.next()
			if hi.kind != ltString {
				return nil, larkErr(hi.line, "expected a string after .., found %s", describeTok(hi))
			}
			lo, hir := []rune(t.text), []rune(hi.text)
			if len(lo) != 1 || len(hir) != 1 || lo[0] > hir[0] {
				return nil, larkErr(t.line, "a range %q..%q needs two single characters in order", t.text, hi.text)
			}
			return &larkNode{op: larkLeaf, re: &syntax.Regexp{Op: syntax.OpCharClass, Rune: []rune{lo[0], hir[0]}}, line: t.line}, nil
		}
		re := &syntax.Regexp{Op: syntax.OpLiteral, Rune: []rune(t.text)}
		if t.text == "" {
			re = &syntax.Regexp{Op: syntax.OpEmptyMatch}
		}
		if t.flag == "i" {
			re.Flags |= syntax.FoldCase
		}
		return &larkNode{op: larkLeaf, re: re, line: t.line}, nil
	case ltRegexp:
		re, err := larkRegexp(t)
		if err != nil {
			return nil, err
		}
		return &larkNode{op: larkLeaf, re: re, line: t.line}, nil
	case ltName:
		if p.isPunct("{") {
			return nil, larkErr(t.line, "rule templates (%s{...}) are not supported", t.text)
		}
		return &larkNode{op: larkRef, name: t.text, line: t.line}, nil
	}
	return nil, larkErr(t.line, "expected a name, a string, a /regexp/ or a group, found %s", describeTok(t))
}

// larkRegexp parses a /regexp/flags terminal with Go's syntax.
func larkRegexp(t larkTok) (*syntax.Regexp, error) {
	flags := syntax.Perl
	for _, f := range t.flag {
		switch f {
		case 'i':
			flags |= syntax.FoldCase
		case 's':
			flags |= syntax.DotNL
		case 'm':
			flags &^= syntax.OneLine
		case 'u', 'l':
			// unicode / locale: Go's classes are Unicode-aware already
		default:
			return nil, larkErr(t.line, "regular expression flag %q is not supported (i, m, s are)", f)
		}
	}
	re, err := syntax.Parse(t.text, flags)
	if err != nil {
		return nil, larkErr(t.line, "regular expression /%s/: %v", t.text, err)
	}
	var anchor error
	walkRegexp(re, func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			anchor = larkErr(t.line, "regular expression /%s/: anchors and word boundaries are not supported in terminals", t.text)
		}
	})
	return re, anchor
}

func walkRegexp(re *syntax.Regexp, fn func(*syntax.Regexp)) {
	fn(re)
	for _, s := range re.Sub {
		walkRegexp(s, fn)
	}
}

func (p *larkParser) directive() error {
	t := p.next()
	switch t.text {
	case "import":
		return p.importDirective(t)
	case "ignore":
		n, err := p.expansions(false)
		if err != nil {
			return err
		}
		p.g.ignore = append(p.g.ignore, n)
		if n := p.next(); n.kind != ltNewline {
			return larkErr(n.line, "unexpected %s after %%ignore", describeTok(n))
		}
		return nil
	}
	return larkErr(t.line, "%%%s is not supported (only %%import common and %%ignore are)", t.text)
}

func (p *larkParser) importDirective(t larkTok) error {
	// %import common.NAME [-> ALIAS]   or   %import common (A, B)
	mod := p.next()
	if mod.kind != ltName || mod.text != "common" {
		return larkErr(t.line, "only terminals of Lark's common library can be imported (%%import common.NAME)")
	}
	bind := func(name, as string, line int) error {
		if _, ok := commonLark().defs["common."+name]; !ok {
			return larkErr(line, "common has no terminal %s", name)
		}
		p.g.alias[as] = "common." + name
		return nil
	}
	switch {
	case p.isPunct("."):
		p.next()
		name := p.next()
		if name.kind != ltName {
			return larkErr(name.line, "expected a name after common., found %s", describeTok(name))
		}
		as := name.text
		if p.isPunct("->") {
			p.next()
			a := p.next()
			if a.kind != ltName {
				return larkErr(a.line, "expected a name after ->, found %s", describeTok(a))
			}
			as = a.text
		}
		if err := bind(name.text, as, name.line); err != nil {
			return err
		}
	case p.isPunct("("):
		p.next()
		for {
			name := p.next()
			if name.kind != ltName {
				return larkErr(name.line, "expected a name in %%import common (...), found %s", describeTok(name))
			}
			if err := bind(name.text, name.text, name.line); err != nil {
				return err
			}
			if p.isPunct(",") {
				p.next()
				continue
			}
			if err := p.expectPunct(")"); err != nil {
				return err
			}
			break
		}
	default:
		return larkErr(t.line, "expected common.NAME or common (NAMES) after %%import")
	}
	if n := p.next(); n.kind != ltNewline {
		return larkErr(n.line, "unexpected %s after %%import", describeTok(n))
	}
	return nil
}

// commonLarkSrc is the part of Lark's common.lark that custom tools use, written with
// Go regexp syntax where the original needs lookbehind (ESCAPED_STRING) or lazy
// repetition (C_COMMENT).
const commonLarkSrc = `
DIGIT: "0".."9"
HEXDIGIT: "a".."f" | "A".."F" | DIGIT
INT: DIGIT+
SIGNED_INT: ["+" | "-"] INT
DECIMAL: INT "." INT? | "." INT
_EXP: ("e" | "E") SIGNED_INT
FLOAT: INT _EXP | DECIMAL _EXP?
SIGNED_FLOAT: ["+" | "-"] FLOAT
NUMBER: FLOAT | INT
SIGNED_NUMBER: ["+" | "-"] NUMBER
ESCAPED_STRING: /"([^"\\\n]|\\[^\n])*"/
LCASE_LETTER: "a".."z"
UCASE_LETTER: "A".."Z"
LETTER: UCASE_LETTER | LCASE_LETTER
WORD: LETTER+
CNAME: ("_" | LETTER) ("_" | LETTER | DIGIT)*
WS_INLINE: (" " | /\t/)+
WS: /[ \t\f\r\n]/+
CR: /\r/
LF: /\n/
NEWLINE: (CR? LF)+
SH_COMMENT: /#[^\n]*/
CPP_COMMENT: /\/\/[^\n]*/
C_COMMENT: /\/\*([^*]|\*+[^*\/])*\*+\//
SQL_COMMENT: /--[^\n]*/
`

var commonLarkGrammar *larkGrammar

// commonLark returns the common library, parsed once. Its names are "common.NAME"
// and refer to each other.
func commonLark() *larkGrammar {
	if commonLarkGrammar == nil {
		g := &larkGrammar{defs: map[string]*larkDef{}, alias: map[string]string{}}
		if err := parseLark(commonLarkSrc, g, "common."); err != nil {
			panic("toolgrammar: common.lark: " + err.Error())
		}
		commonLarkGrammar = g
	}
	return commonLarkGrammar
}

func init() { commonLark() }

// resolve finds the definition a reference names: in the user's grammar (or what it
// imported), or, inside the common library, among the library's own names.
func (g *larkGrammar) resolve(ref string, scope string) (string, *larkDef) {
	if scope != "" {
		key := scope + ref
		return key, commonLark().defs[key]
	}
	key, ok := g.alias[ref]
	if !ok {
		return "", nil
	}
	if d, ok := g.defs[key]; ok {
		return key, d
	}
	return key, commonLark().defs[key]
}

func scopeOf(key string) string {
	if strings.HasPrefix(key, "common.") {
		return "common."
	}
	return ""
}

// ParseLark reads a Lark grammar and checks it: every name defined, a start rule,
// terminals made of terminals only.
func ParseLark(src string) (*larkGrammar, error) {
	g := &larkGrammar{defs: map[string]*larkDef{}, alias: map[string]string{}}
	if err := parseLark(src, g, ""); err != nil {
		return nil, err
	}
	if _, d := g.resolve("start", ""); d == nil {
		return nil, larkErr(0, "the grammar has no start rule (start: ...)")
	}
	for _, key := range sortedKeys(g.defs) {
		d := g.defs[key]
		if err := g.checkRefs(d.body, d, ""); err != nil {
			return nil, err
		}
	}
	for _, n := range g.ignore {
		if err := g.checkRefs(n, &larkDef{terminal: true, name: "%ignore"}, ""); err != nil {
			return nil, err
		}
	}
	return g, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (g *larkGrammar) checkRefs(n *larkNode, in *larkDef, scope string) error {
	if n.op == larkRef {
		_, d := g.resolve(n.name, scope)
		if d == nil {
			return larkErr(n.line, "%s is not defined", n.name)
		}
		if in.terminal && !d.terminal {
			return larkErr(n.line, "terminal %s refers to rule %s; terminals may only use terminals", in.name, n.name)
		}
	}
	for _, s := range n.subs {
		if err := g.checkRefs(s, in, scope); err != nil {
			return err
		}
	}
	return nil
}
