package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestRuntimeIsolation runs hearth as its own process with the embedded runtime and a
// loaded model, then checks what the runtime exposes to other local processes and what
// a SIGKILL of hearth leaves behind:
//   - hearth's process listens on its own --addr and nothing else: the embedded runtime
//     has no TCP port and no unix socket another process could connect to;
//   - every model runner ends when hearth is killed, instead of living on under init.
func TestRuntimeIsolation(t *testing.T) {
	testenv.SkipIfExternal(t, "checks the embedded runtime's own isolation")
	dir := t.TempDir()
	h := startHearth(t, dir)
	pid := h.cmd.Process.Pid

	// Load a model through hearth, so a model runner runs.
	u, _ := url.Parse(h.base)
	client := api.NewClient(u, http.DefaultClient)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := scriptmodel.Create(ctx, client, scriptmodel.PlainModel, scriptmodel.Catalog()[scriptmodel.PlainModel])
	if err != nil {
		t.Fatal(err)
	}
	var out streamOutcome
	var mu sync.Mutex
	stream(h.base, fmt.Sprintf(`{"model":%q,"stream":true,"input":"hello"}`, scriptmodel.PlainModel), &out, &mu)
	if want := m.Text(scriptmodel.EntryAssistant); !out.completed || out.text != want {
		t.Fatalf("response through hearth: completed %v, text %q, want %q", out.completed, out.text, want)
	}
	var runners []int
	for _, r := range childRunners(pid) {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(r), "cmdline"))
		if strings.Contains(string(cmdline), "--model") {
			runners = append(runners, r)
		}
	}
	if len(runners) == 0 {
		t.Fatal("no model runner runs after a response")
	}

	tcp, unix := listeningSockets(t, pid)
	if want := []string{strings.TrimPrefix(h.base, "http://")}; fmt.Sprint(tcp) != fmt.Sprint(want) {
		t.Errorf("hearth listens on TCP %v, want only %v: the embedded runtime must have no port", tcp, want)
	}
	if len(unix) > 0 {
		t.Errorf("hearth listens on unix sockets %v, want none", unix)
	}

	killed := time.Now()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.exited
	// A bound against a runner that never ends, not a timing: the kernel signals the
	// runners once hearth's exit is torn down, which on a loaded machine (a CI run's
	// parallel builds and tests) took more than 10 s once.
	deadline := killed.Add(time.Minute)
	for {
		var alive []int
		for _, r := range runners {
			if testenv.ProcessAlive(r) {
				alive = append(alive, r)
			}
		}
		if len(alive) == 0 {
			t.Logf("%d model runner(s) gone %v after hearth's SIGKILL", len(runners), time.Since(killed).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			for _, r := range alive {
				syscall.Kill(r, syscall.SIGKILL)
			}
			t.Fatalf("model runners %v still run a minute after hearth was killed", alive)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listeningSockets returns the TCP addresses (ip:port) and unix socket paths on which
// process pid listens, from its file descriptors and /proc/net.
func listeningSockets(t *testing.T, pid int) (tcp, unix []string) {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// sl local_address rem_address st ... inode (the tenth field); 0A is LISTEN.
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			tcp = append(tcp, procNetAddr(t, f[1]))
		}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// Num RefCount Protocol Flags Type St Inode [Path]; flag 00010000 is a
		// listening socket (__SO_ACCEPTCON).
		if len(f) < 7 || !inodes[f[6]] {
			continue
		}
		flags, _ := strconv.ParseUint(f[3], 16, 32)
		if flags&0x10000 != 0 {
			unix = append(unix, strings.Join(f[7:], " "))
		}
	}
	return tcp, unix
}

// procNetAddr turns /proc/net/tcp's "0100007F:1F90" into "127.0.0.1:8080".
func procNetAddr(t *testing.T, s string) string {
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, _ := strconv.ParseUint(hexPort, 16, 16)
	if len(hexIP) != 8 {
		return fmt.Sprintf("[%s]:%d", hexIP, port)
	}
	v, err := strconv.ParseUint(hexIP, 16, 32)
	if err != nil {
		t.Fatalf("bad address %q", s)
	}
	// The kernel prints the address as a host-order (little-endian) word.
	return fmt.Sprintf("%d.%d.%d.%d:%d", v&0xff, v>>8&0xff, v>>16&0xff, v>>24, port)
}
