package ollama

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"hearth/internal/parentdeath"
)

// The grammar check runs llama.cpp's C++ conversion, and C++ that crashes takes the
// whole process with it: every response in flight, the embedded runtime, the database
// connections. schemaguard keeps every schema known to crash it away, but a check
// that runs C code on what a client sent must not be able to take hearth down even
// where that list is incomplete, and must stop when the client leaves. So hearth runs
// the conversion in a child process (this binary re-executed with the grammar-check
// sub-command, as the runtime starts its runners) and only a schema that came through
// the child intact reaches the runtime, whose own conversion is the same code.
//
// Protocol on the child's stdin and stdout, repeated until stdin closes: the parent
// writes a 4-byte big-endian length and the schema; the child answers one status
// byte (0 accepted, 1 refused) and a 4-byte length and the reason.

// GrammarCheckCommand is the sub-command a grammar-check child runs as (see
// RunRunner).
const GrammarCheckCommand = "grammar-check"

// grammarWorkerEnv marks a grammar-check child's environment: a binary that does not
// dispatch the sub-command (a test binary without testenv.Main) would run as a whole
// program instead, and must not start children of its own.
const grammarWorkerEnv = "HEARTH_GRAMMAR_WORKER"

// grammarHello is the child's first line: proof that it dispatched the sub-command.
const grammarHello = "hearth grammar-check 1\n"

var (
	// grammarCheckTimeout bounds one check; the child is killed past it.
	grammarCheckTimeout = 10 * time.Second
	// grammarStartTimeout bounds a child's start up to its hello.
	grammarStartTimeout = 20 * time.Second
	// maxGrammarWorkers bounds the children running at once; more checks wait.
	maxGrammarWorkers = 2
)

// runGrammarWorker is the child's side: it answers checks until stdin closes.
func runGrammarWorker() error {
	parentdeath.Arm()
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	if _, err := out.WriteString(grammarHello); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(in, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		schema := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(in, schema); err != nil {
			return err
		}
		status, reason := byte(0), ""
		if err := convertInProcess(schema); err != nil {
			status, reason = 1, err.Error()
		}
		var resp [5]byte
		resp[0] = status
		binary.BigEndian.PutUint32(resp[1:], uint32(len(reason)))
		out.Write(resp[:])
		out.WriteString(reason)
		if err := out.Flush(); err != nil {
			return err
		}
	}
}

// grammarWorker is one running child.
type grammarWorker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *headWriter
}

// headWriter keeps the first bytes written to it: a crashing child prints a signal
// line and then a whole goroutine dump, of which the log gets the first line.
type headWriter struct {
	mu  sync.Mutex
	buf []byte
}

const headBytes = 4 << 10

func (t *headWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := headBytes - len(t.buf); room > 0 {
		t.buf = append(t.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// firstLine is the first non-empty line the child printed (a signal name such as
// "SIGSEGV: segmentation violation").
func (t *headWriter) firstLine() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range strings.Split(string(t.buf), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

func (w *grammarWorker) kill() {
	w.in.Close()
	w.cmd.Process.Kill()
	go w.cmd.Wait()
}

// grammarChecker hands checks to its children.
type grammarChecker struct {
	mu      sync.Mutex
	idle    []*grammarWorker
	running int
	free    chan struct{} // a token per child that may start or be taken
	// inProcess is set when no child can be started (the binary cannot be
	// re-executed): the checks then run here, after schemaguard.
	inProcess bool
}

var checker = newGrammarChecker()

func newGrammarChecker() *grammarChecker {
	c := &grammarChecker{free: make(chan struct{}, maxGrammarWorkers)}
	for range maxGrammarWorkers {
		c.free <- struct{}{}
	}
	return c
}

// errConversionCrashed is what a check answers when the child died on a schema.
var errConversionCrashed = errors.New("the runtime's JSON-schema-to-grammar conversion fails on it (it ended the process that converted it)")

// check converts schema in a child and reports why it cannot be a grammar, or nil.
// It gives up, killing the child, when ctx ends or the check takes too long.
func (c *grammarChecker) check(ctx context.Context, schema []byte) error {
	select {
	case <-c.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { c.free <- struct{}{} }()
	w, err := c.take(ctx)
	if err != nil {
		if errors.Is(err, errNoWorker) {
			return convertInProcess(schema)
		}
		return err
	}
	type answer struct {
		err   error
		alive bool
	}
	done := make(chan answer, 1)
	go func() {
		err, alive := w.ask(schema)
		done <- answer{err, alive}
	}()
	timer := time.NewTimer(grammarCheckTimeout)
	defer timer.Stop()
	select {
	case a := <-done:
		if a.alive {
			c.put(w)
		} else {
			w.kill()
			slog.Warn("a grammar check ended its child process; the schema is refused", "child", w.stderr.firstLine())
		}
		return a.err
	case <-ctx.Done():
		w.kill()
		return ctx.Err()
	case <-timer.C:
		w.kill()
		return fmt.Errorf("the runtime's JSON-schema-to-grammar conversion did not finish within %s", grammarCheckTimeout)
	}
}

// ask sends one schema and reads the answer; alive is false when the child is gone.
func (w *grammarWorker) ask(schema []byte) (err error, alive bool) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(schema)))
	if _, err := w.in.Write(append(hdr[:], schema...)); err != nil {
		return errConversionCrashed, false
	}
	var resp [5]byte
	if _, err := io.ReadFull(w.out, resp[:]); err != nil {
		return errConversionCrashed, false
	}
	reason := make([]byte, binary.BigEndian.Uint32(resp[1:]))
	if _, err := io.ReadFull(w.out, reason); err != nil {
		return errConversionCrashed, false
	}
	if resp[0] != 0 {
		return errors.New(string(reason)), true
	}
	return nil, true
}

var errNoWorker = errors.New("no grammar-check child")

// take returns an idle child or starts one.
func (c *grammarChecker) take(ctx context.Context) (*grammarWorker, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		w := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return w, nil
	}
	inProcess := c.inProcess
	c.mu.Unlock()
	if inProcess {
		return nil, errNoWorker
	}
	w, err := startGrammarWorker(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		c.mu.Lock()
		c.inProcess = true
		c.mu.Unlock()
		slog.Warn("grammar checks run inside hearth: no grammar-check child could start", "error", err)
		return nil, errNoWorker
	}
	return w, nil
}

func (c *grammarChecker) put(w *grammarWorker) {
	c.mu.Lock()
	c.idle = append(c.idle, w)
	c.mu.Unlock()
}

func startGrammarWorker(ctx context.Context) (*grammarWorker, error) {
	if os.Getenv(grammarWorkerEnv) != "" {
		return nil, errors.New("this process is a grammar-check child that did not dispatch the sub-command")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, GrammarCheckCommand)
	cmd.Env = append(os.Environ(), grammarWorkerEnv+"=1", parentdeath.Name())
	stderr := &headWriter{}
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &grammarWorker{cmd: cmd, in: in, out: bufio.NewReader(outPipe), stderr: stderr}
	hello := make(chan error, 1)
	go func() {
		line, err := w.out.ReadString('\n')
		if err == nil && line != grammarHello {
			err = fmt.Errorf("unexpected first line %q", line)
		}
		hello <- err
	}()
	select {
	case err = <-hello:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(grammarStartTimeout):
		err = errors.New("no answer")
	}
	if err != nil {
		w.kill()
		return nil, fmt.Errorf("start %s %s: %w", exe, GrammarCheckCommand, err)
	}
	return w, nil
}
