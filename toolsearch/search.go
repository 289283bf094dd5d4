package toolsearch

import (
	"math"
	"slices"
	"strings"
	"unicode"

	"hearth"
)

// MaxResults is how many tools one search loads at most.
const MaxResults = 5

// BM25's parameters, the usual ones: k1 how fast a word's repeats stop counting, b
// how much a long description is discounted.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// document is one deferred tool as the search sees it: its name's words (twice: a
// name says more than a description), its namespace's name and description, and
// its own description.
type document struct {
	key  toolKey
	ns   *hearth.Tool // the namespace of a namespace's function
	tool hearth.Tool
	// words are the document's words, lowercase.
	words []string
}

// deferredDocuments lists the deferred tools of tools, in their order.
func deferredDocuments(tools []hearth.Tool) []document {
	var docs []document
	for i := range tools {
		t := &tools[i]
		switch t.Type {
		case hearth.ToolFunction, hearth.ToolCustom:
			if t.DeferLoading {
				docs = append(docs, document{key: toolKey{"", t.Name}, tool: *t,
					words: slices.Concat(words(t.Name), words(t.Name), words(t.Description))})
			}
		case hearth.ToolNamespace:
			for _, c := range t.Tools {
				if c.DeferLoading {
					docs = append(docs, document{key: toolKey{t.Name, c.Name}, ns: t, tool: c,
						words: slices.Concat(words(c.Name), words(c.Name), words(t.Name), words(t.Description), words(c.Description))})
				}
			}
		}
	}
	return docs
}

// stopWords are English words too common to tell tools apart: a query's "a" or
// "the" would otherwise load every tool whose description has one.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "in": true, "on": true, "to": true, "for": true,
	"and": true, "or": true, "with": true, "by": true, "at": true, "from": true, "is": true, "are": true,
	"be": true, "it": true, "its": true, "this": true, "that": true, "as": true,
}

// words splits text into lowercase words: runs of letters and digits, with
// snake_case, kebab-case, dotted and camelCase names split into their parts, less
// the stop words.
func words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			if w := strings.ToLower(string(cur)); !stopWords[w] {
				out = append(out, w)
			}
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && unicode.IsLower(prev) {
				flush()
			}
			cur = append(cur, r)
		default:
			flush()
		}
		prev = r
	}
	flush()
	return out
}

// search returns the deferred tools that match query best, at most max of them: a
// tool or namespace named exactly by the query first (a namespace's name loads all
// of its deferred functions), then by BM25 score over the documents' words, ties in
// the request's order; tools that share no word with the query are never loaded.
// A namespace's functions come back inside their namespace tool, which keeps its
// name and description.
func search(docs []document, query string, max int) []hearth.Tool {
	type hit struct {
		doc   int
		score float64
	}
	var hits []hit
	q := strings.TrimSpace(query)
	exact := map[int]bool{}
	for i, d := range docs {
		if q != "" && (q == d.key.name || q == d.key.namespace || q == d.key.namespace+"."+d.key.name) {
			exact[i] = true
			hits = append(hits, hit{i, math.Inf(1)})
		}
	}
	terms := words(q)
	if len(terms) > 0 && len(docs) > 0 {
		avg := 0.0
		df := map[string]int{}
		for _, d := range docs {
			avg += float64(len(d.words))
			seen := map[string]bool{}
			for _, w := range d.words {
				if !seen[w] {
					seen[w] = true
					df[w]++
				}
			}
		}
		avg /= float64(len(docs))
		n := float64(len(docs))
		for i, d := range docs {
			if exact[i] {
				continue
			}
			tf := map[string]int{}
			for _, w := range d.words {
				tf[w]++
			}
			score := 0.0
			for _, t := range slices.Compact(slices.Sorted(slices.Values(terms))) {
				f := float64(tf[t])
				if f == 0 {
					continue
				}
				idf := math.Log((n-float64(df[t])+0.5)/(float64(df[t])+0.5) + 1)
				score += idf * f * (bm25K1 + 1) / (f + bm25K1*(1-bm25B+bm25B*float64(len(d.words))/avg))
			}
			if score > 0 {
				hits = append(hits, hit{i, score})
			}
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return a.doc - b.doc
	})
	if len(hits) > max {
		hits = hits[:max]
	}
	// The found tools, a namespace's functions gathered in their namespace at the
	// place of its best.
	var out []hearth.Tool
	nsAt := map[string]int{}
	for _, h := range hits {
		d := docs[h.doc]
		if d.ns == nil {
			out = append(out, d.tool)
			continue
		}
		if i, ok := nsAt[d.ns.Name]; ok {
			out[i].Tools = append(out[i].Tools, d.tool)
			continue
		}
		ns := hearth.Tool{Type: hearth.ToolNamespace, Name: d.ns.Name, Description: d.ns.Description, Tools: []hearth.Tool{d.tool}}
		nsAt[ns.Name] = len(out)
		out = append(out, ns)
	}
	return out
}

// describe is the search function's description: what it does, and each searchable
// tool's name with the first line of its description (a namespace's functions under
// the namespace's name and description), which is all the model sees of a deferred
// tool before it loads it.
func describe(docs []document) string {
	var sb strings.Builder
	sb.WriteString(descriptionHead)
	listed := map[string]bool{}
	for _, d := range docs {
		if d.ns != nil {
			if listed[d.ns.Name] {
				continue
			}
			listed[d.ns.Name] = true
			sb.WriteString("\n- " + d.ns.Name + " (namespace)")
			if s := firstLine(d.ns.Description); s != "" {
				sb.WriteString(": " + s)
			}
			continue
		}
		sb.WriteString("\n- " + d.tool.Name)
		if s := firstLine(d.tool.Description); s != "" {
			sb.WriteString(": " + s)
		}
	}
	return sb.String()
}

// descriptionCap is how many characters of a deferred tool's description its listing
// keeps: a listing is a reminder of what can be searched, not the tool's manual.
const descriptionCap = 120

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if r := []rune(s); len(r) > descriptionCap {
		s = strings.TrimSpace(string(r[:descriptionCap])) + "..."
	}
	return s
}
