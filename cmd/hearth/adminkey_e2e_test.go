package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"hearth/storage"
	"hearth/storage/sqlite"
)

// getWith sends GET path with key as its bearer token and returns the status.
func getWith(t *testing.T, base, path, key string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeIgnoresClientKey: HEARTH_API_KEY is the key the CLI sends. A user who
// exports their user key for the CLI and starts serve from the same shell must not
// turn it into an admin key: serve logs that it ignores the variable, and the key
// keeps its user role (/metrics is refused). Serve's admin keys come from
// HEARTH_ADMIN_KEY (or --admin-key).
func TestServeIgnoresClientKey(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	out, _, err := runCLI(t, "keys", "create", "--name", "alice", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	userKey := strings.TrimSpace(out)

	t.Setenv("HEARTH_API_KEY", userKey)
	r := startHearthIn(t, dir, "", "")
	if code := getWith(t, r.base, "/metrics", userKey); code != http.StatusForbidden {
		t.Errorf("/metrics with the user key in HEARTH_API_KEY: %d, want 403", code)
	}
	if code := getWith(t, r.base, "/v1/models", userKey); code != http.StatusOK {
		t.Errorf("/v1/models with the user key: %d, want 200 (it stays a user key)", code)
	}
	r.stop(t)
	if logs := r.logs.String(); !strings.Contains(logs, "HEARTH_API_KEY is set") || !strings.Contains(logs, "HEARTH_ADMIN_KEY") {
		t.Errorf("serve did not warn that it ignores HEARTH_API_KEY:\n%s", logs)
	}

	// HEARTH_ADMIN_KEY is serve's admin key; HEARTH_API_KEY (a made-up key) is no key.
	t.Setenv("HEARTH_API_KEY", "not-a-key")
	t.Setenv("HEARTH_ADMIN_KEY", "operator-secret")
	r = startHearthIn(t, dir, "", "")
	if code := getWith(t, r.base, "/metrics", "operator-secret"); code != http.StatusOK {
		t.Errorf("/metrics with HEARTH_ADMIN_KEY's key: %d, want 200", code)
	}
	if code := getWith(t, r.base, "/v1/models", "not-a-key"); code != http.StatusUnauthorized {
		t.Errorf("/v1/models with HEARTH_API_KEY's made-up key: %d, want 401", code)
	}
	if code := getWith(t, r.base, "/metrics", userKey); code != http.StatusForbidden {
		t.Errorf("/metrics with the user key: %d, want 403", code)
	}
	r.stop(t)
}

// TestKeysAdopt: `hearth keys create --adopt` and `hearth keys adopt` give a key what
// was made while hearth required no key, and say how much; an unknown or revoked key
// is refused.
func TestKeysAdopt(t *testing.T) {
	data := t.TempDir()
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(data, databaseFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"file-1", "file-2"} {
		if err := db.CreateFile(ctx, storage.NewFile{ID: id, Owner: storage.KeylessOwner, Filename: id + ".txt", Purpose: "assistants", Content: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	out, errOut, err := runCLI(t, "keys", "create", "--name", "alice", "--adopt", "--data", data)
	if err != nil || !strings.Contains(errOut, "adopted 0 responses, 0 conversations, 2 files and 0 vector stores") {
		t.Fatalf("keys create --adopt: %q %v", errOut, err)
	}
	alice := strings.TrimSpace(out)
	if !strings.HasPrefix(alice, storage.KeyPrefix) {
		t.Fatalf("keys create --adopt printed %q, want the key alone", out)
	}
	if out, _, err := runCLI(t, "keys", "adopt", "alice", "--data", data); err != nil || !strings.Contains(out, "adopted 0 responses, 0 conversations, 0 files") {
		t.Errorf("a second adoption: %q %v", out, err)
	}
	if _, _, err := runCLI(t, "keys", "adopt", "carol", "--data", data); err == nil {
		t.Error("an unknown key adopted")
	}
	runCLI(t, "keys", "create", "--name", "gone", "--data", data)
	runCLI(t, "keys", "revoke", "gone", "--data", data)
	if _, _, err := runCLI(t, "keys", "adopt", "gone", "--data", data); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a revoked key adopting: %v", err)
	}
	db, err = sqlite.Open(filepath.Join(data, databaseFile))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if b, err := db.FileContent(ctx, storage.OwnerOf(alice), "file-2"); err != nil || string(b) != "file-2" {
		t.Errorf("alice's adopted file: %q %v", b, err)
	}
}
