package toolgrammar

import (
	"regexp/syntax"
	"sort"
	"unicode"
)

// maxInlinedNodes bounds the regular expression a non-recursive grammar inlines into:
// a rule used in many places is copied into each, and a grammar of nested uses could
// otherwise grow exponentially. A grammar beyond it is validated, not constrained.
const maxInlinedNodes = 100_000

// recursive reports whether a definition reachable from start refers back to itself,
// directly or through others: such a grammar is not regular, as far as hearth can
// tell, and cannot become one regular expression.
func (g *larkGrammar) recursive() bool {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	var visit func(key string, d *larkDef) bool
	var walk func(n *larkNode, scope string) bool
	walk = func(n *larkNode, scope string) bool {
		if n.op == larkRef {
			key, d := g.resolve(n.name, scope)
			if visit(key, d) {
				return true
			}
		}
		for _, s := range n.subs {
			if walk(s, scope) {
				return true
			}
		}
		return false
	}
	visit = func(key string, d *larkDef) bool {
		switch state[key] {
		case active:
			return true
		case done:
			return false
		}
		state[key] = active
		if walk(d.body, scopeOf(key)) {
			return true
		}
		state[key] = done
		return false
	}
	for _, n := range g.ignore {
		if walk(n, "") {
			return true
		}
	}
	key, d := g.resolve("start", "")
	return visit(key, d)
}

// regexpOf inlines a non-recursive grammar into one regular expression of the whole
// input. It returns nil when the result would exceed maxInlinedNodes.
func (g *larkGrammar) regexpOf() *syntax.Regexp {
	x := &larkInliner{g: g, defs: map[string]*syntax.Regexp{}, sizes: map[*syntax.Regexp]int{}}
	var ign *syntax.Regexp
	if len(g.ignore) > 0 {
		var alts []*syntax.Regexp
		for _, n := range g.ignore {
			alts = append(alts, x.node(n, "", false, nil))
		}
		ign = &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{alternate(alts)}}
	}
	x.ign = ign
	key, d := g.resolve("start", "")
	re := x.def(key, d)
	if ign != nil {
		re = concat([]*syntax.Regexp{re, ign})
	}
	if x.size(re) > maxInlinedNodes {
		return nil
	}
	return re
}

type larkInliner struct {
	g     *larkGrammar
	ign   *syntax.Regexp
	defs  map[string]*syntax.Regexp
	sizes map[*syntax.Regexp]int
}

func (x *larkInliner) def(key string, d *larkDef) *syntax.Regexp {
	if re, ok := x.defs[key]; ok {
		return re
	}
	re := x.node(d.body, scopeOf(key), !d.terminal, x.ign)
	x.defs[key] = re
	return re
}

// node turns n into a regular expression; in a rule (inRule) every terminal may be
// preceded by what %ignore allows.
func (x *larkInliner) node(n *larkNode, scope string, inRule bool, ign *syntax.Regexp) *syntax.Regexp {
	before := func(re *syntax.Regexp) *syntax.Regexp {
		if !inRule || ign == nil {
			return re
		}
		return concat([]*syntax.Regexp{ign, re})
	}
	switch n.op {
	case larkSeq:
		var subs []*syntax.Regexp
		for _, s := range n.subs {
			subs = append(subs, x.node(s, scope, inRule, ign))
		}
		return concat(subs)
	case larkAlt:
		var subs []*syntax.Regexp
		for _, s := range n.subs {
			subs = append(subs, x.node(s, scope, inRule, ign))
		}
		return alternate(subs)
	case larkRef:
		key, d := x.g.resolve(n.name, scope)
		re := x.def(key, d)
		if d.terminal {
			return before(re)
		}
		return re
	case larkLeaf:
		return before(n.re)
	case larkRepeat:
		sub := x.node(n.subs[0], scope, inRule, ign)
		switch {
		case n.min == 0 && n.max == 1:
			return &syntax.Regexp{Op: syntax.OpQuest, Sub: []*syntax.Regexp{sub}}
		case n.min == 0 && n.max < 0:
			return &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{sub}}
		case n.min == 1 && n.max < 0:
			return &syntax.Regexp{Op: syntax.OpPlus, Sub: []*syntax.Regexp{sub}}
		}
		return &syntax.Regexp{Op: syntax.OpRepeat, Min: n.min, Max: n.max, Sub: []*syntax.Regexp{sub}}
	}
	return &syntax.Regexp{Op: syntax.OpNoMatch}
}

