package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hearth/engine/ollama"
	"hearth/internal/cpubuild"
	"hearth/internal/gomodule"
)

// RuntimeEnv selects the runtime the tests run on: unset or "embedded" for Ollama's
// server inside the test process, "external" for a stock `ollama serve` process built
// from the module hearth pins (or the one OllamaBinEnv names) and reached over loopback,
// as `hearth serve --ollama URL` reaches one.
const RuntimeEnv = "HEARTH_TEST_RUNTIME"

// OllamaBinEnv names an ollama executable for the external runtime tests to run as
// `ollama serve` instead of one built from the module hearth pins: a release the user
// installed (any version, with what it needs beside it, such as Ollama 0.30 and later's
// lib/ollama/llama-server), so that hearth's tests check hearth against that version.
const OllamaBinEnv = "HEARTH_TEST_OLLAMA"

// External reports whether the tests run over an external runtime (RuntimeEnv).
func External() bool { return os.Getenv(RuntimeEnv) == "external" }

// SkipIfExternal skips a test that checks something only the embedded runtime has (its
// runner processes being this binary, its in-process listener...).
func SkipIfExternal(t testing.TB, why string) {
	t.Helper()
	if External() {
		t.Skipf("%s=external: %s", RuntimeEnv, why)
	}
}

// Server is an `ollama serve` process started by the tests.
type Server struct {
	// Runtime reaches the process at its loopback address.
	Runtime *ollama.Runtime
	cmd     *exec.Cmd
	done    chan struct{}
	log     *bytes.Buffer
	once    sync.Once
}

// PID is the server process's id; its model runners are its children.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Kill ends the server and its model runners at once (SIGKILL to its process group), as
// a crash or a host going away would, and waits for it.
func (s *Server) Kill() {
	s.once.Do(func() {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	})
}

