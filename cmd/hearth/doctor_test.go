package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// doctorFields are the details of doctor's lines for the check named what, and whether
// each passed.
func doctorFields(out, what string) (details []string, oks []bool) {
	re := regexp.MustCompile(`(?m)^(ok|FAIL) +` + regexp.QuoteMeta(what) + ` +(.*)$`)
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		details = append(details, m[2])
		oks = append(oks, m[1] == "ok")
	}
	return details, oks
}

// TestDoctorAgreesWithServe gives `hearth doctor` and `hearth serve` the same
// non-default config file, flags and environment (a setting from each, and ones where
// a flag beats the variable beats the file) and checks that what doctor says serve will
// use is what serve then uses: the address it listens on, the data directory its
// database is created in, the models directory a model created through it lands in, its
// runtimes (as /healthz lists them) and its admin key. Run again while serve runs,
// doctor finds that hearth at the address and checks it through its API.
func TestDoctorAgreesWithServe(t *testing.T) {
	testenv.SkipIfExternal(t, "starts hearth serve with its embedded runtime")
	dir := t.TempDir()
	addr := freeAddr(t)
	const adminKey = "doctor-test-admin-key"
	config := filepath.Join(dir, "hearth.yaml")
	// data and models here lose to HEARTH_DATA and --models; addr and runtime are the
	// file's alone. 127.0.0.1:1 is a runtime that does not answer.
	if err := os.WriteFile(config, []byte("addr: "+addr+"\n"+
		"data: "+filepath.Join(dir, "data-config")+"\n"+
		"models: "+filepath.Join(dir, "models-config")+"\n"+
		"runtime: [embedded, \"127.0.0.1:1?slots=2\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := slicesWithout(slicesWithout(os.Environ(), "OLLAMA_HOST="), "HEARTH_")
	env = append(env, runMainEnv+"=1", "HEARTH_CONFIG="+config,
		"HEARTH_DATA="+filepath.Join(dir, "data-env"),
		"HEARTH_ADMIN_KEY="+adminKey,
		"OLLAMA_MODELS="+filepath.Join(dir, "models-ollama-env"))
	if runners := os.Getenv("HEARTH_RUNNER_DIR"); runners != "" {
		env = append(env, "HEARTH_RUNNER_DIR="+runners)
	}
	flags := []string{"--models", filepath.Join(dir, "models"), "--gpu=false"}
	doctor := func() string {
		t.Helper()
		cmd := exec.Command(os.Args[0], append([]string{"doctor"}, flags...)...)
		cmd.Env = env
		out, err := cmd.Output()
		// The runtime at 127.0.0.1:1 does not answer: doctor fails, as it must.
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("hearth doctor: %v, want exit status 1:\n%s", err, out)
		}
		return string(out)
	}

	// Before serve: what doctor resolved.
	out := doctor()
	t.Logf("hearth doctor before serve:\n%s", out)
	want := map[string]string{
		"address":    "^" + regexp.QuoteMeta(addr) + " is free",
		"data dir":   "^" + regexp.QuoteMeta(filepath.Join(dir, "data-env")) + " does not exist yet",
		"database":   "^" + regexp.QuoteMeta(filepath.Join(dir, "data-env", databaseFile)) + " does not exist yet",
		"models dir": "^" + regexp.QuoteMeta(filepath.Join(dir, "models")) + ` \(--models\)`,
		"keys":       `^1 admin key\(s\) from --admin-key; the database has none yet: requests need a key`,
		"settings":   regexp.QuoteMeta(config),
	}
	for what, pattern := range want {
		if d, oks := doctorFields(out, what); len(d) != 1 || !oks[0] || !regexp.MustCompile(pattern).MatchString(d[0]) {
			t.Errorf("doctor's %s: %q, want ok and %s", what, d, pattern)
		}
	}
	details, oks := doctorFields(out, "runtime")
	var runtimes []string
	for i, d := range details {
		switch {
		case strings.HasPrefix(d, "embedded ") && oks[i]:
			runtimes = append(runtimes, "embedded")
		case strings.HasPrefix(d, "http://127.0.0.1:1 (--runtime) does not answer") && !oks[i]:
			runtimes = append(runtimes, "127.0.0.1:1")
		default:
			t.Errorf("doctor's runtime line %q", d)
		}
	}
	if !strings.Contains(out, "fix:") {
		t.Errorf("doctor gave no fix for the runtime that does not answer")
	}

	// serve with the same file, flags and environment.
	cmd := exec.Command(os.Args[0], append([]string{"serve"}, flags...)...)
	cmd.Env = env
	var logs bytes.Buffer
	cmd.Stderr = &lockedWriter{w: &logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("hearth serve logs:\n%s", logs.String())
		}
	})
	// It listens where doctor said, and serves the runtimes doctor named.
	base := "http://" + addr
	var health struct {
		Runtimes []struct {
			Runtime string `json:"runtime"`
		} `json:"runtimes"`
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("hearth serve did not answer at doctor's address %s in time", addr)
		}
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			continue
		}
		err = json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if err == nil && len(health.Runtimes) > 0 {
			break
		}
	}
	var served []string
	for _, r := range health.Runtimes {
		served = append(served, r.Runtime)
	}
	if !slices.Equal(served, runtimes) || len(served) != 2 {
		t.Errorf("serve's runtimes %q, doctor's %q", served, runtimes)
	}
	// Its database is where doctor said, not in the config file's data directory.
	if _, err := os.Stat(filepath.Join(dir, "data-env", databaseFile)); err != nil {
		t.Errorf("serve's database is not in doctor's data directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data-config")); err == nil {
		t.Errorf("serve used the config file's data directory, which HEARTH_DATA overrides")
	}
	// The admin key doctor counted is the one serve requires.
	if resp, err := http.Get(base + "/v1/models"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("/v1/models without a key: %v %v, want 401", resp, err)
	}
	// A model created through serve lands in doctor's models directory.
	u, _ := url.Parse(base)
	client := api.NewClient(u, &http.Client{Transport: bearer{key: adminKey, next: http.DefaultTransport}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := scriptmodel.Create(ctx, client, scriptmodel.PlainModel, scriptmodel.Catalog()[scriptmodel.PlainModel]); err != nil {
		t.Fatal(err)
	}

	// Again, with serve running: the address is taken by that hearth, which doctor
	// checks through its API with the admin key, and the models directory holds the model.
	out = doctor()
	t.Logf("hearth doctor while serve runs:\n%s", out)
	want = map[string]string{
		"address":                     "^" + regexp.QuoteMeta(addr) + " is in use by a running hearth",
		"data dir":                    "^" + regexp.QuoteMeta(filepath.Join(dir, "data-env")) + " writable",
		"database":                    "^" + regexp.QuoteMeta(filepath.Join(dir, "data-env", databaseFile)) + ": migrated, intact",
		"models dir":                  "^" + regexp.QuoteMeta(filepath.Join(dir, "models")) + ` \(--models\): 1 model\(s\): ` + regexp.QuoteMeta(scriptmodel.PlainModel) + "$",
		"hearth":                      "^" + regexp.QuoteMeta(base) + " answers",
		"  " + scriptmodel.PlainModel: "^format ",
	}
	for what, pattern := range want {
		if d, oks := doctorFields(out, what); len(d) != 1 || !oks[0] || !regexp.MustCompile(pattern).MatchString(d[0]) {
			t.Errorf("doctor's %s: %q, want ok and %s", what, d, pattern)
		}
	}
}

// TestDoctorFailures: what serve would refuse, doctor fails, with a line that says how to
// fix it, and exit status non-zero: a setting serve refuses (then nothing else is
// checked), an address another program holds, a non-loopback address without keys.
func TestDoctorFailures(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "")
	data := t.TempDir()
	out, _, err := runCLI(t, "doctor", "--data", data, "--gpu=false", "--replica-lease", "0s")
	if err == nil || !regexp.MustCompile(`(?m)^FAIL +settings +--replica-lease 0s: want a positive duration.*\n +fix: +correct that setting`).MatchString(out) ||
		strings.Contains(out, "address") {
		t.Errorf("doctor with a setting serve refuses: %v\n%s", err, out)
	}

	// A program that is not hearth holds the address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler()}
	go srv.Serve(ln)
	defer srv.Close()
	out, _, err = runCLI(t, "doctor", "--addr", ln.Addr().String(), "--data", data, "--gpu=false", "--runtime", "embedded")
	if err == nil || !regexp.MustCompile(`(?m)^FAIL +address +`+regexp.QuoteMeta(ln.Addr().String())+` is in use by another program, not a hearth\n +fix: +stop that program.*--addr`).MatchString(out) {
		t.Errorf("doctor with the address taken: %v\n%s", err, out)
	}

	// Every interface, no key: serve refuses to start.
	out, _, err = runCLI(t, "doctor", "--addr", "0.0.0.0:"+strings.Split(freeAddr(t), ":")[1], "--data", data, "--gpu=false", "--runtime", "embedded")
	if err == nil || !regexp.MustCompile(`(?m)^FAIL +keys +0 admin key\(s\).*hearth serve refuses --addr 0\.0\.0\.0:\d+.*\n +fix: +create a key`).MatchString(out) {
		t.Errorf("doctor on every interface without keys: %v\n%s", err, out)
	}
	// With --insecure-no-auth, as serve, it passes.
	out, _, _ = runCLI(t, "doctor", "--addr", "0.0.0.0:"+strings.Split(freeAddr(t), ":")[1], "--data", data, "--gpu=false", "--runtime", "embedded", "--insecure-no-auth")
	if !regexp.MustCompile(`(?m)^ok +keys +.*--insecure-no-auth, requests need none`).MatchString(out) {
		t.Errorf("doctor with --insecure-no-auth:\n%s", out)
	}
}
