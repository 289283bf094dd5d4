package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// logBuffer is a process's standard error, read while it is written.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// lines are the lines written since offset (a length of String()).
func (l *logBuffer) lines(offset int) []string {
	s := l.String()[offset:]
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// waitLine waits until a line since offset contains every one of want, and returns it.
func (l *logBuffer) waitLine(t *testing.T, offset int, want ...string) string {
	t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		for _, line := range l.lines(offset) {
			all := true
			for _, w := range want {
				all = all && strings.Contains(line, w)
			}
			if all {
				return line
			}
		}
		// A bound against a line that never comes, not a timing assertion.
		if time.Since(start) > time.Minute {
			t.Fatalf("no log line with %q; the log since:\n%s", want, strings.Join(l.lines(offset), "\n"))
		}
	}
}

// serveLogged runs `hearth serve` as its own process on dir's models and data with
// extra arguments, and waits until it is healthy.
func serveLogged(t *testing.T, dir string, args ...string) (base string, logs *logBuffer, cmd *exec.Cmd) {
	t.Helper()
	addr := freeAddr(t)
	cmd = exec.Command(os.Args[0], append([]string{"serve", "--addr", addr}, args...)...)
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1",
		"OLLAMA_MODELS="+filepath.Join(dir, "models"), "HEARTH_DATA="+filepath.Join(dir, "data")), "OLLAMA_HOST=")
	// The runtime's own verbosity must not decide what hearth shows.
	cmd.Env = slicesWithout(cmd.Env, "OLLAMA_DEBUG=")
	logs = &logBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("hearth logs:\n%s", tail(logs.String(), 8000))
		}
	})
	base = "http://" + addr
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, logs, cmd
			}
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("hearth exited while starting: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("hearth not healthy in time:\n%s", logs.String())
		}
	}
}

// scriptModels makes the script models in dir's models directory with `hearth
// script-models`, which prints the models it made and nothing of the runtime's.
func scriptModels(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "script-models", "--models", filepath.Join(dir, "models"))
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1"), "OLLAMA_HOST=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("hearth script-models: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 || !strings.Contains(stdout.String(), scriptmodel.PlainModel) {
		t.Errorf("hearth script-models printed on stderr:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n")[1:] {
		if !strings.HasPrefix(line, "  hearth-script-") {
			t.Errorf("hearth script-models printed a line of no model: %q", line)
		}
	}
}

