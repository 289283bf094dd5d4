package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRuntimeSpecs(t *testing.T) {
	t.Setenv("OLLAMA_HOST", "")
	for _, c := range []struct {
		name     string
		o        serveOptions
		host     string // OLLAMA_HOST
		want     []runtimeSpec
		errMatch string
	}{
		{name: "default", want: []runtimeSpec{{embedded: true}}},
		{name: "OLLAMA_HOST without flags", host: "10.0.0.2:11434", want: []runtimeSpec{{url: "10.0.0.2:11434"}}},
		{name: "--ollama is --runtime", o: serveOptions{ollamaURL: "http://gpu:11434"}, host: "ignored:1",
			want: []runtimeSpec{{url: "http://gpu:11434"}}},
		{name: "several, with slots", o: serveOptions{runtimes: []string{"embedded?slots=2", "http://gpu:11434?slots=4", "box2"}},
			want: []runtimeSpec{{embedded: true, slots: 2}, {url: "http://gpu:11434", slots: 4}, {url: "box2"}}},
		{name: "runtime and ollama", o: serveOptions{runtimes: []string{"embedded"}, ollamaURL: "gpu"},
			want: []runtimeSpec{{embedded: true}, {url: "gpu"}}},
		{name: "embedded twice", o: serveOptions{runtimes: []string{"embedded", "EMBEDDED"}}, errMatch: "more than once"},
		{name: "bad slots", o: serveOptions{runtimes: []string{"gpu?slots=0"}}, errMatch: "slots must be"},
		{name: "unknown setting", o: serveOptions{runtimes: []string{"gpu?parallel=2"}}, errMatch: `unknown setting "parallel"`},
		{name: "bad scheme", o: serveOptions{runtimes: []string{"ftp://gpu"}}, errMatch: "scheme"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("OLLAMA_HOST", c.host)
			got, err := runtimeSpecs(c.o)
			if c.errMatch != "" {
				if err == nil || !strings.Contains(err.Error(), c.errMatch) {
					t.Fatalf("error %v, want one containing %q", err, c.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for i := range got {
				g, w := got[i], c.want[i]
				if g.embedded != w.embedded || g.url != w.url || g.slots != w.slots {
					t.Errorf("spec %d: %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestServeRuntimesFromConfig: `runtime` in a config file is a list; hearth serves
// every runtime it names and /healthz lists each (503 while none answers).
func TestServeRuntimesFromConfig(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "hearth.toml")
	if err := os.WriteFile(config, []byte(`runtime = ["http://127.0.0.1:1", "127.0.0.1:2?slots=3"]`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(os.Args[0], "--config", config, "serve", "--addr", addr, "--data", filepath.Join(dir, "data"))
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1"), "OLLAMA_HOST=")
	var logs bytes.Buffer
	cmd.Stderr = &lockedWriter{w: &logs}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("hearth did not serve in a minute:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			continue
		}
		var health struct {
			Runtimes []struct {
				Runtime string `json:"runtime"`
				OK      bool   `json:"ok"`
			} `json:"runtimes"`
		}
		json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("/healthz with no runtime answering: %d, want 503", resp.StatusCode)
		}
		if len(health.Runtimes) != 2 || health.Runtimes[0].Runtime != "127.0.0.1:1" || health.Runtimes[1].Runtime != "127.0.0.1:2" ||
			health.Runtimes[0].OK || health.Runtimes[1].OK {
			t.Errorf("/healthz runtimes %+v, want 127.0.0.1:1 and 127.0.0.1:2, both down", health.Runtimes)
		}
		return
	}
}
