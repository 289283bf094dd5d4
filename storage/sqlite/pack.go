package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"hearth/storage"
	"hearth/storage/record"
)

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
			packs[k] = record.PackItems(items)
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
