package postgres

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"hearth/storage"
)

// The binary records below are storage/sqlite's, byte for byte (pack.go, context.go and
// journal.go there), so that a database copied from one store to the other keeps its
// packs, checkpoints and journals as they are.
//
// A pack is a response's input or output items in one bytea, so that a chain loads as
// one row per link: a version byte, the uvarint number of items, then per item the
// uvarint length and bytes of its id, its type and its JSON.
const packVersion = 1

func packItems(items []storage.Item) []byte {
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

// fieldReader reads uvarint-length-prefixed fields.
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

// unpackItems appends the items of pack to dst; item JSON points into pack, and types
// are interned through types.
func unpackItems(dst []storage.Item, pack []byte, types map[string]string) ([]storage.Item, error) {
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

// A context (checkpoint) is a version byte, then one record per link from the root
// down: the uvarint-length-prefixed id, model, status, input pack and output pack.
const contextVersion = 1

func encodeChain(c *storage.Chain) []byte {
	var b []byte
	for _, l := range c.Links {
		if len(b) == 0 {
			b = append(b, contextVersion)
		}
		for _, f := range [][]byte{[]byte(l.ID), []byte(l.Model), []byte(l.Status), packItems(l.Input), packItems(l.Output)} {
			b = binary.AppendUvarint(b, uint64(len(f)))
			b = append(b, f...)
		}
	}
	return b
}

func decodeChain(blob []byte) (*storage.Chain, error) {
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
		if c.Items, err = unpackItems(c.Items, f[3], types); err != nil {
			return nil, err
		}
		in := len(c.Items)
		if c.Items, err = unpackItems(c.Items, f[4], types); err != nil {
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

// cutLinks points each link's Input and Output into c.Items once it is complete:
// ends[i] is where link i's input and its output end.
func cutLinks(c *storage.Chain, ends [][2]int) {
	at := 0
	for i, e := range ends {
		c.Links[i].Input = c.Items[at:e[0]:e[0]]
		c.Links[i].Output = c.Items[e[0]:e[1]:e[1]]
		at = e[1]
	}
}

// packEvents lays out a batch of journal events, numbered from next without a gap: one
// line each, "<type> <JSON>\n".
func packEvents(events []storage.Event, next int) ([]byte, error) {
	size := 0
	for i, e := range events {
		if e.Seq != next+i {
			return nil, fmt.Errorf("event %d where %d comes next", e.Seq, next+i)
		}
		if e.Type == "" || strings.ContainsAny(e.Type, " \n") || bytes.IndexByte(e.Data, '\n') >= 0 {
			return nil, fmt.Errorf("event %d: a type or JSON with a space or line break cannot be journaled", e.Seq)
		}
		size += len(e.Type) + len(e.Data) + 2
	}
	data := make([]byte, 0, size)
	for _, e := range events {
		data = append(data, e.Type...)
		data = append(data, ' ')
		data = append(data, e.Data...)
		data = append(data, '\n')
	}
	return data, nil
}

// setFields sets top-level fields of the JSON object body, keeping the order of the
// others, for status changes made by the store alone (the SQLite store's json_set).
// A body that is not a JSON object is returned as it is.
func setFields(body []byte, fields ...field) []byte {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return body
	}
	var kept []field
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return body
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return body
		}
		kept = append(kept, field{key, v})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return body
	}
	if _, err := dec.Token(); err != io.EOF {
		return body // something after the object
	}
next:
	for _, f := range fields {
		for i := range kept {
			if kept[i].key == f.key {
				kept[i].value = f.value
				continue next
			}
		}
		kept = append(kept, f)
	}
	out := []byte{'{'}
	for i, f := range kept {
		if i > 0 {
			out = append(out, ',')
		}
		k, _ := json.Marshal(f.key)
		out = append(append(append(out, k...), ':'), f.value...)
	}
	return append(out, '}')
}

type field struct {
	key   string
	value json.RawMessage
}
