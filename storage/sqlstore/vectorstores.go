package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"hearth/storage"
)

// VectorStores keeps vector stores: their files (attachments), batches and the
// chunks ingestion cuts the files into.
type VectorStores struct {
	b Backend
	d *Dialect
}

const vectorStoreFileFrom = `FROM vector_store_files f JOIN vector_stores s ON s.id = f.store_id`

var (
	sqlInsertVectorStore = SQL(`INSERT INTO vector_stores (id, owner, name, model, chunk_max_tokens,
		chunk_overlap_tokens, expires_after_days, metadata, created_at, last_active_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`)
	sqlOwnFile          = SQL(`SELECT 1 FROM files WHERE id = ? AND owner = ?`)
	sqlDeleteFileChunks = SQL(`DELETE FROM vector_store_chunks WHERE store_id = ? AND file_id = ?`)
	sqlAttachFile       = SQL(`INSERT INTO vector_store_files (store_id, file_id, batch_id, status,
		error_code, error_message, attributes, chunk_max_tokens, chunk_overlap_tokens, usage_bytes, created_at)
		VALUES (?, ?, ?, 'in_progress', '', '', ?, ?, ?, 0, ?)
		ON CONFLICT (store_id, file_id) DO UPDATE SET batch_id = excluded.batch_id, status = 'in_progress',
			error_code = '', error_message = '', attributes = excluded.attributes,
			chunk_max_tokens = excluded.chunk_max_tokens, chunk_overlap_tokens = excluded.chunk_overlap_tokens,
			usage_bytes = 0, attempts = 0`)
	sqlCountFiles = SQL(`SELECT status, count(*), COALESCE(sum(usage_bytes), 0) FROM vector_store_files
		WHERE store_id = ? GROUP BY status`)
	sqlCountBatchFiles = SQL(`SELECT status, count(*), COALESCE(sum(usage_bytes), 0) FROM vector_store_files
		WHERE store_id = ? AND batch_id = ? GROUP BY status`)
	sqlGetVectorStore    = SQL(`SELECT ` + storage.VectorStoreColumns + ` FROM vector_stores WHERE id = ? AND owner = ?`)
	sqlVectorStoreSeq    = SQL(`SELECT seq FROM vector_stores WHERE id = ? AND owner = ?`)
	sqlUpdateVectorStore = SQL(`UPDATE vector_stores SET name = COALESCE(?, name),
		expires_after_days = COALESCE(?, expires_after_days), metadata = COALESCE(?, metadata)
		WHERE id = ? AND owner = ?`)
	sqlTouchVectorStore = Dialects(
		`UPDATE vector_stores SET last_active_at = max(last_active_at, ?) WHERE id = ? AND owner = ?`,
		`UPDATE vector_stores SET last_active_at = GREATEST(last_active_at, $1) WHERE id = $2 AND owner = $3`)
	sqlDeleteVectorStore = SQL(`DELETE FROM vector_stores WHERE id = ? AND owner = ?`)
	sqlExpiredStores     = SQL(`SELECT id FROM vector_stores
		WHERE expires_after_days > 0 AND last_active_at + CAST(expires_after_days AS BIGINT) * 86400000 <= ? ORDER BY id`)
	// What a store's deletion takes, children first. The cascades would do it; said
	// here too for a SQLite database opened without foreign keys.
	sqlDeleteStoreRows = []*Stmt{
		SQL(`DELETE FROM vector_store_chunks WHERE store_id = ?`),
		SQL(`DELETE FROM vector_store_files WHERE store_id = ?`),
		SQL(`DELETE FROM vector_store_batches WHERE store_id = ?`),
	}
	sqlDeleteStoreByID    = SQL(`DELETE FROM vector_stores WHERE id = ?`)
	sqlOwnStore           = SQL(`SELECT 1 FROM vector_stores WHERE id = ? AND owner = ?`)
	sqlInsertBatch        = SQL(`INSERT INTO vector_store_batches (id, store_id, created_at) VALUES (?, ?, ?)`)
	sqlGetVectorStoreFile = SQL(`SELECT ` + storage.VectorStoreFileColumns + ` ` + vectorStoreFileFrom + `
		WHERE f.store_id = ? AND f.file_id = ? AND s.owner = ?`)
	sqlVectorStoreFileSeq = SQL(`SELECT seq FROM vector_store_files WHERE store_id = ? AND file_id = ?`)
	sqlDetachFile         = SQL(`DELETE FROM vector_store_files WHERE store_id = ? AND file_id = ?`)
	sqlGetBatch           = SQL(`SELECT b.id, b.store_id, s.owner, b.created_at
		FROM vector_store_batches b JOIN vector_stores s ON s.id = b.store_id
		WHERE b.id = ? AND b.store_id = ? AND s.owner = ?`)
	sqlCancelBatch = SQL(`UPDATE vector_store_files SET status = 'cancelled'
		WHERE store_id = ? AND batch_id = ? AND status = 'in_progress'`)
	sqlFileStatus    = SQL(`SELECT status FROM vector_store_files WHERE store_id = ? AND file_id = ?`)
	sqlStartAttempt  = SQL(`UPDATE vector_store_files SET attempts = attempts + 1 WHERE store_id = ? AND file_id = ? RETURNING attempts`)
	sqlCountChunks   = SQL(`SELECT COUNT(*) FROM vector_store_chunks WHERE store_id = ? AND file_id = ?`)
	sqlResetAttempts = SQL(`UPDATE vector_store_files SET attempts = 0 WHERE store_id = ? AND file_id = ?`)
	sqlCompleteFile  = Dialects(`UPDATE vector_store_files SET status = 'completed',
		usage_bytes = (SELECT COALESCE(SUM(LENGTH(CAST(text AS BLOB))), 0) FROM vector_store_chunks WHERE store_id = ?1 AND file_id = ?2)
		WHERE store_id = ?1 AND file_id = ?2`, `UPDATE vector_store_files SET status = 'completed',
		usage_bytes = (SELECT COALESCE(SUM(octet_length(text)), 0) FROM vector_store_chunks WHERE store_id = $1 AND file_id = $2)
		WHERE store_id = $1 AND file_id = $2`)
	sqlFailFile = SQL(`UPDATE vector_store_files SET status = ?, error_code = ?, error_message = ?
		WHERE store_id = ? AND file_id = ?`)
	sqlInProgressFiles = SQL(`SELECT ` + storage.VectorStoreFileColumns + ` ` + vectorStoreFileFrom + `
		WHERE f.status = 'in_progress' ORDER BY f.seq`)
	sqlStoreChunks = SQL(`SELECT ` + storage.ChunkColumns + `
		FROM vector_store_chunks c
		JOIN vector_store_files f ON f.store_id = c.store_id AND f.file_id = c.file_id
		LEFT JOIN files u ON u.id = c.file_id
		WHERE c.store_id = ? AND f.status = 'completed' ORDER BY f.seq, c.idx`)
	sqlSetAttributes = SQL(`UPDATE vector_store_files SET attributes = ? WHERE store_id = ? AND file_id = ?`)
	sqlBumpChunks    = SQL(`UPDATE vector_stores SET chunks_version = chunks_version + 1 WHERE id = ?`)
)

