package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage/postgres/pgtest"
)

// TestServePostgres runs `hearth serve --database postgres://...` as its own process on
// a fresh PostgreSQL database: it comes up healthy, serves a response and its
// continuation (previous_response_id) from the chain it stored there, and honours a
// key that `hearth keys create --database` wrote to the same database.
func TestServePostgres(t *testing.T) {
	testenv.SkipIfExternal(t, "checks hearth serve with its embedded runtime")
	pgURL := pgtest.NewDatabase(t)
	addr := freeAddr(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "serve", "--addr", addr, "--database", pgURL)
	cmd.Env = append(os.Environ(), runMainEnv+"=1",
		"OLLAMA_MODELS="+filepath.Join(dir, "models"), "HEARTH_DATA="+filepath.Join(dir, "data"))
	cmd.Env = slicesWithout(cmd.Env, "OLLAMA_HOST=")
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("hearth logs:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var h struct {
			Status   string `json:"status"`
			Database struct {
				OK bool `json:"ok"`
			} `json:"database"`
		}
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if h.Status == "ok" && h.Database.OK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hearth not healthy in time (last error %v, %+v)", err, h)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "data", databaseFile)); err == nil {
		t.Error("hearth serve --database postgres://... created a SQLite file in --data")
	}
	if !strings.Contains(logs.String(), `msg="database opened" postgres="postgres://`) {
		t.Error("the startup log does not name the database")
	}

	u, _ := url.Parse(base)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := scriptmodel.Create(ctx, api.NewClient(u, http.DefaultClient), scriptmodel.PlainModel, scriptmodel.Catalog()[scriptmodel.PlainModel])
	if err != nil {
		t.Fatal(err)
	}
	reply := m.Text(scriptmodel.EntryAssistant)

	type response struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Output []struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens int `json:"input_tokens"`
		} `json:"usage"`
	}
	create := func(body string) response {
		t.Helper()
		resp, err := http.Post(base+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r response
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK || r.Status != "completed" {
			t.Fatalf("POST /v1/responses: %s %v %+v", resp.Status, err, r)
		}
		if len(r.Output) != 1 || len(r.Output[0].Content) != 1 || r.Output[0].Content[0].Text != reply {
			t.Fatalf("output = %+v, want the model's reply %q", r.Output, reply)
		}
		return r
	}
	first := create(`{"model":"` + scriptmodel.PlainModel + `","input":"one"}`)
	second := create(`{"model":"` + scriptmodel.PlainModel + `","input":"two","previous_response_id":"` + first.ID + `"}`)
	if second.Usage.InputTokens <= first.Usage.InputTokens {
		t.Errorf("the continuation read %d input tokens, the first turn %d: the chain was not loaded", second.Usage.InputTokens, first.Usage.InputTokens)
	}

	// The chain is in PostgreSQL, as another process (a replica) reads it.
	st, err := openStore(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := st.ConsoleChain(ctx, second.ID)
	st.Close()
	if err != nil || len(turns) != 2 || turns[0].ID != first.ID || turns[1].ID != second.ID {
		t.Fatalf("chain in PostgreSQL: %v, %d turns", err, len(turns))
	}

	// A key written to the database by the CLI turns auth on in the running server.
	out, _, err := runCLI(t, "keys", "create", "--name", "ops", "--admin", "--database", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(out)
	if resp, err := http.Get(base + "/v1/models"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/v1/models without a key after keys create: %v %v", resp.Status, err)
	}
	req, _ := http.NewRequest("GET", base+"/v1/responses/"+second.ID, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		// The responses were created without a key: another owner's, not this key's.
		t.Errorf("GET another owner's response with the new key: %v %v", resp.Status, err)
	}

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("hearth serve exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("hearth serve did not stop on SIGTERM")
	}
}
