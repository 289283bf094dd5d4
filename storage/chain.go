package storage

import (
	"context"
	"database/sql"
	"fmt"
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

func (db *DB) loadChain(ctx context.Context, owner, id string) (*Chain, error) {
	rows, err := db.st.loadChain.QueryContext(ctx, id, owner, maxChainDepth)
	if err != nil {
		return nil, err
	}
	defer rows.Close()

	var (
		c        Chain
		arena    arena
		types    = make(map[string]string) // item types repeat; keep one copy of each
		depth    = -1
		linkAt   int // index in c.Items where the current link starts
		outputAt int // index in c.Items where its output starts, -1 before any

		d                         int
		linkID, prev, model, stat sql.RawBytes
		request                   sql.RawBytes
		kind, itemID, typ, body   sql.RawBytes
	)
	closeLink := func() {
		l := &c.Links[len(c.Links)-1]
		end := len(c.Items)
		if outputAt < 0 {
			outputAt = end
		}
		l.Input = c.Items[linkAt:outputAt:outputAt]
		l.Output = c.Items[outputAt:end:end]
	}
	for rows.Next() {
		if err := rows.Scan(&d, &linkID, &prev, &model, &stat, &request, &kind, &itemID, &typ, &body); err != nil {
			return nil, err
		}
		if d != depth {
			if depth == -1 {
				// The topmost link found must be the root. If it still points somewhere,
				// the walk stopped at a missing (deleted or foreign) ancestor.
				if prev != nil {
					return nil, ErrNotFound
				}
				c.Links = make([]Link, 0, d+1)
				c.Items = make([]Item, 0, 3*(d+1))
			} else {
				closeLink()
			}
			depth = d
			c.Links = append(c.Links, Link{
				ID:     string(linkID),
				Model:  string(model),
				Status: Status(stat),
			})
			linkAt, outputAt = len(c.Items), -1
		}
		if request != nil {
			c.Request = arena.copy(request)
		}
		if kind == nil {
			continue // LEFT JOIN: a link without items
		}
		if outputAt < 0 && string(kind) == "output" {
			outputAt = len(c.Items)
		}
		t, ok := types[string(typ)]
		if !ok {
			t = string(typ)
			types[t] = t
		}
		c.Items = append(c.Items, Item{ID: string(itemID), Type: t, JSON: arena.copy(body)})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if depth == -1 {
		return nil, ErrNotFound
	}
	closeLink()
	return &c, nil
}

// arena hands out copies of scanned bytes from large shared blocks: a long chain has
// thousands of items, and one allocation per item JSON dominated the load time.
type arena struct{ buf []byte }

const arenaBlock = 64 << 10

func (a *arena) copy(b []byte) []byte {
	if len(b) > cap(a.buf)-len(a.buf) {
		if len(b) > arenaBlock/4 {
			return append([]byte(nil), b...) // big ones alone, so blocks are not wasted
		}
		a.buf = make([]byte, 0, arenaBlock)
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return a.buf[start:len(a.buf):len(a.buf)]
}
