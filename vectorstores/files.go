package vectorstores

import (
	"context"
	"errors"
	"time"

	"hearth"
	"hearth/storage"
)

// Files (/v1/files, OpenAI's shapes): uploads owned by the key that made them, as
// responses are; another key's file answers as a missing one. The bytes go to the
// store in use (storage.Files keeps them in the database), so a file survives
// restarts and every replica on one PostgreSQL serves it.

// fileObject is the API's file object for a stored file.
func fileObject(f *storage.File) hearth.File {
	return hearth.File{ID: f.ID, Object: hearth.ObjectFile, Bytes: f.Bytes, CreatedAt: f.CreatedAt.Unix(),
		Filename: f.Filename, Purpose: f.Purpose, Status: "processed"}
}

// fileError maps storage's errors to the API's: a 404 naming the file, anything else
// as it is (a 500).
func fileError(err error, id string) error {
	if errors.Is(err, storage.ErrFileNotFound) {
		return hearth.FileNotFound("file_id", id)
	}
	return err
}

// CreateFile stores an upload of who's, its purpose and name checked by the caller.
func (s *Service) CreateFile(ctx context.Context, who, purpose, filename string, content []byte) (hearth.File, error) {
	rec := storage.NewFile{ID: hearth.NewID(hearth.PrefixFile), Owner: who, Filename: filename, Purpose: purpose,
		Content: content, CreatedAt: time.Now()}
	if err := s.db.CreateFile(ctx, rec); err != nil {
		return hearth.File{}, err
	}
	s.log.Info("file stored", "file", rec.ID, "bytes", len(content), "purpose", purpose)
	return fileObject(&storage.File{ID: rec.ID, Owner: rec.Owner, Filename: filename, Purpose: purpose,
		Bytes: int64(len(content)), CreatedAt: rec.CreatedAt}), nil
}

// ListFiles returns a page of who's files, and whether more follow.
func (s *Service) ListFiles(ctx context.Context, who string, q storage.FileQuery) ([]hearth.File, bool, error) {
	files, more, err := s.db.ListFiles(ctx, who, q)
	if errors.Is(err, storage.ErrInvalidCursor) {
		return nil, false, hearth.InvalidRequest("after", hearth.CodeInvalidValue, "after is not a file of this key.")
	}
	if err != nil {
		return nil, false, err
	}
	data := make([]hearth.File, len(files))
	for i := range files {
		data[i] = fileObject(&files[i])
	}
	return data, more, nil
}

// GetFile returns who's file id.
func (s *Service) GetFile(ctx context.Context, who, id string) (hearth.File, error) {
	f, err := s.db.GetFile(ctx, who, id)
	if err != nil {
		return hearth.File{}, fileError(err, id)
	}
	return fileObject(f), nil
}

// FileContent returns who's file id with its bytes as uploaded.
func (s *Service) FileContent(ctx context.Context, who, id string) (hearth.File, []byte, error) {
	f, err := s.db.GetFile(ctx, who, id)
	var content []byte
	if err == nil {
		content, err = s.db.FileContent(ctx, who, f.ID)
	}
	if err != nil {
		return hearth.File{}, nil, fileError(err, id)
	}
	return fileObject(f), content, nil
}

// DeleteFile deletes who's file id.
func (s *Service) DeleteFile(ctx context.Context, who, id string) error {
	return fileError(s.db.DeleteFile(ctx, who, id), id)
}
