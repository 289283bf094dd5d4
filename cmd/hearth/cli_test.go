package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"hearth/storage"
	"hearth/storage/sqlite"
)

// runCLI runs hearth in-process with args and returns stdout, stderr and the error.
func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	configValues = nil
	root := rootCommand()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func TestKeysCommand(t *testing.T) {
	data := t.TempDir()
	out, _, err := runCLI(t, "keys", "create", "--name", "alice", "--data", data)
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(out)
	if !strings.HasPrefix(secret, storage.KeyPrefix) {
		t.Fatalf("keys create printed %q, want the key alone", out)
	}
	if _, _, err := runCLI(t, "keys", "create", "--name", "alice", "--data", data); err == nil {
		t.Error("a second alice was created")
	}
	if _, _, err := runCLI(t, "keys", "create", "--data", data); err == nil || !strings.Contains(err.Error(), "--name") {
		t.Errorf("create without --name: %v", err)
	}
	if _, _, err := runCLI(t, "keys", "create", "--name", "ops", "--admin", "--data", data); err != nil {
		t.Fatal(err)
	}
	out, _, _ = runCLI(t, "keys", "list", "--data", data)
	if !strings.Contains(out, "alice") || strings.Contains(out, secret) || !strings.Contains(out, secret[:9]) {
		t.Errorf("keys list shows the key, or not its prefix:\n%s", out)
	}
	// Roles: alice is a user (the default), ops an admin.
	if !regexp.MustCompile(`(?m)^key_\S+\s+alice\s+user\s`).MatchString(out) || !regexp.MustCompile(`(?m)^key_\S+\s+ops\s+admin\s`).MatchString(out) {
		t.Errorf("keys list does not show the roles:\n%s", out)
	}
	// Cache groups: set at creation, changed by update, shown by list.
	if _, _, err := runCLI(t, "keys", "create", "--name", "bob", "--cache-group", "team1", "--data", data); err != nil {
		t.Fatal(err)
	}
	if out, _, err := runCLI(t, "keys", "update", "alice", "--cache-group", "team1", "--data", data); err != nil || !strings.Contains(out, "cache group team1") {
		t.Fatalf("update alice: %q %v", out, err)
	}
	if _, _, err := runCLI(t, "keys", "update", "alice", "--data", data); err == nil || !strings.Contains(err.Error(), "--cache-group") {
		t.Errorf("update without --cache-group: %v", err)
	}
	if _, _, err := runCLI(t, "keys", "update", "alice", "--cache-group", "team 1", "--data", data); err == nil {
		t.Error("a cache group with a space was accepted")
	}
	out, _, _ = runCLI(t, "keys", "list", "--data", data)
	for _, row := range []string{`alice\s+user\s+team1\s`, `bob\s+user\s+team1\s`, `ops\s+admin\s+-\s`} {
		if !regexp.MustCompile(`(?m)^key_\S+\s+` + row).MatchString(out) {
			t.Errorf("keys list does not show %s:\n%s", row, out)
		}
	}
	if out, _, err := runCLI(t, "keys", "update", "alice", "--cache-group", "", "--data", data); err != nil || !strings.Contains(out, "no other key") {
		t.Fatalf("alice out of team1: %q %v", out, err)
	}
	if _, _, err := runCLI(t, "keys", "revoke", "bob", "--data", data); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCLI(t, "keys", "revoke", "ops", "--data", data); err != nil {
		t.Fatal(err)
	}
	if out, _, err := runCLI(t, "keys", "revoke", "alice", "--data", data); err != nil || !strings.Contains(out, "Revoked") {
		t.Fatalf("revoke: %q %v", out, err)
	}
	if _, _, err := runCLI(t, "keys", "revoke", "carol", "--data", data); err == nil {
		t.Error("revoking an unknown key succeeded")
	}
	out, _, _ = runCLI(t, "keys", "list", "--data", data)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 4 || strings.HasSuffix(strings.TrimSpace(lines[1]), "-") {
		t.Errorf("revoked key not shown as revoked:\n%s", out)
	}
	db, err := sqlite.Open(filepath.Join(data, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if k, err := db.KeyByHash(context.Background(), storage.OwnerOf(secret)); err != nil || k.Active() {
		t.Errorf("database after revoke: %+v %v", k, err)
	}
}

// TestConfigFile: TOML and YAML settings apply to flags; the environment wins over the
// file and the command line over both; an unknown setting is an error.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	fromFile, fromEnv, fromFlag := filepath.Join(dir, "file"), filepath.Join(dir, "env"), filepath.Join(dir, "flag")
	toml := filepath.Join(dir, "hearth.toml")
	os.WriteFile(toml, []byte("data = \""+fromFile+"\"\nmax_queue = 7\napi-key = [\"a\", \"b\"]\ntrusted_proxies = [\"10.0.0.0/8\", \"192.0.2.1\"]\nmodel-alias = [\"claude-haiku-*=qwen3:0.6b\", \"claude-*=qwen3:8b\"]\n"), 0o600)
	yaml := filepath.Join(dir, "hearth.yaml")
	os.WriteFile(yaml, []byte("data: "+fromFile+"\n"), 0o600)

	created := func(path string) bool {
		_, err := os.Stat(filepath.Join(path, "hearth.db"))
		return err == nil
	}
	for _, cfg := range []string{toml, yaml} {
		os.RemoveAll(fromFile)
		if _, _, err := runCLI(t, "keys", "list", "--config", cfg); err != nil {
			t.Fatalf("%s: %v", cfg, err)
		}
		if !created(fromFile) {
			t.Errorf("%s: --data from the file not used", filepath.Base(cfg))
		}
	}
	t.Setenv("HEARTH_DATA", fromEnv)
	runCLI(t, "keys", "list", "--config", toml)
	if !created(fromEnv) {
		t.Error("HEARTH_DATA did not win over the file")
	}
	runCLI(t, "keys", "list", "--config", toml, "--data", fromFlag)
	if !created(fromFlag) {
		t.Error("--data did not win over the environment")
	}
	t.Setenv("HEARTH_CONFIG", yaml)
	os.RemoveAll(fromEnv)
	os.Unsetenv("HEARTH_DATA")
	runCLI(t, "keys", "list")
	if !created(fromFile) {
		t.Error("HEARTH_CONFIG not read")
	}

	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("max_qeueu = 3\n"), 0o600)
	if _, _, err := runCLI(t, "keys", "list", "--config", bad); err == nil || !strings.Contains(err.Error(), "max_qeueu") {
		t.Errorf("unknown setting: %v", err)
	}
	// The serve flags a file sets parse as their flags do.
	vals, err := loadConfig(rootCommand(), toml)
	if err != nil || vals["max-queue"] != "7" || vals["api-key"] != "a,b" || vals["trusted-proxies"] != "10.0.0.0/8,192.0.2.1" {
		t.Errorf("loadConfig = %v, %v", vals, err)
	}
	// Model aliases are a list, in order: the first glob that matches wins.
	if vals["model-alias"] != "claude-haiku-*=qwen3:0.6b,claude-*=qwen3:8b" {
		t.Errorf("model-alias from the file = %q", vals["model-alias"])
	}
	aliases, err := modelAliases(strings.Split(vals["model-alias"], ","))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"claude-haiku-4-5": "qwen3:0.6b", "claude-sonnet-4-5": "qwen3:8b"} {
		if got, _ := aliases.Resolve(name); got != want {
			t.Errorf("%s resolves to %q, want %q", name, got, want)
		}
	}
}