// CreateVectorStore stores the store and attaches its files in one transaction.
func (v VectorStores) CreateVectorStore(ctx context.Context, s storage.NewVectorStore) error {
	meta, created, err := s.Row()
	if err != nil {
		return err
	}
	err = v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := execOne(ctx, tx, storage.ErrExists, sqlInsertVectorStore,
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
func attachFiles(ctx context.Context, tx Tx, owner, storeID, batchID string, files []storage.NewVectorStoreFile, now time.Time) error {
	for _, f := range files {
		var one int
		err := tx.QueryRow(ctx, sqlOwnFile, f.FileID, owner).Scan(&one)
		if errors.Is(err, ErrNoRows) {
			return fmt.Errorf("file %s: %w", f.FileID, storage.ErrFileNotFound)
		} else if err != nil {
			return err
		}
		attrs, err := storage.AttributesJSON(f.Attributes)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlDeleteFileChunks, storeID, f.FileID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlAttachFile,
			storeID, f.FileID, batchID, attrs, f.Chunking.MaxTokens, f.Chunking.OverlapTokens, now.UnixMilli()); err != nil {
			return err
		}
	}
	return bumpChunks(ctx, tx, storeID)
}

// countFiles counts the files of a store (batchID "") or of one of its batches.
func countFiles(ctx context.Context, q Querier, storeID, batchID string) (storage.FileCounts, int64, error) {
	var rows Rows
	var err error
	if batchID == "" {
		rows, err = q.Query(ctx, sqlCountFiles, storeID)
	} else {
		rows, err = q.Query(ctx, sqlCountBatchFiles, storeID, batchID)
	}
	if err != nil {
		return storage.FileCounts{}, 0, err
	}
	defer rows.Close()
	return storage.CountFiles(rows)
}

// GetVectorStore returns the owner's store with its files counted.
func (v VectorStores) GetVectorStore(ctx context.Context, owner, id string) (*storage.VectorStore, error) {
	s, err := v.getVectorStore(ctx, owner, id)
	if err != nil {
		return nil, fmt.Errorf("storage: get vector store %s: %w", id, err)
	}
	return s, nil
}

func (v VectorStores) getVectorStore(ctx context.Context, owner, id string) (*storage.VectorStore, error) {
	s, err := storage.ScanVectorStore(v.b.Reader().QueryRow(ctx, sqlGetVectorStore, id, owner))
	if err != nil {
		return nil, notFound(err, storage.ErrVectorStoreNotFound)
	}
	if s.Files, s.UsageBytes, err = countFiles(ctx, v.b.Reader(), id, ""); err != nil {
		return nil, err
	}
	return s, nil
}

// ListVectorStores returns a page of the owner's stores.
func (v VectorStores) ListVectorStores(ctx context.Context, owner string, q storage.VectorStoreQuery) ([]storage.VectorStore, bool, error) {
	limit := q.ListLimit()
	w := where{d: v.d}
	w.add(`owner = `, owner)
	cmp, order := storage.SeqOrder(q.Order)
	if q.After != "" {
		var seq int64
		err := v.b.Reader().QueryRow(ctx, sqlVectorStoreSeq, q.After, owner).Scan(&seq)
		if errors.Is(err, ErrNoRows) {
			return nil, false, fmt.Errorf("storage: list vector stores after %s: %w", q.After, storage.ErrInvalidCursor)
		} else if err != nil {
			return nil, false, fmt.Errorf("storage: list vector stores: %w", err)
		}
		w.add(` AND seq `+cmp+` `, seq)
	}
	// queryAll has closed its rows before the counts below: a count must not wait
	// for a second connection while the page holds one.
	stores, err := queryAll(ctx, v.b.Reader(), storage.ScanVectorStore, raw(`SELECT `+storage.VectorStoreColumns+
		` FROM vector_stores WHERE `+w.text.String()+` ORDER BY seq `+order+` LIMIT `+w.arg(limit+1)), w.args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: list vector stores: %w", err)
	}
	stores, more := storage.TrimPage(stores, limit)
	if err := countStoresFiles(ctx, v.b.Reader(), stores); err != nil {
		return nil, false, fmt.Errorf("storage: list vector stores: %w", err)
	}
	return stores, more, nil
}

// countStoresFiles counts each store's files and their usage, after the page's rows
// are read and closed: a count must not wait for a second connection while the page
// holds one.
func countStoresFiles(ctx context.Context, q Querier, stores []storage.VectorStore) error {
	for i := range stores {
		var err error
		if stores[i].Files, stores[i].UsageBytes, err = countFiles(ctx, q, stores[i].ID, ""); err != nil {
			return err
		}
	}
	return nil
}

// UpdateVectorStore changes the owner's store.
func (v VectorStores) UpdateVectorStore(ctx context.Context, owner, id string, u storage.VectorStoreUpdate) (*storage.VectorStore, error) {
	meta, err := u.MetadataColumn()
	if err != nil {
		return nil, err
	}
	err = v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		return execOne(ctx, tx, storage.ErrVectorStoreNotFound, sqlUpdateVectorStore, u.Name, u.ExpiresAfterDays, meta, id, owner)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: update vector store %s: %w", id, err)
	}
	return v.GetVectorStore(ctx, owner, id)
}

