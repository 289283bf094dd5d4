package toolgrammar

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Syntaxes of a custom tool's grammar format.
const (
	SyntaxLark  = "lark"
	SyntaxRegex = "regex"
)

// Freeform is the compiled input format of a custom (freeform) tool: what its raw input
// must be, how a runtime can constrain it, and how to check a finished one.
//
// The model sees a custom tool as a function of one string argument, "input" (see
// FreeformParameters); generated under a JSON-schema grammar, that argument is
// constrained by InputSchema:
//
//	text (no grammar)       any string
//	regex                   Pattern, from the expression (Go's RE2 syntax, which is
//	                        Rust's regex syntax for everything but its rarest features);
//	                        the whole input must match
//	lark, non-recursive     the grammar inlined into one regular expression, then as regex
//	lark, recursive         any string: no regular expression can express it; the
//	                        finished input is checked by an Earley parser
//
// Check validates a finished input in every case, so an input that reaches a client
// matches the format even where the runtime could not enforce it.
type Freeform struct {
	Syntax     string // "" for free text, SyntaxRegex or SyntaxLark
	Definition string
	// Pattern is the JSON-string pattern of the input (see JSONStringPattern); "" when
	// the format is free text or cannot be expressed as one.
	Pattern string
	// Unconstrained says why a grammar has no Pattern (for logs and documentation).
	Unconstrained string

	re  *regexp.Regexp // the whole-input matcher: a regex, or a Lark grammar inlined
	cfg *cfg           // lark syntax: the Earley recogniser's grammar
}

// earleyBudget caps the Earley items one check may create: a few hundred thousand
// for a 20 KB patch in a patch grammar, far more only for ambiguous grammars, whose
// checks it keeps to a few seconds.
const earleyBudget = 2_000_000

// CompileFreeform reads a custom tool's format. syntax is "" (free text), "regex" or
// "lark". The error is a *GrammarError saying what in the definition is wrong.
func CompileFreeform(syn, definition string) (*Freeform, error) {
	f := &Freeform{Syntax: syn, Definition: definition}
	switch syn {
	case "":
		return f, nil
	case SyntaxRegex:
		re, err := syntax.Parse(definition, syntax.Perl)
		if err != nil {
			return nil, &GrammarError{Msg: fmt.Sprintf("invalid regular expression: %v", err)}
		}
		// \A(?:...)\z: the whole input must match, whatever anchors the expression has.
		if f.re, err = regexp.Compile(`\A(?:` + definition + `)\z`); err != nil {
			return nil, &GrammarError{Msg: fmt.Sprintf("invalid regular expression: %v", err)}
		}
		f.setPattern(re)
		return f, nil
	case SyntaxLark:
		g, err := ParseLark(definition)
		if err != nil {
			return nil, err
		}
		f.cfg = g.cfgOf()
		switch {
		case g.recursive():
			f.Unconstrained = "the grammar is recursive, so no regular expression expresses it"
		default:
			re := g.regexpOf()
			if re == nil {
				f.Unconstrained = "the grammar is too large once its rules are inlined"
				break
			}
			f.setPattern(re)
			// A regular grammar is checked in linear time by the inlined expression;
			// the Earley parser only says where a failing input goes wrong. An
			// expression too large for Go's regexp leaves the Earley parser to check.
			f.re, _ = regexp.Compile(`\A(?:` + re.String() + `)\z`)
		}
		return f, nil
	}
	return nil, &GrammarError{Msg: fmt.Sprintf("unknown grammar syntax %q (lark or regex)", syn)}
}

func (f *Freeform) setPattern(re *syntax.Regexp) {
	p, err := JSONStringPattern(re)
	if err != nil {
		f.Unconstrained = strings.TrimPrefix(err.Error(), ErrNotExpressible.Error()+": ")
		return
	}
	f.Pattern = p
}

// InputViolation is a finished input that does not match its tool's format.
type InputViolation struct {
	Syntax string
	// Offset is the byte offset of the first character at which the input stops
	// matching (len(input) when it ends too early); -1 when unknown (regex).
	Offset       int
	Line, Column int // of Offset, 1-based
	Msg          string
}

func (e *InputViolation) Error() string { return e.Msg }

// Check returns nil when input matches the format, else an *InputViolation (or an error
// saying the input could not be checked).
func (f *Freeform) Check(input string) error {
	if f.re != nil {
		if f.re.MatchString(input) {
			return nil
		}
		if f.cfg == nil {
			return &InputViolation{Syntax: f.Syntax, Offset: -1,
				Msg: fmt.Sprintf("the input does not match the regular expression %s", abbreviate(f.Definition, 200))}
		}
	}
	if f.cfg != nil {
		runes := []rune(input)
		ok, stop, err := f.cfg.recognize(runes, earleyBudget)
		switch {
		case err != nil && f.re != nil:
			return &InputViolation{Syntax: f.Syntax, Offset: -1, Msg: "the input does not match the Lark grammar"}
		case err != nil:
			return err
		case ok && f.re != nil:
			// The two readings of one grammar disagree, which tests rule out; the
			// expression's answer stands.
			return &InputViolation{Syntax: f.Syntax, Offset: -1, Msg: "the input does not match the Lark grammar"}
		case ok:
			return nil
		}
		off := len(string(runes[:stop]))
		line, col := lineCol(input, off)
		v := &InputViolation{Syntax: f.Syntax, Offset: off, Line: line, Column: col}
		if stop == len(runes) {
			v.Msg = fmt.Sprintf("the input ends before the Lark grammar allows (line %d, column %d)", line, col)
		} else {
			r, _ := utf8.DecodeRuneInString(input[off:])
			v.Msg = fmt.Sprintf("the input stops matching the Lark grammar at line %d, column %d (%q)", line, col, r)
		}
		return v
	}
	return nil
}

func lineCol(s string, off int) (int, int) {
	line, col := 1, 1
	for _, r := range s[:off] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q...", s[:cut])
}

// FreeformParameters is the parameter schema a custom tool is shown to the model with:
// one string, "input".
var FreeformParameters = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string"}},"required":["input"]}`)

// InputSchema is the arguments schema a constrained call of the tool is generated
// under: FreeformParameters with the input's pattern, when there is one.
func (f *Freeform) InputSchema() json.RawMessage {
	if f == nil || f.Pattern == "" {
		return FreeformParameters
	}
	input := obj("type", str("string"), "pattern", str(f.Pattern))
	return obj(
		"type", str("object"),
		"properties", obj("input", input),
		"required", arr(str("input")),
	).marshal()
}

// FreeformInput reads the input of a custom tool call from its arguments (the JSON
// object the model wrote): the string "input". Other members are ignored.
func FreeformInput(arguments string) (string, error) {
	var args map[string]json.RawMessage
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return "", errors.New("the arguments are not a JSON object")
	}
	raw, ok := args["input"]
	if !ok {
		return "", errors.New(`the arguments have no "input"`)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errors.New(`"input" is not a string`)
	}
	return s, nil
}