// TestHelp: every command has an example, the root's examples name every command, and
// every flag says its environment variable.
func TestHelp(t *testing.T) {
	root := rootCommand()
	out, _, err := runCLI(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		if c.Example == "" && c.Runnable() {
			t.Errorf("%q has no example", c.CommandPath())
		}
		if c != root && c.Parent() == root && !strings.Contains(out, "hearth "+c.Name()) {
			t.Errorf("hearth --help shows no example of %s", c.Name())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && !strings.Contains(f.Usage, "[$HEARTH_") {
				t.Errorf("%s --%s: no environment variable in its help", c.CommandPath(), f.Name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func TestParseHost(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "",
		"127.0.0.1":             "http://127.0.0.1:8080",
		"gpu-box:9000":          "http://gpu-box:9000",
		"http://gpu-box":        "http://gpu-box:8080",
		"https://hearth.lan/":   "https://hearth.lan:443",
		"http://127.0.0.1:8080": "http://127.0.0.1:8080",
		"ftp://nope":            "",
	} {
		u, err := parseHost(in)
		got := ""
		if err == nil {
			got = u.String()
		}
		if got != want {
			t.Errorf("parseHost(%q) = %q (%v), want %q", in, got, err, want)
		}
	}
}

// TestServeRejectsBadSettings: a setting serve cannot honour stops it before it starts
// anything, with the flag's name in the error.
func TestServeRejectsBadSettings(t *testing.T) {
	for _, args := range [][]string{
		{"--websocket-lifetime", "0s"},
		{"--websocket-lifetime", "-1m"},
		{"--journal-retention", "-1h"},
		{"--log-format", "xml"},
		{"--log-level", "loud"},
		{"--write-timeout", "0s"},
		{"--websocket-queue-bytes", "0"},
		{"--websocket-queue-total-bytes", "-1"},
		{"--request-bytes-total", "1000"},
		{"--trusted-proxies", "proxy.lan"},
		{"--trusted-proxies", "10.0.0.0/33"},
		// Blank keys would count as keys for the exposure check while the server,
		// trimming them, required none.
		{"--admin-key", " "},
		{"--admin-key", ","},
		{"--admin-key", "good, "},
		{"--admin-key", " ", "--addr", "0.0.0.0:0"},
		{"--model-alias", "claude-*"},
		{"--model-alias", "claude-*=qwen*"},
		// A chain would serve another model than the list reads.
		{"--model-alias", "claude-*=qwen3:8b,qwen3:*=llama3.2:1b"},
	} {
		all := append([]string{"serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, args...)
		if _, _, err := runCLI(t, all...); err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("serve %v: %v, want an error naming %s", args, err, args[0])
		}
	}
	t.Setenv("HEARTH_ADMIN_KEY", " ")
	if _, _, err := runCLI(t, "serve", "--data", t.TempDir(), "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "HEARTH_ADMIN_KEY") {
		t.Errorf("serve with HEARTH_ADMIN_KEY=' ': %v, want an error naming HEARTH_ADMIN_KEY", err)
	}
}

// TestProcessor: hearth models says where a loaded model is from /api/ps's size and
// size_vram, in ollama ps's words.
func TestProcessor(t *testing.T) {
	for _, tc := range []struct {
		size, vram int64
		want       string
	}{
		{0, 0, ""},
		{1000, 0, "100% CPU"},
		{1000, 1000, "100% GPU"},
		{1000, 700, "30%/70% CPU/GPU"},
		{1000, 1, "100%/0% CPU/GPU"},
	} {
		if got := processor(tc.size, tc.vram); got != tc.want {
			t.Errorf("processor(%d, %d) = %q, want %q", tc.size, tc.vram, got, tc.want)
		}
	}
}

// TestModelLayersColumn: hearth models' LAYERS column from hearth's /v1/models: the
// embedded runtime's counts, "not reported" where an external Ollama does not say, and
// each runtime's copy by label when several serve as one.
func TestModelLayersColumn(t *testing.T) {
	for _, tc := range []struct{ entry, want string }{
		{`{"id":"a"}`, ""},
		{`{"id":"a","hearth":{"loaded":[{"size":10,"size_vram":10,"processor":"100% GPU",
			"layers":{"total":29,"devices":[{"device":"Vulkan0","layers":29}],"cpu":0}}]}}`, "29/29 Vulkan0"},
		{`{"id":"a","hearth":{"loaded":[{"size":10,"size_vram":0,"processor":"100% CPU",
			"layers":{"total":29,"devices":[],"cpu":29}}]}}`, "0/29 (CPU)"},
		{`{"id":"a","hearth":{"loaded":[{"size":10,"size_vram":7,"processor":"30%/70% CPU/GPU",
			"layers":{"total":29,"devices":[{"device":"Vulkan0","layers":20}],"cpu":9}}]}}`, "20/29 Vulkan0, 9/29 CPU"},
		{`{"id":"a","hearth":{"loaded":[{"size":10,"size_vram":10,"processor":"100% GPU",
			"layers_note":"layers not reported by this runtime"}]}}`, "not reported"},
		{`{"id":"a","runtimes":["embedded","gpu"],"hearth":{"loaded":[
			{"runtime":"embedded","layers":{"total":2,"devices":[],"cpu":2}},
			{"runtime":"gpu","layers_note":"layers not reported by this runtime"}]}}`, "embedded: 0/2 (CPU); gpu: not reported"},
	} {
		var m hearthModel
		if err := json.Unmarshal([]byte(tc.entry), &m); err != nil {
			t.Fatal(err)
		}
		if got := m.layers(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.entry, got, tc.want)
		}
	}
}
