// Package record holds the binary records the SQL stores keep in their columns: item
// packs, checkpoints (materialised contexts) and journal batches. Every store writes
// them byte for byte alike, so that a database copied from one store to another keeps
// its packs, checkpoints and journals as they are; the layout is therefore written
// once, here, and a change to it is a change to every store's data.
//
// The package knows no database: stores hand it bytes read from their rows and put
// the bytes it returns into their statements.
package record

import (
	"encoding/binary"
	"errors"
	"fmt"

	"hearth/storage"
)

// A pack is a response's input or output items in one BLOB (bytea), so that a chain
// loads as one row per link. Layout: a version byte, the uvarint number of items, then
// per item the uvarint length and bytes of its id, its type and its JSON. The count
// makes a pack cut short at an item boundary fail instead of reading as fewer items.
// Binary rather than JSON: decoding it is slicing, with no parse of the item bodies.
const packVersion = 1

// PackItems lays out items as one pack.
func PackItems(items []storage.Item) []byte {
	n := 1
	for _, it := range items {
		n += 3*binary.MaxVarintLen32 + len(it.ID) + len(it.Type) + len(it.JSON)
	}
	b := make([]byte, 1, n+binary.MaxVarintLen32)
	b[0] = packVersion
	b = binary.AppendUvarint(b, uint64(len(items)))
	for _, it := range items {
		b = binary.AppendUvarint(b, uint64(len(it.ID)))
		b = append(b, it.ID...)
		b = binary.AppendUvarint(b, uint64(len(it.Type)))
		b = append(b, it.Type...)
		b = binary.AppendUvarint(b, uint64(len(it.JSON)))
		b = append(b, it.JSON...)
	}
	return b
}

var errBadPack = errors.New("corrupt item pack")

// fieldReader reads uvarint-length-prefixed fields; next cuts the next one off (capped,
// so appends to it cannot spill into what follows) and reports false when the length
// runs past the end.
type fieldReader []byte

func (r *fieldReader) next() ([]byte, bool) {
	p := *r
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return nil, false
	}
	f := p[k : k+int(n) : k+int(n)]
	*r = p[k+int(n):]
	return f, true
}

// UnpackItems appends the items of pack to dst. Item JSON is sliced out of pack (not
// copied), so pack must not be modified afterwards; types are interned through types,
// since a chain repeats a handful of them thousands of times.
func UnpackItems(dst []storage.Item, pack []byte, types map[string]string) ([]storage.Item, error) {
	if len(pack) == 0 || pack[0] != packVersion {
		return dst, fmt.Errorf("%w: version %v", errBadPack, pack[:min(len(pack), 1)])
	}
	count, k := binary.Uvarint(pack[1:])
	if k <= 0 || count > uint64(len(pack)) {
		return dst, errBadPack
	}
	r := fieldReader(pack[1+k:])
	for range count {
		id, ok1 := r.next()
		typ, ok2 := r.next()
		body, ok3 := r.next()
		if !ok1 || !ok2 || !ok3 {
			return dst, errBadPack
		}
		t, ok := types[string(typ)]
		if !ok {
			t = string(typ)
			types[t] = t
		}
		dst = append(dst, storage.Item{ID: string(id), Type: t, JSON: body})
	}
	if len(r) != 0 {
		return dst, fmt.Errorf("%w: %d bytes after the last item", errBadPack, len(r))
	}
	return dst, nil
}

// A checkpoint (context) is a chain materialised: a version byte, then one record per
// link from the root down, each the uvarint-length-prefixed id, model, status, input
// pack and output pack.
const contextVersion = 1

// EncodeChain materialises a chain as a checkpoint.
func EncodeChain(c *storage.Chain) []byte {
	var b []byte
	for _, l := range c.Links {
		if len(b) == 0 {
			b = append(b, contextVersion)
		}
		for _, f := range [][]byte{[]byte(l.ID), []byte(l.Model), []byte(l.Status), PackItems(l.Input), PackItems(l.Output)} {
			b = binary.AppendUvarint(b, uint64(len(f)))
			b = append(b, f...)
		}
	}
	return b
}

// DecodeChain is the inverse of EncodeChain: items point into blob.
func DecodeChain(blob []byte) (*storage.Chain, error) {
	if len(blob) == 0 || blob[0] != contextVersion {
		return nil, fmt.Errorf("%w: context version %v", errBadPack, blob[:min(len(blob), 1)])
	}
	r := fieldReader(blob[1:])
	var (
		c     storage.Chain
		ends  [][2]int
		types = make(map[string]string)
		err   error
	)
	c.Items = make([]storage.Item, 0, len(blob)/256+16)
	for len(r) > 0 {
		var f [5][]byte
		for i := range f {
			var ok bool
			if f[i], ok = r.next(); !ok {
				return nil, errBadPack
			}
		}
		c.Links = append(c.Links, storage.Link{ID: string(f[0]), Model: string(f[1]), Status: storage.Status(f[2])})
		if c.Items, err = UnpackItems(c.Items, f[3], types); err != nil {
			return nil, err
		}
		in := len(c.Items)
		if c.Items, err = UnpackItems(c.Items, f[4], types); err != nil {
			return nil, err
		}
		ends = append(ends, [2]int{in, len(c.Items)})
	}
	if len(c.Links) == 0 {
		return nil, fmt.Errorf("%w: context without links", errBadPack)
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
