package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"hearth/storage"
)

// Files keeps uploaded files: a record and the bytes, in a table of their own.
type Files struct {
	b Backend
	d *Dialect
}

var (
	sqlInsertFile = SQL(`INSERT INTO files (id, owner, filename, purpose, bytes, created_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`)
	sqlInsertFileContent = SQL(`INSERT INTO file_contents (file_id, content) VALUES (?, ?)`)
	sqlGetFile           = SQL(`SELECT ` + storage.FileColumns + ` FROM files WHERE id = ? AND owner = ?`)
	sqlFileContent       = SQL(`SELECT c.content FROM files f JOIN file_contents c ON c.file_id = f.id
		WHERE f.id = ? AND f.owner = ?`)
	sqlFileSeq           = SQL(`SELECT seq FROM files WHERE id = ? AND owner = ?`)
	sqlDeleteFile        = SQL(`DELETE FROM files WHERE id = ? AND owner = ?`)
	sqlDeleteFileContent = SQL(`DELETE FROM file_contents WHERE file_id = ?`)
)

// CreateFile stores a file's record and its bytes in one transaction; a taken id is
// ErrExists.
func (s Files) CreateFile(ctx context.Context, f storage.NewFile) error {
	if f.ID == "" || f.Owner == "" {
		return errors.New("storage: create file: id and owner are required")
	}
	created := f.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	content := f.Content
	if content == nil {
		content = []byte{} // NOT NULL: an empty file is an empty blob
	}
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := execOne(ctx, tx, storage.ErrExists, sqlInsertFile,
			f.ID, f.Owner, f.Filename, f.Purpose, len(content), created.UnixMilli()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, sqlInsertFileContent, f.ID, content)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: create file %s: %w", f.ID, err)
	}
	return nil
}

// GetFile returns the owner's file record.
func (s Files) GetFile(ctx context.Context, owner, id string) (*storage.File, error) {
	f, err := storage.ScanFile(s.b.Reader().QueryRow(ctx, sqlGetFile, id, owner))
	if err != nil {
		return nil, fmt.Errorf("storage: get file %s: %w", id, notFound(err, storage.ErrFileNotFound))
	}
	return f, nil
}

// FileContent returns the owner's file's bytes.
func (s Files) FileContent(ctx context.Context, owner, id string) ([]byte, error) {
	var content []byte
	err := s.b.Reader().QueryRow(ctx, sqlFileContent, id, owner).Scan(&content)
	if err != nil {
		return nil, fmt.Errorf("storage: file content %s: %w", id, notFound(err, storage.ErrFileNotFound))
	}
	if content == nil {
		content = []byte{}
	}
	return content, nil
}

// ListFiles returns a page of the owner's files in creation order.
func (s Files) ListFiles(ctx context.Context, owner string, q storage.FileQuery) ([]storage.File, bool, error) {
	limit := q.FileListLimit()
	w := where{d: s.d}
	w.add(`owner = `, owner)
	if q.Purpose != "" {
		w.add(` AND purpose = `, q.Purpose)
	}
	cmp, order := storage.SeqOrder(q.Order)
	if q.After != "" {
		var seq int64
		err := s.b.Reader().QueryRow(ctx, sqlFileSeq, q.After, owner).Scan(&seq)
		if errors.Is(err, ErrNoRows) {
			return nil, false, fmt.Errorf("storage: list files after %s: %w", q.After, storage.ErrInvalidCursor)
		} else if err != nil {
			return nil, false, fmt.Errorf("storage: list files: %w", err)
		}
		w.add(` AND seq `+cmp+` `, seq)
	}
	files, err := queryAll(ctx, s.b.Reader(), storage.ScanFile, raw(`SELECT `+storage.FileColumns+` FROM files WHERE `+w.text.String()+
		` ORDER BY seq `+order+` LIMIT `+w.arg(limit+1)), w.args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: list files: %w", err)
	}
	files, more := storage.TrimPage(files, limit)
	return files, more, nil
}

// DeleteFile deletes the owner's file and its bytes.
func (s Files) DeleteFile(ctx context.Context, owner, id string) error {
	err := s.b.Write(ctx, func(ctx context.Context, tx Tx) error {
		if err := execOne(ctx, tx, storage.ErrFileNotFound, sqlDeleteFile, id, owner); err != nil {
			return err
		}
		// The cascade would do it; said here too so the bytes go even on a SQLite
		// database opened without foreign keys.
		_, err := tx.Exec(ctx, sqlDeleteFileContent, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: delete file %s: %w", id, err)
	}
	return nil
}
