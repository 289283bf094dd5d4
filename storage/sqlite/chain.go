package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"

	"hearth/storage"
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
func (db *DB) LoadChain(ctx context.Context, owner, id string) (*storage.Chain, error) {
	c, err := db.loadChain(ctx, owner, id)
	if err != nil {
		return nil, db.seen(fmt.Errorf("storage: load chain of %s: %w", id, err))
	}
	return c, nil
}

// LoadChainTail is LoadChain for a caller that keeps checkpoints decoded by their
// stamp (Checkpoint.Stamp): when the walk ends at a checkpoint whose stamp known
// reports, the checkpoint is not read, and the chain holds only the links after it
// (Base.Omitted). A 1,000-turn chain then loads as at most checkpointEvery links. When
// known reports false, the chain is whole, as from LoadChain, and Base says how many of
// its items the checkpoint gave, for the caller to keep under the stamp. known is
// called at most once per load, with the connection held: it must not call db.
func (db *DB) LoadChainTail(ctx context.Context, owner, id string, known func(stamp string) bool) (*storage.Chain, error) {
	c, err := db.loadChainTail(ctx, owner, id, known)
	if err != nil {
		return nil, db.seen(fmt.Errorf("storage: load chain of %s: %w", id, err))
	}
	return c, nil
}

type chainLink struct {
	storage.Link
	seen       bool
	hasParent  bool
	packs      [2][]byte // input, output
	checkpoint []byte    // the materialised context up to and including this link
	stamp      []byte    // the checkpoint's stamp; nil when it has none (or is none)
}

func (db *DB) loadChain(ctx context.Context, owner, id string) (*storage.Chain, error) {
	return db.loadChainTail(ctx, owner, id, nil)
}

func (db *DB) loadChainTail(ctx context.Context, owner, id string, known func(string) bool) (*storage.Chain, error) {
	// The chain query runs on the driver connection itself: its thousands of rows made
	// database/sql's per-row locking and Scan a sixth of the load. The driver keeps the
	// statement prepared per connection (_stmt_cache_size in the reader DSN).
	conn, err := db.r.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var c *storage.Chain
	err = conn.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("driver connection %T cannot query", dc)
		}
		// A checkpoint left out of the first query is read by a second, which finds
		// it gone if a write dropped it in between; the third try reads it in the
		// same query, as LoadChain does.
		for try := 0; ; try++ {
			withContext := known == nil || try == 2
			cr, err := queryChain(ctx, q, id, owner, withContext)
			if err != nil {
				return err
			}
			deepest := cr.deepest()
			if deepest == nil || deepest.checkpoint != nil || deepest.stamp == nil {
				c, err = cr.assemble(false)
				return err
			}
			if known(string(deepest.stamp)) {
				c, err = cr.assemble(true)
				return err
			}
			if deepest.checkpoint, err = stampedContext(ctx, q, deepest.ID, deepest.stamp); err != nil {
				return err
			}
			if deepest.checkpoint != nil {
				c, err = cr.assemble(false)
				return err
			}
		}
	})
	return c, err
}

// queryChain runs sqlLoadChain and reads its rows.
func queryChain(ctx context.Context, q driver.QueryerContext, id, owner string, withContext bool) (*chainRows, error) {
	rows, err := q.QueryContext(ctx, sqlLoadChain, []driver.NamedValue{
		{Ordinal: 1, Value: id}, {Ordinal: 2, Value: owner}, {Ordinal: 3, Value: int64(maxChainDepth)},
		{Ordinal: 4, Value: withContext}})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return readChainRows(rows)
}

