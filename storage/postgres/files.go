package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

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
		content = []byte{}
	}
	err := db.write(ctx, func(ctx context.Context, tx pgx.Tx) error {
		if err := execOne(ctx, tx, storage.ErrExists, `INSERT INTO files (id, owner, filename, purpose, bytes, created_at)
			VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
			f.ID, f.Owner, f.Filename, f.Purpose, len(content), created.UnixMilli()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO file_contents (file_id, content) VALUES ($1, $2)`, f.ID, content)
		return err
	})
	if err != nil {
		return fmt.Errorf("storage: create file %s: %w", f.ID, err)
	}
	return nil
}

// GetFile returns the owner's file record.
func (db *DB) GetFile(ctx context.Context, owner, id string) (*storage.File, error) {
	f, err := storage.ScanFile(db.pool.QueryRow(ctx, `SELECT `+storage.FileColumns+` FROM files WHERE id = $1 AND owner = $2`, id, owner))
	if err != nil {
		return nil, fmt.Errorf("storage: get file %s: %w", id, notFound(err, storage.ErrFileNotFound))
	}
	return f, nil
}

// FileContent returns the owner's file's bytes.
func (db *DB) FileContent(ctx context.Context, owner, id string) ([]byte, error) {
	var content []byte
	err := db.pool.QueryRow(ctx, `SELECT c.content FROM files f JOIN file_contents c ON c.file_id = f.id
		WHERE f.id = $1 AND f.owner = $2`, id, owner).Scan(&content)
	if err != nil {
		return nil, fmt.Errorf("storage: file content %s: %w", id, notFound(err, storage.ErrFileNotFound))
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
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where.WriteString(`owner = $1`)
	if q.Purpose != "" {
		where.WriteString(` AND purpose = ` + arg(q.Purpose))
	}
	cmp, order := storage.SeqOrder(q.Order)
	if q.After != "" {
		var seq int64
		err := db.pool.QueryRow(ctx, `SELECT seq FROM files WHERE id = $1 AND owner = $2`, q.After, owner).Scan(&seq)
		if err != nil {
			return nil, false, fmt.Errorf("storage: list files after %s: %w", q.After, notFound(err, storage.ErrInvalidCursor))
		}
		where.WriteString(` AND seq ` + cmp + ` ` + arg(seq))
	}
	files, err := queryAll(ctx, db, storage.ScanFile, `SELECT `+storage.FileColumns+` FROM files WHERE `+where.String()+
		` ORDER BY seq `+order+` LIMIT `+arg(limit+1), args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: list files: %w", err)
	}
	files, more := storage.TrimPage(files, limit)
	return files, more, nil
}

// DeleteFile deletes the owner's file; its bytes go with it (ON DELETE CASCADE).
func (db *DB) DeleteFile(ctx context.Context, owner, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM files WHERE id = $1 AND owner = $2`, id, owner)
	if err == nil && tag.RowsAffected() == 0 {
		err = storage.ErrFileNotFound
	}
	if err != nil {
		return fmt.Errorf("storage: delete file %s: %w", id, err)
	}
	return nil
}