// TouchVectorStore moves the store's last activity to at.
func (v VectorStores) TouchVectorStore(ctx context.Context, owner, id string, at time.Time) error {
	err := v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		return execOne(ctx, tx, storage.ErrVectorStoreNotFound, sqlTouchVectorStore, at.UnixMilli(), id, owner)
	})
	if err != nil {
		return fmt.Errorf("storage: touch vector store %s: %w", id, err)
	}
	return nil
}

// DeleteVectorStore deletes the owner's store with its attachments and chunks.
func (v VectorStores) DeleteVectorStore(ctx context.Context, owner, id string) error {
	err := v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := execOne(ctx, tx, storage.ErrVectorStoreNotFound, sqlDeleteVectorStore, id, owner); err != nil {
			return err
		}
		for _, s := range sqlDeleteStoreRows {
			if _, err := tx.Exec(ctx, s, id); err != nil {
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
func (v VectorStores) DeleteExpiredVectorStores(ctx context.Context, now time.Time) ([]string, error) {
	var ids []string
	err := v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		ids = nil
		rows, err := tx.Query(ctx, sqlExpiredStores, now.UnixMilli())
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
			for _, s := range append(sqlDeleteStoreRows[:len(sqlDeleteStoreRows):len(sqlDeleteStoreRows)], sqlDeleteStoreByID) {
				if _, err := tx.Exec(ctx, s, id); err != nil {
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
func ownStore(ctx context.Context, tx Tx, owner, storeID string) error {
	var one int
	return notFound(tx.QueryRow(ctx, sqlOwnStore, storeID, owner).Scan(&one), storage.ErrVectorStoreNotFound)
}

// AttachVectorStoreFiles attaches files to the owner's store, with a batch when
// batchID is set.
func (v VectorStores) AttachVectorStoreFiles(ctx context.Context, owner, storeID, batchID string, files []storage.NewVectorStoreFile) error {
	now := time.Now()
	err := v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := ownStore(ctx, tx, owner, storeID); err != nil {
			return err
		}
		if batchID != "" {
			if _, err := tx.Exec(ctx, sqlInsertBatch, batchID, storeID, now.UnixMilli()); err != nil {
				if v.b.Unique(err) {
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
func (v VectorStores) GetVectorStoreFile(ctx context.Context, owner, storeID, fileID string) (*storage.VectorStoreFile, error) {
	f, err := storage.ScanVectorStoreFile(v.b.Reader().QueryRow(ctx, sqlGetVectorStoreFile, storeID, fileID, owner))
	if err != nil {
		return nil, fmt.Errorf("storage: get vector store file %s/%s: %w", storeID, fileID, notFound(err, storage.ErrVectorStoreFileNotFound))
	}
	return f, nil
}

// ListVectorStoreFiles returns a page of the store's files in attachment order.
func (v VectorStores) ListVectorStoreFiles(ctx context.Context, owner, storeID string, q storage.VectorStoreFileQuery) ([]storage.VectorStoreFile, bool, error) {
	if _, err := v.getVectorStore(ctx, owner, storeID); err != nil {
		return nil, false, fmt.Errorf("storage: list vector store files: %w", err)
	}
	limit := q.ListLimit()
	w := where{d: v.d}
	w.add(`f.store_id = `, storeID)
	if q.Status != "" {
		w.add(` AND f.status = `, q.Status)
	}
	if q.BatchID != "" {
		w.add(` AND f.batch_id = `, q.BatchID)
	}
	cmp, order := storage.SeqOrder(q.Order)
	if q.After != "" {
		var seq int64
		err := v.b.Reader().QueryRow(ctx, sqlVectorStoreFileSeq, storeID, q.After).Scan(&seq)
		if errors.Is(err, ErrNoRows) {
			return nil, false, fmt.Errorf("storage: list vector store files after %s: %w", q.After, storage.ErrInvalidCursor)
		} else if err != nil {
			return nil, false, fmt.Errorf("storage: list vector store files: %w", err)
		}
		w.add(` AND f.seq `+cmp+` `, seq)
	}
	files, err := queryAll(ctx, v.b.Reader(), storage.ScanVectorStoreFile, raw(`SELECT `+storage.VectorStoreFileColumns+` `+
		vectorStoreFileFrom+` WHERE `+w.text.String()+` ORDER BY f.seq `+order+` LIMIT `+w.arg(limit+1)), w.args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: list vector store files: %w", err)
	}
	files, more := storage.TrimPage(files, limit)
	return files, more, nil
}

// DetachVectorStoreFile removes the file and its chunks from the owner's store.
func (v VectorStores) DetachVectorStoreFile(ctx context.Context, owner, storeID, fileID string) error {
	err := v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := ownStore(ctx, tx, owner, storeID); err != nil {
			return err
		}
		if err := execOne(ctx, tx, storage.ErrVectorStoreFileNotFound, sqlDetachFile, storeID, fileID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlDeleteFileChunks, storeID, fileID); err != nil {
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
func (v VectorStores) GetFileBatch(ctx context.Context, owner, storeID, batchID string) (*storage.FileBatch, error) {
	b, err := v.getFileBatch(ctx, owner, storeID, batchID)
	if err != nil {
		return nil, fmt.Errorf("storage: get file batch %s: %w", batchID, err)
	}
	return b, nil
}

func (v VectorStores) getFileBatch(ctx context.Context, owner, storeID, batchID string) (*storage.FileBatch, error) {
	var b storage.FileBatch
	var created int64
	err := v.b.Reader().QueryRow(ctx, sqlGetBatch, batchID, storeID, owner).Scan(&b.ID, &b.StoreID, &b.Owner, &created)
	if err != nil {
		return nil, notFound(err, storage.ErrVectorStoreFileNotFound)
	}
	b.CreatedAt = time.UnixMilli(created)
	if b.Files, _, err = countFiles(ctx, v.b.Reader(), storeID, batchID); err != nil {
		return nil, err
	}
	return &b, nil
}

// CancelFileBatch cancels the batch's files still in progress.
func (v VectorStores) CancelFileBatch(ctx context.Context, owner, storeID, batchID string) (*storage.FileBatch, error) {
	if _, err := v.getFileBatch(ctx, owner, storeID, batchID); err != nil {
		return nil, fmt.Errorf("storage: cancel file batch %s: %w", batchID, err)
	}
	err := v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		_, err := tx.Exec(ctx, sqlCancelBatch, storeID, batchID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("storage: cancel file batch %s: %w", batchID, err)
	}
	return v.GetFileBatch(ctx, owner, storeID, batchID)
}

// finishFile checks that the attachment is still in progress.
func finishFile(ctx context.Context, tx Tx, storeID, fileID string) error {
	var status string
	if err := tx.QueryRow(ctx, sqlFileStatus, storeID, fileID).Scan(&status); err != nil {
		return notFound(err, storage.ErrVectorStoreFileNotFound)
	}
	return storage.CheckInProgress(status)
}

// StartVectorStoreFileAttempt counts one more attempt at a file in progress.
func (v VectorStores) StartVectorStoreFileAttempt(ctx context.Context, storeID, fileID string) (attempts, stored int, err error) {
	err = v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := finishFile(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, sqlStartAttempt, storeID, fileID).Scan(&attempts); err != nil {
			return err
		}
		return tx.QueryRow(ctx, sqlCountChunks, storeID, fileID).Scan(&stored)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("storage: start vector store file %s/%s: %w", storeID, fileID, err)
	}
	return attempts, stored, nil
}

// SaveVectorStoreFileChunks stores chunks of a file in progress: its progress.
func (v VectorStores) SaveVectorStoreFileChunks(ctx context.Context, storeID, fileID string, from int, chunks []storage.NewChunk) error {
	err := v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := finishFile(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		if err := v.b.InsertChunks(ctx, tx, storeID, fileID, from, chunks); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, sqlResetAttempts, storeID, fileID)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: save vector store file chunks %s/%s: %w", storeID, fileID, err)
	}
	return nil
}

// CompleteVectorStoreFile stores the file's last chunks and marks it completed.
func (v VectorStores) CompleteVectorStoreFile(ctx context.Context, storeID, fileID string, chunks []storage.NewChunk) error {
	err := v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := finishFile(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		var stored int
		if err := tx.QueryRow(ctx, sqlCountChunks, storeID, fileID).Scan(&stored); err != nil {
			return err
		}
		if err := v.b.InsertChunks(ctx, tx, storeID, fileID, stored, chunks); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlCompleteFile, storeID, fileID); err != nil {
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
func (v VectorStores) FailVectorStoreFile(ctx context.Context, storeID, fileID, status, code, message string) error {
	if err := storage.CheckFailStatus(status); err != nil {
		return err
	}
	err := v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := finishFile(ctx, tx, storeID, fileID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlDeleteFileChunks, storeID, fileID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, sqlFailFile, status, code, message, storeID, fileID)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: fail vector store file %s/%s: %w", storeID, fileID, err)
	}
	return nil
}

// InProgressVectorStoreFiles lists every file still in progress, oldest first.
func (v VectorStores) InProgressVectorStoreFiles(ctx context.Context) ([]storage.VectorStoreFile, error) {
	files, err := queryAll(ctx, v.b.Reader(), storage.ScanVectorStoreFile, sqlInProgressFiles)
	if err != nil {
		return nil, fmt.Errorf("storage: vector store files in progress: %w", err)
	}
	return files, nil
}

// VectorStoreChunks returns all the store's chunks with their files' attributes.
func (v VectorStores) VectorStoreChunks(ctx context.Context, owner, storeID string) ([]storage.Chunk, error) {
	if _, err := v.getVectorStore(ctx, owner, storeID); err != nil {
		return nil, fmt.Errorf("storage: vector store chunks: %w", err)
	}
	chunks, err := queryAll(ctx, v.b.Reader(), storage.ScanChunk, sqlStoreChunks, storeID)
	if err != nil {
		return nil, fmt.Errorf("storage: vector store chunks: %w", err)
	}
	return chunks, nil
}

// UpdateVectorStoreFile replaces the attributes of a file in the owner's store.
func (v VectorStores) UpdateVectorStoreFile(ctx context.Context, owner, storeID, fileID string, attributes json.RawMessage) (*storage.VectorStoreFile, error) {
	attrs, err := storage.AttributesJSON(attributes)
	if err != nil {
		return nil, err
	}
	err = v.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := ownStore(ctx, tx, owner, storeID); err != nil {
			return err
		}
		if err := execOne(ctx, tx, storage.ErrVectorStoreFileNotFound, sqlSetAttributes, attrs, storeID, fileID); err != nil {
			return err
		}
		return bumpChunks(ctx, tx, storeID)
	})
	if err != nil {
		return nil, fmt.Errorf("storage: update vector store file %s/%s: %w", storeID, fileID, err)
	}
	return v.GetVectorStoreFile(ctx, owner, storeID, fileID)
}

// bumpChunks moves the store's ChunksVersion: its chunks or their attributes changed.
func bumpChunks(ctx context.Context, tx Tx, storeID string) error {
	_, err := tx.Exec(ctx, sqlBumpChunks, storeID)
	return err
}