// stampedContext reads checkpoint id's context if it still has stamp; nil if not.
func stampedContext(ctx context.Context, q driver.QueryerContext, id string, stamp []byte) ([]byte, error) {
	rows, err := q.QueryContext(ctx, sqlStampedContext, []driver.NamedValue{{Ordinal: 1, Value: id}, {Ordinal: 2, Value: stamp}})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	vals := make([]driver.Value, 1)
	if err := rows.Next(vals); err == io.EOF {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	b, ok := vals[0].([]byte)
	if !ok {
		return nil, fmt.Errorf("context query: got %T, want a BLOB", vals[0])
	}
	return b, nil
}

// chainRows are the rows of sqlLoadChain, not yet assembled.
type chainRows struct {
	links   []chainLink // by depth: links[0] is id itself
	request []byte
	total   int // a rough item count, for one allocation
}

// deepest is the link the walk ended at (the root or a checkpoint, or the link below
// a missing ancestor); nil when id was not found.
func (cr *chainRows) deepest() *chainLink {
	if len(cr.links) == 0 {
		return nil
	}
	return &cr.links[len(cr.links)-1]
}

// readChain assembles a Chain from the rows of sqlLoadChain, checkpoints read whole.
func readChain(rows driver.Rows) (*storage.Chain, error) {
	cr, err := readChainRows(rows)
	if err != nil {
		return nil, err
	}
	return cr.assemble(false)
}

func readChainRows(rows driver.Rows) (*chainRows, error) {
	var (
		cr   chainRows
		vals = make([]driver.Value, 9)
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
			cr.request = []byte(asString(vals[5]))
			continue
		}
		if depth < 0 || depth > maxChainDepth {
			return nil, fmt.Errorf("chain query returned depth %d", depth)
		}
		hasParent, err := asInt(vals[1])
		if err != nil {
			return nil, err
		}
		for len(cr.links) <= int(depth) {
			cr.links = append(cr.links, chainLink{})
		}
		l := chainLink{seen: true, hasParent: hasParent != 0, Link: storage.Link{
			ID: asString(vals[2]), Model: asString(vals[3]), Status: storage.Status(asString(vals[4]))}}
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
			cr.total += len(b) / 256
		}
		for k, v := range vals[7:9] {
			if v == nil {
				continue
			}
			b, ok := v.([]byte)
			if !ok {
				return nil, fmt.Errorf("chain query: got %T for a checkpoint, want a BLOB", v)
			}
			if k == 0 {
				l.checkpoint = b
			} else {
				l.stamp = b
			}
		}
		cr.links[depth] = l
	}
	if len(cr.links) == 0 {
		return nil, storage.ErrNotFound
	}
	for d, l := range cr.links {
		if !l.seen {
			return nil, fmt.Errorf("chain query returned no link at depth %d", d)
		}
	}
	return &cr, nil
}

// assemble builds the chain from its rows. With omit, the deepest link is a stamped
// checkpoint the caller holds: the chain is the links after it.
func (cr *chainRows) assemble(omit bool) (*storage.Chain, error) {
	c := storage.Chain{Request: cr.request}
	links := cr.links
	// The deepest link found is a checkpoint or must be the root. If it still has a
	// parent, the walk stopped at a missing (deleted or foreign) ancestor: the chain is
	// broken.
	deepest := links[len(links)-1]
	var base *storage.Chain
	switch {
	case omit:
		c.Base = &storage.Checkpoint{ID: deepest.ID, Stamp: string(deepest.stamp), Omitted: true}
		links = links[:len(links)-1]
	case deepest.checkpoint != nil:
		var err error
		if base, err = decodeChain(deepest.checkpoint); err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", deepest.ID, err)
		}
		if last := base.Last(); last.ID != deepest.ID {
			return nil, fmt.Errorf("checkpoint %s ends at %s", deepest.ID, last.ID)
		}
		c.Base = &storage.Checkpoint{ID: deepest.ID, Stamp: string(deepest.stamp), Items: len(base.Items)}
		links = links[:len(links)-1] // the checkpoint holds the deepest link itself
	case deepest.hasParent:
		return nil, storage.ErrNotFound
	}

	// The context runs from the root (the deepest link) down to id. Links' sub-slices
	// are cut once all items are in: c.Items may move while it grows.
	c.Items = make([]storage.Item, 0, cr.total+16)
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
	cutLinks(&c, ends)
	return &c, nil
}

// cutLinks points each of c's links' Input and Output into c.Items, once it is complete (it
// may move while it grows): ends[i] is where link i's input and its output end.
func cutLinks(c *storage.Chain, ends [][2]int) {
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
