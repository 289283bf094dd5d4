package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ollama/ollama/api"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage"
	"hearth/storage/postgres"
	"hearth/storage/postgres/pgtest"
	"hearth/storage/sqlite"
)

// TestDBCopyE2E moves an installation: a real `hearth serve` on SQLite, with a key
// made by `hearth keys create`, stores a chain, a conversation, files (one of binary
// bytes) and a vector store ingested with the script embedding model; `hearth db copy`
// moves it all to a fresh PostgreSQL database, checking every table's rows and content
// on both sides and the chains it samples. A row changed in the target afterwards
// fails that check, and passes it again once put back. A `hearth serve` on PostgreSQL
// then takes the same key, reads what was stored (the file's bytes equal, the vector
// store searchable), and continues the chain with the same token counts as the SQLite
// hearth did. A second copy into the now non-empty database is refused.
func TestDBCopyE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "checks hearth serve with its embedded runtime")
	pgURL := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	litePath := filepath.Join(dir, "data", databaseFile)
	out, _, err := runCLI(t, "keys", "create", "--name", "moved", "--admin", "--database", litePath)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(out)

	call := func(r *replica, method, path, body string, into any) int {
		t.Helper()
		req, _ := http.NewRequest(method, r.base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if into != nil && json.Unmarshal(b, into) != nil {
			t.Fatalf("%s %s: not JSON: %s", method, path, b)
		}
		return resp.StatusCode
	}
	createModel := func(r *replica) {
		createPlainModel(ctx, t, r.base, &http.Client{Transport: bearer{key: key, next: http.DefaultTransport}})
	}
	turn := func(r *replica, input, prev string) pgResponse {
		t.Helper()
		body := `{"model":"` + scriptmodel.PlainModel + `","input":"` + input + `"`
		if prev != "" {
			body += `,"previous_response_id":"` + prev + `"`
		}
		var out pgResponse
		if code := call(r, "POST", "/v1/responses", body+"}", &out); code != http.StatusOK || out.Status != "completed" {
			t.Fatalf("POST /v1/responses to %s: %d %+v", r.base, code, out)
		}
		return out
	}

	lite := startHearthIn(t, dir, "", "")
	createModel(lite)
	first := turn(lite, "one", "")
	second := turn(lite, "two", first.ID)
	onLite := turn(lite, "three", second.ID)
	var conv struct {
		ID string `json:"id"`
	}
	if code := call(lite, "POST", "/v1/conversations", `{"items":[{"type":"message","role":"user","content":"kept in a conversation"}]}`, &conv); code != http.StatusOK {
		t.Fatalf("create a conversation: %d", code)
	}
	embedder := scriptmodel.NewEmbedder(scriptmodel.DefaultEmbedWords)
	createEmbedder := func(r *replica) {
		u, _ := url.Parse(r.base)
		hc := &http.Client{Transport: bearer{key: key, next: http.DefaultTransport}}
		if err := scriptmodel.CreateEmbedder(ctx, api.NewClient(u, hc), scriptmodel.EmbedModel, embedder); err != nil {
			t.Fatal(err)
		}
	}
	createEmbedder(lite)
	binary := make([]byte, 4096)
	for i := range binary {
		binary[i] = byte(i * 31)
	}
	doc := uploadTo(t, lite.base, key, "kettle.md", []byte("# Release notes\n\nThe kettle ships on Tuesday.\n"))
	blob := uploadTo(t, lite.base, key, "blob.bin", binary)
	var vs struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		FileCounts struct {
			Completed int `json:"completed"`
		} `json:"file_counts"`
	}
	if code := call(lite, "POST", "/v1/vector_stores", `{"name":"docs","file_ids":["`+doc+`"],"hearth":{"embedding_model":"`+scriptmodel.EmbedModel+`"}}`, &vs); code != http.StatusOK {
		t.Fatalf("create a vector store: %d", code)
	}
	for deadline := time.Now().Add(time.Minute); vs.Status == "in_progress"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("vector store still ingesting: %+v", vs)
		}
		call(lite, "GET", "/v1/vector_stores/"+vs.ID, "", &vs)
	}
	if vs.FileCounts.Completed != 1 {
		t.Fatalf("vector store on SQLite: %+v", vs)
	}
	lite.stop(t)

	out, _, err = runCLI(t, "db", "copy", "--from", "sqlite://"+litePath, "--to", pgURL)
	if err != nil {
		t.Fatalf("hearth db copy: %v\n%s", err, out)
	}
	t.Logf("hearth db copy:\n%s", out)
	for _, want := range []string{"seal key: " + filepath.Join(dir, "data", "seal.key") + " copied",
		"ok   responses           source 3, copied 3, target 3", "ok   api_keys            source 1, copied 1, target 1",
		"ok   conversation_items  source 1, copied 1, target 1", "ok   files               source 2, copied 2, target 2",
		"ok   file_contents       source 2, copied 2, target 2", "ok   vector_stores       source 1, copied 1, target 1",
		"ok   vector_store_files  source 1, copied 1, target 1", "ok   vector_store_chunks source 1, copied 1, target 1",
		"ok   journals            source 3, copied 3, target 3", "ok   chain " + onLite.ID + ": 3 links", "The copy checks out."} {
		if !strings.Contains(out, want) {
			t.Errorf("hearth db copy does not say %q", want)
		}
	}
	if again, _, err := runCLI(t, "db", "copy", "--from", "sqlite://"+litePath, "--to", pgURL); err == nil || !strings.Contains(err.Error(), "already holds records") {
		t.Errorf("a second copy into the same database: %v\n%s", err, again)
	}

	checkCorruption(ctx, t, litePath, pgURL, blob, binary)

	pg := startReplica(t, pgURL)
	createModel(pg)
	createEmbedder(pg)
	if code, b := rawGet(t, pg.base+"/v1/files/"+blob+"/content", key); code != http.StatusOK || !bytes.Equal(b, binary) {
		t.Errorf("the copied file's bytes on PostgreSQL: %d, %d bytes, equal %v", code, len(b), bytes.Equal(b, binary))
	}
	var found struct {
		Data []struct {
			FileID string `json:"file_id"`
		} `json:"data"`
	}
	if code := call(pg, "POST", "/v1/vector_stores/"+vs.ID+"/search", `{"query":"When does the kettle ship?"}`, &found); code != http.StatusOK || len(found.Data) != 1 || found.Data[0].FileID != doc {
		t.Errorf("search of the copied vector store on PostgreSQL: %d %+v", code, found)
	}
	var got pgResponse
	if code := call(pg, "GET", "/v1/responses/"+onLite.ID, "", &got); code != http.StatusOK || got.Status != "completed" {
		t.Errorf("GET the copied response on PostgreSQL: %d %+v", code, got)
	}
	var items struct {
		Data []json.RawMessage `json:"data"`
	}
	if code := call(pg, "GET", "/v1/conversations/"+conv.ID+"/items", "", &items); code != http.StatusOK || len(items.Data) != 1 {
		t.Errorf("the copied conversation's items on PostgreSQL: %d, %d items", code, len(items.Data))
	}
	onPG := turn(pg, "three", second.ID)
	if onPG.Usage.InputTokens != onLite.Usage.InputTokens {
		t.Errorf("the same continuation read %d input tokens on PostgreSQL after the copy, %d on SQLite before", onPG.Usage.InputTokens, onLite.Usage.InputTokens)
	}
	pg.stop(t)
}

