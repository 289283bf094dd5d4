package hearth

import (
	"encoding/json"
	"slices"
	"strings"
)

// SearchCall is the life of an item that reports a search hearth runs itself, as
// OpenAI streams its search calls: output_item.added, the in_progress event, the
// searching event once the query is known, then the completed event (or none, for a
// search that could not run: the item fails) and output_item.done. A kind whose tool
// searches declares one for its item type and makes its Builder functions of it. F is
// the item's own fields (Item.Hosted), R a result the response's answer may cite.
type SearchCall[F interface {
	comparable
	HostedData
}, R any] struct {
	// Type is the item type, Prefix the id prefix of the items hearth makes.
	Type, Prefix string
	// The item's events.
	EventInProgress, EventSearching, EventCompleted string
	// New returns the fields of an item that has found nothing yet.
	New func() F
	// Cite finds where output text cites what the response's searches found: the
	// annotations of a finished output_text part. CiteOrder places them among other
	// kinds' on one part (Citer).
	Cite      func(text string, found []R) []Annotation
	CiteOrder int
}

// Of returns an item's fields (the zero F for an item of another kind).
func (s *SearchCall[F, R]) Of(it Item) F {
	f, _ := it.Hosted.(F)
	return f
}

// Start completes the open item, if any, and starts a search call with a new id:
// output_item.added, then the in_progress event. The model's arguments
// (Builder.ArgumentsDelta) are kept out of the item, which reports the query in its
// fields once Searching has it.
func (s *SearchCall[F, R]) Start(b *Builder) error { return s.start(b, NewID(s.Prefix)) }

func (s *SearchCall[F, R]) start(b *Builder, id string) error {
	if err := b.OpenItem(Item{Type: s.Type, ID: id, Hosted: s.New()}); err != nil {
		return err
	}
	b.ItemEvent(Event{Type: s.EventInProgress})
	return nil
}

// Searching has set give the open search call its query, and reports it searching:
// the search runs next.
func (s *SearchCall[F, R]) Searching(b *Builder, set func(F)) error {
	it, f, err := s.open(b)
	if err != nil {
		return err
	}
	set(f)
	it.Status = "searching"
	b.ItemEvent(Event{Type: s.EventSearching})
	return nil
}

// End ends the open search call: completed, then the completed event and
// output_item.done; or failed (the search did not run), with no completed event. set
// gives the item what it reports of the results (nil: nothing), output is what the
// model reads of the search (the item's Output, not on the wire, for the response's
// later turns), and cite are results the response's output text may cite from now on.
func (s *SearchCall[F, R]) End(b *Builder, output string, set func(F), cite []R, failed bool) error {
	it, f, err := s.open(b)
	if err != nil {
		return err
	}
	it.Output = ToolOutput{Text: output}
	if set != nil {
		set(f)
	}
	c := b.KindState(citerKey{s.Type}, func() any { return &citer[R]{cite: s.Cite, order: s.CiteOrder} }).(*citer[R])
	c.found = append(c.found, cite...)
	if len(c.found) > 0 {
		b.AddCiter(c)
	}
	return b.EndCall(s.EventCompleted, failed)
}

// open returns the open search call and its fields, giving it some first.
func (s *SearchCall[F, R]) open(b *Builder) (*Item, F, error) {
	var zero F
	it, err := b.Open(s.Type)
	if err != nil {
		return nil, zero, err
	}
	f := s.Of(*it)
	if f == zero {
		f = s.New()
		it.Hosted = f
	}
	return it, f, nil
}

// Reemit reports a stored search call as the live stream did: added, in_progress,
// searching, completed (for a completed one), done, with its stored id and fields.
func (s *SearchCall[F, R]) Reemit(b *Builder, stored Item) error {
	if err := s.start(b, stored.ID); err != nil {
		return err
	}
	cur, err := b.Open(s.Type)
	if err != nil {
		return err
	}
	var zero F
	if f := s.Of(stored); f != zero {
		cur.Hosted = f.CloneHosted()
	}
	if stored.Status == StatusIncomplete {
		return b.CloseItem(StatusIncomplete)
	}
	b.ItemEvent(Event{Type: s.EventSearching})
	return b.EndCall(s.EventCompleted, stored.Status == StatusFailed)
}

// AsCalls renders the search calls of items in function-call terms, the shape every
// template knows: a call of name, with the model's arguments (or {"query": ...} made
// of the query of a stored item, the argument every search function takes), and its
// output: the text the model read, for an item of this response; for a stored one (a
// later response of the chain) that it failed, or what stored says of its fields.
// query reports an item's query, and false for an item that shows nothing.
func (s *SearchCall[F, R]) AsCalls(name string, items []Item, query func(F) (string, bool), stored func(F) string) []Item {
	if !slices.ContainsFunc(items, func(it Item) bool { return it.Type == s.Type }) {
		return items
	}
	out := make([]Item, 0, len(items)+1)
	for _, it := range items {
		if it.Type != s.Type {
			out = append(out, it)
			continue
		}
		f := s.Of(it)
		q, shows := query(f)
		if !shows {
			continue
		}
		args := it.Arguments
		if args == "" {
			a, _ := json.Marshal(map[string]string{"query": q})
			args = string(a)
		}
		text := it.Output.Text
		switch {
		case text != "":
		case it.Status == StatusFailed:
			text = "Error: the search failed."
		default:
			text = stored(f)
		}
		out = append(out, AsCall(it.ID, name, args, text)...)
	}
	return out
}

// citer annotates a response's output text with what one item type's searches found.
type citer[R any] struct {
	found []R
	cite  func(string, []R) []Annotation
	order int
}

type citerKey struct{ itemType string }

func (c *citer[R]) Cite(text string) []Annotation { return c.cite(text, c.found) }
func (c *citer[R]) CiteOrder() int                { return c.order }

// SearchQuery is the query of a search function's arguments ({"query": ...}); ok is
// false where there is none to search for (arguments that do not read, a blank
// query).
func SearchQuery(arguments string) (query string, ok bool) {
	var args struct {
		Query string `json:"query"`
	}
	err := json.Unmarshal([]byte(arguments), &args)
	return args.Query, err == nil && strings.TrimSpace(args.Query) != ""
}

// Shown is what a search call's item reports of what it found: all of it when the
// request included it (an empty list for nothing), else nothing (nil).
func Shown[R any](included bool, found []R) []R {
	if !included {
		return nil
	}
	if found == nil {
		return []R{}
	}
	return found
}
