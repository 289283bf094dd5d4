package server_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/filetext"
	"hearth/internal/pdftest"
	"hearth/internal/textchunk"
	"hearth/scriptmodel"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// TestInputFilePDFBombE2E: a one-page PDF of a megabyte whose content stream unpacks
// to a GiB of spaces, sent as an input_file, is refused with 413 file_too_large naming
// the part, after unpacking no more than the per-file bound; nothing runs.
func TestInputFilePDFBombE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	testenv.Model(t, plain)
	bomb := pdftest.Bomb(1024)
	before := filetext.Unpacked()
	code, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":[`+userWithFile("What does it say?",
		map[string]string{"file_data": "data:application/pdf;base64," + base64.StdEncoding.EncodeToString(bomb), "filename": "bomb.pdf"})+`]`))
	gotCode, gotParam := errCode(b)
	if code != 413 || gotCode != "file_too_large" || gotParam != "input[0].content[1]" || !strings.Contains(string(b), "bomb.pdf") {
		t.Errorf("the bomb: %d %s", code, b)
	}
	if n, bound := filetext.Unpacked()-before, filetext.DefaultLimits.UnpackedBytes; n > bound+1<<20 {
		t.Errorf("unpacked %d bytes reading a %d-byte file, bound %d", n, len(bomb), bound)
	}
}

// TestVectorStoreHostilePDFE2E: in one key's store, the PDF bomb and a page tree that
// lists one page 200,000 times each fail with invalid_file and say why, while another
// key's text file in another store completes.
func TestVectorStoreHostilePDFE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	_, bob, _ := db.CreateKey(ctx, "bob")
	bomb := uploadFile(t, srv, alice, "bomb.pdf", "assistants", pdftest.Bomb(1024)).ID
	kids := uploadFile(t, srv, alice, "kids.pdf", "assistants", pdftest.RepeatedKids(200_000)).ID
	notes := uploadFile(t, srv, bob, "notes.txt", "assistants", []byte("The kettle ships on Tuesday.")).ID
	var hostile, other hearth.VectorStore
	convDo(t, srv, alice, "POST", "/v1/vector_stores", fmt.Sprintf(`{"file_ids":[%q,%q],"hearth":{"embedding_model":%q}}`,
		bomb, kids, scriptmodel.EmbedModel), &hostile)
	convDo(t, srv, bob, "POST", "/v1/vector_stores", fmt.Sprintf(`{"file_ids":[%q],"hearth":{"embedding_model":%q}}`,
		notes, scriptmodel.EmbedModel), &other)
	for key, vs := range map[string]*hearth.VectorStore{alice: &hostile, bob: &other} {
		*vs = waitVectorStore(t, func() hearth.VectorStore {
			var v hearth.VectorStore
			convDo(t, srv, key, "GET", "/v1/vector_stores/"+vs.ID, "", &v)
			return v
		})
	}
	if hostile.FileCounts != (hearth.FileCounts{Failed: 2, Total: 2}) {
		t.Errorf("the hostile store: %+v", hostile.FileCounts)
	}
	for id, why := range map[string]string{bomb: "unpacks to more than", kids: "too complex"} {
		var f hearth.VectorStoreFile
		convDo(t, srv, alice, "GET", "/v1/vector_stores/"+hostile.ID+"/files/"+id, "", &f)
		if f.Status != "failed" || f.LastError == nil || f.LastError.Code != "invalid_file" || !strings.Contains(f.LastError.Message, why) {
			t.Errorf("file %s: %s %+v, want invalid_file saying %q", id, f.Status, f.LastError, why)
		}
	}
	if other.FileCounts != (hearth.FileCounts{Completed: 1, Total: 1}) {
		t.Errorf("the other key's store: %+v", other.FileCounts)
	}
}