// size counts the nodes of re as written out (shared subtrees once per use).
func (x *larkInliner) size(re *syntax.Regexp) int {
	if n, ok := x.sizes[re]; ok {
		return n
	}
	n := 1
	for _, s := range re.Sub {
		n += x.size(s)
		if n > maxInlinedNodes {
			break
		}
	}
	if re.Op == syntax.OpRepeat && re.Max > 1 {
		n *= re.Max
	} else if re.Op == syntax.OpRepeat && re.Min > 1 {
		n *= re.Min
	}
	n = min(n, maxInlinedNodes+1)
	x.sizes[re] = n
	return n
}

func concat(subs []*syntax.Regexp) *syntax.Regexp {
	switch len(subs) {
	case 0:
		return &syntax.Regexp{Op: syntax.OpEmptyMatch}
	case 1:
		return subs[0]
	}
	return &syntax.Regexp{Op: syntax.OpConcat, Sub: subs}
}

func alternate(subs []*syntax.Regexp) *syntax.Regexp {
	if len(subs) == 1 {
		return subs[0]
	}
	return &syntax.Regexp{Op: syntax.OpAlternate, Sub: subs}
}

// ---- context-free form, for the Earley recogniser ----

// cfgSym is a grammar symbol: >= 0 a nonterminal, < 0 the terminal class -(sym+1).
type cfgSym int32

// cfg is a context-free grammar over runes.
type cfg struct {
	prods    [][]cfgSym
	lhs      []int
	byNT     [][]int
	classes  [][]rune // lo, hi pairs, sorted
	start    int
	nullable []bool
}

func (c *cfg) newNT() int {
	c.byNT = append(c.byNT, nil)
	return len(c.byNT) - 1
}

func (c *cfg) addProd(nt int, syms []cfgSym) {
	c.prods = append(c.prods, syms)
	c.lhs = append(c.lhs, nt)
	c.byNT[nt] = append(c.byNT[nt], len(c.prods)-1)
}

func (c *cfg) class(ranges []rune) cfgSym {
	c.classes = append(c.classes, ranges)
	return cfgSym(-len(c.classes))
}

func (c *cfg) matches(sym cfgSym, r rune) bool {
	ranges := c.classes[-int(sym)-1]
	i := sort.Search(len(ranges)/2, func(i int) bool { return ranges[2*i+1] >= r })
	return i < len(ranges)/2 && ranges[2*i] <= r
}

// computeNullable marks the nonterminals that derive the empty string.
func (c *cfg) computeNullable() {
	c.nullable = make([]bool, len(c.byNT))
	for changed := true; changed; {
		changed = false
		for p, syms := range c.prods {
			if c.nullable[c.lhs[p]] {
				continue
			}
			all := true
			for _, s := range syms {
				if s < 0 || !c.nullable[s] {
					all = false
					break
				}
			}
			if all {
				c.nullable[c.lhs[p]] = true
				changed = true
			}
		}
	}
}

type cfgBuilder struct {
	g    *larkGrammar
	c    *cfg
	defs map[string]int
	ign  []cfgSym // the symbols of "ignored text, any amount", nil without %ignore
}

// cfgOf turns the grammar into its context-free form.
func (g *larkGrammar) cfgOf() *cfg {
	b := &cfgBuilder{g: g, c: &cfg{}, defs: map[string]int{}}
	if len(g.ignore) > 0 {
		alt := b.c.newNT()
		for _, n := range g.ignore {
			b.c.addProd(alt, b.node(n, "", false))
		}
		b.ign = []cfgSym{b.repeat([]cfgSym{cfgSym(alt)}, 0, -1)}
	}
	key, d := g.resolve("start", "")
	top := b.c.newNT()
	b.c.addProd(top, append([]cfgSym{cfgSym(b.def(key, d))}, b.ign...))
	b.c.start = top
	b.c.computeNullable()
	return b.c
}

