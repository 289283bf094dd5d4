package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/respond"
)

// uploadPart is one field of a multipart upload; a file when filename is set.
type uploadPart struct {
	name, filename string
	content        []byte
}

// upload posts a multipart body to /v1/files and returns the status and the body.
func upload(t testing.TB, srv *httptest.Server, key string, parts ...uploadPart) (int, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, p := range parts {
		var w io.Writer
		var err error
		if p.filename != "" {
			w, err = mw.CreateFormFile(p.name, p.filename)
		} else {
			w, err = mw.CreateFormField(p.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		w.Write(p.content)
	}
	mw.Close()
	req, _ := http.NewRequestWithContext(context.Background(), "POST", srv.URL+"/v1/files", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// uploadFile uploads content as filename and returns the file object.
func uploadFile(t testing.TB, srv *httptest.Server, key, filename, purpose string, content []byte) hearth.File {
	t.Helper()
	code, b := upload(t, srv, key, uploadPart{name: "purpose", content: []byte(purpose)},
		uploadPart{name: "file", filename: filename, content: content})
	if code != http.StatusOK {
		t.Fatalf("upload %s: %d %s", filename, code, b)
	}
	var f hearth.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

type filePage struct {
	Object  string        `json:"object"`
	Data    []hearth.File `json:"data"`
	FirstID *string       `json:"first_id"`
	LastID  *string       `json:"last_id"`
	HasMore bool          `json:"has_more"`
}

func (p filePage) ids() []string {
	var out []string
	for _, f := range p.Data {
		out = append(out, f.ID)
	}
	return out
}

func TestFilesAPIE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{Limits: respond.Limits{MaxFileBytes: 4096}})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	_, bob, _ := db.CreateKey(ctx, "bob")

	notes := []byte("# Release notes\n\nThe kettle ships on Tuesday.\n")
	f := uploadFile(t, srv, alice, `C:\Users\a\notes.md`, "assistants", notes)
	if !strings.HasPrefix(f.ID, "file_") || f.Object != "file" || f.Bytes != int64(len(notes)) || f.Filename != "notes.md" ||
		f.Purpose != "assistants" || f.Status != "processed" || f.CreatedAt == 0 {
		t.Fatalf("uploaded %+v", f)
	}
	var got hearth.File
	convDo(t, srv, alice, "GET", "/v1/files/"+f.ID, "", &got)
	if got != f {
		t.Errorf("GET %+v, want %+v", got, f)
	}
	code, hdr, b := call(t, nil, "GET", srv.URL+"/v1/files/"+f.ID+"/content", alice, "")
	if code != 200 || !bytes.Equal(b, notes) || hdr.Get("Content-Type") != "application/octet-stream" ||
		hdr.Get("Content-Disposition") != `attachment; filename=notes.md` || hdr.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("content: %d %v %q", code, hdr, b)
	}

	// Another key's file is a missing one, for every route.
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/files/" + f.ID}, {"GET", "/v1/files/" + f.ID + "/content"}, {"DELETE", "/v1/files/" + f.ID},
	} {
		convRefused(t, srv, bob, r.method, r.path, "", 404, "file_not_found", "file_id")
	}
	var bobs filePage
	convDo(t, srv, bob, "GET", "/v1/files", "", &bobs)
	if len(bobs.Data) != 0 || bobs.Object != "list" || bobs.FirstID != nil || bobs.HasMore {
		t.Errorf("bob's list %+v", bobs)
	}

	// Lists: newest first, pages, purpose, order.
	data := uploadFile(t, srv, alice, "data.csv", "user_data", []byte("a,b\n1,2\n"))
	third := uploadFile(t, srv, alice, "three.txt", "assistants", []byte("three"))
	var page filePage
	convDo(t, srv, alice, "GET", "/v1/files?limit=2", "", &page)
	if want := []string{third.ID, data.ID}; strings.Join(page.ids(), ",") != strings.Join(want, ",") || !page.HasMore ||
		*page.FirstID != third.ID || *page.LastID != data.ID {
		t.Errorf("first page %v more %v", page.ids(), page.HasMore)
	}
	convDo(t, srv, alice, "GET", "/v1/files?limit=2&after="+data.ID, "", &page)
	if strings.Join(page.ids(), ",") != f.ID || page.HasMore {
		t.Errorf("second page %v more %v", page.ids(), page.HasMore)
	}
	convDo(t, srv, alice, "GET", "/v1/files?purpose=assistants&order=asc", "", &page)
	if strings.Join(page.ids(), ",") != f.ID+","+third.ID {
		t.Errorf("assistants, ascending: %v", page.ids())
	}
	convRefused(t, srv, alice, "GET", "/v1/files?limit=0", "", 400, "invalid_value", "limit")
	convRefused(t, srv, alice, "GET", "/v1/files?order=up", "", 400, "invalid_value", "order")
	convRefused(t, srv, bob, "GET", "/v1/files?after="+data.ID, "", 400, "invalid_value", "after")

	// Delete: once, then it is gone.
	var del hearth.FileDeleted
	convDo(t, srv, alice, "DELETE", "/v1/files/"+data.ID, "", &del)
	if del != (hearth.FileDeleted{ID: data.ID, Object: "file", Deleted: true}) {
		t.Errorf("delete: %+v", del)
	}
	convRefused(t, srv, alice, "DELETE", "/v1/files/"+data.ID, "", 404, "file_not_found", "file_id")
	convRefused(t, srv, alice, "GET", "/v1/files/"+data.ID+"/content", "", 404, "file_not_found", "file_id")

	// Bad uploads, each a clear error naming the field.
	purpose := uploadPart{name: "purpose", content: []byte("assistants")}
	file := func(name string, content []byte) uploadPart {
		return uploadPart{name: "file", filename: name, content: content}
	}
	for _, tc := range []struct {
		name        string
		parts       []uploadPart
		status      int
		code, param string
	}{
		{"no purpose", []uploadPart{file("a.txt", []byte("a"))}, 400, "missing_required_parameter", "purpose"},
		{"unknown purpose", []uploadPart{{name: "purpose", content: []byte("gossip")}, file("a.txt", []byte("a"))}, 400, "invalid_value", "purpose"},
		{"no file", []uploadPart{purpose}, 400, "missing_required_parameter", "file"},
		{"file without a name", []uploadPart{purpose, {name: "file", content: []byte("a")}}, 400, "invalid_value", "file"},
		{"zero bytes", []uploadPart{purpose, file("empty.txt", nil)}, 400, "empty_file", "file"},
		{"one byte too many", []uploadPart{purpose, file("big.txt", bytes.Repeat([]byte("x"), 4097))}, 413, "file_too_large", "file"},
		{"far too many", []uploadPart{purpose, file("huge.bin", make([]byte, 1<<20))}, 413, "file_too_large", "file"},
		{"two files", []uploadPart{purpose, file("a.txt", []byte("a")), file("b.txt", []byte("b"))}, 400, "invalid_value", "file"},
	} {
		code, b := upload(t, srv, alice, tc.parts...)
		gotCode, gotParam := errCode(b)
		if code != tc.status || gotCode != tc.code || gotParam != tc.param {
			t.Errorf("%s: %d %s, want %d %s on %q", tc.name, code, b, tc.status, tc.code, tc.param)
		}
	}
	// The largest file allowed is stored whole.
	if f := uploadFile(t, srv, alice, "max.txt", "user_data", bytes.Repeat([]byte("y"), 4096)); f.Bytes != 4096 {
		t.Errorf("largest file: %+v", f)
	}
	// JSON is not an upload.
	convRefused(t, srv, alice, "POST", "/v1/files", `{"purpose":"assistants"}`, 415, "unsupported_media_type", "Content-Type")
	// Without a key nothing is read or stored.
	if code, _ := upload(t, srv, "", purpose, file("a.txt", []byte("a"))); code != 401 {
		t.Errorf("no key: %d", code)
	}
}
