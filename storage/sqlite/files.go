package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"hearth/storage"
)

// CreateFile stores a file's record and its bytes in one transaction; a taken id is
// ErrExists.
func (db *DB) CreateFile(ctx context.Context, f storage.NewFile) error {
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
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := execOne(ctx, tx, storage.ErrExists, `INSERT INTO files (id, owner, filename, purpose, bytes, created_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			f.ID, f.Owner, f.Filename, f.Purpose, len(content), created.UnixMilli()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO file_contents (file_id, content) VALUES (?, ?)`, f.ID, content)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: create file %s: %w", f.ID, err)
	}
	return nil
}

// GetFile returns the owner's file record.
func (db *DB) GetFile(ctx context.Context, owner, id string) (*storage.File, error) {
	f, err := storage.ScanFile(db.r.QueryRowContext(ctx, `SELECT `+storage.FileColumns+` FROM files WHERE id = ? AND owner = ?`, id, owner))
	if errors.Is(err, sql.ErrNoRows) {
		err = storage.ErrFileNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get file %s: %w", id, err)
	}
	return f, nil
}

// FileContent returns the owner's file's bytes.
func (db *DB) FileContent(ctx context.Context, owner, id string) ([]byte, error) {
	var content []byte
	err := db.r.QueryRowContext(ctx, `SELECT c.content FROM files f JOIN file_contents c ON c.file_id = f.id
		WHERE f.id = ? AND f.owner = ?`, id, owner).Scan(&content)
	if errors.Is(err, sql.ErrNoRows) {
		err = storage.ErrFileNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("storage: file content %s: %w", id, err)
	}
	if content == nil {
		content = []byte{}
	}
	return content, nil
}

// ListFiles returns a page of the owner's files in creation order.
func (db *DB) ListFiles(ctx context.Context, owner string, q storage.FileQuery) ([]storage.File, bool, error) {
	limit := q.FileListLimit()
	var where strings.Builder
	args := []any{owner}
	where.WriteString(`owner = ?`)
	if q.Purpose != "" {
		where.WriteString(` AND purpose = ?`)
		args = append(args, q.Purpose)
	}
	cmp, order := storage.SeqOrder(q.Order)
	if q.After != "" {
		var seq int64
		err := db.r.QueryRowContext(ctx, `SELECT seq FROM files WHERE id = ? AND owner = ?`, q.After, owner).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("storage: list files after %s: %w", q.After, storage.ErrInvalidCursor)
		} else if err != nil {
			return nil, false, fmt.Errorf("storage: list files: %w", err)
		}
		where.WriteString(` AND seq ` + cmp + ` ?`)
		args = append(args, seq)
	}
	args = append(args, limit+1)
	files, err := queryAll(ctx, db, storage.ScanFile, `SELECT `+storage.FileColumns+` FROM files WHERE `+where.String()+
		` ORDER BY seq `+order+` LIMIT ?`, args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: list files: %w", err)
	}
	files, more := storage.TrimPage(files, limit)
	return files, more, nil
}

// DeleteFile deletes the owner's file and its bytes.
func (db *DB) DeleteFile(ctx context.Context, owner, id string) error {
	err := db.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if err := execOne(ctx, tx, storage.ErrFileNotFound, `DELETE FROM files WHERE id = ? AND owner = ?`, id, owner); err != nil {
			return err
		}
		// The cascade would do it; said here too so the bytes go even on a database
		// opened without foreign keys.
		_, err := tx.ExecContext(ctx, `DELETE FROM file_contents WHERE file_id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: delete file %s: %w", id, err)
	}
	return nil
}
