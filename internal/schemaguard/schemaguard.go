// Package schemaguard decides, in Go, whether a JSON schema is safe to hand to the
// runtime's C++ JSON-schema-to-grammar conversion (llama.cpp's
// common/json-schema-to-grammar.cpp, which the runtime runs inside its server process
// for every `format`).
//
// That conversion recurses without limits and without cycle checks in places: an
// `allOf` member whose `$ref` leads back to itself recurses until the stack is gone,
// a deeply nested schema or `pattern` does the same, a `$ref` is matched with
// std::regex (recursive in libstdc++), and every distinct `$ref` copies the whole
// schema, so a few thousand of them cost minutes of CPU. A crash there is a SIGSEGV
// that no Go code can recover: the whole server and every response in flight go with
// it. So every schema is checked here first, with bounds on size, nesting, references,
// nodes and patterns, and references that loop without consuming input are refused.
// Nothing here runs C code.
package schemaguard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limits bound what a schema may ask of the conversion. Each is far above what real
// tools and structured outputs use (OpenAI allows 5,000 properties and 10 levels of
// nesting in a strict schema) and far below what takes the conversion down.
type Limits struct {
	MaxBytes          int // the schema's JSON text
	MaxDepth          int // nesting of JSON objects and arrays
	MaxNodes          int // JSON objects and arrays in all
	MaxRefs           int // $ref keywords
	MaxRefBytes       int // one $ref's text
	MaxPatternBytes   int // one pattern's text
	MaxPatternNesting int // groups inside groups in one pattern
}

// Default is what hearth enforces.
var Default = Limits{
	MaxBytes:          256 << 10,
	MaxDepth:          64,
	MaxNodes:          20000,
	MaxRefs:           256,
	MaxRefBytes:       512,
	MaxPatternBytes:   4096,
	MaxPatternNesting: 32,
}

// Error says what is wrong with a schema and where (a JSON pointer into it).
type Error struct {
	Pointer string // "#/properties/a"; "" for the schema as a whole
	Reason  string
}

func (e *Error) Error() string {
	if e.Pointer == "" || e.Pointer == "#" {
		return e.Reason
	}
	return fmt.Sprintf("at %s: %s", e.Pointer, e.Reason)
}

// Check applies the Default limits.
func Check(schema []byte) error { return Default.Check(schema) }

// Check reports why schema must not reach the conversion, or nil.
func (l Limits) Check(schema []byte) error {
	if len(schema) > l.MaxBytes {
		return &Error{Reason: fmt.Sprintf("the schema is %d bytes; at most %d are accepted", len(schema), l.MaxBytes)}
	}
	if d, _ := shape(schema); d > l.MaxDepth {
		return &Error{Reason: fmt.Sprintf("the schema is nested %d levels deep (objects and arrays); at most %d are accepted", d, l.MaxDepth)}
	}
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return &Error{Reason: fmt.Sprintf("the schema is not valid JSON: %v", err)}
	}
	if _, ok := root.(map[string]any); !ok {
		return &Error{Reason: "the schema must be a JSON object"}
	}
	w := &walker{l: l, root: root, nodes: map[string]map[string]any{}}
	if err := w.walk(root, "#"); err != nil {
		return err
	}
	return w.checkCycles()
}

// CheckShape applies the Default bounds on nesting and on the count of objects and
// arrays alone, without decoding: for a schema about to be compiled or rendered by Go
// code whose cost grows faster than the schema (a validator's compile is quadratic in
// the nesting), whether or not it ever reaches the conversion.
func CheckShape(schema []byte) error {
	l := Default
	depth, nodes := shape(schema)
	if depth > l.MaxDepth {
		return &Error{Reason: fmt.Sprintf("the schema is nested %d levels deep (objects and arrays); at most %d are accepted", depth, l.MaxDepth)}
	}
	if nodes > l.MaxNodes {
		return &Error{Reason: fmt.Sprintf("the schema has more than %d objects and arrays", l.MaxNodes)}
	}
	return nil
}

