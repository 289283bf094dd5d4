package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
)

// TestDamagedDatabaseHealthE2E: the database file is damaged under a running hearth.
// Requests that read the damaged pages fail with a 500 error envelope, and from the first
// of them on /healthz reports the database not ok (503), where before it said ok while
// every such request failed.
func TestDamagedDatabaseHealthE2E(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "hearth.db")
	db, err := sqlite.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db}))
	t.Cleanup(srv.Close)
	want := testenv.Model(t, scriptmodel.PlainModel).Text(scriptmodel.EntryAssistant)

	var ids []string
	for range 3 {
		r := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"soon to be damaged"`))
		if r.Status != hearth.StatusCompleted || r.Output[0].Text(hearth.PartOutputText) != want {
			t.Fatalf("response before the damage: %s %+v", r.Status, r.Output)
		}
		ids = append(ids, r.ID)
	}
	health := func() (int, string) {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h struct {
			Database struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			} `json:"database"`
		}
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatalf("healthz: %s", b)
		}
		if h.Database.OK != (resp.StatusCode == http.StatusOK) {
			t.Errorf("healthz %d with database ok=%v", resp.StatusCode, h.Database.OK)
		}
		return resp.StatusCode, h.Database.Error
	}
	if code, msg := health(); code != http.StatusOK {
		t.Fatalf("healthz before the damage: %d %s", code, msg)
	}

	// Every page but the schema's (page 1, read at open) inverted, as a failing disk or
	// a stray write would leave them.
	truncateWAL(t, dbPath)
	b, err := os.ReadFile(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	for i := 4096; i < len(b); i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(dbPath, b, 0o600); err != nil {
		t.Fatal(err)
	}

	resp, body := get(t, srv.URL+"/v1/responses/"+ids[0])
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("GET from a damaged database: %d %s; want 500", resp.StatusCode, body)
	}
	if typ, msg := errorEnvelope(t, body); typ != hearth.ErrTypeServer || msg == "" {
		t.Errorf("GET from a damaged database: error %q %q", typ, msg)
	}
	code, msg := health()
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, "damaged") {
		t.Errorf("healthz after a corruption error: %d %q; want 503 naming the damage", code, msg)
	}
}

func get(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}
