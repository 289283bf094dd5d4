package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/scriptmodel"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// hearthProcess is `hearth serve` running as its own process (this test binary, re-executed).
type hearthProcess struct {
	cmd    *exec.Cmd
	base   string
	logs   *bytes.Buffer
	exited chan error
}

func startHearth(t *testing.T, dir string) *hearthProcess {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(os.Args[0], "serve", "--addr", addr)
	cmd.Env = slicesWithout(append(os.Environ(), runMainEnv+"=1",
		"OLLAMA_MODELS="+filepath.Join(dir, "models"), "HEARTH_DATA="+filepath.Join(dir, "data")), "OLLAMA_HOST=")
	p := &hearthProcess{cmd: cmd, base: "http://" + addr, logs: &bytes.Buffer{}, exited: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{w: p.logs}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("hearth (pid %d) logs:\n%s", cmd.Process.Pid, tail(p.logs.String(), 6000))
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case err := <-p.exited:
			t.Fatalf("hearth exited while starting: %v\n%s", err, p.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("hearth not healthy in time: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// childRunners returns the model runners whose parent is pid.
func childRunners(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && args[1] == "runner" {
			out = append(out, child)
		}
	}
	return out
}

type streamOutcome struct {
	id        string
	completed bool // the client saw response.completed
	text      string
}

// stream posts a streaming request and reads it until it ends or the connection drops.
func stream(base, body string, out *streamOutcome, mu *sync.Mutex) {
	resp, err := http.Post(base+"/v1/responses", "application/json", strings.NewReader(body))
	if err != nil {
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var text strings.Builder
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		mu.Lock()
		switch ev.Type {
		case "response.created":
			out.id = ev.Response.ID
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			out.completed, out.text = true, text.String()
		}
		mu.Unlock()
	}
}

// TestKillDuringStreams SIGKILLs hearth while 20 responses stream and 4 JSON replies
// run, and starts it again on the same data: every response whose client saw it
// complete is stored whole, every stream left in flight is marked failed, a JSON reply
// left in flight (stored whole when it ends, its id never sent) left nothing, and the
// database passes PRAGMA integrity_check.
func TestKillDuringStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hearth twice with a bench model")
	}
	const streams, completeBeforeKill = 20, 3
	dir := t.TempDir()
	h := startHearth(t, dir)

	// A bench script model, created through hearth's /api passthrough: it decodes at a
	// small real model's pace, so the streams are still running when hearth dies.
	u, _ := url.Parse(h.base)
	client := api.NewClient(u, http.DefaultClient)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	const name = "hearth-fault-plain:latest"
	m, err := scriptmodel.Create(ctx, client, name, scriptmodel.Bench(scriptmodel.Catalog()[scriptmodel.PlainModel]))
	if err != nil {
		t.Fatal(err)
	}
	want := m.Text(scriptmodel.EntryAssistant)
	body := func(i int) string {
		return fmt.Sprintf(`{"model":%q,"stream":true,"input":"stream %d of %d"}`, name, i, streams)
	}
	// Load the runner before the streams start.
	var warm streamOutcome
	var mu sync.Mutex
	stream(h.base, body(-1), &warm, &mu)
	if !warm.completed {
		t.Fatalf("warm-up stream did not complete")
	}

	outcomes := make([]streamOutcome, streams)
	var wg sync.WaitGroup
	for i := range outcomes {
		wg.Add(1)
		go func() { defer wg.Done(); stream(h.base, body(i), &outcomes[i], &mu) }()
	}
	// JSON replies among them: the id of each that answers.
	const replies = 4
	replied := make([]string, replies)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(h.base+"/v1/responses", "application/json",
				strings.NewReader(fmt.Sprintf(`{"model":%q,"input":"reply %d"}`, name, i)))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var r struct{ ID, Status string }
			if b, err := io.ReadAll(resp.Body); err == nil && json.Unmarshal(b, &r) == nil && r.Status == "completed" {
				mu.Lock()
				replied[i] = r.ID
				mu.Unlock()
			}
		}()
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		mu.Lock()
		n := 0
		for _, o := range outcomes {
			if o.completed {
				n++
			}
		}
		mu.Unlock()
		if n >= completeBeforeKill {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d streams completed in time", n, streams)
		}
		time.Sleep(20 * time.Millisecond)
	}
	runners := childRunners(h.cmd.Process.Pid)
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.exited
	// The runners hearth started die with it (TestRuntimeIsolation checks that); make
	// sure before the restart, so the restarted hearth does not share the CPU with them.
	for _, pid := range runners {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	wg.Wait()

	mu.Lock()
	var completed, inFlight []streamOutcome
	for _, o := range outcomes {
		switch {
		case o.completed:
			completed = append(completed, o)
		case o.id != "":
			inFlight = append(inFlight, o)
		}
	}
	mu.Unlock()
	t.Logf("at the kill: %d streams completed, %d in flight, %d not yet created", len(completed), len(inFlight), streams-len(completed)-len(inFlight))

	// The database as the crash left it: whole, and nothing in flight but the streams
	// whose clients had their ids; the JSON replies that answered stored completed.
	dbPath := filepath.Join(dir, "data", "hearth.db")
	db, err := sqlite.Open(dbPath)
	if err != nil {
		t.Fatalf("open the database after SIGKILL: %v", err)
	}
	if err := db.IntegrityCheck(ctx); err != nil {
		t.Errorf("after SIGKILL: %v", err)
	}
	rows, _, err := db.ConsoleResponses(ctx, storage.ConsoleFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]storage.Status{}
	for _, r := range rows {
		stored[r.ID] = r.Status
	}
	streamed := map[string]bool{}
	for _, o := range outcomes {
		streamed[o.id] = true
	}
	answered := 0
	for _, id := range replied {
		if id != "" {
			answered++
			if stored[id] != storage.StatusCompleted {
				t.Errorf("JSON reply %s answered before the kill, stored %q", id, stored[id])
			}
		}
	}
	for id, st := range stored {
		if st.InFlight() && !streamed[id] {
			t.Errorf("response %s in flight after the kill is no stream's: a JSON reply's in-flight row", id)
		}
	}
	t.Logf("at the kill: %d of %d JSON replies answered; %d responses stored", answered, replies, len(rows))
	db.Close()

	h2 := startHearth(t, dir)
	get := func(id string) (status, text string) {
		resp, err := http.Get(h2.base + "/v1/responses/" + id)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var r struct {
			Status string `json:"status"`
			Output []struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"output"`
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &r) != nil {
			t.Errorf("GET %s after restart: %d %s", id, resp.StatusCode, b)
			return "", ""
		}
		for _, o := range r.Output {
			for _, c := range o.Content {
				text += c.Text
			}
		}
		return r.Status, text
	}
	for _, o := range completed {
		if status, text := get(o.id); status != "completed" || text != want || text != o.text {
			t.Errorf("completed response %s after restart: status %s text %q (client saw %q)", o.id, status, text, o.text)
		}
	}
	failed := 0
	for _, o := range inFlight {
		switch status, text := get(o.id); status {
		case "failed":
			failed++
		case "completed":
			// Stored just before the kill, its terminal event lost with the connection:
			// still whole.
			if text != want {
				t.Errorf("response %s stored completed with text %q", o.id, text)
			}
		default:
			t.Errorf("in-flight response %s after restart: %s, want failed", o.id, status)
		}
	}
	t.Logf("after restart: %d completed intact, %d in flight marked failed", len(completed), failed)
	if len(inFlight) > 0 && failed == 0 {
		t.Errorf("no in-flight response was marked failed")
	}
	if !strings.Contains(h2.logs.String(), "marked responses left in flight") {
		t.Errorf("the restarted hearth did not log its recovery")
	}
	// The restarted hearth serves new requests.
	var after streamOutcome
	stream(h2.base, body(99), &after, &mu)
	if !after.completed || after.text != want {
		t.Errorf("new stream after restart: %+v", after)
	}
	h2.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h2.exited:
	case <-time.After(30 * time.Second):
		t.Errorf("restarted hearth did not stop on SIGTERM")
	}
}