// shape is the deepest nesting of objects and arrays in the JSON text and how many
// there are, counted without decoding it (a decoder would recurse that deep first).
func shape(b []byte) (deepest, nodes int) {
	depth := 0
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			nodes++
			deepest = max(deepest, depth)
		case '}', ']':
			depth--
		}
	}
	return deepest, nodes
}

type walker struct {
	l     Limits
	root  any
	count int // objects and arrays seen
	refs  int
	// nodes holds each schema object by its pointer, for the cycle check.
	nodes map[string]map[string]any
}

// lengthKeywords are read by the conversion as a C int: a value out of range or not
// an integer is undefined behaviour there.
var lengthKeywords = []string{"minLength", "maxLength", "minItems", "maxItems"}

// boundKeywords are read as a C int64 for integer schemas.
var boundKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}

func (w *walker) walk(v any, ptr string) error {
	switch x := v.(type) {
	case []any:
		if err := w.counted(ptr); err != nil {
			return err
		}
		for i, e := range x {
			if err := w.walk(e, ptr+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
	case map[string]any:
		if err := w.counted(ptr); err != nil {
			return err
		}
		w.nodes[ptr] = x
		if err := w.checkKeywords(x, ptr); err != nil {
			return err
		}
		for k, e := range x {
			if err := w.walk(e, ptr+"/"+escapePointer(k)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *walker) counted(ptr string) error {
	w.count++
	if w.count > w.l.MaxNodes {
		return &Error{Pointer: ptr, Reason: fmt.Sprintf("the schema has more than %d objects and arrays", w.l.MaxNodes)}
	}
	return nil
}

// checkKeywords checks the keywords of one object whose values the conversion reads
// as something other than a schema. An object that is not a schema (a property named
// "pattern", an enum value) may be checked too: the bounds hold for it all the same.
func (w *walker) checkKeywords(x map[string]any, ptr string) error {
	if r, ok := x["$ref"]; ok {
		if err := w.checkRef(r, ptr); err != nil {
			return err
		}
	}
	if p, ok := x["pattern"].(string); ok {
		if err := w.checkPattern(p, ptr+"/pattern"); err != nil {
			return err
		}
	}
	for _, k := range lengthKeywords {
		if n, ok := x[k].(json.Number); ok {
			if v, err := strconv.ParseInt(string(n), 10, 32); err != nil || v < 0 {
				return &Error{Pointer: ptr + "/" + k, Reason: fmt.Sprintf("%s must be a non-negative integer below 2^31, not %s", k, n)}
			}
		}
	}
	for _, k := range boundKeywords {
		if n, ok := x[k].(json.Number); ok {
			f, err := n.Float64()
			if err != nil || math.Abs(f) > 1<<53 {
				return &Error{Pointer: ptr + "/" + k, Reason: fmt.Sprintf("%s must be a number between -2^53 and 2^53, not %s", k, n)}
			}
		}
	}
	return nil
}

func (w *walker) checkRef(r any, ptr string) error {
	at := ptr + "/$ref"
	s, ok := r.(string)
	if !ok {
		return &Error{Pointer: at, Reason: "$ref must be a string"}
	}
	w.refs++
	if w.refs > w.l.MaxRefs {
		return &Error{Pointer: at, Reason: fmt.Sprintf("the schema has more than %d $ref keywords", w.l.MaxRefs)}
	}
	if len(s) > w.l.MaxRefBytes {
		return &Error{Pointer: at, Reason: fmt.Sprintf("a $ref of %d bytes; at most %d are accepted", len(s), w.l.MaxRefBytes)}
	}
	if s != "#" && !strings.HasPrefix(s, "#/") {
		return &Error{Pointer: at, Reason: fmt.Sprintf("$ref %q must point into the schema itself (#/...): nothing is fetched", s)}
	}
	if _, _, err := resolve(w.root, s); err != nil {
		return &Error{Pointer: at, Reason: fmt.Sprintf("$ref %q does not resolve: %v", s, err)}
	}
	return nil
}

// resolve follows a local $ref the way the conversion does: the fragment split at
// every '/', each part a member name taken literally or an array index. It returns
// the target and its pointer in the walker's spelling.
func resolve(root any, ref string) (any, string, error) {
	target, ptr := root, "#"
	fragment := strings.TrimPrefix(ref, "#")
	if fragment == "" {
		return target, ptr, nil
	}
	for _, sel := range strings.Split(fragment, "/")[1:] {
		switch t := target.(type) {
		case map[string]any:
			next, ok := t[sel]
			if !ok {
				return nil, "", fmt.Errorf("%q is not a member of %s", sel, ptr)
			}
			target, ptr = next, ptr+"/"+escapePointer(sel)
		case []any:
			i, err := strconv.Atoi(sel)
			if err != nil || i < 0 || i >= len(t) {
				return nil, "", fmt.Errorf("%q is not an index of %s", sel, ptr)
			}
			target, ptr = t[i], ptr+"/"+sel
		default:
			return nil, "", fmt.Errorf("%s is neither an object nor an array", ptr)
		}
	}
	return target, ptr, nil
}

// escapePointer spells a member name in a JSON pointer (RFC 6901). Pointers here are
// only keys of the walker's own map and text for messages, so any injective spelling
// would do; this one reads as a pointer.
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// checkPattern bounds a pattern's length and its nesting of groups, which the
// conversion's pattern translator follows by recursion.
func (w *walker) checkPattern(p, ptr string) error {
	if len(p) > w.l.MaxPatternBytes {
		return &Error{Pointer: ptr, Reason: fmt.Sprintf("a pattern of %d bytes; at most %d are accepted", len(p), w.l.MaxPatternBytes)}
	}
	depth, inClass := 0, false
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
		case c == '[':
			inClass = true
		case c == '(':
			depth++
			if depth > w.l.MaxPatternNesting {
				return &Error{Pointer: ptr, Reason: fmt.Sprintf("a pattern nests groups more than %d deep", w.l.MaxPatternNesting)}
			}
		case c == ')':
			depth--
		}
	}
	return nil
}

// checkCycles refuses a $ref that can reach itself without consuming input: through
// other $refs and the members of anyOf, oneOf and allOf, none of which write a
// character before their members do. The conversion inlines such references (an
// allOf member's $ref is followed without a guard) and recurses until it crashes, or
// writes a left-recursive grammar the runtime refuses. A reference that goes through
// properties or items (a tree of nodes) writes '{' or '[' first and is fine.
func (w *walker) checkCycles() error {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var visit func(ptr string) error
	visit = func(ptr string) error {
		switch state[ptr] {
		case onPath:
			return &Error{Pointer: ptr, Reason: "the schema refers to itself through $ref without an object or array in between (an endless schema); recursion must go through properties or items"}
		case done:
			return nil
		}
		state[ptr] = onPath
		for _, next := range w.unproductive(ptr) {
			if err := visit(next); err != nil {
				return err
			}
		}
		state[ptr] = done
		return nil
	}
	for ptr := range w.nodes {
		if err := visit(ptr); err != nil {
			return err
		}
	}
	return nil
}

// unproductive lists the schemas the conversion visits for the schema at ptr before
// it writes anything of its own.
func (w *walker) unproductive(ptr string) []string {
	x := w.nodes[ptr]
	var out []string
	if r, ok := x["$ref"].(string); ok {
		if _, to, err := resolve(w.root, r); err == nil {
			if _, isSchema := w.nodes[to]; isSchema {
				out = append(out, to)
			}
		}
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		members, _ := x[k].([]any)
		for i, m := range members {
			if _, ok := m.(map[string]any); ok {
				out = append(out, ptr+"/"+k+"/"+strconv.Itoa(i))
			}
		}
	}
	return out
}
