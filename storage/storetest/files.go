package storetest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"hearth/storage"
)

func fileIDs(files []storage.File) []string {
	var ids []string
	for _, f := range files {
		ids = append(ids, f.ID)
	}
	return ids
}

func testFiles(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice, bob := storage.OwnerOf("alice"), storage.OwnerOf("bob")

	// Bytes of every value survive exactly, an empty file included.
	binary := make([]byte, 70000)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	created := time.UnixMilli(time.Now().UnixMilli())
	for _, f := range []storage.NewFile{
		{ID: "file-1", Owner: alice, Filename: "notes.md", Purpose: "assistants", Content: []byte("# notes\n"), CreatedAt: created},
		{ID: "file-2", Owner: alice, Filename: "blob.bin", Purpose: "user_data", Content: binary},
		{ID: "file-3", Owner: alice, Filename: "empty.txt", Purpose: "assistants"},
		{ID: "file-b", Owner: bob, Filename: "bob.txt", Purpose: "assistants", Content: []byte("bob")},
	} {
		if err := db.CreateFile(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateFile(ctx, storage.NewFile{ID: "file-1", Owner: bob, Filename: "x"}); !errors.Is(err, storage.ErrExists) {
		t.Errorf("same id again: %v", err)
	}
	f, err := db.GetFile(ctx, alice, "file-1")
	if err != nil || f.Filename != "notes.md" || f.Purpose != "assistants" || f.Bytes != 8 || !f.CreatedAt.Equal(created) || f.Owner != alice {
		t.Fatalf("get: %+v %v", f, err)
	}
	if got, err := db.FileContent(ctx, alice, "file-2"); err != nil || !bytes.Equal(got, binary) {
		t.Errorf("binary content: %d bytes, %v", len(got), err)
	}
	if got, err := db.FileContent(ctx, alice, "file-3"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty content: %v %v", got, err)
	}

	// Another owner sees nothing, and deletes nothing.
	if _, err := db.GetFile(ctx, bob, "file-1"); !errors.Is(err, storage.ErrFileNotFound) {
		t.Errorf("bob get: %v", err)
	}
	if _, err := db.FileContent(ctx, bob, "file-1"); !errors.Is(err, storage.ErrFileNotFound) {
		t.Errorf("bob content: %v", err)
	}
	if err := db.DeleteFile(ctx, bob, "file-1"); !errors.Is(err, storage.ErrFileNotFound) {
		t.Errorf("bob delete: %v", err)
	}
	if _, _, err := db.ListFiles(ctx, bob, storage.FileQuery{After: "file-1"}); !errors.Is(err, storage.ErrInvalidCursor) {
		t.Errorf("bob lists after alice's file: %v", err)
	}

	// Lists: newest first by default, pages, purpose, order.
	list := func(q storage.FileQuery) ([]string, bool) {
		t.Helper()
		files, more, err := db.ListFiles(ctx, alice, q)
		if err != nil {
			t.Fatal(err)
		}
		return fileIDs(files), more
	}
	if ids, more := list(storage.FileQuery{}); !slices.Equal(ids, []string{"file-3", "file-2", "file-1"}) || more {
		t.Errorf("list: %v %v", ids, more)
	}
	if ids, more := list(storage.FileQuery{Limit: 2}); !slices.Equal(ids, []string{"file-3", "file-2"}) || !more {
		t.Errorf("first page: %v %v", ids, more)
	}
	if ids, more := list(storage.FileQuery{Limit: 2, After: "file-2"}); !slices.Equal(ids, []string{"file-1"}) || more {
		t.Errorf("second page: %v %v", ids, more)
	}
	if ids, _ := list(storage.FileQuery{Order: storage.Asc, After: "file-1"}); !slices.Equal(ids, []string{"file-2", "file-3"}) {
		t.Errorf("asc after file-1: %v", ids)
	}
	if ids, _ := list(storage.FileQuery{Purpose: "assistants"}); !slices.Equal(ids, []string{"file-3", "file-1"}) {
		t.Errorf("purpose assistants: %v", ids)
	}
	if _, _, err := db.ListFiles(ctx, alice, storage.FileQuery{After: "file-nope"}); !errors.Is(err, storage.ErrInvalidCursor) {
		t.Errorf("unknown cursor: %v", err)
	}

	// Delete takes the record and the bytes; a second delete finds nothing.
	if err := db.DeleteFile(ctx, alice, "file-2"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteFile(ctx, alice, "file-2"); !errors.Is(err, storage.ErrFileNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := db.FileContent(ctx, alice, "file-2"); !errors.Is(err, storage.ErrFileNotFound) {
		t.Errorf("content after delete: %v", err)
	}
	if ids, _ := list(storage.FileQuery{}); !slices.Equal(ids, []string{"file-3", "file-1"}) {
		t.Errorf("list after delete: %v", ids)
	}

	// Durable: a restarted store has the files and their bytes.
	db.Close()
	db = open(t)
	if got, err := db.FileContent(ctx, alice, "file-1"); err != nil || string(got) != "# notes\n" {
		t.Errorf("after reopen: %q %v", got, err)
	}
	if got, err := db.FileContent(ctx, bob, "file-b"); err != nil || string(got) != "bob" {
		t.Errorf("bob's after reopen: %q %v", got, err)
	}
}
