package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"hearth/internal/pdftest"
	"hearth/storage"
)

// TestStoredViewsAccess: the response, file and vector store views obey the console's
// rules: a user key gets 403, no session the login page (401), an admin sees them.
func TestStoredViewsAccess(t *testing.T) {
	f := newFixture(t, true)
	f.store("resp_1", storage.OwnerOf(userKey), "", "m:latest", "question", "answer", time.Now(), storage.Usage{InputTokens: 7})
	f.file("file-1", storage.OwnerOf(userKey), "notes.txt", []byte("one\ntwo\n"))
	if err := f.db.CreateVectorStore(context.Background(), storage.NewVectorStore{ID: "vs_1", Owner: storage.OwnerOf(userKey), Name: "docs",
		Files: []storage.NewVectorStoreFile{{FileID: "file-1"}}}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/console/response/resp_1", "/console/files", "/console/file/file-1", "/console/vector-stores", "/console/vector-store/vs_1"} {
		resp, body := do(t, f.client(), "GET", f.srv.URL+p, nil, "Authorization", "Bearer "+userKey)
		checkError(t, p+" with a user key", resp, body, 403, "key")
		resp, body = do(t, f.client(), "GET", f.srv.URL+p, nil)
		if resp.StatusCode != 401 || !strings.Contains(body, `id="login"`) {
			t.Errorf("%s without a session = %d, want the login page", p, resp.StatusCode)
		}
		if resp, body := do(t, f.client(), "GET", f.srv.URL+p, nil, "Authorization", "Bearer "+adminKey); resp.StatusCode != 200 {
			t.Errorf("%s as an admin = %d: %s", p, resp.StatusCode, body)
		}
	}
	for p, param := range map[string]string{
		"/console/response/resp_x": "id", "/console/file/file-x": "id", "/console/vector-store/vs_x": "id",
		"/console/files?after=file-x": "after", "/console/vector-stores?after=vs_x": "after",
	} {
		resp, body := do(t, f.client(), "GET", f.srv.URL+p, nil, "Authorization", "Bearer "+adminKey)
		want := 404
		if param == "after" {
			want = 400
		}
		checkError(t, p, resp, body, want, param)
	}
}

func (f *fixture) file(id, owner, name string, content []byte) {
	f.t.Helper()
	if err := f.db.CreateFile(context.Background(), storage.NewFile{ID: id, Owner: owner, Filename: name, Purpose: "assistants", Content: content}); err != nil {
		f.t.Fatal(err)
	}
}

// TestResponsePreview: one response's page shows its input, output, usage and timing,
// escaped.
func TestResponsePreview(t *testing.T) {
	f := newFixture(t, false)
	created := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	f.store("resp_1", storage.OwnerOf(adminKey), "", "m:latest", "first", "one", created, storage.Usage{})
	f.store("resp_2", storage.OwnerOf(adminKey), "resp_1", "m:latest", "<b>second</b>", "two", created.Add(time.Minute),
		storage.Usage{InputTokens: 120, CachedTokens: 100, OutputTokens: 30, ReasoningTokens: 12})
	resp, body := do(t, f.client(), "GET", f.srv.URL+"/console/response/resp_2", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("response page = %d", resp.StatusCode)
	}
	for _, want := range []string{
		`<td class="num">120</td><td class="num">100</td><td class="num">30</td><td class="num">12</td><td class="num">150</td>`,
		"&lt;b&gt;second&lt;/b&gt;", ">two<", "2026-12-04 10:01:00Z", "(1000 ms)", `href="/console/response/resp_1"`,
		`href="/console/chain/resp_2">the whole chain (2)`, ">alice<",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("response page lacks %q", want)
		}
	}
	if strings.Contains(body, "<b>second") {
		t.Error("input rendered as HTML")
	}
}