func (b *cfgBuilder) def(key string, d *larkDef) int {
	if nt, ok := b.defs[key]; ok {
		return nt
	}
	nt := b.c.newNT()
	b.defs[key] = nt
	scope, inRule := scopeOf(key), !d.terminal
	if d.body.op == larkAlt {
		for _, s := range d.body.subs {
			b.c.addProd(nt, b.node(s, scope, inRule))
		}
	} else {
		b.c.addProd(nt, b.node(d.body, scope, inRule))
	}
	return nt
}

func (b *cfgBuilder) node(n *larkNode, scope string, inRule bool) []cfgSym {
	before := func(syms []cfgSym) []cfgSym {
		if !inRule || b.ign == nil {
			return syms
		}
		return append(append([]cfgSym{}, b.ign...), syms...)
	}
	switch n.op {
	case larkSeq:
		var out []cfgSym
		for _, s := range n.subs {
			out = append(out, b.node(s, scope, inRule)...)
		}
		return out
	case larkAlt:
		nt := b.c.newNT()
		for _, s := range n.subs {
			b.c.addProd(nt, b.node(s, scope, inRule))
		}
		return []cfgSym{cfgSym(nt)}
	case larkRef:
		key, d := b.g.resolve(n.name, scope)
		sym := []cfgSym{cfgSym(b.def(key, d))}
		if d.terminal {
			return before(sym)
		}
		return sym
	case larkLeaf:
		return before(b.regexp(n.re))
	case larkRepeat:
		return []cfgSym{b.repeat(b.node(n.subs[0], scope, inRule), n.min, n.max)}
	}
	return []cfgSym{cfgSym(b.c.newNT())} // derives nothing
}

// repeat returns a nonterminal deriving min to max (-1: any number of) copies of syms.
// Unbounded repetition is left-recursive, which an Earley parser handles in linear time.
func (b *cfgBuilder) repeat(syms []cfgSym, min, max int) cfgSym {
	x := b.wrap(syms)
	out := b.c.newNT()
	var tail cfgSym
	switch {
	case max < 0:
		star := b.c.newNT()
		b.c.addProd(star, nil)
		b.c.addProd(star, []cfgSym{cfgSym(star), x})
		tail = cfgSym(star)
	default:
		// opt_k derives 0..k copies: opt_0 -> ε, opt_k -> ε | x opt_(k-1).
		opt := b.c.newNT()
		b.c.addProd(opt, nil)
		for k := 1; k <= max-min; k++ {
			next := b.c.newNT()
			b.c.addProd(next, nil)
			b.c.addProd(next, []cfgSym{x, cfgSym(opt)})
			opt = next
		}
		tail = cfgSym(opt)
	}
	seq := make([]cfgSym, 0, min+1)
	for range min {
		seq = append(seq, x)
	}
	b.c.addProd(out, append(seq, tail))
	return cfgSym(out)
}

// wrap makes one symbol of a sequence.
func (b *cfgBuilder) wrap(syms []cfgSym) cfgSym {
	if len(syms) == 1 {
		return syms[0]
	}
	nt := b.c.newNT()
	b.c.addProd(nt, syms)
	return cfgSym(nt)
}