// uploadTo uploads content as filename (purpose assistants) and returns the file's id.
func uploadTo(t *testing.T, base, key, filename string, content []byte) string {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	w.WriteField("purpose", "assistants")
	part, _ := w.CreateFormFile("file", filename)
	part.Write(content)
	w.Close()
	req, _ := http.NewRequest("POST", base+"/v1/files", &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var f struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("upload %s: %d %v", filename, resp.StatusCode, err)
	}
	return f.ID
}

// rawGet sends GET url with key and returns the status and the body.
func rawGet(t *testing.T, url, key string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// checkCorruption changes one byte of a copied file's content in the target: the
// copy's check (verifyCopy, as hearth db copy runs it) fails on that table and no
// other, and passes again once the byte is put back.
func checkCorruption(ctx context.Context, t *testing.T, litePath, pgURL, fileID string, content []byte) {
	t.Helper()
	lite, err := sqlite.Open(litePath)
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg, err := postgres.Open(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	plan, err := pg.PlanCopyFrom(lite)
	if err != nil {
		t.Fatal(err)
	}
	// What the copy did: every row of the source, into an empty target.
	res := &postgres.CopyResult{Rows: map[string]int64{}, Skipped: map[string]int64{}}
	for _, tb := range plan {
		d, err := storage.DigestRows(tb, lite.CopyRows(tb))
		if err != nil {
			t.Fatal(err)
		}
		res.Rows[tb.Name] = d.Rows
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	changed := bytes.Clone(content)
	changed[100] ^= 1
	for _, c := range []struct {
		content []byte
		fails   bool
	}{{changed, true}, {content, false}} {
		if _, err := conn.Exec(ctx, `UPDATE file_contents SET content = $1 WHERE file_id = $2`, c.content, fileID); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err := verifyCopy(ctx, &out, lite, pg, plan, map[string]storage.Digest{}, res)
		if c.fails != (err != nil) || c.fails != strings.Contains(out.String(), "FAIL file_contents") || strings.Count(out.String(), "FAIL") != map[bool]int{true: 1}[c.fails] {
			t.Errorf("the check with the file's content %s: %v\n%s", map[bool]string{true: "changed", false: "put back"}[c.fails], err, out.String())
		}
	}
}
