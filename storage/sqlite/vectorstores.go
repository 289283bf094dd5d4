package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"hearth/storage"
)

// CreateVectorStore stores the store and attaches its files in one transaction.
func (db *DB) CreateVectorStore(ctx context.Context, s storage.NewVectorStore) error {
	meta, created, err := s.Row()
	if err != nil {
		return err
	}
	err = db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := execOne(ctx, tx, storage.ErrExists, `INSERT INTO vector_stores (id, owner, name, model, chunk_max_tokens,
			chunk_overlap_tokens, expires_after_days, metadata, created_at, last_active_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			s.ID, s.Owner, s.Name, s.Model, s.Chunking.MaxTokens, s.Chunking.OverlapTokens,
			s.ExpiresAfterDays, meta, created.UnixMilli(), created.UnixMilli()); err != nil {
			return err
		}
		return attachFiles(ctx, tx, s.Owner, s.ID, "", s.Files, created)
	})
	if err != nil {
		return fmt.Errorf("storage: create vector store %s: %w", s.ID, err)
	}
	return nil
}

// attachFiles attaches the owner's files to the store (which the caller has checked
// is the owner's), each starting over in_progress.
func attachFiles(ctx context.Context, tx *sql.Tx, owner, storeID, batchID string, files []storage.NewVectorStoreFile, now time.Time) error {
	for _, f := range files {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM files WHERE id = ? AND owner = ?`, f.FileID, owner).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("file %s: %w", f.FileID, storage.ErrFileNotFound)
		} else if err != nil {
			return err
		}
		attrs, err := storage.AttributesJSON(f.Attributes)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM vector_store_chunks WHERE store_id = ? AND file_id = ?`, storeID, f.FileID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO vector_store_files (store_id, file_id, batch_id, status,
			error_code, error_message, attributes, chunk_max_tokens, chunk_overlap_tokens, usage_bytes, created_at)
			VALUES (?, ?, ?, 'in_progress', '', '', ?, ?, ?, 0, ?)
			ON CONFLICT (store_id, file_id) DO UPDATE SET batch_id = excluded.batch_id, status = 'in_progress',
				error_code = '', error_message = '', attributes = excluded.attributes,
				chunk_max_tokens = excluded.chunk_max_tokens, chunk_overlap_tokens = excluded.chunk_overlap_tokens,
				usage_bytes = 0, attempts = 0`,
			storeID, f.FileID, batchID, attrs, f.Chunking.MaxTokens, f.Chunking.OverlapTokens, now.UnixMilli()); err != nil {
			return err
		}
	}
	return bumpChunks(ctx, tx, storeID)
}

// countFiles counts the files of a store (batchID "") or of one of its batches.
func countFiles(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, storeID, batchID string) (storage.FileCounts, int64, error) {
	query := `SELECT status, count(*), COALESCE(sum(usage_bytes), 0) FROM vector_store_files WHERE store_id = ?`
	args := []any{storeID}
	if batchID != "" {
		query += ` AND batch_id = ?`
		args = append(args, batchID)
	}
	rows, err := q.QueryContext(ctx, query+` GROUP BY status`, args...)
	if err != nil {
		return storage.FileCounts{}, 0, err
	}
	defer rows.Close()
	return storage.CountFiles(rows)
}

// GetVectorStore returns the owner's store with its files counted.
func (db *DB) GetVectorStore(ctx context.Context, owner, id string) (*storage.VectorStore, error) {
	s, err := db.getVectorStore(ctx, owner, id)
	if err != nil {
		return nil, fmt.Errorf("storage: get vector store %s: %w", id, err)
	}
	return s, nil
}

func (db *DB) getVectorStore(ctx context.Context, owner, id string) (*storage.VectorStore, error) {
	s, err := storage.ScanVectorStore(db.r.QueryRowContext(ctx, `SELECT `+storage.VectorStoreColumns+` FROM vector_stores WHERE id = ? AND owner = ?`, id, owner))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storage.ErrVectorStoreNotFound
	} else if err != nil {
		return nil, err
	}
	if s.Files, s.UsageBytes, err = countFiles(ctx, db.r, id, ""); err != nil {
		return nil, err
	}
	return s, nil
}

