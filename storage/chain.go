package storage

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
)

// maxChainDepth bounds the walk up a chain. Real chains end far sooner (a context window
// holds a few thousand turns at most); the bound only stops a cycle, which can only
// arise if a deleted response's id were reused by a descendant of it.
const maxChainDepth = 100_000

// LoadChain loads, in one query, the conversation behind previous_response_id = id:
// every response from the root of the chain down to id, each with its input items and
// then its output items, in order. The walk stops at a checkpoint, whose context is
// materialised (context.go), so a long chain costs at most checkpointEvery links.
//
// It returns ErrNotFound when id is unknown, deleted or another owner's, and also when
// any ancestor is: a chain with a missing link is broken (OpenAI answers not found when
// any link is missing) rather than silently shortened to the links that remain.
//
// Statuses are reported per link and not judged: whether an unfinished or failed
// response may be continued is the caller's decision.
func (db *DB) LoadChain(ctx context.Context, owner, id string) (*Chain, error) {
	c, err := db.loadChain(ctx, owner, id)
	if err != nil {
		return nil, db.seen(fmt.Errorf("storage: load chain of %s: %w", id, err))
	}
	return c, nil
}

type chainLink struct {
	Link
	seen       bool
	hasParent  bool
	packs      [2][]byte // input, output
	checkpoint []byte    // the materialised context up to and including this link
}

func (db *DB) loadChain(ctx context.Context, owner, id string) (*Chain, error) {
	// The chain query runs on the driver connection itself: its thousands of rows made
	// database/sql's per-row locking and Scan a sixth of the load. The driver keeps the
	// statement prepared per connection (_stmt_cache_size in the reader DSN).
	conn, err := db.r.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var c *Chain
	err = conn.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot query", dc)
		}
		rows, err := q.QueryContext(ctx, sqlLoadChain, []driver.NamedValue{
			{Ordinal: 1, Value: id}, {Ordinal: 2, Value: owner}, {Ordinal: 3, Value: int64(maxChainDepth)}})
		if err != nil {
			return err
		}
		defer rows.Close()
		c, err = readChain(rows)
		return err
	})
	return c, err
}

// readChain assembles a Chain from the rows of sqlLoadChain.
func readChain(rows driver.Rows) (*Chain, error) {
	var (
		c     Chain
		links []chainLink // by depth: links[0] is id itself
		vals  = make([]driver.Value, 8)
		types = make(map[string]string) // item types repeat; keep one copy of each
		total int
	)
	if n := len(rows.Columns()); n != len(vals) {
		return nil, fmt.Errorf("chain query has %d columns, want %d", n, len(vals))
	}
	for {
		if err := rows.Next(vals); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		depth, err := asInt(vals[0])
		if err != nil {
			return nil, err
		}
		if depth == -1 { // the request row
			c.Request = []byte(asString(vals[5]))
			continue
		}
		if depth < 0 || depth > maxChainDepth {
			return nil, fmt.Errorf("chain query returned depth %d", depth)
		}
		hasParent, err := asInt(vals[1])
		if err != nil {
			return nil, err
		}
		for len(links) <= int(depth) {
			links = append(links, chainLink{})
		}
		l := chainLink{seen: true, hasParent: hasParent != 0, Link: Link{
			ID: asString(vals[2]), Model: asString(vals[3]), Status: Status(asString(vals[4]))}}
		// The driver hands each BLOB over as a fresh copy, so items may point into it.
		for k, v := range vals[5:7] {
			if v == nil {
				if k == 0 {
					return nil, fmt.Errorf("response %s has no input pack", l.ID)
				}
				continue // in flight: no output yet
			}
			b, ok := v.([]byte)
			if !ok {
				return nil, fmt.Errorf("chain query: got %T for a pack, want a BLOB", v)
			}
			l.packs[k] = b
			total += len(b) / 256 // a rough item count, for one allocation
		}
		if v := vals[7]; v != nil {
			b, ok := v.([]byte)
			if !ok {
				return nil, fmt.Errorf("chain query: got %T for a checkpoint, want a BLOB", v)
			}
			l.checkpoint = b
		}
		links[depth] = l
	}
	if len(links) == 0 {
		return nil, ErrNotFound
	}
	for d, l := range links {
		if !l.seen {
			return nil, fmt.Errorf("chain query returned no link at depth %d", d)
		}
	}
	// The deepest link found is a checkpoint or must be the root. If it still has a
	// parent, the walk stopped at a missing (deleted or foreign) ancestor: the chain is
	// broken.
	deepest := links[len(links)-1]
	var base *Chain
	if deepest.checkpoint != nil {
		var err error
		if base, err = decodeChain(deepest.checkpoint); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", deepest.ID, err)
		}
		if last := base.Last(); last.ID != deepest.ID {
			return nil, fmt.Errorf("checkpoint %s ends at %s", deepest.ID, last.ID)
		}
		links = links[:len(links)-1] // the checkpoint holds the deepest link itself
	} else if deepest.hasParent {
		return nil, ErrNotFound
	}

	// The context runs from the root (the deepest link) down to id. Links' sub-slices
	// are cut once all items are in: c.Items may move while it grows.
	c.Items = make([]Item, 0, total+16)
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
	for d := len(links) - 1; d >= 0; d-- {
		l := links[d]
		if c.Items, err = unpackItems(c.Items, l.packs[0], types); err != nil {
			return nil, fmt.Errorf("response %s input: %w", l.ID, err)
		}
		in := len(c.Items)
		if l.packs[1] != nil {
			if c.Items, err = unpackItems(c.Items, l.packs[1], types); err != nil {
				return nil, fmt.Errorf("response %s output: %w", l.ID, err)
			}
		}
		ends = append(ends, [2]int{in, len(c.Items)})
		c.Links = append(c.Links, l.Link)
	}
	c.cutLinks(ends)
	return &c, nil
}

// cutLinks points each link's Input and Output into c.Items, once it is complete (it
// may move while it grows): ends[i] is where link i's input and its output end.
func (c *Chain) cutLinks(ends [][2]int) {
	at := 0
	for i, e := range ends {
		c.Links[i].Input = c.Items[at:e[0]:e[0]]
		c.Links[i].Output = c.Items[e[0]:e[1]:e[1]]
		at = e[1]
	}
}

func asInt(v any) (int64, error) {
	if i, ok := v.(int64); ok {
		return i, nil
	}
	return 0, fmt.Errorf("chain query: got %T, want an integer", v)
}

// asString accepts what the driver returns for TEXT; JSON columns are TEXT, but a
// BLOB written by another tool reads back as []byte.
func asString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}
