package parentdeath

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// roleEnv makes the test binary play one process of the chain hearth → runner → the
// program the runner replaces itself with.
const roleEnv = "PARENTDEATH_TEST_ROLE"

// noSignalEnv makes the chain arm without the kernel's signal: the look-out alone.
const noSignalEnv = "PARENTDEATH_TEST_NO_SIGNAL"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "parent":
		playParent()
	case "runner":
		playRunner()
	case "variant":
		// The program a runner replaces itself with. Without the signal it arms again,
		// as the CPU variants do, for its own look-out; with it, it does not, so only
		// what the runner armed before its exec can end it. Bounded, so a failing test
		// leaves nothing behind for long.
		if os.Getenv(noSignalEnv) != "" {
			useSignal = false
			Arm()
		}
		time.Sleep(2 * time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// playParent stands for hearth: it starts a runner that names it as its parent, prints
// the runner's pid and waits to be killed.
func playParent() {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=runner", Name())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(cmd.Process.Pid)
	time.Sleep(2 * time.Minute)
	os.Exit(0)
}

// playRunner arms, keeps the Go scheduler moving goroutines between threads (blocking
// system calls hand their thread's P to other threads), then replaces itself with the
// variant, as the embedded runtime's runner does.
func playRunner() {
	useSignal = os.Getenv(noSignalEnv) == ""
	Arm()
	runtime.GOMAXPROCS(1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	for range 20 {
		syscall.Nanosleep(&syscall.Timespec{Nsec: int64(2 * time.Millisecond)}, nil)
	}
	close(stop)
	wg.Wait()
	env := append(os.Environ(), roleEnv+"=variant")
	if err := syscall.Exec(os.Args[0], append(os.Args[:1:1], "variant"), env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// TestChildEndsWithParent: a child that armed, then replaced itself with another
// program, ends when its parent is killed with SIGKILL (no chance to stop it): by the
// kernel's signal, which the exec kept, and by the look-out alone.
func TestChildEndsWithParent(t *testing.T) {
	for _, mode := range []string{"signal", "look-out"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "signal" && runtime.GOOS != "linux" {
				t.Skip("the parent-death signal is Linux's")
			}
			for range 3 {
				endsWithParent(t, mode == "look-out")
			}
		})
	}
}

// endsWithParent starts parent → runner → variant, kills the parent and waits for
// the variant to end.
func endsWithParent(t *testing.T, noSignal bool) {
	t.Helper()
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), roleEnv+"=parent")
	if noSignal {
		parent.Env = append(parent.Env, noSignalEnv+"=1")
	}
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		parent.Process.Kill()
		t.Fatal(err)
	}
	runner, _ := strconv.Atoi(strings.TrimSpace(line))
	// Wait until the runner has become the variant.
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(cmdline(runner), "variant") {
		if time.Now().After(deadline) {
			parent.Process.Kill()
			t.Fatalf("runner %d did not replace itself within a minute", runner)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	parent.Wait()
	// A bound against a child that never ends, not a timing.
	deadline = time.Now().Add(time.Minute)
	for alive(runner) {
		if time.Now().After(deadline) {
			syscall.Kill(runner, syscall.SIGKILL)
			t.Fatalf("the variant (pid %d) still runs a minute after its parent was killed", runner)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNoParentNamed: a process hearth did not start (no Env) is left alone.
func TestNoParentNamed(t *testing.T) {
	t.Setenv(Env, "")
	Arm() // must return, not exit
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// alive reports whether pid runs: a zombie waiting for its new parent to reap it has
// ended.
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}