// regexp turns a regular expression into symbols.
func (b *cfgBuilder) regexp(re *syntax.Regexp) []cfgSym {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return nil
	case syntax.OpLiteral:
		var out []cfgSym
		for _, r := range re.Rune {
			ranges := []rune{r, r}
			if re.Flags&syntax.FoldCase != 0 {
				ranges = foldRanges(r)
			}
			out = append(out, b.c.class(ranges))
		}
		return out
	case syntax.OpCharClass:
		return []cfgSym{b.c.class(re.Rune)}
	case syntax.OpAnyCharNotNL:
		return []cfgSym{b.c.class([]rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune})}
	case syntax.OpAnyChar:
		return []cfgSym{b.c.class([]rune{0, unicode.MaxRune})}
	case syntax.OpCapture:
		return b.regexp(re.Sub[0])
	case syntax.OpConcat:
		var out []cfgSym
		for _, s := range re.Sub {
			out = append(out, b.regexp(s)...)
		}
		return out
	case syntax.OpAlternate:
		nt := b.c.newNT()
		for _, s := range re.Sub {
			b.c.addProd(nt, b.regexp(s))
		}
		return []cfgSym{cfgSym(nt)}
	case syntax.OpStar:
		return []cfgSym{b.repeat(b.regexp(re.Sub[0]), 0, -1)}
	case syntax.OpPlus:
		return []cfgSym{b.repeat(b.regexp(re.Sub[0]), 1, -1)}
	case syntax.OpQuest:
		return []cfgSym{b.repeat(b.regexp(re.Sub[0]), 0, 1)}
	case syntax.OpRepeat:
		return []cfgSym{b.repeat(b.regexp(re.Sub[0]), re.Min, re.Max)}
	}
	// OpNoMatch; anchors never reach here (larkRegexp refuses them).
	return []cfgSym{cfgSym(b.c.newNT())}
}

// ---- Earley recogniser ----

type earleyItem struct {
	prod, dot, origin int32
}

// errBudget is returned by recognize when the input needs more work than allowed.
type earleyBudgetError struct{}

func (earleyBudgetError) Error() string { return "the input is too long to check against this grammar" }

// recognize reports whether input is in the grammar's language. When it is not, stop
// is the length of the longest prefix that some sentence of the language starts with.
// budget caps the items created; beyond it the error is earleyBudgetError.
func (c *cfg) recognize(input []rune, budget int) (ok bool, stop int, err error) {
	n := len(input)
	sets := make([][]earleyItem, n+1)
	// seen[i] holds set i's items packed in one word (production, dot, origin), the
	// fastest key a Go map has.
	seen := make([]map[uint64]struct{}, n+1)
	// waiting[i][A] lists the items of set i whose next symbol is nonterminal A.
	waiting := make([]map[int32][]earleyItem, n+1)
	items := 0
	add := func(i int, it earleyItem) {
		if seen[i] == nil {
			seen[i] = map[uint64]struct{}{}
			waiting[i] = map[int32][]earleyItem{}
		}
		key := uint64(it.prod)<<40 | uint64(it.dot)<<24 | uint64(uint32(it.origin))
		if _, dup := seen[i][key]; dup {
			return
		}
		seen[i][key] = struct{}{}
		sets[i] = append(sets[i], it)
		items++
		if syms := c.prods[it.prod]; int(it.dot) < len(syms) && syms[it.dot] >= 0 {
			a := int32(syms[it.dot])
			waiting[i][a] = append(waiting[i][a], it)
		}
	}
	for _, p := range c.byNT[c.start] {
		add(0, earleyItem{int32(p), 0, 0})
	}
	for i := 0; i <= n; i++ {
		if len(sets[i]) == 0 {
			break
		}
		stop = i
		for k := 0; k < len(sets[i]); k++ {
			if items > budget {
				return false, stop, earleyBudgetError{}
			}
			it := sets[i][k]
			syms := c.prods[it.prod]
			if int(it.dot) == len(syms) {
				a := int32(c.lhs[it.prod])
				for _, w := range waiting[it.origin][a] {
					add(i, earleyItem{w.prod, w.dot + 1, w.origin})
				}
				continue
			}
			sym := syms[it.dot]
			if sym >= 0 {
				for _, p := range c.byNT[sym] {
					add(i, earleyItem{int32(p), 0, int32(i)})
				}
				if c.nullable[sym] {
					add(i, earleyItem{it.prod, it.dot + 1, it.origin})
				}
				continue
			}
			if i < n && c.matches(sym, input[i]) {
				add(i+1, earleyItem{it.prod, it.dot + 1, it.origin})
			}
		}
		// Set i is done: only its items and waiting lists are read from now on.
		seen[i] = nil
	}
	for _, it := range sets[n] {
		if c.lhs[it.prod] == c.start && it.origin == 0 && int(it.dot) == len(c.prods[it.prod]) {
			return true, n, nil
		}
	}
	return false, stop, nil
}
