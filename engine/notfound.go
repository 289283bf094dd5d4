package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"hearth"
)

// ModelCatalog is what a runtime can tell of the models it has, so that a
// model_not_found says what to do: the names nearest the one asked for, where hearth
// looked, and how to get the model. A runtime without it answers the plain refusal.
type ModelCatalog interface {
	// ModelNames are the names of the models the runtimes have.
	ModelNames(ctx context.Context) []string
	// ModelPlaces are where the runtimes keep their models, one per runtime.
	ModelPlaces() []ModelPlace
}

// ModelPlace is one runtime's store of models.
type ModelPlace struct {
	// Runtime is the runtime's label (responses name it): "embedded", or host:port.
	Runtime string
	// Embedded: the runtime runs inside hearth and reads Dir.
	Embedded bool
	// Dir is the models directory of an embedded runtime. It names a path of this
	// machine, so only the log shows it, not the client.
	Dir string
}

// client is the place as a client may read it.
func (p ModelPlace) client() string {
	if p.Embedded {
		return "the embedded runtime's models directory"
	}
	return "the Ollama runtime at " + p.Runtime
}

// log is the place as the operator's log shows it.
func (p ModelPlace) log() string {
	if p.Embedded && p.Dir != "" {
		return "models directory " + p.Dir + " (embedded runtime)"
	}
	return p.client()
}

// catalogWait bounds the model listing a model_not_found makes: the refusal must not
// wait on a runtime that does not answer.
const catalogWait = 2 * time.Second

// catalogKeep is how long the names a listing gave serve model_not_found answers: a
// stream of made-up names costs one listing per interval, not one per request.
const catalogKeep = 5 * time.Second

// catalogNames keeps the runtime's latest listing of model names.
type catalogNames struct {
	mu      sync.Mutex
	names   []string
	fetched time.Time
}

func (n *catalogNames) get(ctx context.Context, c ModelCatalog) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fetched.IsZero() || time.Since(n.fetched) >= catalogKeep {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), catalogWait)
		defer cancel()
		n.names, n.fetched = c.ModelNames(ctx), time.Now()
	}
	return n.names
}

// explain adds to he, the model_not_found of name, what the runtime's catalog says:
// the nearest names it has, where it looked and the command that gets the model. It
// returns the places as the log shows them.
func (n *catalogNames) explain(ctx context.Context, rt Runtime, name string, he *hearth.Error) []string {
	c, ok := rt.(ModelCatalog)
	if !ok {
		return nil
	}
	var b strings.Builder
	if near := NearestNames(name, n.get(ctx, c)); len(near) > 0 {
		quoted := make([]string, len(near))
		for i, n := range near {
			quoted[i] = "'" + n + "'"
		}
		list := quoted[len(quoted)-1]
		if len(quoted) > 1 {
			list = strings.Join(quoted[:len(quoted)-1], ", ") + " or " + list
		}
		fmt.Fprintf(&b, " Did you mean %s?", list)
	}
	places := c.ModelPlaces()
	var shown, logged []string
	embedded, external := false, []string{}
	for _, p := range places {
		shown = append(shown, p.client())
		logged = append(logged, p.log())
		if p.Embedded {
			embedded = true
		} else {
			external = append(external, p.Runtime)
		}
	}
	if len(shown) > 0 {
		fmt.Fprintf(&b, " hearth looked in %s.", strings.Join(shown, " and in "))
	}
	// The commands that fetch it: through hearth into its embedded runtime, or with
	// ollama on the host of an external one.
	switch {
	case embedded && len(external) > 0:
		fmt.Fprintf(&b, " To get it: hearth pull %s (or ollama pull %s on the host of %s).", name, name, strings.Join(external, ", "))
	case embedded:
		fmt.Fprintf(&b, " To get it: hearth pull %s.", name)
	case len(external) > 0:
		fmt.Fprintf(&b, " To get it: ollama pull %s on the host of %s (or hearth pull %s).", name, strings.Join(external, ", "), name)
	}
	he.Message = insertAfterFirstSentence(he.Message, b.String())
	return logged
}

// insertAfterFirstSentence puts more after the first sentence of msg (the refusal
// itself), before the advice that follows it.
func insertAfterFirstSentence(msg, more string) string {
	if more == "" {
		return msg
	}
	i := strings.Index(msg, ". ")
	if i < 0 {
		return msg + more
	}
	return msg[:i+1] + more + msg[i+1:]
}

// NearestNames are up to three of names nearest name by edit distance (adjacent
// letters swapped count as one edit; case and a ":latest" tag are ignored): those at
// the smallest distance found, if it is within a sixth of the name's length or two
// edits, whichever is more.
func NearestNames(name string, names []string) []string {
	key := normName(name)
	limit := max(2, len([]rune(key))/6)
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || strings.EqualFold(n, name) {
			continue
		}
		seen[n] = true
		if d := editDistance(key, normName(n)); d <= limit {
			cs = append(cs, cand{n, d})
		}
	}
	slices.SortFunc(cs, func(a, b cand) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]string, 0, 3)
	for _, c := range cs[:min(3, len(cs))] {
		// Only the nearest: a name one edit away makes those three away noise.
		if c.d > cs[0].d {
			break
		}
		out = append(out, c.name)
	}
	return out
}

func normName(n string) string {
	return strings.TrimSuffix(strings.ToLower(n), ":latest")
}

// editDistance is the optimal string alignment distance of a and b, in runes:
// insertions, deletions, substitutions and swaps of adjacent runes, one edit each.
// Names longer than 256 runes are not compared (a client may send any length).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 256 || len(rb) > 256 {
		return max(len(ra), len(rb))
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
