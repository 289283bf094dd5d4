package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hearth/internal/seal"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// usedDataDir makes a data directory as a hearth that served n responses leaves it: a
// database holding them, and the seal key. It returns the directory and the ids.
func usedDataDir(t *testing.T, n int) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	db, err := sqlite.Open(filepath.Join(dir, databaseFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, _, err := seal.LoadOrCreate(filepath.Join(dir, seal.FileName)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("resp_%05d", i)
		item := func(suffix, text string) storage.Item {
			b, _ := json.Marshal(map[string]any{"type": "message", "id": id + suffix, "role": "user", "status": "completed",
				"content": []map[string]any{{"type": "input_text", "text": text}}})
			return storage.Item{ID: id + suffix, Type: "message", JSON: b}
		}
		body := func(status string) json.RawMessage {
			return json.RawMessage(fmt.Sprintf(`{"id":%q,"object":"response","status":%q,"output":[]}`, id, status))
		}
		if err := db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: storage.OwnerOf(""), Model: "m",
			Status: storage.StatusInProgress, Request: json.RawMessage(`{"model":"m"}`), Body: body("in_progress"),
			Input: []storage.Item{item("_u", strings.Repeat("a question of some length ", 20))}}); err != nil {
			t.Fatal(err)
		}
		if err := db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Body: body("completed"),
			Output: []storage.Item{item("_a", strings.Repeat("an answer of some length ", 20))}}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return dir, ids
}

// serveOnce runs `hearth serve` on dataDir with an external runtime address nothing
// answers at (the database checks come before any runtime is needed) and extra flags.
// When hearth exits within a minute it returns its error and logs; when it serves, it
// checks /healthz, stops it with SIGTERM, and returns nil and the logs.
func serveOnce(t *testing.T, dataDir string, extra ...string) (error, string) {
	t.Helper()
	addr := freeAddr(t)
	args := append([]string{"serve", "--addr", addr, "--data", dataDir, "--ollama", "http://127.0.0.1:1"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1"), "OLLAMA_HOST=")
	var logs bytes.Buffer
	cmd.Stderr = &lockedWriter{w: &logs}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(time.Minute)
	for {
		select {
		case err := <-exited:
			if err == nil {
				t.Fatalf("hearth exited without an error:\n%s", logs.String())
			}
			return err, logs.String()
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("hearth neither served nor exited in a minute:\n%s", logs.String())
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			continue
		}
		var health struct {
			Database struct {
				OK bool `json:"ok"`
			} `json:"database"`
		}
		json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if !health.Database.OK {
			t.Errorf("hearth serves but /healthz says the database is not ok")
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Errorf("hearth did not stop cleanly: %v", err)
		}
		return nil, logs.String()
	}
}

// TestLostDatabaseRefused: a data directory that held data (its seal.key is there) but
// whose database is missing or empty must not start empty as if nothing was lost;
// --new-database starts it empty on purpose.
func TestLostDatabaseRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(path string) error
		how  string
	}{
		{"zero bytes", func(p string) error { return os.Truncate(p, 0) }, "is empty (0 bytes)"},
		{"missing", os.Remove, "is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := usedDataDir(t, 3)
			if err := tc.lose(filepath.Join(dir, databaseFile)); err != nil {
				t.Fatal(err)
			}
			err, logs := serveOnce(t, dir)
			if err == nil || !strings.Contains(logs, "the database was lost") || !strings.Contains(logs, tc.how) ||
				!strings.Contains(logs, "--new-database") {
				t.Fatalf("hearth on a lost database: %v, logs:\n%s", err, logs)
			}
			// hearth keys must not create a new database in its place either.
			cmd := exec.Command(os.Args[0], "keys", "list", "--data", dir)
			cmd.Env = append(os.Environ(), runMainEnv+"=1")
			if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "the database was lost") {
				t.Errorf("hearth keys list on a lost database: %v\n%s", err, out)
			}
			if err, logs := serveOnce(t, dir, "--new-database"); err != nil || !strings.Contains(logs, "starting with a new, empty database") {
				t.Fatalf("hearth --new-database on a lost database: %v, logs:\n%s", err, logs)
			}
			// Started once with a new database, the directory is in order again.
			if err, logs := serveOnce(t, dir); err != nil {
				t.Fatalf("hearth after --new-database: %v, logs:\n%s", err, logs)
			}
		})
	}
}

// TestDamagedDatabaseRefused: 4 KB inverted in the middle of the database is found at
// start (quick_check) and hearth refuses to serve, saying what to do; --new-database
// moves the damaged files aside and starts empty.
func TestDamagedDatabaseRefused(t *testing.T) {
	dir, _ := usedDataDir(t, 400)
	path := filepath.Join(dir, databaseFile)
	if err, logs := serveOnce(t, dir); err != nil || !strings.Contains(logs, "quick_check=") {
		t.Fatalf("hearth on the intact database: %v, logs:\n%s", err, logs)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mid := st.Size() / 2 / 4096 * 4096
	for i := mid; i < mid+4096; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	err, logs := serveOnce(t, dir)
	if err == nil || !strings.Contains(logs, "the database file is damaged") || !strings.Contains(logs, "restore") ||
		!strings.Contains(logs, "--new-database") {
		t.Fatalf("hearth on a damaged database: %v, logs:\n%s", err, logs)
	}
	if err, logs := serveOnce(t, dir, "--new-database"); err != nil || !strings.Contains(logs, "moved it aside") {
		t.Fatalf("hearth --new-database on a damaged database: %v, logs:\n%s", err, logs)
	}
	aside, _ := filepath.Glob(path + ".damaged-*")
	if len(aside) != 1 {
		t.Fatalf("damaged files kept: %v, want the database", aside)
	}
	if kept, err := os.ReadFile(aside[0]); err != nil || !bytes.Equal(kept, b) {
		t.Errorf("the damaged database was not kept as it was (%v)", err)
	}
}
