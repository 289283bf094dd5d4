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

// replica is a `hearth serve` process on a PostgreSQL database.
type replica struct {
	base   string
	dir    string
	cmd    *exec.Cmd
	exited chan error
	logs   *strings.Builder
}

// startReplica runs `hearth serve --database pgURL` with the embedded runtime and a
// data and models directory of its own, and waits until it is healthy.
func startReplica(t *testing.T, pgURL string) *replica {
	t.Helper()
	return startReplicaWith(t, pgURL, "")
}

// startReplicaWith is startReplica with the embedded runtime's models in models ("":
// a directory of its own) and more serve flags.
func startReplicaWith(t *testing.T, pgURL, models string, args ...string) *replica {
	t.Helper()
	return startHearthIn(t, t.TempDir(), pgURL, models, args...)
}

// startHearthIn runs hearth serve in directory dir (its data, and its models unless
// models names them, under it) on the database --database names ("": hearth.db in its
// --data), with more serve flags.
func startHearthIn(t *testing.T, dir, database, models string, args ...string) *replica {
	t.Helper()
	r := &replica{dir: dir, exited: make(chan error, 1), logs: &strings.Builder{}}
	addr := freeAddr(t)
	r.base = "http://" + addr
	if models == "" {
		models = filepath.Join(r.dir, "models")
	}
	r.cmd = exec.Command(os.Args[0], append([]string{"serve", "--addr", addr, "--database", database}, args...)...)
	r.cmd.Env = append(os.Environ(), runMainEnv+"=1",
		"OLLAMA_MODELS="+models, "HEARTH_DATA="+filepath.Join(r.dir, "data"))
	r.cmd.Env = slicesWithout(r.cmd.Env, "OLLAMA_HOST=")
	r.cmd.Stderr = r.logs
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.exited <- r.cmd.Wait() }()
	t.Cleanup(func() {
		r.cmd.Process.Kill()
		if t.Failed() {
			t.Logf("hearth %s logs:\n%s", r.base, r.logs.String())
		}
	})
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var h struct {
			Status   string `json:"status"`
			Database struct {
				OK bool `json:"ok"`
			} `json:"database"`
		}
		resp, err := http.Get(r.base + "/healthz")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if h.Status == "ok" && h.Database.OK {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hearth not healthy in time (last error %v, %+v)", err, h)
		}
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (r *replica) stop(t *testing.T) {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.exited:
		if err != nil {
			t.Errorf("hearth serve exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("hearth serve did not stop on SIGTERM")
	}
}

type pgResponse struct {
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
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// post sends a request to /v1/responses and returns the status and the response.
func (r *replica) post(t *testing.T, body string) (int, pgResponse) {
	t.Helper()
	resp, err := http.Post(r.base+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out pgResponse
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestServePostgres runs `hearth serve --database postgres://...` as real processes on
// a fresh PostgreSQL database: one comes up healthy and serves a response and its
// continuation (previous_response_id) from the chain it stored there; a second replica
// on the same database continues that chain with the same token counts, and a
// deletion on one is honoured by the other at once (the shared ChainEpoch: the first
// keeps the chain decoded); a key that `hearth keys create --database` wrote to the
// database is enforced by both.
func TestServePostgres(t *testing.T) {
	testenv.SkipIfExternal(t, "checks hearth serve with its embedded runtime")
	pgURL := pgtest.NewDatabase(t)
	a := startReplica(t, pgURL)
	if _, err := os.Stat(filepath.Join(a.dir, "data", databaseFile)); err == nil {
		t.Error("hearth serve --database postgres://... created a SQLite file in --data")
	}
	if !strings.Contains(a.logs.String(), `msg="database opened" postgres="postgres://`) {
		t.Error("the startup log does not name the database")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createModel := func(r *replica) string {
		u, _ := url.Parse(r.base)
		m, err := scriptmodel.Create(ctx, api.NewClient(u, http.DefaultClient), scriptmodel.PlainModel, scriptmodel.Catalog()[scriptmodel.PlainModel])
		if err != nil {
			t.Fatal(err)
		}
		return m.Text(scriptmodel.EntryAssistant)
	}
	reply := createModel(a)
	turn := func(r *replica, input, prev string) pgResponse {
		t.Helper()
		body := `{"model":"` + scriptmodel.PlainModel + `","input":"` + input + `"`
		if prev != "" {
			body += `,"previous_response_id":"` + prev + `"`
		}
		code, out := r.post(t, body+"}")
		if code != http.StatusOK || out.Status != "completed" {
			t.Fatalf("POST /v1/responses to %s: %d %+v", r.base, code, out)
		}
		if len(out.Output) != 1 || len(out.Output[0].Content) != 1 || out.Output[0].Content[0].Text != reply {
			t.Fatalf("output = %+v, want the model's reply %q", out.Output, reply)
		}
		return out
	}
	first := turn(a, "one", "")
	second := turn(a, "two", first.ID)
	if second.Usage.InputTokens <= first.Usage.InputTokens {
		t.Errorf("the continuation read %d input tokens, the first turn %d: the chain was not loaded", second.Usage.InputTokens, first.Usage.InputTokens)
	}

	// The chain is in PostgreSQL, as another process reads it.
	st, err := openStore(pgURL)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := st.ConsoleChain(ctx, second.ID)
	st.Close()
	if err != nil || len(turns) != 2 || turns[0].ID != first.ID || turns[1].ID != second.ID {
		t.Fatalf("chain in PostgreSQL: %v, %d turns", err, len(turns))
	}

	// A second replica continues the chain, reading what the first would.
	b := startReplica(t, pgURL)
	createModel(b)
	onA := turn(a, "three", second.ID)
	onB := turn(b, "three", second.ID)
	if onA.Usage.InputTokens != onB.Usage.InputTokens {
		t.Errorf("the same continuation read %d input tokens on replica a, %d on b", onA.Usage.InputTokens, onB.Usage.InputTokens)
	}
	// Deleting the root on b breaks the chain for a, which holds it decoded.
	req, _ := http.NewRequest("DELETE", b.base+"/v1/responses/"+first.ID, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE on b: %v %v", resp.Status, err)
	}
	if code, out := a.post(t, `{"model":"`+scriptmodel.PlainModel+`","input":"four","previous_response_id":"`+onA.ID+`"}`); code != http.StatusNotFound || out.Error == nil || out.Error.Code != "previous_response_not_found" {
		t.Errorf("continuing on a a chain b broke: %d %+v", code, out.Error)
	}

	// A key written to the database by the CLI turns auth on in both replicas.
	out, _, err := runCLI(t, "keys", "create", "--name", "ops", "--admin", "--database", pgURL)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(out)
	for _, r := range []*replica{a, b} {
		if resp, err := http.Get(r.base + "/v1/models"); err != nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: /v1/models without a key after keys create: %v %v", r.base, resp.Status, err)
		}
		req, _ := http.NewRequest("GET", r.base+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: /v1/models with the new key: %v %v", r.base, resp.Status, err)
		}
	}
	a.stop(t)
	b.stop(t)
}

// createPlainModel creates the plain script model on the hearth at base through hc
// (which carries a key where the hearth needs one).
func createPlainModel(ctx context.Context, t *testing.T, base string, hc *http.Client) *scriptmodel.Model {
	t.Helper()
	return createModel(ctx, t, base, hc, scriptmodel.PlainModel, scriptmodel.Catalog()[scriptmodel.PlainModel])
}

// createModel creates the script model spec as name through the hearth at base (its
// runtime's create API, which hearth passes through for an admin).
func createModel(ctx context.Context, t *testing.T, base string, hc *http.Client, name string, spec scriptmodel.Spec) *scriptmodel.Model {
	t.Helper()
	u, _ := url.Parse(base)
	m, err := scriptmodel.Create(ctx, api.NewClient(u, hc), name, spec)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