// stop ends the server the way its user would (SIGTERM: it stops its runners), and
// kills what is left after a grace period.
func (s *Server) stop() {
	s.once.Do(func() {
		syscall.Kill(s.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
		// Runners a stuck server left behind share its process group.
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	})
}

// Log is what the server wrote to stdout and stderr so far, for a failing test's message.
func (s *Server) Log() string {
	logMu.Lock()
	defer logMu.Unlock()
	return s.log.String()
}

var logMu sync.Mutex

type lockedWriter struct{ b *bytes.Buffer }

func (w lockedWriter) Write(p []byte) (int, error) {
	logMu.Lock()
	defer logMu.Unlock()
	return w.b.Write(p)
}

// StartServer starts another `ollama serve` process on its own loopback port, sharing
// the shared runtime's models directory (so it has the script models), for tests that
// need a second runtime they can kill. It runs with either runtime setup; the process is
// killed when the test ends. env adds settings of the runtime's own (such as
// OLLAMA_NUM_PARALLEL=2).
func StartServer(t testing.TB, env ...string) *Server {
	t.Helper()
	Runtime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, err := startServer(ctx, modelsDir, env...)
	if err != nil {
		t.Fatalf("ollama serve: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

// StartServerAlone is StartServer with the ollama executable copied alone into an empty
// directory: a release without the files it ships beside it. Ollama 0.30 and later then
// find no llama-server, and fail every generation while listing and showing models.
func StartServerAlone(t testing.TB, env ...string) *Server {
	t.Helper()
	Runtime(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin, err := ollamaBinary(ctx)
	if err != nil {
		t.Fatalf("ollama: %v", err)
	}
	// A release looks for its helpers beside and above its executable (lib/ollama).
	alone := filepath.Join(t.TempDir(), "bin", "ollama")
	if err := copyExecutable(bin, alone); err != nil {
		t.Fatal(err)
	}
	s, err := startBinary(ctx, alone, modelsDir, env...)
	if err != nil {
		t.Fatalf("ollama serve: %v", err)
	}
	t.Cleanup(s.stop)
	return s
}

func copyExecutable(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// startServer builds (once per machine) and starts `ollama serve` on a free loopback
// port, with the models in dir kept loaded for the whole run, and waits until it answers.
func startServer(ctx context.Context, dir string, env ...string) (*Server, error) {
	bin, err := ollamaBinary(ctx)
	if err != nil {
		return nil, err
	}
	return startBinary(ctx, bin, dir, env...)
}

// startBinary starts bin as `ollama serve`, as startServer does.
func startBinary(ctx context.Context, bin, dir string, env ...string) (*Server, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(),
		"OLLAMA_HOST="+addr,
		"OLLAMA_MODELS="+dir,
		// Keep runners loaded for the whole run: reloading a model costs more than a test.
		"OLLAMA_KEEP_ALIVE=-1",
		"OLLAMA_NOPRUNE=1",
		// Tests reach no other host: no ollama.com model list or recommendations at start.
		"OLLAMA_NO_CLOUD=1",
	)
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = serverAttr()
	s := &Server{cmd: cmd, done: make(chan struct{}), log: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = lockedWriter{s.log}, lockedWriter{s.log}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { cmd.Wait(); close(s.done) }()
	if s.Runtime, err = ollama.Connect("http://" + addr); err != nil {
		s.stop()
		return nil, err
	}
	ready := make(chan error, 1)
	go func() { ready <- s.Runtime.WaitReady(ctx) }()
	select {
	case err = <-ready:
	case <-s.done:
		err = errors.New("exited")
	}
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("%s serve at %s: %w\n%s", bin, addr, err, s.Log())
	}
	return s, nil
}

// freeLoopbackAddr returns a loopback address with a port nothing listens on now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// ollamaBinary is the executable OllamaBinEnv names, else the stock ollama CLI built
// from the github.com/ollama/ollama module this test binary was built with, with the same
// cgo flags (so the runtime's C code comes from the Go build cache), into the user's
// cache directory, keyed by module version and flags: it builds once per machine.
func ollamaBinary(ctx context.Context) (string, error) {
	if bin := os.Getenv(OllamaBinEnv); bin != "" {
		return givenBinary(bin)
	}
	version, env, err := ollamaBuild()
	if err != nil {
		return "", err
	}
	// Ollama's releases stamp their version, which clients read from /api/version.
	ldflags := "-X github.com/ollama/ollama/version.Version=" + strings.TrimPrefix(version, "v")
	h := sha256.New()
	fmt.Fprintln(h, version, ldflags, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, e := range env {
		fmt.Fprintln(h, e)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "hearth")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ollama-"+version+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// Test packages run in parallel: one builds, the others wait for it.
	unlock, err := lockFile(bin + ".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	root, err := gomodule.Root()
	if err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.tmp%d", bin, os.Getpid())
	cmd := exec.CommandContext(ctx, gomodule.GoTool(), "build", "-ldflags", ldflags, "-o", tmp, "github.com/ollama/ollama")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("go build github.com/ollama/ollama@%s: %w\n%s", version, err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// givenBinary checks the executable OllamaBinEnv names and returns its absolute path:
// go test runs each package in its own directory, where a relative path would name
// another file.
func givenBinary(bin string) (string, error) {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", OllamaBinEnv, bin, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("%s=%s: not an executable file", OllamaBinEnv, bin)
	}
	return abs, nil
}

// ollamaBuild returns the ollama module version hearth pins and the cgo
// environment to build its CLI with: this binary's own cgo settings (the Makefile's, or
// the caller's), or, when it records none, the Makefile's defaults for this checkout.
func ollamaBuild() (string, []string, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "", nil, errors.New("no build info in the test binary")
	}
	// A test binary records no module dependencies; engine/ollama's RuntimeVersion is
	// kept equal to go.mod's by a test.
	version := "v" + ollama.RuntimeVersion
	flags := map[string]string{}
	for _, s := range info.Settings {
		switch s.Key {
		case "CGO_CPPFLAGS", "CGO_CFLAGS", "CGO_CXXFLAGS", "CGO_LDFLAGS":
			flags[s.Key] = s.Value
		}
	}
	if flags["CGO_CPPFLAGS"] == "" {
		root, err := gomodule.Root()
		if err != nil {
			return "", nil, err
		}
		include, err := cgoInclude(root)
		if err != nil {
			return "", nil, err
		}
		flags["CGO_CPPFLAGS"] = "-I" + include + " -I/usr/include"
	}
	// An ollama binary's runners are itself, with no CPU variants to choose from: build it
	// with the kernels hearth's runners run on this machine (the best runner variant in
	// lib/hearth, internal/cpubuild), so both runtimes compute alike.
	if s := cpubuild.Selected(); s.Exec() {
		flags["CGO_CFLAGS"] = s.Chosen.CFlags
		flags["CGO_CXXFLAGS"] = s.Chosen.CFlags
	}
	env := []string{"CGO_ENABLED=1"}
	for _, k := range []string{"CGO_CPPFLAGS", "CGO_CFLAGS", "CGO_CXXFLAGS", "CGO_LDFLAGS"} {
		if v, ok := flags[k]; ok {
			env = append(env, k+"="+v)
		}
	}
	return version, env, nil
}

// cgoInclude is the Makefile's INCLUDE, the directory of the C headers the runtime's
// cgo build reads: <user cache>/hearth/cgo-include/malgo-<the version
// scripts/cgo-headers.sh names>. The same path keeps Go's build cache shared with
// `make build`: cgo compiles are keyed by their flags, this path among them.
func cgoInclude(root string) (string, error) {
	script, err := os.ReadFile(filepath.Join(root, "scripts", "cgo-headers.sh"))
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^malgo_version=(\S+)$`).FindSubmatch(script)
	if m == nil {
		return "", errors.New("scripts/cgo-headers.sh names no malgo_version")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "hearth", "cgo-include", "malgo-"+string(m[1])), nil
}

// lockFile takes an exclusive lock on path, waiting for it.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// parentPID reads pid's parent from /proc.
func parentPID(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
