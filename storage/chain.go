package storage

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"sort"
)

// maxChainDepth bounds the walk up a chain. Real chains end far sooner (a context window
// holds a few thousand turns at most); the bound only stops a cycle, which can only
// arise if a deleted response's id were reused by a descendant of it.
const maxChainDepth = 100_000

// LoadChain loads, in one query, the conversation behind previous_response_id = id:
// every response from the root of the chain down to id, each with its input items and
// then its output items, in order.
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
		return nil, fmt.Errorf("storage: load chain of %s: %w", id, err)
	}
	return c, nil
}

// chainItem is an item as the chain query returns it, before it is put in place.
type chainItem struct {
	depth    int
	output   bool
	position int64
	item     Item
}

func (a chainItem) before(b chainItem) bool {
	if a.depth != b.depth {
		return a.depth < b.depth
	}
	if a.output != b.output {
		return !a.output
	}
	return a.position < b.position
}

type chainLink struct {
	Link
	seen      bool
	hasParent bool
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
		c      Chain
		links  []chainLink // by depth: links[0] is id itself
		items  []chainItem
		sorted = true
		arena  arena
		types  = make(map[string]string) // item types repeat; keep one copy of each

		vals = make([]driver.Value, 6)
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
		switch {
		case depth == -1: // the request row
			c.Request = arena.copyString(asString(vals[5]))
		case vals[1] == nil: // a link row
			hasParent, err := asInt(vals[2])
			if err != nil {
				return nil, err
			}
			for len(links) <= int(depth) {
				links = append(links, chainLink{})
			}
			links[depth] = chainLink{seen: true, hasParent: hasParent != 0, Link: Link{
				ID: asString(vals[3]), Model: asString(vals[4]), Status: Status(asString(vals[5]))}}
		default: // an item row
			output, err := asInt(vals[1])
			if err != nil {
				return nil, err
			}
			pos, err := asInt(vals[2])
			if err != nil {
				return nil, err
			}
			typ := asString(vals[4])
			t, ok := types[typ]
			if !ok {
				types[typ], t = typ, typ
			}
			it := chainItem{depth: int(depth), output: output != 0, position: pos,
				item: Item{ID: asString(vals[3]), Type: t, JSON: arena.copyString(asString(vals[5]))}}
			if n := len(items); n > 0 && !items[n-1].before(it) {
				sorted = false
			}
			if items == nil {
				// Link rows come first, so their number is known here; turns mostly
				// have about three items (input, reasoning, message or call).
				items = make([]chainItem, 0, 3*len(links)+16)
			}
			items = append(items, it)
		}
	}
	if len(links) == 0 {
		return nil, ErrNotFound
	}
	for d, l := range links {
		if !l.seen {
			return nil, fmt.Errorf("chain query returned no link at depth %d", d)
		}
	}
	// The deepest link found must be the root. If it still has a parent, the walk
	// stopped at a missing (deleted or foreign) ancestor: the chain is broken.
	if links[len(links)-1].hasParent {
		return nil, ErrNotFound
	}
	if !sorted {
		sort.SliceStable(items, func(i, j int) bool { return items[i].before(items[j]) })
	}
	if n := len(items); n > 0 && (items[0].depth < 0 || items[n-1].depth >= len(links)) {
		return nil, fmt.Errorf("chain query returned an item outside the chain")
	}

	// items run from depth 0 (id) up to the root; the context runs from the root down.
	// Walk the depth groups from the end and lay them out root first.
	c.Items = make([]Item, len(items))
	c.Links = make([]Link, len(links))
	at, end := 0, len(items)
	for d := len(links) - 1; d >= 0; d-- {
		start, outputAt := end, end
		for start > 0 && items[start-1].depth == d {
			start--
			if items[start].output {
				outputAt = start
			}
		}
		l := links[d].Link
		for i := start; i < end; i++ {
			c.Items[at+i-start] = items[i].item
		}
		in, out := at+outputAt-start, at+end-start
		l.Input = c.Items[at:in:in]
		l.Output = c.Items[in:out:out]
		c.Links[len(links)-1-d] = l
		at, end = out, start
	}
	return &c, nil
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

// arena hands out copies of item JSON from large shared blocks: a long chain has
// thousands of items, and this saves an allocation (and GC work) per item. The blocks
// live as long as any item cut from them, which is as long as the Chain.
type arena struct{ buf []byte }

const arenaBlock = 64 << 10

func (a *arena) copyString(s string) []byte {
	if len(s) > cap(a.buf)-len(a.buf) {
		if len(s) > arenaBlock/4 {
			return []byte(s) // big ones alone, so blocks are not wasted
		}
		a.buf = make([]byte, 0, arenaBlock)
	}
	start := len(a.buf)
	a.buf = append(a.buf, s...)
	return a.buf[start:len(a.buf):len(a.buf)]
}
