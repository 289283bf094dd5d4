package vectorstores_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/engine/pool"
	"hearth/filesearch"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
	"hearth/vectorstores"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// The service is what the file_search kind is handed.
var _ filesearch.Stores = (*vectorstores.Service)(nil)

// TestServiceE2E: the service alone, with no HTTP server, over SQLite and the embedded
// runtime's script embedding model: a file stored, a vector store of it ingested in
// the background, searched through the API's search and through the file_search
// kind's (the same results), the store another owner's as missing, a request's
// input_file read into the text the model sees, and a deleted store gone from both.
func TestServiceE2E(t *testing.T) {
	testenv.Embedder(t)
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	rt, err := pool.New([]pool.Runtime{testenv.Runtime(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	svc := vectorstores.New(vectorstores.Config{Store: db, Runtime: rt, MaxFileBytes: 1 << 20, RequestFileBytes: 1 << 20})
	t.Cleanup(svc.Close)

	const handbook = "# Handbook\n\nNew hires get 20 days of leave in their first year.\n"
	f, err := svc.CreateFile(ctx, "alice", "assistants", "handbook.md", []byte(handbook))
	if err != nil || f.Bytes != int64(len(handbook)) || f.Filename != "handbook.md" {
		t.Fatalf("file %+v %v", f, err)
	}
	var create vectorstores.CreateRequest
	if err := json.Unmarshal([]byte(`{"name":"docs","file_ids":["`+f.ID+`"],"hearth":{"embedding_model":"`+scriptmodel.EmbedModel+`"}}`), &create); err != nil {
		t.Fatal(err)
	}
	v, err := svc.CreateVectorStore(ctx, "alice", create)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for v.Status == "in_progress" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if v, err = svc.GetVectorStore(ctx, "alice", v.ID); err != nil {
			t.Fatal(err)
		}
	}
	if v.Status != "completed" || v.FileCounts.Completed != 1 {
		t.Fatalf("store %+v", v)
	}

	q, err := vectorstores.ParseSearch(vectorstores.SearchRequest{Query: json.RawMessage(`"` + scriptmodel.FileSearchQuery + `"`)})
	if err != nil {
		t.Fatal(err)
	}
	// The file is one chunk, its text without the blank at its end.
	chunk := strings.TrimSpace(handbook)
	page, err := svc.Search(ctx, "alice", v.ID, q)
	if err != nil || len(page.Data) != 1 || page.Data[0].FileID != f.ID || page.Data[0].Content[0].Text != chunk {
		t.Fatalf("search %+v %v", page, err)
	}
	found, err := svc.SearchVectorStores(ctx, "alice", filesearch.FileSearchQuery{VectorStoreIDs: []string{v.ID}, Queries: []string{scriptmodel.FileSearchQuery}})
	if err != nil || len(found) != 1 || found[0].FileID != f.ID || found[0].Text != chunk || found[0].Score != page.Data[0].Score {
		t.Fatalf("file search %+v %v, want the search's %+v", found, err, page.Data)
	}
	if i, err := svc.MissingVectorStore(ctx, "bob", []string{v.ID}); i != 0 || err != nil {
		t.Errorf("bob's missing store: %d %v", i, err)
	}
	if i, err := svc.MissingVectorStore(ctx, "alice", []string{v.ID}); i != -1 || err != nil {
		t.Errorf("alice's store: %d %v", i, err)
	}

	items := []hearth.Item{{Type: "message", Role: "user", Content: []hearth.ContentPart{{Type: hearth.PartInputFile, FileID: f.ID}}}}
	if err := svc.ResolveFiles(ctx, "alice", items, "input"); err != nil {
		t.Fatal(err)
	}
	if text, ok := items[0].Content[0].FileText(); !ok || text != handbook || items[0].Content[0].Filename != "handbook.md" {
		t.Errorf("resolved part %+v", items[0].Content[0])
	}
	other := []hearth.Item{{Type: "message", Role: "user", Content: []hearth.ContentPart{{Type: hearth.PartInputFile, FileID: f.ID}}}}
	var he *hearth.Error
	if err := svc.ResolveFiles(ctx, "bob", other, "input"); !errors.As(err, &he) || he.Status != 404 || he.Param != "input[0].content[0].file_id" {
		t.Errorf("bob reading alice's file: %v", err)
	}

	if err := svc.DeleteVectorStore(ctx, "alice", v.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Search(ctx, "alice", v.ID, q); !errors.As(err, &he) || he.Status != 404 {
		t.Errorf("search of a deleted store: %v", err)
	}
	if _, err := svc.SearchVectorStores(ctx, "alice", filesearch.FileSearchQuery{VectorStoreIDs: []string{v.ID}, Queries: []string{"leave"}}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("file search of a deleted store: %v", err)
	}
}