// TestVectorStoreDeleteCancelsParseE2E: with one ingestion worker, a PDF whose
// reading is in progress (held waiting for room to unpack) stops when its store is
// deleted: the worker is free again, and another key's file completes while the
// room is still held.
func TestVectorStoreDeleteCancelsParseE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{IngestWorkers: 1})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	_, bob, _ := db.CreateKey(ctx, "bob")
	release, err := filetext.HoldUnpacking(ctx, filetext.DefaultLimits.UnpackedTotal)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	pdf := uploadFile(t, srv, alice, "report.pdf", "assistants", pdftest.Pages("BT (The kettle ships on Tuesday.) Tj ET")).ID
	var held hearth.VectorStore
	convDo(t, srv, alice, "POST", "/v1/vector_stores", fmt.Sprintf(`{"file_ids":[%q],"hearth":{"embedding_model":%q}}`,
		pdf, scriptmodel.EmbedModel), &held)
	var deleted hearth.Deleted
	convDo(t, srv, alice, "DELETE", "/v1/vector_stores/"+held.ID, "", &deleted)
	if !deleted.Deleted {
		t.Fatalf("delete: %+v", deleted)
	}
	notes := uploadFile(t, srv, bob, "notes.txt", "assistants", []byte("The kettle ships on Tuesday.")).ID
	var other hearth.VectorStore
	convDo(t, srv, bob, "POST", "/v1/vector_stores", fmt.Sprintf(`{"file_ids":[%q],"hearth":{"embedding_model":%q}}`,
		notes, scriptmodel.EmbedModel), &other)
	other = waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, bob, "GET", "/v1/vector_stores/"+other.ID, "", &v)
		return v
	})
	if other.FileCounts != (hearth.FileCounts{Completed: 1, Total: 1}) {
		t.Errorf("the other store, with the worker's read cancelled: %+v", other.FileCounts)
	}
}

func httptestServer(t *testing.T, h *wire.Hearth) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// closeVectors compares an embedding as the runtime answers it with the script
// model's own, within float32 rounding.
func closeVectors(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-4 {
			return false
		}
	}
	return true
}

// openData opens (again) the database of a data directory, as a restarted hearth does.
func openData(t *testing.T, dir string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestVectorStoreAttemptsUsedUpE2E: a file whose ingestion was started
// maxIngestAttempts times by processes that each died before finishing (what three
// OOM-killed starts leave in the data directory: the attempts counted before each
// began) is failed by the next start instead of being read again; a file in progress
// beside it is resumed and completes.
func TestVectorStoreAttemptsUsedUpE2E(t *testing.T) {
	dir := t.TempDir()
	db := openData(t, dir)
	ctx := context.Background()
	_, secret, _ := db.CreateKey(ctx, "alice")
	who := storage.OwnerOf(secret)
	for id, content := range map[string][]byte{"file-bomb": pdftest.Bomb(64), "file-ok": []byte("The kettle ships on Tuesday.")} {
		name := map[string]string{"file-bomb": "bomb.pdf", "file-ok": "ok.txt"}[id]
		if err := db.CreateFile(ctx, storage.NewFile{ID: id, Owner: who, Filename: name, Purpose: "assistants", Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	chunking := storage.Chunking{MaxTokens: 800, OverlapTokens: 400}
	if err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs_crashed", Owner: who, Model: scriptmodel.EmbedModel, Chunking: chunking,
		Files: []storage.NewVectorStoreFile{{FileID: "file-bomb", Chunking: chunking}, {FileID: "file-ok", Chunking: chunking}}}); err != nil {
		t.Fatal(err)
	}
	for range 3 { // three starts, each killed while reading the file
		if _, _, err := db.StartVectorStoreFileAttempt(ctx, "vs_crashed", "file-bomb"); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	db = openData(t, dir)
	h := wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db})
	srv := httptestServer(t, h)
	before := filetext.Unpacked()
	if n, err := h.VectorStores.ResumeIngestion(ctx); err != nil || n != 2 {
		t.Fatalf("resumed %d, %v", n, err)
	}
	vs := waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, secret, "GET", "/v1/vector_stores/vs_crashed", "", &v)
		return v
	})
	if vs.FileCounts != (hearth.FileCounts{Completed: 1, Failed: 1, Total: 2}) {
		t.Errorf("after the restart: %+v", vs.FileCounts)
	}
	var f hearth.VectorStoreFile
	convDo(t, srv, secret, "GET", "/v1/vector_stores/vs_crashed/files/file-bomb", "", &f)
	if f.Status != "failed" || f.LastError == nil || f.LastError.Code != "invalid_file" || !strings.Contains(f.LastError.Message, "3 times") {
		t.Errorf("the file whose attempts are used up: %s %+v", f.Status, f.LastError)
	}
	if n := filetext.Unpacked() - before; n != 0 {
		t.Errorf("the file was read again: %d bytes unpacked", n)
	}
}

