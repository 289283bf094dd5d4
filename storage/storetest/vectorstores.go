package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"hearth/storage"
)

func storeIDs(stores []storage.VectorStore) []string {
	var ids []string
	for _, s := range stores {
		ids = append(ids, s.ID)
	}
	return ids
}

func attachedIDs(files []storage.VectorStoreFile) []string {
	var ids []string
	for _, f := range files {
		ids = append(ids, f.FileID)
	}
	return ids
}

func testVectorStores(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice, bob := storage.OwnerOf("alice"), storage.OwnerOf("bob")
	for _, f := range []storage.NewFile{
		{ID: "file-a", Owner: alice, Filename: "a.md", Purpose: "assistants", Content: []byte("alpha")},
		{ID: "file-b", Owner: alice, Filename: "b.txt", Purpose: "assistants", Content: []byte("beta")},
		{ID: "file-c", Owner: alice, Filename: "c.txt", Purpose: "assistants", Content: []byte("gamma")},
		{ID: "file-bob", Owner: bob, Filename: "bob.txt", Purpose: "assistants", Content: []byte("bob")},
	} {
		if err := db.CreateFile(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	chunking := storage.Chunking{MaxTokens: 800, OverlapTokens: 400}
	created := time.UnixMilli(time.Now().UnixMilli())
	err := db.CreateVectorStore(ctx, storage.NewVectorStore{
		ID: "vs-1", Owner: alice, Name: "docs", Model: "embed", Chunking: chunking, ExpiresAfterDays: 7,
		Metadata: json.RawMessage(`{"team":"x"}`), CreatedAt: created,
		Files: []storage.NewVectorStoreFile{
			{FileID: "file-a", Attributes: json.RawMessage(`{"lang":"en","year":2024}`), Chunking: chunking},
			{FileID: "file-b", Chunking: storage.Chunking{MaxTokens: 100, OverlapTokens: 0}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs-1", Owner: bob}); !errors.Is(err, storage.ErrExists) {
		t.Errorf("same id again: %v", err)
	}
	// A file of another owner attaches nothing, and the store is not created.
	err = db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs-x", Owner: alice,
		Files: []storage.NewVectorStoreFile{{FileID: "file-bob"}}})
	if !errors.Is(err, storage.ErrFileNotFound) {
		t.Errorf("bob's file in alice's store: %v", err)
	}
	if _, err := db.GetVectorStore(ctx, alice, "vs-x"); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("store of a refused create: %v", err)
	}
	if err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs-2", Owner: alice, Name: "empty"}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs-bob", Owner: bob}); err != nil {
		t.Fatal(err)
	}

	s, err := db.GetVectorStore(ctx, alice, "vs-1")
	if err != nil || s.Name != "docs" || s.Model != "embed" || s.Chunking != chunking || s.ExpiresAfterDays != 7 ||
		!s.CreatedAt.Equal(created) || !s.LastActiveAt.Equal(created) || string(s.Metadata) != `{"team":"x"}` ||
		s.Files != (storage.FileCounts{InProgress: 2, Total: 2}) || s.UsageBytes != 0 {
		t.Fatalf("get: %+v %v", s, err)
	}
	if !s.ExpiresAt().Equal(created.Add(7 * 24 * time.Hour)) {
		t.Errorf("expires at %v", s.ExpiresAt())
	}
	f, err := db.GetVectorStoreFile(ctx, alice, "vs-1", "file-a")
	if err != nil || f.Status != storage.FileInProgress || f.Chunking != chunking || f.Owner != alice ||
		string(f.Attributes) != `{"lang":"en","year":2024}` {
		t.Fatalf("get file: %+v %v", f, err)
	}
	if f, err := db.GetVectorStoreFile(ctx, alice, "vs-1", "file-b"); err != nil || string(f.Attributes) != `{}` {
		t.Errorf("no attributes: %+v %v", f, err)
	}

	// Another owner sees nothing and changes nothing.
	if _, err := db.GetVectorStore(ctx, bob, "vs-1"); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("bob get: %v", err)
	}
	if _, err := db.GetVectorStoreFile(ctx, bob, "vs-1", "file-a"); !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
		t.Errorf("bob get file: %v", err)
	}
	if err := db.AttachVectorStoreFiles(ctx, bob, "vs-1", "", []storage.NewVectorStoreFile{{FileID: "file-bob"}}); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("bob attaches: %v", err)
	}
	if err := db.DeleteVectorStore(ctx, bob, "vs-1"); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("bob deletes: %v", err)
	}
	if _, err := db.VectorStoreChunks(ctx, bob, "vs-1"); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("bob reads chunks: %v", err)
	}
	if _, _, err := db.ListVectorStoreFiles(ctx, bob, "vs-1", storage.VectorStoreFileQuery{}); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("bob lists files: %v", err)
	}

	// Lists: newest first, pages, order.
	stores, more, err := db.ListVectorStores(ctx, alice, storage.VectorStoreQuery{Limit: 1})
	if err != nil || !slices.Equal(storeIDs(stores), []string{"vs-2"}) || !more {
		t.Errorf("first page: %v %v %v", storeIDs(stores), more, err)
	}
	stores, more, err = db.ListVectorStores(ctx, alice, storage.VectorStoreQuery{After: "vs-2"})
	if err != nil || !slices.Equal(storeIDs(stores), []string{"vs-1"}) || more || stores[0].Files.Total != 2 {
		t.Errorf("second page: %+v %v %v", stores, more, err)
	}
	if stores, _, _ := db.ListVectorStores(ctx, alice, storage.VectorStoreQuery{Order: storage.Asc}); !slices.Equal(storeIDs(stores), []string{"vs-1", "vs-2"}) {
		t.Errorf("asc: %v", storeIDs(stores))
	}
	if _, _, err := db.ListVectorStores(ctx, alice, storage.VectorStoreQuery{After: "vs-bob"}); !errors.Is(err, storage.ErrInvalidCursor) {
		t.Errorf("bob's store as a cursor: %v", err)
	}

	// Update changes what is given.
	name, days := "renamed", 0
	s, err = db.UpdateVectorStore(ctx, alice, "vs-1", storage.VectorStoreUpdate{Name: &name, ExpiresAfterDays: &days})
	if err != nil || s.Name != "renamed" || s.ExpiresAfterDays != 0 || string(s.Metadata) != `{"team":"x"}` || !s.ExpiresAt().IsZero() {
		t.Errorf("update: %+v %v", s, err)
	}
	s, err = db.UpdateVectorStore(ctx, alice, "vs-1", storage.VectorStoreUpdate{Metadata: json.RawMessage(`{"team":"y"}`)})
	if err != nil || s.Name != "renamed" || string(s.Metadata) != `{"team":"y"}` {
		t.Errorf("update metadata: %+v %v", s, err)
	}
	if _, err := db.UpdateVectorStore(ctx, bob, "vs-1", storage.VectorStoreUpdate{Name: &name}); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("bob updates: %v", err)
	}
	later := created.Add(time.Hour)
	if err := db.TouchVectorStore(ctx, alice, "vs-1", later); err != nil {
		t.Fatal(err)
	}
	if s, _ := db.GetVectorStore(ctx, alice, "vs-1"); !s.LastActiveAt.Equal(later) {
		t.Errorf("touched: %v", s.LastActiveAt)
	}

	// Ingestion: a file completes with its chunks, once; another fails with its error.
	vec := []float32{0.6, -0.8, 0, 1e-7}
	chunks := []storage.NewChunk{{Text: "alpha one", Vector: vec}, {Text: "alpha two", Vector: []float32{1, 0, 0, 0}}}
	version := func() int64 {
		t.Helper()
		s, err := db.GetVectorStore(ctx, alice, "vs-1")
		if err != nil {
			t.Fatal(err)
		}
		return s.ChunksVersion
	}
	v0 := version()
	if err := db.CompleteVectorStoreFile(ctx, "vs-1", "file-a", chunks); err != nil {
		t.Fatal(err)
	}
	if v := version(); v == v0 {
		t.Errorf("chunks version unchanged by a file's chunks: %d", v)
	}
	if err := db.CompleteVectorStoreFile(ctx, "vs-1", "file-a", chunks); !errors.Is(err, storage.ErrFinished) {
		t.Errorf("completed twice: %v", err)
	}
	if err := db.FailVectorStoreFile(ctx, "vs-1", "file-b", storage.FileFailed, "unsupported_file", "not text"); err != nil {
		t.Fatal(err)
	}
	if err := db.FailVectorStoreFile(ctx, "vs-1", "file-b", storage.FileFailed, "x", "y"); !errors.Is(err, storage.ErrFinished) {
		t.Errorf("failed twice: %v", err)
	}
	if err := db.CompleteVectorStoreFile(ctx, "vs-1", "file-c", nil); !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
		t.Errorf("complete a file never attached: %v", err)
	}
	if f, _ := db.GetVectorStoreFile(ctx, alice, "vs-1", "file-b"); f.Status != storage.FileFailed || f.ErrorCode != "unsupported_file" || f.ErrorMsg != "not text" {
		t.Errorf("failed file: %+v", f)
	}
	s, _ = db.GetVectorStore(ctx, alice, "vs-1")
	if s.Files != (storage.FileCounts{Completed: 1, Failed: 1, Total: 2}) || s.UsageBytes != int64(len("alpha one")+len("alpha two")) {
		t.Errorf("counts after ingestion: %+v %d", s.Files, s.UsageBytes)
	}
	got, err := db.VectorStoreChunks(ctx, alice, "vs-1")
	if err != nil || len(got) != 2 {
		t.Fatalf("chunks: %+v %v", got, err)
	}
	if c := got[0]; c.FileID != "file-a" || c.Index != 0 || c.Text != "alpha one" || !slices.Equal(c.Vector, vec) ||
		c.Filename != "a.md" || string(c.Attributes) != `{"lang":"en","year":2024}` {
		t.Errorf("chunk 0: %+v", c)
	}
	if got[1].Index != 1 || got[1].Text != "alpha two" {
		t.Errorf("chunk 1: %+v", got[1])
	}

	// A batch attaches files together; its counts follow them; cancel stops those in
	// progress; the filters of the list.
	if err := db.AttachVectorStoreFiles(ctx, alice, "vs-1", "batch-1", []storage.NewVectorStoreFile{{FileID: "file-b"}, {FileID: "file-c"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.AttachVectorStoreFiles(ctx, alice, "vs-1", "batch-1", nil); !errors.Is(err, storage.ErrExists) {
		t.Errorf("batch id again: %v", err)
	}
	if f, _ := db.GetVectorStoreFile(ctx, alice, "vs-1", "file-b"); f.Status != storage.FileInProgress || f.ErrorCode != "" || f.BatchID != "batch-1" {
		t.Errorf("re-attached file starts over: %+v", f)
	}
	if err := db.CompleteVectorStoreFile(ctx, "vs-1", "file-b", []storage.NewChunk{{Text: "beta", Vector: []float32{0, 1, 0, 0}}}); err != nil {
		t.Fatal(err)
	}
	b, err := db.GetFileBatch(ctx, alice, "vs-1", "batch-1")
	if err != nil || b.StoreID != "vs-1" || b.Files != (storage.FileCounts{InProgress: 1, Completed: 1, Total: 2}) {
		t.Errorf("batch: %+v %v", b, err)
	}
	if _, err := db.GetFileBatch(ctx, alice, "vs-2", "batch-1"); !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
		t.Errorf("batch of another store: %v", err)
	}
	inProgress, err := db.InProgressVectorStoreFiles(ctx)
	if err != nil || !slices.Equal(attachedIDs(inProgress), []string{"file-c"}) || inProgress[0].Owner != alice || inProgress[0].StoreID != "vs-1" {
		t.Errorf("in progress: %+v %v", inProgress, err)
	}
	b, err = db.CancelFileBatch(ctx, alice, "vs-1", "batch-1")
	if err != nil || b.Files != (storage.FileCounts{Completed: 1, Cancelled: 1, Total: 2}) {
		t.Errorf("cancelled batch: %+v %v", b, err)
	}
	if err := db.CompleteVectorStoreFile(ctx, "vs-1", "file-c", nil); !errors.Is(err, storage.ErrFinished) {
		t.Errorf("complete a cancelled file: %v", err)
	}
	list := func(q storage.VectorStoreFileQuery) ([]string, bool) {
		t.Helper()
		files, more, err := db.ListVectorStoreFiles(ctx, alice, "vs-1", q)
		if err != nil {
			t.Fatal(err)
		}
		return attachedIDs(files), more
	}
	if ids, more := list(storage.VectorStoreFileQuery{}); !slices.Equal(ids, []string{"file-c", "file-b", "file-a"}) || more {
		t.Errorf("files: %v %v", ids, more)
	}
	if ids, more := list(storage.VectorStoreFileQuery{Limit: 1, Order: storage.Asc, After: "file-a"}); !slices.Equal(ids, []string{"file-b"}) || !more {
		t.Errorf("files page: %v %v", ids, more)
	}
	if ids, _ := list(storage.VectorStoreFileQuery{Status: storage.FileCompleted}); !slices.Equal(ids, []string{"file-b", "file-a"}) {
		t.Errorf("completed files: %v", ids)
	}
	if ids, _ := list(storage.VectorStoreFileQuery{BatchID: "batch-1", Status: storage.FileCancelled}); !slices.Equal(ids, []string{"file-c"}) {
		t.Errorf("cancelled files of the batch: %v", ids)
	}
	if _, _, err := db.ListVectorStoreFiles(ctx, alice, "vs-1", storage.VectorStoreFileQuery{After: "file-bob"}); !errors.Is(err, storage.ErrInvalidCursor) {
		t.Errorf("unknown cursor: %v", err)
	}

	// Attributes change on the file and on its chunks.
	v0 = version()
	f, err = db.UpdateVectorStoreFile(ctx, alice, "vs-1", "file-a", json.RawMessage(`{"lang":"fr"}`))
	if err != nil || string(f.Attributes) != `{"lang":"fr"}` || f.Status != storage.FileCompleted {
		t.Errorf("update attributes: %+v %v", f, err)
	}
	if v := version(); v == v0 {
		t.Errorf("chunks version unchanged by new attributes: %d", v)
	}
	if got, _ := db.VectorStoreChunks(ctx, alice, "vs-1"); string(got[0].Attributes) != `{"lang":"fr"}` {
		t.Errorf("chunk attributes after the update: %s", got[0].Attributes)
	}
	if _, err := db.UpdateVectorStoreFile(ctx, bob, "vs-1", "file-a", nil); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("bob updates attributes: %v", err)
	}
	if _, err := db.UpdateVectorStoreFile(ctx, alice, "vs-1", "file-nope", nil); !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
		t.Errorf("update a file not attached: %v", err)
	}
	if f, _ := db.UpdateVectorStoreFile(ctx, alice, "vs-1", "file-c", nil); f == nil || string(f.Attributes) != `{}` {
		t.Errorf("attributes cleared: %+v", f)
	}

	// Detach takes the file's chunks; deleting the upload keeps what was read.
	v0 = version()
	if err := db.DetachVectorStoreFile(ctx, alice, "vs-1", "file-b"); err != nil {
		t.Fatal(err)
	}
	if v := version(); v == v0 {
		t.Errorf("chunks version unchanged by a detach: %d", v)
	}
	v0 = version()
	if err := db.FailVectorStoreFile(ctx, "vs-1", "file-c", storage.FileFailed, "x", "y"); !errors.Is(err, storage.ErrFinished) {
		t.Errorf("fail a cancelled file: %v", err)
	}
	if err := db.TouchVectorStore(ctx, alice, "vs-1", time.Now()); err != nil || version() != v0 {
		t.Errorf("chunks version moved without a change of chunks: %v", err)
	}
	if err := db.DetachVectorStoreFile(ctx, alice, "vs-1", "file-b"); !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
		t.Errorf("detach twice: %v", err)
	}
	if err := db.DeleteFile(ctx, alice, "file-a"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.VectorStoreChunks(ctx, alice, "vs-1"); len(got) != 2 || got[0].FileID != "file-a" || got[0].Filename != "" {
		t.Errorf("chunks after detach and delete: %+v", got)
	}

	// Durable: a restarted store has it all.
	db.Close()
	db = open(t)
	if got, err := db.VectorStoreChunks(ctx, alice, "vs-1"); err != nil || len(got) != 2 || !slices.Equal(got[0].Vector, vec) {
		t.Errorf("chunks after reopen: %+v %v", got, err)
	}

	// Delete takes the store, its files and chunks; the uploads stay.
	if err := db.DeleteVectorStore(ctx, alice, "vs-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetVectorStore(ctx, alice, "vs-1"); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("get after delete: %v", err)
	}
	if err := db.DeleteVectorStore(ctx, alice, "vs-1"); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	if err := db.CompleteVectorStoreFile(ctx, "vs-1", "file-c", nil); !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
		t.Errorf("complete a file of a deleted store: %v", err)
	}
	if _, err := db.GetFile(ctx, alice, "file-c"); err != nil {
		t.Errorf("upload after its store's delete: %v", err)
	}
	// A new store of the same files starts clean.
	if err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs-3", Owner: alice,
		Files: []storage.NewVectorStoreFile{{FileID: "file-c"}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.VectorStoreChunks(ctx, alice, "vs-3"); err != nil || len(got) != 0 {
		t.Errorf("new store's chunks: %+v %v", got, err)
	}
}

