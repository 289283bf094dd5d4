package sqlite

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"

	"hearth/storage"
	"hearth/storage/record"
	"hearth/storage/sqlstore"
)

// ChainTail loads on a driver connection of the read pool, its errors seen as the
// store's (corruption, a full disk).
func (b backend) ChainTail(ctx context.Context, owner, id string, known func(string) bool) (*storage.Chain, error) {
	c, err := b.db.loadChainTail(ctx, owner, id, known)
	return c, b.db.seen(err)
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
		c, err = sqlstore.LoadChainTail(ctx, driverChain{q}, owner, id, known)
		return err
	})
	return c, err
}

// driverChain reads a chain on a driver connection.
type driverChain struct{ q driver.QueryerContext }

func (d driverChain) ChainRows(ctx context.Context, owner, id string, withContext bool) (*record.Rows, error) {
	return queryChain(ctx, d.q, id, owner, withContext)
}

func (d driverChain) StampedCheckpoint(ctx context.Context, id string, stamp []byte) ([]byte, error) {
	return stampedContext(ctx, d.q, id, stamp)
}

// queryChain runs sqlLoadChain and reads its rows.
func queryChain(ctx context.Context, q driver.QueryerContext, id, owner string, withContext bool) (*record.Rows, error) {
	rows, err := q.QueryContext(ctx, sqlLoadChain, []driver.NamedValue{
		{Ordinal: 1, Value: id}, {Ordinal: 2, Value: owner}, {Ordinal: 3, Value: int64(sqlstore.MaxChainDepth)},
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

// readChain assembles a Chain from the rows of sqlLoadChain, checkpoints read whole.
func readChain(rows driver.Rows) (*storage.Chain, error) {
	cr, err := readChainRows(rows)
	if err != nil {
		return nil, err
	}
	return cr.Assemble(false)
}

func readChainRows(rows driver.Rows) (*record.Rows, error) {
	var (
		cr   record.Rows
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
			cr.Request = []byte(asString(vals[5]))
			continue
		}
		if depth < 0 || depth > sqlstore.MaxChainDepth {
			return nil, fmt.Errorf("chain query returned depth %d", depth)
		}
		hasParent, err := asInt(vals[1])
		if err != nil {
			return nil, err
		}
		l := record.Link{HasParent: hasParent != 0, Link: storage.Link{
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
			l.Packs[k] = b
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
				l.Checkpoint = b
			} else {
				l.Stamp = b
			}
		}
		cr.Put(int(depth), l)
	}
	if err := cr.Done(); err != nil {
		return nil, err
	}
	return &cr, nil
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