// ListVectorStores returns a page of the owner's stores.
func (db *DB) ListVectorStores(ctx context.Context, owner string, q storage.VectorStoreQuery) ([]storage.VectorStore, bool, error) {
	limit := q.ListLimit()
	where, args := `owner = ?`, []any{owner}
	cmp, order := storage.SeqOrder(q.Order)
	if q.After != "" {
		var seq int64
		err := db.r.QueryRowContext(ctx, `SELECT seq FROM vector_stores WHERE id = ? AND owner = ?`, q.After, owner).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("storage: list vector stores after %s: %w", q.After, storage.ErrInvalidCursor)
		} else if err != nil {
			return nil, false, fmt.Errorf("storage: list vector stores: %w", err)
		}
		where += ` AND seq ` + cmp + ` ?`
		args = append(args, seq)
	}
	args = append(args, limit+1)
	// queryAll has closed its rows before the counts below: a count must not wait
	// for a second connection while the page holds one.
	stores, err := queryAll(ctx, db, storage.ScanVectorStore, `SELECT `+storage.VectorStoreColumns+` FROM vector_stores WHERE `+where+
		` ORDER BY seq `+order+` LIMIT ?`, args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: list vector stores: %w", err)
	}
	stores, more := storage.TrimPage(stores, limit)
	for i := range stores {
		if stores[i].Files, stores[i].UsageBytes, err = countFiles(ctx, db.r, stores[i].ID, ""); err != nil {
			return nil, false, fmt.Errorf("storage: list vector stores: %w", err)
		}
	}
	return stores, more, nil
}

// UpdateVectorStore changes the owner's store.
func (db *DB) UpdateVectorStore(ctx context.Context, owner, id string, u storage.VectorStoreUpdate) (*storage.VectorStore, error) {
	meta, err := u.MetadataColumn()
	if err != nil {
		return nil, err
	}
	err = db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return execOne(ctx, tx, storage.ErrVectorStoreNotFound, `UPDATE vector_stores SET name = COALESCE(?, name),
			expires_after_days = COALESCE(?, expires_after_days), metadata = COALESCE(?, metadata)
			WHERE id = ? AND owner = ?`, u.Name, u.ExpiresAfterDays, meta, id, owner)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: update vector store %s: %w", id, err)
	}
	return db.GetVectorStore(ctx, owner, id)
}

// TouchVectorStore moves the store's last activity to at.
func (db *DB) TouchVectorStore(ctx context.Context, owner, id string, at time.Time) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return execOne(ctx, tx, storage.ErrVectorStoreNotFound, `UPDATE vector_stores SET last_active_at = max(last_active_at, ?)
			WHERE id = ? AND owner = ?`, at.UnixMilli(), id, owner)
	})
	if err != nil {
		return fmt.Errorf("storage: touch vector store %s: %w", id, err)
	}
	return nil
}

// DeleteVectorStore deletes the owner's store with its attachments and chunks.
func (db *DB) DeleteVectorStore(ctx context.Context, owner, id string) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := execOne(ctx, tx, storage.ErrVectorStoreNotFound, `DELETE FROM vector_stores WHERE id = ? AND owner = ?`, id, owner); err != nil {
			return err
		}
		// The cascades would do it; said here too for a database opened without
		// foreign keys.
		for _, table := range []string{"vector_store_chunks", "vector_store_files", "vector_store_batches"} {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE store_id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("storage: delete vector store %s: %w", id, err)
	}
	return nil
}

// DeleteExpiredVectorStores deletes the stores expired at now, of every owner.
func (db *DB) DeleteExpiredVectorStores(ctx context.Context, now time.Time) ([]string, error) {
	var ids []string
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		ids = nil
		rows, err := tx.QueryContext(ctx, `SELECT id FROM vector_stores
			WHERE expires_after_days > 0 AND last_active_at + expires_after_days * 86400000 <= ? ORDER BY id`, now.UnixMilli())
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			for _, table := range []string{"vector_store_chunks", "vector_store_files", "vector_store_batches", "vector_stores"} {
				column := "store_id"
				if table == "vector_stores" {
					column = "id"
				}
				if _, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE `+column+` = ?`, id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("storage: delete expired vector stores: %w", err)
	}
	return ids, nil
}

// ownStore checks, inside a transaction, that the store is the owner's.
func ownStore(ctx context.Context, tx *sql.Tx, owner, storeID string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM vector_stores WHERE id = ? AND owner = ?`, storeID, owner).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.ErrVectorStoreNotFound
	}
	return err
}