// TestFilePreview: a text file shows its first lines only, however long it is; a PDF
// its pages and text; a binary file a note, never its bytes.
func TestFilePreview(t *testing.T) {
	f := newFixture(t, false)
	var long strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&long, "line %d <tag>\n", i)
	}
	f.file("file-long", storage.OwnerOf(adminKey), "long.txt", []byte(long.String()))
	f.file("file-pdf", storage.OwnerOf(adminKey), "report.pdf", pdftest.Pages("BT /F1 12 Tf 72 720 Td (Quarterly report) Tj ET", "BT /F1 12 Tf 72 720 Td (Second page) Tj ET"))
	f.file("file-bin", storage.OwnerOf(adminKey), "blob.bin", []byte{0, 1, 2, 3, 0xff, 0xfe, 0, 0, 7})
	// Hostile PDFs: 1 GiB of content packed into about a megabyte, and a page tree
	// naming one page 200,000 times. The preview gives up with a note, as every PDF read
	// of hearth does, instead of unpacking or walking them.
	f.file("file-bomb", storage.OwnerOf(adminKey), "bomb.pdf", pdftest.Bomb(1024))
	f.file("file-kids", storage.OwnerOf(adminKey), "kids.pdf", pdftest.RepeatedKids(200_000))

	_, body := do(t, f.client(), "GET", f.srv.URL+"/console/file/file-long", nil)
	if !strings.Contains(body, "line 0 &lt;tag&gt;\nline 1 &lt;tag&gt;\n") || !strings.Contains(body, "line 39 &lt;tag&gt;") ||
		strings.Contains(body, "line 40 ") || !strings.Contains(body, "First lines (of more)") {
		t.Errorf("long text preview: %s", excerpt(body, "file-preview"))
	}
	if len(body) > 64<<10 {
		t.Errorf("the preview page of a %d-byte file is %d bytes", long.Len(), len(body))
	}
	_, body = do(t, f.client(), "GET", f.srv.URL+"/console/file/file-pdf", nil)
	if !strings.Contains(body, "PDF · 2 page(s)") || !strings.Contains(body, "Quarterly report") {
		t.Errorf("PDF preview: %s", excerpt(body, "file-kind"))
	}
	for _, id := range []string{"file-bomb", "file-kids"} {
		resp, body := do(t, f.client(), "GET", f.srv.URL+"/console/file/"+id, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, `id="file-note">Its text cannot be read: `) || strings.Contains(body, "file-preview") {
			t.Errorf("%s preview = %d: %s", id, resp.StatusCode, excerpt(body, "file-kind"))
		}
	}
	_, body = do(t, f.client(), "GET", f.srv.URL+"/console/file/file-bin", nil)
	if !strings.Contains(body, `id="file-note">No preview`) || strings.Contains(body, "file-preview") {
		t.Errorf("binary preview: %s", excerpt(body, "file-kind"))
	}
	resp, body := do(t, f.client(), "GET", f.srv.URL+"/console/files", nil)
	if resp.StatusCode != 200 || strings.Count(body, `class="file-row"`) != 5 || !strings.Contains(body, `title="report.pdf"`) {
		t.Errorf("files list = %d: %s", resp.StatusCode, excerpt(body, `id="files"`))
	}
}

// TestVectorStoreView: a store lists its files with their status and last error.
func TestVectorStoreView(t *testing.T) {
	f := newFixture(t, false)
	ctx := context.Background()
	owner := storage.OwnerOf(adminKey)
	f.file("file-a", owner, "a.md", []byte("alpha"))
	f.file("file-b", owner, "b.md", []byte("beta"))
	if err := f.db.CreateVectorStore(ctx, storage.NewVectorStore{ID: "vs_1", Owner: owner, Name: "handbook",
		Files: []storage.NewVectorStoreFile{{FileID: "file-a"}, {FileID: "file-b"}}}); err != nil {
		t.Fatal(err)
	}
	if err := f.db.FailVectorStoreFile(ctx, "vs_1", "file-b", "failed", "invalid_file", "<no text>"); err != nil {
		t.Fatal(err)
	}
	_, body := do(t, f.client(), "GET", f.srv.URL+"/console/vector-store/vs_1", nil)
	for _, want := range []string{"2: 0 completed, 1 in progress, 1 failed", `title="a.md"`, `<span class="status in_progress">in_progress</span>`,
		`title="invalid_file: &lt;no text&gt;"`} {
		if !strings.Contains(body, want) {
			t.Errorf("store page lacks %q: %s", want, excerpt(body, `id="vector-store"`))
		}
	}
	_, body = do(t, f.client(), "GET", f.srv.URL+"/console/vector-stores", nil)
	if !strings.Contains(body, `title="handbook"`) || strings.Count(body, `class="store-row"`) != 1 {
		t.Errorf("stores list: %s", excerpt(body, `id="vector-stores"`))
	}
}

// excerpt is the part of a page from marker on, for failure messages.
func excerpt(body, marker string) string {
	if i := strings.Index(body, marker); i >= 0 {
		body = body[i:]
	}
	return body[:min(len(body), 1500)]
}
