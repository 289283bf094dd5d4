package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama"
	"hearth/engine/ollama/testenv"
	"hearth/internal/cpubuild"
	"hearth/internal/seal"
	"hearth/scriptmodel"
	"hearth/storage/postgres/pgtest"
)

// runMainEnv makes the test binary behave as the hearth binary, so the test can run
// `hearth serve` as a real process, runner re-executions included.
const runMainEnv = "HEARTH_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeEmbedded runs `hearth serve` as its own process with the embedded runtime:
// it must come up healthy, let an Ollama client create and run a model through the /api
// passthrough, list it in /v1/models, and stop cleanly on SIGTERM leaving no runner.
func TestServeEmbedded(t *testing.T) {
	testenv.SkipIfExternal(t, "checks hearth serve with its embedded runtime")
	addr := freeAddr(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "serve", "--addr", addr)
	cmd.Env = append(os.Environ(), runMainEnv+"=1",
		"OLLAMA_MODELS="+filepath.Join(dir, "models"), "HEARTH_DATA="+filepath.Join(dir, "data"),
		"HEARTH_TRUSTED_PROXIES=127.0.0.1")
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

	// Up and healthy.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			var h struct {
				Status  string `json:"status"`
				Runtime struct {
					Embedded bool `json:"embedded"`
				} `json:"runtime"`
				Database struct {
					OK bool `json:"ok"`
				} `json:"database"`
			}
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && h.Status == "ok" && h.Runtime.Embedded && h.Database.OK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hearth not healthy in time (last error %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "hearth.db")); err != nil {
		t.Errorf("no database in --data: %v", err)
	}
	// The key of encrypted content sits next to it, readable by hearth alone.
	if fi, err := os.Stat(filepath.Join(dir, "data", seal.FileName)); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != seal.KeySize {
		t.Errorf("no 0600 key of %d bytes in --data: %v %v", seal.KeySize, fi, err)
	}
	if !strings.Contains(logs.String(), "using embedded Ollama runtime") || !strings.Contains(logs.String(), filepath.Join(dir, "models")) {
		t.Errorf("startup logs do not say which runtime and models directory are in use")
	}
	// The child chooses its runners' kernels as this process would (same executable,
	// same environment).
	if kernels := "variant=" + cpubuild.Selected().Chosen.Name; !strings.Contains(logs.String(), "cpu kernels") || !strings.Contains(logs.String(), kernels) {
		t.Errorf("startup logs do not say which CPU kernels the runners use (%s)", kernels)
	}

	// An Ollama client pointed at hearth creates and runs a model.
	u, _ := url.Parse(base)
	client := api.NewClient(u, http.DefaultClient)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := scriptmodel.Create(ctx, client, scriptmodel.PlainModel, scriptmodel.Catalog()[scriptmodel.PlainModel])
	if err != nil {
		t.Fatal(err)
	}
	list, err := client.List(ctx)
	if err != nil || len(list.Models) != 1 || list.Models[0].Name != scriptmodel.PlainModel {
		t.Fatalf("/api/tags = %+v, %v; want the created model", list, err)
	}
	var reply strings.Builder
	stream := false
	err = client.Chat(ctx, &api.ChatRequest{
		Model: scriptmodel.PlainModel, Stream: &stream,
		Messages: []api.Message{{Role: "user", Content: "hi"}},
	}, func(r api.ChatResponse) error { reply.WriteString(r.Message.Content); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reply.String(), m.Text(scriptmodel.EntryAssistant); got != want {
		t.Errorf("/api/chat through hearth = %q, want %q", got, want)
	}

	// The test is the trusted proxy (HEARTH_TRUSTED_PROXIES): the address it forwards
	// is the client's, in the request's log line.
	req, _ := http.NewRequest("GET", base+"/v1/models", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != scriptmodel.PlainModel || models.Data[0].Object != "model" {
		t.Errorf("/v1/models = %+v", models)
	}

	// The line is written once the answer is: wait for it a moment.
	for start := time.Now(); !strings.Contains(logs.String(), "client=203.0.113.9"); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Errorf("the log does not name the client a trusted proxy forwarded")
			break
		}
	}

	// The client commands work against the running hearth, through its /api. The model
	// answered, so it is loaded: all its layers (its blocks and the output layer, as the
	// runtime counts them) on the CPU of this CPU build.
	out, _, err := runCLI(t, "models", "--host", base)
	layers := fmt.Sprintf("0/%d (CPU)", m.Layers+1)
	if err != nil || !strings.Contains(out, scriptmodel.PlainModel) || !strings.Contains(out, "FORMAT") ||
		!regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(scriptmodel.PlainModel)+`\s.*\s100% CPU\s+`+regexp.QuoteMeta(layers)+`\s*$`).MatchString(out) {
		t.Errorf("hearth models: %v, want %s loaded at 100%% CPU with layers %s:\n%s", err, scriptmodel.PlainModel, layers, out)
	}
	// hearth logged the placement once, naming the model.
	if want := fmt.Sprintf(`msg="model layers placed" model=%s layers="%s"`, scriptmodel.PlainModel, layers); strings.Count(logs.String(), want) != 1 {
		t.Errorf("hearth logs %d lines %s, want 1", strings.Count(logs.String(), want), want)
	}
	out, _, err = runCLI(t, "doctor", "--addr", addr, "--data", filepath.Join(dir, "data"), "--models", filepath.Join(dir, "models"))
	if err != nil || !strings.Contains(out, "All checks passed") || !strings.Contains(out, scriptmodel.PlainModel) {
		t.Errorf("hearth doctor: %v\n%s", err, out)
	}
	// A model of an architecture the embedded runtime does not know: both commands say
	// so (and doctor fails), without the runtime trying to load it.
	const odd = "hearth-script-unknown-arch:latest"
	if _, err := scriptmodel.Create(ctx, client, odd, scriptmodel.Spec{Architecture: "hearthtestarch", Template: "{{ .Prompt }}<|go|>",
		Scripts: []scriptmodel.Script{{Entry: "<|go|>", Text: "Never written."}}}); err != nil {
		t.Fatal(err)
	}
	const oddRow = "architecture hearthtestarch: not in the embedded runtime (Ollama " + ollama.RuntimeVersion + ")"
	out, _, err = runCLI(t, "models", "--host", base)
	if err != nil || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(odd)+`\s.*\s`+regexp.QuoteMeta(oddRow)+`\s`).MatchString(out) {
		t.Errorf("hearth models: %v, want %s with %q:\n%s", err, odd, oddRow, out)
	}
	out, _, err = runCLI(t, "doctor", "--addr", addr, "--data", filepath.Join(dir, "data"), "--models", filepath.Join(dir, "models"))
	if err == nil || !strings.Contains(out, "FAIL    "+odd+" "+oddRow+"; serve it from an Ollama that can (hearth serve --runtime URL)") {
		t.Errorf("hearth doctor: %v, want a failed check of %s:\n%s", err, odd, out)
	}
	if err := client.Delete(ctx, &api.DeleteRequest{Model: odd}); err != nil {
		t.Fatal(err)
	}
	// A registry that cannot be reached (a closed loopback port, so the test sends
	// nothing off the machine): the pull fails with the runtime's reason, every time.
	for range 20 {
		_, _, err := runCLI(t, "pull", "--host", base, "-q", "127.0.0.1:9/hearth/no-such-model")
		if err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("hearth pull from an unreachable registry: %v", err)
		}
	}
	// A key created with the CLI next to the running server turns auth on at once.
	out, _, err = runCLI(t, "keys", "create", "--name", "ops", "--admin", "--data", filepath.Join(dir, "data"))
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(out)
	if resp, err := http.Get(base + "/v1/models"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/v1/models without a key after keys create: %v %v", resp.Status, err)
	}
	req, _ = http.NewRequest("GET", base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("x-request-id") == "" {
		t.Errorf("/metrics with the new key: %v %v", resp.Status, err)
	} else {
		// The caches are reported: the stored items', the checkpoints', the renderer's
		// prompts and the opened reasoning.
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, series := range []string{"hearth_item_cache_bytes ", "hearth_item_cache_budget_bytes ", "hearth_prompt_cache_entries ",
			"hearth_prompt_cache_budget_bytes 6.7108864e+07", "hearth_prompt_cache_misses_total ",
			"hearth_checkpoint_cache_budget_bytes 6.7108864e+07", "hearth_opened_reasoning_cache_budget_bytes 1.6777216e+07"} {
			if !strings.Contains(string(body), "\n"+series) {
				t.Errorf("/metrics has no %q", series)
			}
		}
	}
	if _, _, err := runCLI(t, "models", "--host", base); err == nil || !strings.Contains(err.Error(), "API key") {
		t.Errorf("hearth models without a key: %v", err)
	}
	if _, _, err := runCLI(t, "models", "--host", base, "--api-key", key); err != nil {
		t.Errorf("hearth models with a key: %v", err)
	}

	// SIGTERM: a clean exit, and the model runner gone with it. The runners are this
	// hearth's children: the test binary's own shared runtime (started by earlier tests)
	// runs runners of the same executable, kept loaded for the whole run.
	var runners []int
	for _, pid := range testenv.RunnerPIDs(false) {
		if testenv.ParentPID(pid) == cmd.Process.Pid {
			runners = append(runners, pid)
		}
	}
	if len(runners) == 0 {
		t.Fatalf("no runner process found while a model is loaded")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("hearth exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("hearth did not stop within 30s of SIGTERM")
	}
	for _, pid := range runners {
		if testenv.ProcessAlive(pid) {
			t.Errorf("runner %d outlived hearth", pid)
		}
	}
}

func slicesWithout(env []string, prefix string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}

func TestCheckExposure(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		keys  []string
		allow bool
		ok    bool
	}{
		{"127.0.0.1:8080", nil, false, true},
		{"localhost:8080", nil, false, true},
		{"[::1]:8080", nil, false, true},
		{"0.0.0.0:8080", nil, false, false},
		{":8080", nil, false, false},
		{"192.168.1.5:8080", nil, false, false},
		{"0.0.0.0:8080", []string{"k"}, false, true},
		{"0.0.0.0:8080", nil, true, true},
		{"nonsense", nil, false, false},
	} {
		err := checkExposure(tc.addr, tc.keys, tc.allow)
		if (err == nil) != tc.ok {
			t.Errorf("checkExposure(%q, keys=%v, insecure=%v) = %v", tc.addr, tc.keys, tc.allow, err)
		}
	}
}