// AttachVectorStoreFiles attaches files to the owner's store, with a batch when
// batchID is set.
func (db *DB) AttachVectorStoreFiles(ctx context.Context, owner, storeID, batchID string, files []storage.NewVectorStoreFile) error {
	now := time.Now()
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := ownStore(ctx, tx, owner, storeID); err != nil {
			return err
		}
		if batchID != "" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO vector_store_batches (id, store_id, created_at) VALUES (?, ?, ?)`,
				batchID, storeID, now.UnixMilli()); err != nil {
				if strings.Contains(err.Error(), "UNIQUE") {
					return storage.ErrExists
				}
				return err
			}
		}
		return attachFiles(ctx, tx, owner, storeID, batchID, files, now)
	})
	if err != nil {
		return fmt.Errorf("storage: attach files to vector store %s: %w", storeID, err)
	}
	return nil
}

// GetVectorStoreFile returns one attachment of the owner's store.
func (db *DB) GetVectorStoreFile(ctx context.Context, owner, storeID, fileID string) (*storage.VectorStoreFile, error) {
	f, err := storage.ScanVectorStoreFile(db.r.QueryRowContext(ctx, `SELECT `+storage.VectorStoreFileColumns+`
		FROM vector_store_files f JOIN vector_stores s ON s.id = f.store_id
		WHERE f.store_id = ? AND f.file_id = ? AND s.owner = ?`, storeID, fileID, owner))
	if errors.Is(err, sql.ErrNoRows) {
		err = storage.ErrVectorStoreFileNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get vector store file %s/%s: %w", storeID, fileID, err)
	}
	return f, nil
}

// ListVectorStoreFiles returns a page of the store's files in attachment order.
func (db *DB) ListVectorStoreFiles(ctx context.Context, owner, storeID string, q storage.VectorStoreFileQuery) ([]storage.VectorStoreFile, bool, error) {
	if _, err := db.getVectorStore(ctx, owner, storeID); err != nil {
		return nil, false, fmt.Errorf("storage: list vector store files: %w", err)
	}
	limit := q.ListLimit()
	where, args := `f.store_id = ?`, []any{storeID}
	if q.Status != "" {
		where += ` AND f.status = ?`
		args = append(args, q.Status)
	}
	if q.BatchID != "" {
		where += ` AND f.batch_id = ?`
		args = append(args, q.BatchID)
	}
	cmp, order := storage.SeqOrder(q.Order)
	if q.After != "" {
		var seq int64
		err := db.r.QueryRowContext(ctx, `SELECT seq FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, q.After).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("storage: list vector store files after %s: %w", q.After, storage.ErrInvalidCursor)
		} else if err != nil {
			return nil, false, fmt.Errorf("storage: list vector store files: %w", err)
		}
		where += ` AND f.seq ` + cmp + ` ?`
		args = append(args, seq)
	}
	args = append(args, limit+1)
	files, err := queryAll(ctx, db, storage.ScanVectorStoreFile, `SELECT `+storage.VectorStoreFileColumns+`
		FROM vector_store_files f JOIN vector_stores s ON s.id = f.store_id
		WHERE `+where+` ORDER BY f.seq `+order+` LIMIT ?`, args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: list vector store files: %w", err)
	}
	files, more := storage.TrimPage(files, limit)
	return files, more, nil
}

// DetachVectorStoreFile removes the file and its chunks from the owner's store.
func (db *DB) DetachVectorStoreFile(ctx context.Context, owner, storeID, fileID string) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := ownStore(ctx, tx, owner, storeID); err != nil {
			return err
		}
		if err := execOne(ctx, tx, storage.ErrVectorStoreFileNotFound, `DELETE FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, fileID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM vector_store_chunks WHERE store_id = ? AND file_id = ?`, storeID, fileID)
		if err != nil {
			return err
		}
		return bumpChunks(ctx, tx, storeID)
	})
	if err != nil {
		return fmt.Errorf("storage: detach vector store file %s/%s: %w", storeID, fileID, err)
	}
	return nil
}