// TestVectorStoreResumeFromProgressE2E: a file of five batches of chunks, of which a
// stopped process stored two (written here straight to the database, as it leaves
// them, with vectors no embedding gives), is resumed after them: those two batches
// keep their vectors (they were not embedded again), the rest are embedded, and the
// file completes with all its chunks in order.
func TestVectorStoreResumeFromProgressE2E(t *testing.T) {
	dir := t.TempDir()
	db := openData(t, dir)
	ctx := context.Background()
	_, secret, _ := db.CreateKey(ctx, "alice")
	who := storage.OwnerOf(secret)
	e := testenv.Embedder(t)
	embed := e.Embed
	if testenv.RunsLlamaServer(t) {
		embed = e.EmbedFramed
	}
	var doc strings.Builder
	for i := range 200 {
		fmt.Fprintf(&doc, "Line %d: the kettle ships on Tuesday.\n", i)
	}
	chunking := storage.Chunking{MaxTokens: 20, OverlapTokens: 0}
	texts, err := textchunk.Split(doc.String(), chunking.MaxTokens, chunking.OverlapTokens, scriptTokens(e))
	if err != nil {
		t.Fatal(err)
	}
	const batch, done = 32, 64
	if len(texts) <= done+batch {
		t.Fatalf("the document is %d chunks, want more than two batches after the stored ones", len(texts))
	}
	if err := db.CreateFile(ctx, storage.NewFile{ID: "file-long", Owner: who, Filename: "long.txt", Purpose: "assistants", Content: []byte(doc.String())}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs_long", Owner: who, Model: scriptmodel.EmbedModel, Chunking: chunking,
		Files: []storage.NewVectorStoreFile{{FileID: "file-long", Chunking: chunking}}}); err != nil {
		t.Fatal(err)
	}
	marker := make([]float32, e.Width())
	marker[0] = 42
	if _, _, err := db.StartVectorStoreFileAttempt(ctx, "vs_long", "file-long"); err != nil {
		t.Fatal(err)
	}
	for from := 0; from < done; from += batch {
		chunks := make([]storage.NewChunk, batch)
		for i := range chunks {
			chunks[i] = storage.NewChunk{Text: texts[from+i], Vector: marker}
		}
		if err := db.SaveVectorStoreFileChunks(ctx, "vs_long", "file-long", from, chunks); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	db = openData(t, dir)
	h := wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db})
	srv := httptestServer(t, h)
	if n, err := h.VectorStores.ResumeIngestion(ctx); err != nil || n != 1 {
		t.Fatalf("resumed %d, %v", n, err)
	}
	vs := waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, secret, "GET", "/v1/vector_stores/vs_long", "", &v)
		return v
	})
	if vs.FileCounts != (hearth.FileCounts{Completed: 1, Total: 1}) {
		t.Fatalf("after resuming: %+v", vs.FileCounts)
	}
	got, err := db.VectorStoreChunks(ctx, who, "vs_long")
	if err != nil || len(got) != len(texts) {
		t.Fatalf("%d chunks, want %d (%v)", len(got), len(texts), err)
	}
	for i, c := range got {
		if c.Index != i || c.Text != texts[i] {
			t.Fatalf("chunk %d: %d %q, want %q", i, c.Index, c.Text, texts[i])
		}
		if reembedded := !slices.Equal(c.Vector, marker); i < done && reembedded {
			t.Errorf("chunk %d, stored before the restart, was embedded again", i)
		} else if i >= done && !closeVectors(c.Vector, embed(c.Text)) {
			t.Errorf("chunk %d after the restart: not its embedding", i)
		}
	}
}
