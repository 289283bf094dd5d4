package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// BenchmarkIngestE2E measures ingestion end to end over HTTP, embedded runtime and
// SQLite: a text file of 100 kB, about 250 chunks of 100 tokens (the script embedding
// model's; 20 overlapping) read, chunked by the model's tokenizer, embedded 32 chunks
// a call and stored, in chunks/s. The embedding calls take nearly all of it (the
// runtime runs each input on its own), so the number is the runtime's and the
// model's: with the script embedding model, what the runtime costs per input on
// this machine.
//
//	go test ./server -run '^$' -bench IngestE2E -benchtime 3x
func BenchmarkIngestE2E(b *testing.B) {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "hearth.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(b), Database: db}))
	defer srv.Close()
	_, key, _ := db.CreateKey(context.Background(), "bench")
	words := scriptmodel.DefaultEmbedWords
	var doc strings.Builder
	for i := 0; doc.Len() < 100_000; i++ {
		doc.WriteString(words[(i*7)%len(words)])
		if i%12 == 11 {
			doc.WriteString(". ")
		} else {
			doc.WriteByte(' ')
		}
	}
	file := uploadFile(b, srv, key, "bench.txt", "assistants", []byte(doc.String())).ID
	chunks := 0
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		code, _, body := call(b, nil, "POST", srv.URL+"/v1/vector_stores", key, fmt.Sprintf(`{"file_ids":[%q],
			"chunking_strategy":{"type":"static","static":{"max_chunk_size_tokens":100,"chunk_overlap_tokens":20}},
			"hearth":{"embedding_model":%q}}`, file, scriptmodel.EmbedModel))
		if code != 200 {
			b.Fatalf("create: %d %s", code, body)
		}
		var vs hearth.VectorStore
		for json.Unmarshal(body, &vs) == nil && vs.Status != "completed" {
			if vs.FileCounts.Failed > 0 {
				b.Fatalf("ingestion failed: %s", body)
			}
			time.Sleep(20 * time.Millisecond)
			_, _, body = call(b, nil, "GET", srv.URL+"/v1/vector_stores/"+vs.ID, key, "")
		}
		all, err := db.VectorStoreChunks(context.Background(), storage.OwnerOf(key), vs.ID)
		if err != nil || vs.Status != "completed" {
			b.Fatalf("%v: %s", err, body)
		}
		chunks += len(all)
	}
	b.ReportMetric(float64(chunks)/time.Since(start).Seconds(), "chunks/s")
	b.ReportMetric(float64(chunks/b.N), "chunks")
}
