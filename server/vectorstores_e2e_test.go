package server_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/textchunk"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage"
)

type vectorStorePage struct {
	Data    []hearth.VectorStore `json:"data"`
	FirstID *string              `json:"first_id"`
	HasMore bool                 `json:"has_more"`
}

type vectorStoreFilePage struct {
	Data    []hearth.VectorStoreFile `json:"data"`
	HasMore bool                     `json:"has_more"`
}

// waitVectorStore polls the store until no file is in progress.
func waitVectorStore(t *testing.T, get func() hearth.VectorStore) hearth.VectorStore {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		v := get()
		if v.Status != "in_progress" {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("vector store still in progress: %+v", v)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestVectorStoresE2E: files uploaded, a vector store made of them with the script
// embedding model, ingested in the background; a damaged file fails alone with its
// error; searches answer the chunks in the order and with the scores the script
// embedder's vectors give, filtered by attributes and bounded as asked.
func TestVectorStoresE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	_, bob, _ := db.CreateKey(ctx, "bob")
	e := testenv.Embedder(t)
	// Ollama 0.30 and later embed in llama.cpp's server, which frames every text with
	// [CLS] and [SEP].
	embed := e.Embed
	if testenv.RunsLlamaServer(t) {
		embed = e.EmbedFramed
	}

	var handbook strings.Builder
	handbook.WriteString("# Handbook\n\n")
	for i := range 12 {
		fmt.Fprintf(&handbook, "New hires get %d days of leave in their first year.\n", 20+i)
	}
	texts := map[string]string{
		"kettle.md":   "# Release notes\n\nThe kettle ships on Tuesday.\n",
		"handbook.md": handbook.String(),
		"ops.txt":     "The kettle team is on call on Tuesday.\n",
	}
	ids := map[string]string{}
	for _, name := range []string{"kettle.md", "handbook.md", "ops.txt"} {
		ids[name] = uploadFile(t, srv, alice, name, "assistants", []byte(texts[name])).ID
	}
	broken := uploadFile(t, srv, alice, "broken.pdf", "assistants", []byte("%PDF-1.7\nnot a PDF at all")).ID

	// The store: two files at creation, a static strategy, the script embedding model.
	create := fmt.Sprintf(`{"name":"docs","file_ids":[%q,%q],"metadata":{"team":"kettle"},
		"chunking_strategy":{"type":"static","static":{"max_chunk_size_tokens":100,"chunk_overlap_tokens":20}},
		"expires_after":{"anchor":"last_active_at","days":7},"hearth":{"embedding_model":%q}}`,
		ids["kettle.md"], ids["handbook.md"], scriptmodel.EmbedModel)
	var vs hearth.VectorStore
	convDo(t, srv, alice, "POST", "/v1/vector_stores", create, &vs)
	if !strings.HasPrefix(vs.ID, "vs_") || vs.Object != "vector_store" || vs.Name != "docs" || vs.FileCounts.Total != 2 ||
		vs.Metadata["team"] != "kettle" || vs.Hearth.EmbeddingModel != scriptmodel.EmbedModel ||
		vs.ExpiresAfter == nil || vs.ExpiresAfter.Days != 7 || vs.ExpiresAt == nil {
		t.Fatalf("created %+v", vs)
	}
	// A file with attributes, and the damaged one, attached as a batch, each with its own.
	var batch hearth.VectorStoreFilesBatch
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches", fmt.Sprintf(`{"files":[
		{"file_id":%q,"attributes":{"team":"ops","year":2025}},{"file_id":%q}]}`, ids["ops.txt"], broken), &batch)
	if !strings.HasPrefix(batch.ID, "vsfb_") || batch.VectorStoreID != vs.ID || batch.FileCounts.Total != 2 {
		t.Fatalf("batch %+v", batch)
	}

	get := func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID, "", &v)
		return v
	}
	vs = waitVectorStore(t, get)
	if vs.Status != "completed" || vs.FileCounts != (hearth.FileCounts{Completed: 3, Failed: 1, Total: 4}) || vs.UsageBytes == 0 {
		t.Fatalf("ingested %+v", vs)
	}
	var bad hearth.VectorStoreFile
	convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID+"/files/"+broken, "", &bad)
	if bad.Status != "failed" || bad.LastError == nil || bad.LastError.Code != "invalid_file" || !strings.Contains(bad.LastError.Message, "broken.pdf") {
		t.Errorf("the damaged file: %+v %+v", bad, bad.LastError)
	}
	convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID+"/file_batches/"+batch.ID, "", &batch)
	if batch.Status != "completed" || batch.FileCounts != (hearth.FileCounts{Completed: 1, Failed: 1, Total: 2}) {
		t.Errorf("batch after ingestion %+v", batch)
	}
	// Cancelling a finished batch changes nothing; its files list as the batch's.
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/file_batches/"+batch.ID+"/cancel", "", &batch)
	if batch.Status != "completed" || batch.FileCounts != (hearth.FileCounts{Completed: 1, Failed: 1, Total: 2}) {
		t.Errorf("batch cancelled after ingestion %+v", batch)
	}
	var files vectorStoreFilePage
	convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID+"/file_batches/"+batch.ID+"/files?filter=failed", "", &files)
	if len(files.Data) != 1 || files.Data[0].ID != broken {
		t.Errorf("the batch's failed files: %+v", files.Data)
	}
	convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID+"/files?filter=completed&order=asc", "", &files)
	var got []string
	for _, f := range files.Data {
		got = append(got, f.ID)
	}
	if want := []string{ids["kettle.md"], ids["handbook.md"], ids["ops.txt"]}; !slices.Equal(got, want) {
		t.Errorf("completed files %v, want %v", got, want)
	}
	if f := files.Data[2]; f.Attributes["team"] != "ops" || f.Attributes["year"] != 2025.0 || f.ChunkingStrategy.Static.MaxChunkSizeTokens != 100 || f.UsageBytes == 0 {
		t.Errorf("ops.txt %+v", f)
	}

	// The expected results: every chunk as textchunk cuts it with the script
	// embedder's tokenizer, scored by its vectors.
	type chunk struct{ fileID, filename, text string }
	var chunks []chunk
	for _, name := range []string{"kettle.md", "handbook.md", "ops.txt"} {
		split, err := textchunk.Split(texts[name], 100, 20, scriptTokens(e))
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range split {
			chunks = append(chunks, chunk{ids[name], name, text})
		}
	}
	if len(chunks) < 4 {
		t.Fatalf("the handbook should make several chunks: %d in all", len(chunks))
	}
	expect := func(query string, keep func(chunk) bool) (want []chunk, scores []float64) {
		q := embed(query)
		type scored struct {
			chunk
			score float64
		}
		var all []scored
		for _, c := range chunks {
			if keep == nil || keep(c) {
				var s float64
				for i, x := range embed(c.text) {
					s += float64(x) * float64(q[i])
				}
				all = append(all, scored{c, s})
			}
		}
		slices.SortStableFunc(all, func(a, b scored) int {
			switch {
			case a.score > b.score:
				return -1
			case a.score < b.score:
				return 1
			}
			return 0
		})
		for _, s := range all {
			want, scores = append(want, s.chunk), append(scores, s.score)
		}
		return want, scores
	}
	search := func(body string) hearth.VectorStoreSearchPage {
		t.Helper()
		var page hearth.VectorStoreSearchPage
		convDo(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/search", body, &page)
		return page
	}
	check := func(what string, page hearth.VectorStoreSearchPage, want []chunk, scores []float64) {
		t.Helper()
		if len(page.Data) != len(want) {
			t.Fatalf("%s: %d results, want %d: %+v", what, len(page.Data), len(want), page.Data)
		}
		for i, r := range page.Data {
			if r.FileID != want[i].fileID || r.Filename != want[i].filename || len(r.Content) != 1 ||
				r.Content[0].Text != want[i].text || math.Abs(r.Score-scores[i]) > 1e-4 {
				t.Errorf("%s: result %d is %s %q (%.5f), want %s %q (%.5f)", what, i, r.Filename, r.Content,
					r.Score, want[i].filename, want[i].text, scores[i])
			}
		}
	}

	want, scores := expect("When does the kettle ship?", nil)
	page := search(`{"query":"When does the kettle ship?"}`)
	if page.Object != "vector_store.search_results.page" || !slices.Equal(page.SearchQuery, []string{"When does the kettle ship?"}) || page.HasMore {
		t.Errorf("page %+v", page)
	}
	check("kettle", page, want, scores)
	if want[0].filename != "kettle.md" {
		t.Errorf("the kettle's release note is not first: %+v", want[0])
	}
	if r := page.Data[len(page.Data)-1]; r.Filename == "ops.txt" && r.Attributes["team"] != "ops" {
		t.Errorf("attributes of a result: %+v", r)
	}

	want, scores = expect("days of leave", nil)
	check("max_num_results", search(`{"query":"days of leave","max_num_results":2}`), want[:2], scores[:2])

	want, scores = expect("kettle", func(c chunk) bool { return c.filename == "ops.txt" })
	check("filter", search(`{"query":"kettle","filters":{"type":"and","filters":[
		{"type":"eq","key":"team","value":"ops"},{"type":"gte","key":"year","value":2025}]}}`), want, scores)

	want, scores = expect("kettle", nil)
	threshold := (scores[0] + scores[1]) / 2
	check("score_threshold", search(fmt.Sprintf(`{"query":"kettle","ranking_options":{"score_threshold":%f}}`, threshold)), want[:1], scores[:1])

	// Several queries: each chunk at its best score over them.
	a, as := expect("kettle", nil)
	b, bs := expect("leave", nil)
	best := map[string]float64{}
	for i, c := range a {
		best[c.fileID+c.text] = max(best[c.fileID+c.text], as[i])
	}
	for i, c := range b {
		best[c.fileID+c.text] = max(best[c.fileID+c.text], bs[i])
	}
	page = search(`{"query":["kettle","leave"],"max_num_results":50}`)
	if len(page.Data) != len(chunks) {
		t.Errorf("two queries: %d results, want %d", len(page.Data), len(chunks))
	}
	for i, r := range page.Data {
		if s := best[r.FileID+r.Content[0].Text]; math.Abs(r.Score-s) > 1e-4 || (i > 0 && r.Score > page.Data[i-1].Score) {
			t.Errorf("two queries: result %d %s scores %.5f, want %.5f, in order", i, r.Filename, r.Score, s)
		}
	}

	// The store's index was built once and kept: the four searches after the first hit it,
	// and its memory is on /metrics.
	_, admin, _ := db.CreateKeyAs(ctx, "ops", storage.RoleAdmin)
	code, _, metrics := call(t, nil, "GET", srv.URL+"/metrics", admin, "")
	if code != 200 {
		t.Fatalf("metrics: %d %s", code, metrics)
	}
	metric := func(name string) float64 {
		for _, line := range strings.Split(string(metrics), "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				var f float64
				fmt.Sscan(v, &f)
				return f
			}
		}
		t.Errorf("no %s in /metrics", name)
		return 0
	}
	if hits, entries, bytes := metric("hearth_vector_index_cache_hits_total"), metric("hearth_vector_index_cache_entries"),
		metric("hearth_vector_index_cache_bytes"); hits != 4 || entries != 1 || bytes < float64(len(chunks)*e.Width()*4) {
		t.Errorf("vector index cache: %v hits, %v entries, %v bytes", hits, entries, bytes)
	}

	// Lists, update, another key, errors naming the field.
	var stores vectorStorePage
	convDo(t, srv, alice, "GET", "/v1/vector_stores?limit=1", "", &stores)
	if len(stores.Data) != 1 || stores.Data[0].ID != vs.ID || stores.HasMore {
		t.Errorf("list %+v", stores)
	}
	var updated hearth.VectorStore
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID, `{"name":"kettle docs","expires_after":null}`, &updated)
	if updated.Name != "kettle docs" || updated.ExpiresAfter != nil || updated.ExpiresAt != nil || updated.Metadata["team"] != "kettle" {
		t.Errorf("updated %+v", updated)
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/vector_stores/" + vs.ID, ""},
		{"POST", "/v1/vector_stores/" + vs.ID + "/search", `{"query":"kettle"}`},
		{"DELETE", "/v1/vector_stores/" + vs.ID, ""},
		{"GET", "/v1/vector_stores/vs_nope/files", ""},
	} {
		convRefused(t, srv, bob, r.method, r.path, r.body, 404, "vector_store_not_found", "vector_store_id")
	}
	convRefused(t, srv, bob, "POST", "/v1/vector_stores/"+vs.ID+"/files", `{"file_id":"`+ids["ops.txt"]+`"}`, 404, "vector_store_not_found", "vector_store_id")
	convRefused(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID+"/files/file_nope", "", 404, "file_not_found", "file_id")
	path := "/v1/vector_stores/" + vs.ID + "/search"
	for _, c := range []struct{ body, code, param string }{
		{`{}`, "missing_required_parameter", "query"},
		{`{"query":""}`, "empty_string", "query"},
		{`{"query":["a",""]}`, "empty_string", "query[1]"},
		{`{"query":"a","max_num_results":51}`, "invalid_value", "max_num_results"},
		{`{"query":"a","filters":{"type":"like","key":"a","value":1}}`, "invalid_value", "filters.type"},
		{`{"query":"a","filters":{"type":"or","filters":[{"type":"eq","key":"a"}]}}`, "invalid_value", "filters.filters[0].value"},
		{`{"query":"a","ranking_options":{"score_threshold":1.5}}`, "invalid_value", "ranking_options.score_threshold"},
	} {
		convRefused(t, srv, alice, "POST", path, c.body, 400, c.code, c.param)
	}
	for _, c := range []struct{ body, code, param string }{
		{`{"file_ids":["file_nope"]}`, "file_not_found", "file_ids[0]"},
		{`{"file_ids":["` + ids["ops.txt"] + `"],"chunking_strategy":{"type":"static","static":{"max_chunk_size_tokens":50,"chunk_overlap_tokens":0}}}`, "invalid_value", "chunking_strategy.static.max_chunk_size_tokens"},
		{`{"chunking_strategy":{"type":"static","static":{"max_chunk_size_tokens":200,"chunk_overlap_tokens":101}}}`, "invalid_value", "chunking_strategy.static.chunk_overlap_tokens"},
		{`{"expires_after":{"anchor":"created_at","days":1}}`, "invalid_value", "expires_after.anchor"},
		{`{"hearth":{"embedding_model":"no-such-model"}}`, "model_not_found", "hearth.embedding_model"},
	} {
		status := 400
		if c.code == "file_not_found" {
			status = 404
		}
		convRefused(t, srv, alice, "POST", "/v1/vector_stores", c.body, status, c.code, c.param)
	}
	convRefused(t, srv, bob, "POST", "/v1/vector_stores", `{"file_ids":["`+ids["ops.txt"]+`"]}`, 404, "file_not_found", "file_ids[0]")

	// New attributes: the filter follows them.
	var updatedFile hearth.VectorStoreFile
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/files/"+ids["kettle.md"], `{"attributes":{"team":"ops","year":2026}}`, &updatedFile)
	if updatedFile.Attributes["team"] != "ops" || updatedFile.Status != "completed" {
		t.Errorf("updated attributes %+v", updatedFile)
	}
	var found []string
	for _, r := range search(`{"query":"kettle","filters":{"type":"eq","key":"team","value":"ops"}}`).Data {
		found = append(found, r.Filename)
	}
	if !slices.Equal(found, []string{"kettle.md", "ops.txt"}) {
		t.Errorf("after the update, the ops files found: %v", found)
	}
	convRefused(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/files/"+ids["kettle.md"], `{"attributes":{"a":[1]}}`, 400, "invalid_type", "attributes.a")
	convRefused(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/files/"+ids["kettle.md"], `{}`, 400, "missing_required_parameter", "attributes")

	// Detach a file: its chunks leave the search. Delete the store: the files stay.
	convDo(t, srv, alice, "DELETE", "/v1/vector_stores/"+vs.ID+"/files/"+ids["kettle.md"], "", nil)
	for _, r := range search(`{"query":"kettle","max_num_results":50}`).Data {
		if r.FileID == ids["kettle.md"] {
			t.Errorf("a detached file's chunk found: %+v", r)
		}
	}
	var deleted hearth.Deleted
	convDo(t, srv, alice, "DELETE", "/v1/vector_stores/"+vs.ID, "", &deleted)
	if !deleted.Deleted || deleted.Object != "vector_store.deleted" {
		t.Errorf("deleted %+v", deleted)
	}
	convRefused(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID, "", 404, "vector_store_not_found", "vector_store_id")
	convDo(t, srv, alice, "GET", "/v1/files/"+ids["kettle.md"], "", nil)

	// Without the extension field, the only embedding model the runtime serves.
	var plain hearth.VectorStore
	convDo(t, srv, alice, "POST", "/v1/vector_stores", `{}`, &plain)
	if plain.Hearth.EmbeddingModel != scriptmodel.EmbedModel || plain.Status != "completed" || plain.Name != "" {
		t.Errorf("a store without a model: %+v", plain)
	}
}

// scriptTokens counts tokens as the script embedding model's tokenizer does.
func scriptTokens(e *scriptmodel.Embedder) textchunk.Counter {
	return func(texts []string) ([]int, error) {
		n := make([]int, len(texts))
		for i, t := range texts {
			n[i] = len(e.Tokenize(t))
		}
		return n, nil
	}
}

// TestVectorStoreChunkTokensE2E: chunk sizes are counted by the embedding model's
// tokenizer (the runtime's own, through the runtime seam), not in words. In the script
// embedding model "kettle" is one token and "xyzzy", not in its vocabulary, five (one a
// letter); a document of 50 kettles and 20 xyzzys is 70 words but 150 tokens, so at
// 100 tokens a chunk with an overlap of 20 it is two chunks, whose boundaries follow
// from those counts alone.
func TestVectorStoreChunkTokensE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	e := testenv.Embedder(t)
	doc := strings.Repeat("kettle ", 50) + strings.Repeat("xyzzy ", 20)
	if k, x := len(e.Tokenize("kettle")), len(e.Tokenize("xyzzy")); k != 1 || x != 5 {
		t.Fatalf("the script tokenizer counts kettle %d and xyzzy %d tokens, want 1 and 5", k, x)
	}
	// 50 kettles and 10 xyzzys fill the first chunk (50 + 50 tokens); the second
	// starts 4 xyzzys (20 tokens) back and takes the rest.
	want := []string{
		strings.Repeat("kettle ", 50) + strings.TrimSpace(strings.Repeat("xyzzy ", 10)),
		strings.TrimSpace(strings.Repeat("xyzzy ", 14)),
	}
	if n := len(e.Tokenize(want[0])); n != 100 {
		t.Fatalf("the first chunk is %d tokens", n)
	}
	f := uploadFile(t, srv, alice, "tokens.txt", "assistants", []byte(doc))
	var vs hearth.VectorStore
	convDo(t, srv, alice, "POST", "/v1/vector_stores", fmt.Sprintf(`{"file_ids":[%q],
		"chunking_strategy":{"type":"static","static":{"max_chunk_size_tokens":100,"chunk_overlap_tokens":20}},
		"hearth":{"embedding_model":%q}}`, f.ID, scriptmodel.EmbedModel), &vs)
	vs = waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID, "", &v)
		return v
	})
	if vs.FileCounts.Completed != 1 {
		t.Fatalf("ingested %+v", vs)
	}
	var page hearth.VectorStoreSearchPage
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/search", `{"query":"kettle","max_num_results":10}`, &page)
	var got []string
	for _, r := range page.Data {
		got = append(got, r.Content[0].Text)
	}
	if !slices.Equal(got, want) { // the kettles' chunk scores higher
		t.Errorf("chunks:\n%q\nwant\n%q", got, want)
	}
}

// TestVectorStoreTooLargeE2E: a store whose index needs more than half of
// --vector-index-memory is refused with vector_store_too_large, naming the store, and
// nothing is kept; the bound is on /metrics.
func TestVectorStoreTooLargeE2E(t *testing.T) {
	const memory = 4096 // one chunk of the script model's vectors takes about 2 KiB
	srv, _, db := lanHearth(t, wire.Config{VectorIndexMemory: memory})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	small := uploadFile(t, srv, alice, "small.txt", "assistants", []byte("kettle")).ID
	large := uploadFile(t, srv, alice, "large.txt", "assistants", []byte(strings.Repeat("kettle ", 500))).ID
	stores := map[string]string{}
	for name, file := range map[string]string{"small": small, "large": large} {
		var vs hearth.VectorStore
		convDo(t, srv, alice, "POST", "/v1/vector_stores", fmt.Sprintf(`{"file_ids":[%q],
			"chunking_strategy":{"type":"static","static":{"max_chunk_size_tokens":100,"chunk_overlap_tokens":0}},
			"hearth":{"embedding_model":%q}}`, file, scriptmodel.EmbedModel), &vs)
		waitVectorStore(t, func() hearth.VectorStore {
			var v hearth.VectorStore
			convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID, "", &v)
			return v
		})
		stores[name] = vs.ID
	}
	var page hearth.VectorStoreSearchPage
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+stores["small"]+"/search", `{"query":"kettle"}`, &page)
	if len(page.Data) != 1 {
		t.Errorf("the small store: %+v", page.Data)
	}
	code, _, body := call(t, nil, "POST", srv.URL+"/v1/vector_stores/"+stores["large"]+"/search", alice, `{"query":"kettle"}`)
	if c, p := errCode(body); code != 400 || c != "vector_store_too_large" || p != "vector_store_id" ||
		!strings.Contains(string(body), stores["large"]) || !strings.Contains(string(body), "--vector-index-memory") {
		t.Errorf("the large store: %d %s", code, body)
	}
	_, admin, _ := db.CreateKeyAs(ctx, "ops", storage.RoleAdmin)
	if budget, entries := metric(t, srv, admin, "hearth_vector_index_cache_budget_bytes"), metric(t, srv, admin, "hearth_vector_index_cache_entries"); budget != memory || entries != 1 {
		t.Errorf("metrics: budget %v, entries %v; want the bound and the small store's index alone", budget, entries)
	}
}

// TestVectorStoreExpiryE2E: a store past its expires_after shows expired and answers
// no search (400 vector_store_expired) until the sweeper deletes it (then 404, its files
// kept); a store not yet expired is searched and kept, and goes when its time comes.
func TestVectorStoreExpiryE2E(t *testing.T) {
	srv, h, db := lanHearth(t, wire.Config{})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	who := storage.OwnerOf(alice)
	f := uploadFile(t, srv, alice, "kettle.md", "assistants", []byte("The kettle ships on Tuesday."))
	var fresh hearth.VectorStore
	convDo(t, srv, alice, "POST", "/v1/vector_stores", fmt.Sprintf(`{"file_ids":[%q],"expires_after":{"anchor":"last_active_at","days":1},
		"hearth":{"embedding_model":%q}}`, f.ID, scriptmodel.EmbedModel), &fresh)
	waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, alice, "GET", "/v1/vector_stores/"+fresh.ID, "", &v)
		return v
	})
	// A store whose last activity was two days ago, expiring after one, as a
	// process that was stopped for two days finds it.
	err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs_old", Owner: who, Model: scriptmodel.EmbedModel, ExpiresAfterDays: 1,
		Chunking: storage.Chunking{MaxTokens: 800, OverlapTokens: 400}, CreatedAt: time.Now().Add(-48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var old hearth.VectorStore
	convDo(t, srv, alice, "GET", "/v1/vector_stores/vs_old", "", &old)
	if old.Status != "expired" {
		t.Errorf("the old store: %+v", old)
	}
	code, _, body := call(t, nil, "POST", srv.URL+"/v1/vector_stores/vs_old/search", alice, `{"query":"kettle"}`)
	if c, p := errCode(body); code != 400 || c != "vector_store_expired" || p != "vector_store_id" || !strings.Contains(string(body), "vs_old") {
		t.Errorf("search of the expired store: %d %s", code, body)
	}
	var page hearth.VectorStoreSearchPage
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+fresh.ID+"/search", `{"query":"kettle"}`, &page)
	if len(page.Data) != 1 {
		t.Errorf("search of the fresh store: %+v", page.Data)
	}

	if n := h.VectorStores.DeleteExpired(ctx, time.Now()); n != 1 {
		t.Errorf("swept %d stores, want the old one", n)
	}
	convRefused(t, srv, alice, "GET", "/v1/vector_stores/vs_old", "", 404, "vector_store_not_found", "vector_store_id")
	convRefused(t, srv, alice, "POST", "/v1/vector_stores/vs_old/search", `{"query":"kettle"}`, 404, "vector_store_not_found", "vector_store_id")
	convDo(t, srv, alice, "GET", "/v1/vector_stores/"+fresh.ID, "", nil)
	// The fresh one goes a day after its last activity (the search above), with its
	// chunks; its file stays.
	if n := h.VectorStores.DeleteExpired(ctx, time.Now().Add(25*time.Hour)); n != 1 {
		t.Errorf("a day on: swept %d stores, want the fresh one", n)
	}
	convRefused(t, srv, alice, "GET", "/v1/vector_stores/"+fresh.ID, "", 404, "vector_store_not_found", "vector_store_id")
	convDo(t, srv, alice, "GET", "/v1/files/"+f.ID, "", nil)
}

// TestVectorStoreIngestAdmissionE2E: ingestion's embedding calls take a slot of the
// embedding model in admission like requests do: while the only slot is held the file
// waits in the model's queue (on /metrics), in progress, and completes once it is freed.
func TestVectorStoreIngestAdmissionE2E(t *testing.T) {
	srv, h, db := lanHearth(t, wire.Config{})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	_, admin, _ := db.CreateKeyAs(ctx, "ops", storage.RoleAdmin)
	f := uploadFile(t, srv, alice, "kettle.md", "assistants", []byte("The kettle ships on Tuesday."))
	release := server.HoldSlot(h.Server, scriptmodel.EmbedModel)
	defer func() { release() }()
	var vs hearth.VectorStore
	convDo(t, srv, alice, "POST", "/v1/vector_stores", fmt.Sprintf(`{"file_ids":[%q],"hearth":{"embedding_model":%q}}`,
		f.ID, scriptmodel.EmbedModel), &vs)
	waitFor(t, "ingestion queued for the embedding model", func() bool {
		return metric(t, srv, admin, "hearth_queue_depth", "hearth-script-embed") == 1
	})
	convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID, "", &vs)
	if vs.Status != "in_progress" || vs.FileCounts.InProgress != 1 {
		t.Errorf("while the slot is held: %+v", vs)
	}
	release()
	release = func() {}
	vs = waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, alice, "GET", "/v1/vector_stores/"+vs.ID, "", &v)
		return v
	})
	if vs.FileCounts.Completed != 1 || metric(t, srv, admin, "hearth_queue_depth", "hearth-script-embed") != 0 {
		t.Errorf("after the slot was freed: %+v", vs)
	}
}

// TestVectorStoreResumeE2E: files a stopped process left in_progress (written here
// straight to the database, as such a process leaves them) are read again by the
// next one's ResumeIngestion, and complete; a file whose upload is gone fails.
func TestVectorStoreResumeE2E(t *testing.T) {
	srv, h, db := lanHearth(t, wire.Config{})
	ctx := context.Background()
	_, secret, _ := db.CreateKey(ctx, "alice")
	who := storage.OwnerOf(secret)
	f := uploadFile(t, srv, secret, "kettle.md", "assistants", []byte("The kettle ships on Tuesday."))
	if _, err := db.GetFile(ctx, who, f.ID); err != nil {
		t.Fatalf("the owner of a key's file: %v", err)
	}
	if err := db.CreateFile(ctx, storage.NewFile{ID: "file-gone", Owner: who, Filename: "gone.txt", Content: []byte("gone")}); err != nil {
		t.Fatal(err)
	}
	chunking := storage.Chunking{MaxTokens: 800, OverlapTokens: 400}
	err := db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs_left", Owner: who, Model: scriptmodel.EmbedModel, Chunking: chunking,
		Files: []storage.NewVectorStoreFile{{FileID: f.ID, Chunking: chunking}, {FileID: "file-gone", Chunking: chunking}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteFile(ctx, who, "file-gone"); err != nil {
		t.Fatal(err)
	}
	n, err := h.VectorStores.ResumeIngestion(ctx)
	if err != nil || n != 2 {
		t.Fatalf("resumed %d, %v", n, err)
	}
	vs := waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, secret, "GET", "/v1/vector_stores/vs_left", "", &v)
		return v
	})
	if vs.FileCounts != (hearth.FileCounts{Completed: 1, Failed: 1, Total: 2}) {
		t.Errorf("after resuming: %+v", vs.FileCounts)
	}
	var gone hearth.VectorStoreFile
	convDo(t, srv, secret, "GET", "/v1/vector_stores/vs_left/files/file-gone", "", &gone)
	if gone.LastError == nil || gone.LastError.Code != "invalid_file" || !strings.Contains(gone.LastError.Message, "deleted") {
		t.Errorf("the file deleted before it was read: %+v", gone.LastError)
	}
	var page hearth.VectorStoreSearchPage
	convDo(t, srv, secret, "POST", "/v1/vector_stores/vs_left/search", `{"query":"kettle"}`, &page)
	if len(page.Data) != 1 || page.Data[0].Content[0].Text != "The kettle ships on Tuesday." {
		t.Errorf("search after resuming: %+v", page.Data)
	}
}