// GetFileBatch returns the store's batch with its files counted.
func (db *DB) GetFileBatch(ctx context.Context, owner, storeID, batchID string) (*storage.FileBatch, error) {
	b, err := db.getFileBatch(ctx, owner, storeID, batchID)
	if err != nil {
		return nil, fmt.Errorf("storage: get file batch %s: %w", batchID, err)
	}
	return b, nil
}

func (db *DB) getFileBatch(ctx context.Context, owner, storeID, batchID string) (*storage.FileBatch, error) {
	var b storage.FileBatch
	var created int64
	err := db.r.QueryRowContext(ctx, `SELECT b.id, b.store_id, s.owner, b.created_at
		FROM vector_store_batches b JOIN vector_stores s ON s.id = b.store_id
		WHERE b.id = ? AND b.store_id = ? AND s.owner = ?`, batchID, storeID, owner).Scan(&b.ID, &b.StoreID, &b.Owner, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, storage.ErrVectorStoreFileNotFound
	} else if err != nil {
		return nil, err
	}
	b.CreatedAt = time.UnixMilli(created)
	if b.Files, _, err = countFiles(ctx, db.r, storeID, batchID); err != nil {
		return nil, err
	}
	return &b, nil
}

// CancelFileBatch cancels the batch's files still in progress.
func (db *DB) CancelFileBatch(ctx context.Context, owner, storeID, batchID string) (*storage.FileBatch, error) {
	if _, err := db.getFileBatch(ctx, owner, storeID, batchID); err != nil {
		return nil, fmt.Errorf("storage: cancel file batch %s: %w", batchID, err)
	}
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET status = 'cancelled'
			WHERE store_id = ? AND batch_id = ? AND status = 'in_progress'`, storeID, batchID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("storage: cancel file batch %s: %w", batchID, err)
	}
	return db.GetFileBatch(ctx, owner, storeID, batchID)
}

// finishFile checks that the attachment is still in progress.
func finishFile(ctx context.Context, tx *sql.Tx, storeID, fileID string) error {
	var status string
	err := tx.QueryRowContext(ctx, `SELECT status FROM vector_store_files WHERE store_id = ? AND file_id = ?`, storeID, fileID).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.ErrVectorStoreFileNotFound
	} else if err != nil {
		return err
	}
	return storage.CheckInProgress(status)
}

// StartVectorStoreFileAttempt counts one more attempt at a file in progress.
func (db *DB) StartVectorStoreFileAttempt(ctx context.Context, storeID, fileID string) (attempts, stored int, err error) {
	err = db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := finishFile(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `UPDATE vector_store_files SET attempts = attempts + 1
			WHERE store_id = ? AND file_id = ? RETURNING attempts`, storeID, fileID).Scan(&attempts); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM vector_store_chunks WHERE store_id = ? AND file_id = ?`,
			storeID, fileID).Scan(&stored)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("storage: start vector store file %s/%s: %w", storeID, fileID, err)
	}
	return attempts, stored, nil
}

// insertChunks stores chunks of a file from index from on.
func insertChunks(ctx context.Context, tx *sql.Tx, storeID, fileID string, from int, chunks []storage.NewChunk) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO vector_store_chunks (store_id, file_id, idx, text, vector) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, c := range chunks {
		if _, err := stmt.ExecContext(ctx, storeID, fileID, from+i, c.Text, storage.EncodeVector(c.Vector)); err != nil {
			return err
		}
	}
	return nil
}