func respondOnce(t *testing.T, base, model string) {
	t.Helper()
	resp, err := http.Post(base+"/v1/responses", "application/json", strings.NewReader(`{"model":"`+model+`","input":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", model, resp.StatusCode, b)
	}
}

// runtimeMarks are what the runtime's own output looks like: its slog lines (they
// carry source=FILE:LINE), its gin request log, the llama.cpp loader's and the
// runner's prints.
var runtimeMarks = []string{"source=", "[GIN", "llama_model_loader", "print_info", "load_tensors", "llama_context", "starting runner", "server config", "level=DEBUG"}

// TestServeLogsE2E: at the default level a request is one line that says who asked,
// which model, how it ended, the tokens and the times, each once; a request that starts
// a model adds at most a few lines of hearth's own (the placement); nothing of the
// runtime's output (its log, its request log, the loader's lines) shows. When a
// model's runner dies in a generation, hearth's error line carries the runner's last
// lines of output, and a line says the runner stopped.
func TestServeLogsE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "reads the embedded runtime's output")
	dir := t.TempDir()
	scriptModels(t, dir)
	base, logs, cmd := serveLogged(t, dir)

	check := func(label string, offset, most int) []string {
		t.Helper()
		line := logs.waitLine(t, offset, "msg=request", "path=/v1/responses")
		lines := logs.lines(offset)
		if len(lines) > most {
			t.Errorf("%s: %d lines at the default level, want at most %d:\n%s", label, len(lines), most, strings.Join(lines, "\n"))
		}
		for _, l := range lines {
			for _, m := range runtimeMarks {
				if strings.Contains(l, m) {
					t.Errorf("%s: a line of the runtime's output (%q) at the default level: %s", label, m, l)
				}
			}
		}
		for _, f := range []string{"request_id=req_", "key=anonymous", "model=" + strings.TrimSuffix(scriptmodel.PlainModel, ":latest") + " ",
			"status=200", "response_status=completed", "input_tokens=", "cached_tokens=", "output_tokens=", "ttft=", "duration="} {
			if !strings.Contains(line, f) {
				t.Errorf("%s: the request line lacks %q: %s", label, f, line)
			}
		}
		for _, f := range []string{"model=", "key=", "status=", "request_id="} {
			if n := strings.Count(line, " "+f); n != 1 {
				t.Errorf("%s: the request line names %s %d times: %s", label, f, n, line)
			}
		}
		return lines
	}
	model := strings.TrimSuffix(scriptmodel.PlainModel, ":latest")
	offset := len(logs.String())
	respondOnce(t, base, model)
	if lines := check("a request that starts the model", offset, 6); !strings.Contains(strings.Join(lines, "\n"), `msg="model layers placed"`) {
		t.Errorf("no line says where the model was placed:\n%s", strings.Join(lines, "\n"))
	}
	offset = len(logs.String())
	respondOnce(t, base, model)
	check("a request on the loaded model", offset, 3)

	// A runner killed in the middle of a generation: the error line has its last lines.
	// The kill follows the stream's first delta; should the generation end before it
	// lands (a fast machine), the next request starts a new runner and it is tried again.
	offset = len(logs.String())
	for attempt := 1; ; attempt++ {
		if killMidStream(t, base, cmd.Process.Pid) {
			break
		}
		if attempt == 5 {
			t.Fatal("every generation ended before its runner was killed")
		}
	}
	line := logs.waitLine(t, offset, "level=ERROR", "model runner stopped")
	// What the llama.cpp runner says as it loads a model, whatever its version
	// prints last.
	if !strings.Contains(line, "runner_output=") || !strings.Contains(line, "llama_context") {
		t.Errorf("the runner's death is logged without its last lines: %s", line)
	}
	// And its end is an event of its own.
	logs.waitLine(t, offset, `msg="model runner stopped"`, "model="+scriptmodel.LongModel)
}

// killMidStream streams a response of the long script model, kills the model runners
// once the first delta came, and reports whether the response then failed.
func killMidStream(t *testing.T, base string, pid int) bool {
	t.Helper()
	resp, err := http.Post(base+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"`+scriptmodel.LongModel+`","input":"hi","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 64<<10)
	var seen []byte
	for !bytes.Contains(seen, []byte("response.output_text.delta")) {
		n, err := resp.Body.Read(buf)
		seen = append(seen, buf[:n]...)
		if err != nil {
			t.Fatalf("the stream ended before its first delta: %v\n%s", err, seen)
		}
	}
	runners := childRunners(pid)
	if len(runners) == 0 {
		t.Fatal("no model runner to kill")
	}
	for _, r := range runners {
		syscall.Kill(r, syscall.SIGKILL)
	}
	rest, _ := io.ReadAll(resp.Body)
	return bytes.Contains(rest, []byte("response.failed"))
}

// TestServeDebugLogsE2E: with --log-level debug --log-format json the runtime's output
// is there, as hearth's JSON records: every line is one JSON object, the runtime's
// request log and the loader's lines among them.
func TestServeDebugLogsE2E(t *testing.T) {
	testenv.SkipIfExternal(t, "reads the embedded runtime's output")
	dir := t.TempDir()
	scriptModels(t, dir)
	base, logs, _ := serveLogged(t, dir, "--log-level", "debug", "--log-format", "json")
	offset := len(logs.String())
	respondOnce(t, base, scriptmodel.PlainModel)
	logs.waitLine(t, offset, `"msg":"request"`, `"path":"/v1/responses"`)
	var requestLog, loader, runtimeRecord bool
	for _, l := range logs.lines(0) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("not a JSON record: %s", l)
			continue
		}
		line, _ := rec["line"].(string)
		switch {
		case rec["msg"] == "runtime output" && rec["stream"] == "http" && strings.Contains(line, "/api/generate"):
			requestLog = true
		case rec["msg"] == "runtime output" && strings.Contains(line, "llama_context"):
			loader = true
		case rec["from"] == "runtime" && rec["level"] == "DEBUG":
			runtimeRecord = true
		}
	}
	if !requestLog || !loader || !runtimeRecord {
		t.Errorf("debug log: the runtime's request log %v, the loader's lines %v, the runtime's records %v; want all", requestLog, loader, runtimeRecord)
	}
}

// TestServeAddressInUse: serve on an address another program holds fails at once,
// naming --addr and what to do, before it opens the database or starts the runtime.
func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "serve", "--addr", ln.Addr().String())
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1",
		"OLLAMA_MODELS="+filepath.Join(dir, "models"), "HEARTH_DATA="+filepath.Join(dir, "data")), "OLLAMA_HOST=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("serve on a taken address: %v, want a failure\n%s", err, stderr.String())
	}
	want := "Error: --addr " + ln.Addr().String() + " is in use: another program (another hearth?) listens there\n" +
		"fix: stop that program, or give hearth serve a free address: --addr HOST:PORT (or HEARTH_ADDR, or addr in the config file)\n"
	if stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "hearth.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database was opened before the address was checked: %v", err)
	}
}