// testExpiredVectorStores: DeleteExpiredVectorStores deletes the stores of every owner
// whose expiry (days after the last activity) is at or before the time given, with
// their files' attachments and chunks, and leaves the others.
func testExpiredVectorStores(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice, bob := storage.OwnerOf("alice"), storage.OwnerOf("bob")
	if err := db.CreateFile(ctx, storage.NewFile{ID: "file-a", Owner: alice, Filename: "a.md", Purpose: "assistants", Content: []byte("alpha")}); err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	now := time.UnixMilli(time.Now().UnixMilli())
	chunking := storage.Chunking{MaxTokens: 800, OverlapTokens: 400}
	for _, v := range []storage.NewVectorStore{
		{ID: "vs-old", Owner: alice, ExpiresAfterDays: 1, CreatedAt: now.Add(-2 * day),
			Files: []storage.NewVectorStoreFile{{FileID: "file-a", Chunking: chunking}}},
		{ID: "vs-edge", Owner: bob, ExpiresAfterDays: 2, CreatedAt: now.Add(-2 * day)},
		{ID: "vs-young", Owner: bob, ExpiresAfterDays: 3, CreatedAt: now.Add(-2 * day)},
		{ID: "vs-never", Owner: alice, CreatedAt: now.Add(-400 * day)},
	} {
		v.Model, v.Chunking = "embed", chunking
		if err := db.CreateVectorStore(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CompleteVectorStoreFile(ctx, "vs-old", "file-a", []storage.NewChunk{{Text: "alpha", Vector: []float32{1, 0}}}); err != nil {
		t.Fatal(err)
	}
	ids, err := db.DeleteExpiredVectorStores(ctx, now)
	if err != nil || !slices.Equal(ids, []string{"vs-edge", "vs-old"}) {
		t.Fatalf("deleted %v, %v; want vs-edge (at its expiry) and vs-old", ids, err)
	}
	if _, err := db.GetVectorStore(ctx, alice, "vs-old"); !errors.Is(err, storage.ErrVectorStoreNotFound) {
		t.Errorf("vs-old after: %v", err)
	}
	if chunks, err := db.VectorStoreChunks(ctx, alice, "vs-old"); err == nil && len(chunks) > 0 {
		t.Errorf("vs-old's chunks left: %d", len(chunks))
	}
	if _, err := db.GetFile(ctx, alice, "file-a"); err != nil {
		t.Errorf("the file itself is kept: %v", err)
	}
	for _, s := range []struct{ owner, id string }{{bob, "vs-young"}, {alice, "vs-never"}} {
		if _, err := db.GetVectorStore(ctx, s.owner, s.id); err != nil {
			t.Errorf("%s: %v", s.id, err)
		}
	}
	// Activity moves the expiry: touched now, vs-young expires 3 days from now.
	if err := db.TouchVectorStore(ctx, bob, "vs-young", now); err != nil {
		t.Fatal(err)
	}
	if ids, err := db.DeleteExpiredVectorStores(ctx, now.Add(2*day)); err != nil || len(ids) != 0 {
		t.Errorf("two days on: deleted %v, %v", ids, err)
	}
	if ids, err := db.DeleteExpiredVectorStores(ctx, now.Add(3*day)); err != nil || !slices.Equal(ids, []string{"vs-young"}) {
		t.Errorf("three days on: deleted %v, %v", ids, err)
	}
}

// A file's ingestion keeps its progress: attempts are counted before each starts
// and cleared by progress, chunks saved in progress are invisible to searches until
// the file completes, completing appends after them, and failing, or attaching the
// file again, drops them.
func testVectorStoreFileProgress(t *testing.T, open Opener) {
	ctx := context.Background()
	db := open(t)
	alice := storage.OwnerOf("alice")
	for _, id := range []string{"file-a", "file-b"} {
		if err := db.CreateFile(ctx, storage.NewFile{ID: id, Owner: alice, Filename: id + ".txt", Purpose: "assistants", Content: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs-1", Owner: alice, Model: "embed",
		Files: []storage.NewVectorStoreFile{{FileID: "file-a"}, {FileID: "file-b"}}}); err != nil {
		t.Fatal(err)
	}
	chunk := func(text string) storage.NewChunk { return storage.NewChunk{Text: text, Vector: []float32{1, 0}} }
	start := func(fileID string, wantAttempts, wantStored int) {
		t.Helper()
		attempts, stored, err := db.StartVectorStoreFileAttempt(ctx, "vs-1", fileID)
		if err != nil || attempts != wantAttempts || stored != wantStored {
			t.Fatalf("start %s: attempts %d stored %d %v, want %d and %d", fileID, attempts, stored, err, wantAttempts, wantStored)
		}
	}
	start("file-a", 1, 0)
	start("file-a", 2, 0) // the first attempt ended the process: it stays counted
	if err := db.SaveVectorStoreFileChunks(ctx, "vs-1", "file-a", 0, []storage.NewChunk{chunk("one"), chunk("two")}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.VectorStoreChunks(ctx, alice, "vs-1"); err != nil || len(got) != 0 {
		t.Fatalf("chunks of a file in progress are searched: %+v %v", got, err)
	}
	start("file-a", 1, 2) // progress cleared the attempts
	if err := db.SaveVectorStoreFileChunks(ctx, "vs-1", "file-a", 2, []storage.NewChunk{chunk("three")}); err != nil {
		t.Fatal(err)
	}
	// A batch saved again (two processes on one file) replaces, not duplicates.
	if err := db.SaveVectorStoreFileChunks(ctx, "vs-1", "file-a", 2, []storage.NewChunk{chunk("three")}); err != nil {
		t.Fatal(err)
	}
	if err := db.CompleteVectorStoreFile(ctx, "vs-1", "file-a", []storage.NewChunk{chunk("four")}); err != nil {
		t.Fatal(err)
	}
	got, err := db.VectorStoreChunks(ctx, alice, "vs-1")
	if err != nil || len(got) != 4 {
		t.Fatalf("chunks: %+v %v", got, err)
	}
	for i, want := range []string{"one", "two", "three", "four"} {
		if got[i].Index != i || got[i].Text != want {
			t.Errorf("chunk %d: %+v, want %q", i, got[i], want)
		}
	}
	if s, _ := db.GetVectorStore(ctx, alice, "vs-1"); s.UsageBytes != int64(len("onetwothreefour")) {
		t.Errorf("usage %d counts all the file's chunks", s.UsageBytes)
	}
	if _, _, err := db.StartVectorStoreFileAttempt(ctx, "vs-1", "file-a"); !errors.Is(err, storage.ErrFinished) {
		t.Errorf("start a completed file: %v", err)
	}
	if err := db.SaveVectorStoreFileChunks(ctx, "vs-1", "file-a", 4, []storage.NewChunk{chunk("late")}); !errors.Is(err, storage.ErrFinished) {
		t.Errorf("save chunks of a completed file: %v", err)
	}
	if _, _, err := db.StartVectorStoreFileAttempt(ctx, "vs-1", "file-x"); !errors.Is(err, storage.ErrVectorStoreFileNotFound) {
		t.Errorf("start a file never attached: %v", err)
	}

	// Failing drops what was saved; attaching again starts from nothing.
	start("file-b", 1, 0)
	if err := db.SaveVectorStoreFileChunks(ctx, "vs-1", "file-b", 0, []storage.NewChunk{chunk("b1")}); err != nil {
		t.Fatal(err)
	}
	start("file-b", 1, 1)
	if err := db.FailVectorStoreFile(ctx, "vs-1", "file-b", storage.FileFailed, "invalid_file", "bad"); err != nil {
		t.Fatal(err)
	}
	if err := db.AttachVectorStoreFiles(ctx, alice, "vs-1", "", []storage.NewVectorStoreFile{{FileID: "file-b"}}); err != nil {
		t.Fatal(err)
	}
	start("file-b", 1, 0)
	if err := db.CompleteVectorStoreFile(ctx, "vs-1", "file-b", []storage.NewChunk{chunk("b-new")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.VectorStoreChunks(ctx, alice, "vs-1"); len(got) != 5 || got[4].Text != "b-new" || got[4].Index != 0 {
		t.Errorf("chunks after file-b again: %+v", got)
	}
}
