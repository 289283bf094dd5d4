package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage/postgres/pgtest"
)

// TestDBCopyE2E moves an installation: a real `hearth serve` on SQLite, with a key
// made by `hearth keys create`, stores a chain and a conversation; `hearth db copy`
// moves it all to a fresh PostgreSQL database (counting every table and comparing the
// chains it samples); a `hearth serve` on PostgreSQL then takes the same key, reads
// what was stored, and continues the chain with the same token counts as the SQLite
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
	lite.stop(t)

	out, _, err = runCLI(t, "db", "copy", "--from", "sqlite://"+litePath, "--to", pgURL)
	if err != nil {
		t.Fatalf("hearth db copy: %v\n%s", err, out)
	}
	t.Logf("hearth db copy:\n%s", out)
	for _, want := range []string{"seal key: " + filepath.Join(dir, "data", "seal.key") + " copied",
		"ok   responses           source 3, copied 3, target 3", "ok   api_keys            source 1, copied 1, target 1",
		"ok   conversation_items  source 1, copied 1, target 1", "ok   chain " + onLite.ID + ": 3 links", "The copy checks out."} {
		if !strings.Contains(out, want) {
			t.Errorf("hearth db copy does not say %q", want)
		}
	}
	if again, _, err := runCLI(t, "db", "copy", "--from", "sqlite://"+litePath, "--to", pgURL); err == nil || !strings.Contains(err.Error(), "already holds records") {
		t.Errorf("a second copy into the same database: %v\n%s", err, again)
	}

	pg := startReplica(t, pgURL)
	createModel(pg)
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