// SaveVectorStoreFileChunks stores chunks of a file in progress: its progress.
func (db *DB) SaveVectorStoreFileChunks(ctx context.Context, storeID, fileID string, from int, chunks []storage.NewChunk) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := finishFile(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		if err := insertChunks(ctx, tx, storeID, fileID, from, chunks); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET attempts = 0 WHERE store_id = ? AND file_id = ?`, storeID, fileID)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: save vector store file chunks %s/%s: %w", storeID, fileID, err)
	}
	return nil
}

// CompleteVectorStoreFile stores the file's last chunks and marks it completed.
func (db *DB) CompleteVectorStoreFile(ctx context.Context, storeID, fileID string, chunks []storage.NewChunk) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := finishFile(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		var stored int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM vector_store_chunks WHERE store_id = ? AND file_id = ?`,
			storeID, fileID).Scan(&stored); err != nil {
			return err
		}
		if err := insertChunks(ctx, tx, storeID, fileID, stored, chunks); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET status = 'completed',
			usage_bytes = (SELECT COALESCE(SUM(LENGTH(CAST(text AS BLOB))), 0) FROM vector_store_chunks WHERE store_id = ? AND file_id = ?)
			WHERE store_id = ? AND file_id = ?`, storeID, fileID, storeID, fileID)
		if err != nil {
			return err
		}
		return bumpChunks(ctx, tx, storeID)
	})
	if err != nil {
		return fmt.Errorf("storage: complete vector store file %s/%s: %w", storeID, fileID, err)
	}
	return nil
}

// FailVectorStoreFile marks a file in progress failed or cancelled.
func (db *DB) FailVectorStoreFile(ctx context.Context, storeID, fileID, status, code, message string) error {
	if err := storage.CheckFailStatus(status); err != nil {
		return err
	}
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := finishFile(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM vector_store_chunks WHERE store_id = ? AND file_id = ?`, storeID, fileID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE vector_store_files SET status = ?, error_code = ?, error_message = ?
			WHERE store_id = ? AND file_id = ?`, status, code, message, storeID, fileID)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: fail vector store file %s/%s: %w", storeID, fileID, err)
	}
	return nil
}

// InProgressVectorStoreFiles lists every file still in progress, oldest first.
func (db *DB) InProgressVectorStoreFiles(ctx context.Context) ([]storage.VectorStoreFile, error) {
	files, err := queryAll(ctx, db, storage.ScanVectorStoreFile, `SELECT `+storage.VectorStoreFileColumns+`
		FROM vector_store_files f JOIN vector_stores s ON s.id = f.store_id
		WHERE f.status = 'in_progress' ORDER BY f.seq`)
	if err != nil {
		return nil, fmt.Errorf("storage: vector store files in progress: %w", err)
	}
	return files, nil
}

// VectorStoreChunks returns all the store's chunks with their files' attributes.
func (db *DB) VectorStoreChunks(ctx context.Context, owner, storeID string) ([]storage.Chunk, error) {
	if _, err := db.getVectorStore(ctx, owner, storeID); err != nil {
		return nil, fmt.Errorf("storage: vector store chunks: %w", err)
	}
	chunks, err := queryAll(ctx, db, storage.ScanChunk, `SELECT `+storage.ChunkColumns+`
		FROM vector_store_chunks c
		JOIN vector_store_files f ON f.store_id = c.store_id AND f.file_id = c.file_id
		LEFT JOIN files u ON u.id = c.file_id
		WHERE c.store_id = ? AND f.status = 'completed' ORDER BY f.seq, c.idx`, storeID)
	if err != nil {
		return nil, fmt.Errorf("storage: vector store chunks: %w", err)
	}
	return chunks, nil
}

// UpdateVectorStoreFile replaces the attributes of a file in the owner's store.
func (db *DB) UpdateVectorStoreFile(ctx context.Context, owner, storeID, fileID string, attributes json.RawMessage) (*storage.VectorStoreFile, error) {
	attrs, err := storage.AttributesJSON(attributes)
	if err != nil {
		return nil, err
	}
	err = db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := ownStore(ctx, tx, owner, storeID); err != nil {
			return err
		}
		if err := execOne(ctx, tx, storage.ErrVectorStoreFileNotFound, `UPDATE vector_store_files SET attributes = ? WHERE store_id = ? AND file_id = ?`, attrs, storeID, fileID); err != nil {
			return err
		}
		return bumpChunks(ctx, tx, storeID)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: update vector store file %s/%s: %w", storeID, fileID, err)
	}
	return db.GetVectorStoreFile(ctx, owner, storeID, fileID)
}

// bumpChunks moves the store's ChunksVersion: its chunks or their attributes changed.
func bumpChunks(ctx context.Context, tx *sql.Tx, storeID string) error {
	_, err := tx.ExecContext(ctx, `UPDATE vector_stores SET chunks_version = chunks_version + 1 WHERE id = ?`, storeID)
	return err
}
