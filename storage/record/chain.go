package record

import (
	"fmt"

	"hearth/storage"
)

// Link is one row of a store's chain query: a link of the chain with its packs and, for
// the link the walk ended at, its checkpoint.
type Link struct {
	storage.Link
	HasParent  bool
	Packs      [2][]byte // input, output (nil while the response is in flight)
	Checkpoint []byte    // the materialised context up to and including this link
	Stamp      []byte    // the checkpoint's stamp; nil when it has none (or is none)
	seen       bool
}

// Rows are the rows of a chain query, by depth, not yet assembled into a chain. A
// store's query walks from the response asked for (depth 0) up to the root or the
// nearest checkpoint, in whatever row order its database returns them.
type Rows struct {
	Request []byte // the request of the response asked for
	links   []Link
	total   int // a rough item count, for one allocation
}

// Put sets the link at depth.
func (r *Rows) Put(depth int, l Link) {
	for len(r.links) <= depth {
		r.links = append(r.links, Link{})
	}
	l.seen = true
	r.links[depth] = l
	r.total += (len(l.Packs[0]) + len(l.Packs[1])) / 256
}

// Done checks the rows once all are in: storage.ErrNotFound when there were none, an
// error when a depth is missing.
func (r *Rows) Done() error {
	if len(r.links) == 0 {
		return storage.ErrNotFound
	}
	for d, l := range r.links {
		if !l.seen {
			return fmt.Errorf("chain query returned no link at depth %d", d)
		}
	}
	return nil
}

// Deepest is the link the walk ended at (the root or a checkpoint, or the link below
// a missing ancestor); nil when there are no rows. A store that reads the checkpoint
// only on demand sets its Checkpoint.
func (r *Rows) Deepest() *Link {
	if len(r.links) == 0 {
		return nil
	}
	return &r.links[len(r.links)-1]
}

// Assemble builds the chain from its rows. With omit, the deepest link is a stamped
// checkpoint the caller holds: the chain is the links after it.
func (r *Rows) Assemble(omit bool) (*storage.Chain, error) {
	c := storage.Chain{Request: r.Request}
	links := r.links
	// The deepest link found is a checkpoint or must be the root. If it still has a
	// parent, the walk stopped at a missing (deleted or foreign) ancestor: the chain is
	// broken.
	deepest := links[len(links)-1]
	var base *storage.Chain
	switch {
	case omit:
		c.Base = &storage.Checkpoint{ID: deepest.ID, Stamp: string(deepest.Stamp), Omitted: true}
		links = links[:len(links)-1]
	case deepest.Checkpoint != nil:
		var err error
		if base, err = DecodeChain(deepest.Checkpoint); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", deepest.ID, err)
		}
		if last := base.Last(); last.ID != deepest.ID {
			return nil, fmt.Errorf("checkpoint %s ends at %s", deepest.ID, last.ID)
		}
		c.Base = &storage.Checkpoint{ID: deepest.ID, Stamp: string(deepest.Stamp), Items: len(base.Items)}
		links = links[:len(links)-1] // the checkpoint holds the deepest link itself
	case deepest.HasParent:
		return nil, storage.ErrNotFound
	}

	// The context runs from the root (the deepest link) down to the response asked
	// for. Links' sub-slices are cut once all items are in: c.Items may move while it
	// grows.
	c.Items = make([]storage.Item, 0, r.total+16)
	var ends [][2]int // per link, where its input and its output end
	if base != nil {
		c.Items = append(base.Items, c.Items...) // grows from the checkpoint's array
		c.Links = base.Links
		at := 0
		for _, l := range base.Links {
			in := at + len(l.Input)
			at = in + len(l.Output)
			ends = append(ends, [2]int{in, at})
		}
	}
	var err error
	types := make(map[string]string) // item types repeat; keep one copy of each
	for d := len(links) - 1; d >= 0; d-- {
		l := links[d]
		if c.Items, err = UnpackItems(c.Items, l.Packs[0], types); err != nil {
			return nil, fmt.Errorf("response %s input: %w", l.ID, err)
		}
		in := len(c.Items)
		if l.Packs[1] != nil {
			if c.Items, err = UnpackItems(c.Items, l.Packs[1], types); err != nil {
				return nil, fmt.Errorf("response %s output: %w", l.ID, err)
			}
		}
		ends = append(ends, [2]int{in, len(c.Items)})
		c.Links = append(c.Links, l.Link)
	}
	cutLinks(&c, ends)
	return &c, nil
}
