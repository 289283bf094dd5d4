package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/scriptmodel"
	"hearth/storage"
)

// TestKeylessRecordsE2E: what a hearth made while it required no key (responses,
// conversations, files, vector stores) is not lost when the first keys are created.
// A user key does not see it (404, as another key's), an admin key reads, manages and
// deletes it by id, and after the adoption (hearth keys adopt) it is the user key's,
// as if it had made it: readable, searchable, and a chain it continues.
func TestKeylessRecordsE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{})
	ctx := context.Background()

	// Made without keys.
	first := createJSONAs(t, srv, "", reqBody(plain, false, `"input":"hello"`))
	second := createJSONAs(t, srv, "", reqBody(plain, false, `"input":"another"`))
	var conv conversation
	convDo(t, srv, "", "POST", "/v1/conversations", `{"items":[{"role":"user","content":"kept"}]}`, &conv)
	binary := []byte("The kettle ships on Tuesday.\n\x00\xff\x01 binary tail")
	doc := uploadFile(t, srv, "", "kettle.md", "assistants", []byte("# Release notes\n\nThe kettle ships on Tuesday.\n"))
	blob := uploadFile(t, srv, "", "blob.bin", "user_data", binary)
	spare := uploadFile(t, srv, "", "spare.txt", "assistants", []byte("spare"))
	var vs hearth.VectorStore
	convDo(t, srv, "", "POST", "/v1/vector_stores", fmt.Sprintf(`{"name":"docs","file_ids":[%q],"hearth":{"embedding_model":%q}}`,
		doc.ID, scriptmodel.EmbedModel), &vs)
	vs = waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, "", "GET", "/v1/vector_stores/"+vs.ID, "", &v)
		return v
	})
	if vs.FileCounts.Completed != 1 {
		t.Fatalf("vector store made without keys: %+v", vs)
	}

	// The first keys.
	_, alice, err := db.CreateKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	_, ops, err := db.CreateKeyAs(ctx, "ops", storage.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{"/v1/responses/" + first.ID, "/v1/conversations/" + conv.ID, "/v1/files/" + doc.ID,
		"/v1/files/" + blob.ID + "/content", "/v1/vector_stores/" + vs.ID}
	for _, p := range paths {
		if code, _, b := call(t, nil, "GET", srv.URL+p, "", ""); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a key: %d %s", p, code, b)
		}
		if code, _, b := call(t, nil, "GET", srv.URL+p, alice, ""); code != http.StatusNotFound {
			t.Errorf("GET %s with a user key before the adoption: %d %s, want 404", p, code, b)
		}
		if code, _, b := call(t, nil, "GET", srv.URL+p, ops, ""); code != http.StatusOK {
			t.Errorf("GET %s with an admin key: %d %s, want 200", p, code, b)
		}
	}
	if code, _, b := call(t, nil, "GET", srv.URL+"/v1/files/"+blob.ID+"/content", ops, ""); code != http.StatusOK || !bytes.Equal(b, binary) {
		t.Errorf("the admin reads the keyless file's bytes: %d %q", code, b)
	}
	// The admin manages and deletes them.
	var page vectorStoreFilePage
	convDo(t, srv, ops, "GET", "/v1/vector_stores/"+vs.ID+"/files", "", &page)
	if len(page.Data) != 1 || page.Data[0].ID != doc.ID {
		t.Errorf("the admin lists the keyless store's files: %+v", page.Data)
	}
	convDo(t, srv, ops, "POST", "/v1/conversations/"+conv.ID, `{"metadata":{"checked":"yes"}}`, nil)
	for _, p := range []string{"/v1/responses/" + second.ID, "/v1/files/" + spare.ID} {
		if code, _, b := call(t, nil, "DELETE", srv.URL+p, ops, ""); code != http.StatusOK {
			t.Errorf("DELETE %s with an admin key: %d %s", p, code, b)
		}
		if code, _, _ := call(t, nil, "GET", srv.URL+p, ops, ""); code != http.StatusNotFound {
			t.Errorf("GET %s after the admin deleted it: %d", p, code)
		}
	}

	// The adoption gives the rest to alice.
	k, got, err := db.AdoptKeyless(ctx, "alice")
	if err != nil || k.Name != "alice" || got != (storage.Adopted{Responses: 1, Conversations: 1, Files: 2, VectorStores: 1}) {
		t.Fatalf("adopt: %+v %+v %v", k, got, err)
	}
	for _, p := range paths {
		if code, _, b := call(t, nil, "GET", srv.URL+p, alice, ""); code != http.StatusOK {
			t.Errorf("GET %s with the adopting key: %d %s, want 200", p, code, b)
		}
		if code, _, _ := call(t, nil, "GET", srv.URL+p, ops, ""); code != http.StatusNotFound {
			t.Errorf("GET %s with the admin key after alice adopted it: %d, want 404", p, code)
		}
	}
	var c conversation
	convDo(t, srv, alice, "GET", "/v1/conversations/"+conv.ID, "", &c)
	if c.Metadata["checked"] != "yes" {
		t.Errorf("the admin's change of the conversation: %+v", c)
	}
	var found hearth.VectorStoreSearchPage
	convDo(t, srv, alice, "POST", "/v1/vector_stores/"+vs.ID+"/search", `{"query":"When does the kettle ship?"}`, &found)
	if len(found.Data) == 0 || found.Data[0].FileID != doc.ID {
		t.Errorf("alice searches the adopted store: %+v", found.Data)
	}
	next := createJSONAs(t, srv, alice, reqBody(plain, false, `"input":"go on","previous_response_id":"`+first.ID+`"`))
	if next.Status != "completed" {
		t.Errorf("alice continues the adopted chain: %+v", next)
	}
	var files filePage
	convDo(t, srv, alice, "GET", "/v1/files", "", &files)
	if len(files.Data) != 2 {
		t.Errorf("alice lists the adopted files: %v", files.ids())
	}
}
