package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"hearth/storage"
)

// The console's reads of files and vector stores: across owners, newest first, a page
// at a time by the rows' sequence (the order the API's own lists use).

var (
	sqlConsoleFileSeq        = SQL(`SELECT seq FROM files WHERE id = ?`)
	sqlConsoleVectorStoreSeq = SQL(`SELECT seq FROM vector_stores WHERE id = ?`)
	sqlConsoleFile           = SQL(`SELECT ` + storage.FileColumns + ` FROM files WHERE id = ?`)
	// substr reads only the first bytes of the blob (SQLite and PostgreSQL alike).
	sqlConsoleFileHead   = SQL(`SELECT substr(content, 1, ?) FROM file_contents WHERE file_id = ?`)
	sqlConsoleStoreOwner = SQL(`SELECT owner FROM vector_stores WHERE id = ?`)
)

// consolePage builds the page query of table after the row afterID (its seq read
// first; a row that does not exist is storage.ErrInvalidCursor).
func (c Console) consolePage(ctx context.Context, seqOf *Stmt, columns, table, afterID string, limit int) (*Stmt, []any, error) {
	w := where{d: c.d}
	q := `SELECT ` + columns + ` FROM ` + table
	if afterID != "" {
		var seq int64
		err := c.b.Reader().QueryRow(ctx, seqOf, afterID).Scan(&seq)
		if errors.Is(err, ErrNoRows) {
			return nil, nil, storage.ErrInvalidCursor
		} else if err != nil {
			return nil, nil, err
		}
		q += ` WHERE seq < ` + w.arg(seq)
	}
	q += ` ORDER BY seq DESC LIMIT ` + w.arg(limit+1)
	return raw(q), w.args, nil
}

// consoleLimit bounds a console page.
func consoleLimit(n int) int {
	if n <= 0 || n > 1000 {
		return 50
	}
	return n
}

// ConsoleFiles lists files newest first across owners, without their bytes.
func (c Console) ConsoleFiles(ctx context.Context, afterID string, limit int) ([]storage.File, bool, error) {
	limit = consoleLimit(limit)
	s, args, err := c.consolePage(ctx, sqlConsoleFileSeq, storage.FileColumns, "files", afterID, limit)
	if err != nil {
		return nil, false, fmt.Errorf("storage: console files: %w", err)
	}
	files, err := queryAll(ctx, c.b.Reader(), storage.ScanFile, s, args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: console files: %w", err)
	}
	files, more := storage.TrimPage(files, limit)
	return files, more, nil
}

// ConsoleFileHead returns a file's record and at most n of its first bytes.
func (c Console) ConsoleFileHead(ctx context.Context, id string, n int) (*storage.File, []byte, error) {
	f, err := storage.ScanFile(c.b.Reader().QueryRow(ctx, sqlConsoleFile, id))
	if err != nil {
		return nil, nil, fmt.Errorf("storage: console file %s: %w", id, notFound(err, storage.ErrFileNotFound))
	}
	var head []byte
	if err := c.b.Reader().QueryRow(ctx, sqlConsoleFileHead, max(n, 0), id).Scan(&head); err != nil {
		return nil, nil, fmt.Errorf("storage: console file %s: %w", id, notFound(err, storage.ErrFileNotFound))
	}
	return f, head, nil
}

// ConsoleVectorStores lists vector stores newest first across owners, files counted.
func (c Console) ConsoleVectorStores(ctx context.Context, afterID string, limit int) ([]storage.VectorStore, bool, error) {
	limit = consoleLimit(limit)
	s, args, err := c.consolePage(ctx, sqlConsoleVectorStoreSeq, storage.VectorStoreColumns, "vector_stores", afterID, limit)
	if err != nil {
		return nil, false, fmt.Errorf("storage: console vector stores: %w", err)
	}
	stores, err := queryAll(ctx, c.b.Reader(), storage.ScanVectorStore, s, args...)
	if err != nil {
		return nil, false, fmt.Errorf("storage: console vector stores: %w", err)
	}
	stores, more := storage.TrimPage(stores, limit)
	if err := countStoresFiles(ctx, c.b.Reader(), stores); err != nil {
		return nil, false, fmt.Errorf("storage: console vector stores: %w", err)
	}
	return stores, more, nil
}

// ConsoleVectorStore returns a store, whoever owns it, with its first limit files.
func (c Console) ConsoleVectorStore(ctx context.Context, id string, limit int) (*storage.VectorStore, []storage.VectorStoreFile, error) {
	var owner string
	if err := c.b.Reader().QueryRow(ctx, sqlConsoleStoreOwner, id).Scan(&owner); err != nil {
		return nil, nil, fmt.Errorf("storage: console vector store %s: %w", id, notFound(err, storage.ErrVectorStoreNotFound))
	}
	v := VectorStores{c.b, c.d}
	s, err := v.GetVectorStore(ctx, owner, id)
	if err != nil {
		return nil, nil, err
	}
	files, _, err := v.ListVectorStoreFiles(ctx, owner, id, storage.VectorStoreFileQuery{Limit: consoleLimit(limit)})
	if err != nil {
		return nil, nil, err
	}
	return s, files, nil
}
