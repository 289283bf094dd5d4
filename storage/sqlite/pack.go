package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"

	"hearth/storage"
)

// A pack is a response's input or output items in one BLOB, so that a chain loads as
// one row per link. Layout: a version byte, the uvarint number of items, then per item
// the uvarint length and bytes of its id, its type and its JSON. The count makes a pack
// cut short at an item boundary fail instead of reading as fewer items. Binary rather than JSON: decoding it is slicing,
// with no parse of the item bodies.
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

// unpackItems appends the items of pack to dst. Item JSON is sliced out of pack (not
// copied), so pack must not be modified afterwards; types are interned through types,
// since a chain repeats a handful of them thousands of times.
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

// backfillPacks packs the items of responses stored before migration 0003 (whose
// input_pack is NULL), in batches of one transaction each. It is idempotent, so a
// crash part-way resumes at the next start; on a database without such rows it is one
// indexed-nothing query.
func backfillPacks(ctx context.Context, w *sql.DB) error {
	const batch = 500
	for {
		n, err := backfillBatch(ctx, w, batch)
		if err != nil {
			return fmt.Errorf("storage: pack items of older responses: %w", err)
		}
		if n < batch {
			return nil
		}
	}
}

func backfillBatch(ctx context.Context, w *sql.DB, limit int) (int, error) {
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT id FROM responses WHERE input_pack IS NULL LIMIT ?`, limit)
	if err != nil {
		return 0, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, id := range ids {
		var packs [2][]byte
		for k, kind := range []string{"input", "output"} {
			items, err := queryItems(ctx, tx, id, kind)
			if err != nil {
				return 0, err
			}
			packs[k] = packItems(items)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE responses SET input_pack = ?, output_pack = ? WHERE id = ?`,
			packs[0], packs[1], id); err != nil {
			return 0, err
		}
	}
	return len(ids), tx.Commit()
}

func queryItems(ctx context.Context, tx *sql.Tx, id, kind string) ([]storage.Item, error) {
	rows, err := tx.QueryContext(ctx,
		`SELECT item_id, type, body FROM items WHERE response_id = ? AND kind = ? ORDER BY position`, id, kind)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var items []storage.Item
	for rows.Next() {
		var it storage.Item
		var body string
		if err := rows.Scan(&it.ID, &it.Type, &body); err != nil {
			return nil, err
		}
		it.JSON = []byte(body)
		items = append(items, it)
	}
	return items, rows.Err()
}
