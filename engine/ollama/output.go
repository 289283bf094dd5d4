package ollama

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
	"github.com/ollama/ollama/envconfig"
	"github.com/ollama/ollama/server"

	"hearth/internal/cpubuild"
)

// The embedded runtime's own output, and where it goes.
//
// Ollama writes for an operator of ollama serve: its environment at start, a line per
// call of its HTTP API (gin's request log, which for hearth is hearth's own calls to
// it), the llama.cpp loader's lines, and each runner process's output. hearth's log is
// for hearth's operator, one line per request, so all of it becomes hearth's debug
// records (shown with --log-level debug), in hearth's format. It reaches hearth by
// three ways, all through Go in this process:
//
//   - the runtime's slog records: the runtime makes its own handler slog's default
//     when it starts; installLogTap puts one over it that hands them to hearth's
//     handler as debug records (records of hearth's own code pass at their level);
//   - gin's request log: gin.DefaultWriter, read when the runtime builds its router;
//   - text written to os.Stderr: the llama.cpp and ggml log callbacks (in this
//     process: Ollama reads a model's vocabulary here) write to the os.Stderr
//     variable, and each runner's stdout and stderr are copied to the os.Stderr the
//     runtime finds when it starts the runner (llm.NewStatusWriter(os.Stderr)). The
//     variable becomes a pipe read here; file descriptor 2 stays the terminal, so a
//     crash of this process still says why there.
//
// Each runner's lines are also kept, the last runnerTailLines of them, by the model it
// runs (runnerOutput): when a runner dies, hearth's error line shows what it said last.

// captured is the logger of the runtime's output once CaptureOutput ran; nil before.
var captured struct {
	mu  sync.Mutex
	log *slog.Logger
}

func capturedLog() *slog.Logger {
	captured.mu.Lock()
	defer captured.mu.Unlock()
	return captured.log
}

// CaptureOutput makes the embedded runtime's output (its log records, its HTTP request
// log, the llama.cpp loader's lines and its runners' output) debug records of log. It
// replaces the os.Stderr variable of the process and gin's writers: call it once,
// before StartEmbedded, after log's handler has taken the real standard error.
func CaptureOutput(log *slog.Logger) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	captured.mu.Lock()
	captured.log = log
	captured.mu.Unlock()
	os.Stderr = w
	gin.DefaultWriter = &lineWriter{emit: func(line string) { log.Debug("runtime output", "stream", "http", "line", line) }}
	gin.DefaultErrorWriter = &lineWriter{emit: func(line string) { log.Debug("runtime output", "stream", "http", "line", line) }}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if line := strings.TrimRight(sc.Text(), "\r"); line != "" {
				log.Debug("runtime output", "stream", "stderr", "line", line)
			}
		}
	}()
	return nil
}

// lineWriter hands each whole line written to it to emit.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(line string)
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimRight(string(w.buf[:i]), "\r"); line != "" {
			w.emit(line)
		}
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 {
		// A line without end: emit what there is rather than grow.
		w.emit(string(w.buf))
		w.buf = nil
	}
	return len(b), nil
}

// runtimeRecords is the handler hearth's log takes the runtime's slog records through:
// a record made by the runtime's code (Ollama's packages) is a debug record of hearth's
// log, marked from=runtime, and only when the runtime itself would have logged it at its
// own level (OLLAMA_DEBUG); a record of hearth's own code passes at its level.
type runtimeRecords struct {
	hearth  slog.Handler
	runtime slog.Level
	// attrs and groups made with WithAttrs and WithGroup apply to both routes; the
	// hearth handler already holds them.
}

func newRuntimeRecords(h slog.Handler) runtimeRecords {
	return runtimeRecords{hearth: h, runtime: envconfig.LogLevel()}
}

func (h runtimeRecords) Enabled(ctx context.Context, l slog.Level) bool {
	// The record's maker is unknown here: enabled when either route would take it.
	return h.hearth.Enabled(ctx, l) || (l >= h.runtime && h.hearth.Enabled(ctx, slog.LevelDebug))
}

func (h runtimeRecords) Handle(ctx context.Context, r slog.Record) error {
	if !fromRuntime(r.PC) {
		if !h.hearth.Enabled(ctx, r.Level) {
			return nil
		}
		return h.hearth.Handle(ctx, r)
	}
	if r.Level < h.runtime || !h.hearth.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	d := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
	d.AddAttrs(slog.String("from", "runtime"), slog.String("runtime_level", r.Level.String()))
	r.Attrs(func(a slog.Attr) bool {
		d.AddAttrs(a)
		return true
	})
	return h.hearth.Handle(ctx, d)
}

func (h runtimeRecords) WithAttrs(as []slog.Attr) slog.Handler {
	return runtimeRecords{hearth: h.hearth.WithAttrs(as), runtime: h.runtime}
}

func (h runtimeRecords) WithGroup(name string) slog.Handler {
	return runtimeRecords{hearth: h.hearth.WithGroup(name), runtime: h.runtime}
}

// fromRuntime reports whether the code at pc (a record's caller) is not hearth's: the
// runtime's packages log through slog's package functions, as hearth's own code in
// this package does.
func fromRuntime(pc uintptr) bool {
	if pc == 0 {
		return true
	}
	fs := runtime.CallersFrames([]uintptr{pc})
	f, _ := fs.Next()
	for _, own := range []string{"hearth/", "hearth.", "main."} {
		if strings.HasPrefix(f.Function, own) {
			return false
		}
	}
	return true
}

// runnerTailLines is how many of a runner's last lines hearth keeps for its error line.
const runnerTailLines = 20

// runnerOutput stands between a runner process and the runtime's writer of its output
// (llm.StatusWriter, which looks for error lines and copies the text on): it keeps the
// runner's last lines.
type runnerOutput struct {
	next io.Writer
	// cmd is the runner's command; once it wrote, its process exists (exec starts
	// the goroutine that copies its output after the process), and started is called
	// with it, once.
	cmd     *exec.Cmd
	started func(pid int)

	mu      sync.Mutex
	watched bool
	part    []byte
	lines   []string
}

func (o *runnerOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	if !o.watched && o.cmd != nil && o.cmd.Process != nil && o.started != nil {
		o.watched = true
		o.started(o.cmd.Process.Pid)
	}
	o.part = append(o.part, b...)
	for {
		i := bytes.IndexByte(o.part, '\n')
		if i < 0 {
			break
		}
		o.keep(string(o.part[:i]))
		o.part = o.part[i+1:]
	}
	if len(o.part) > 4<<10 {
		o.keep(string(o.part))
		o.part = nil
	}
	o.mu.Unlock()
	return o.next.Write(b)
}

func (o *runnerOutput) keep(line string) {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "" {
		return
	}
	if len(line) > 1024 {
		line = line[:1024] + "…"
	}
	o.lines = append(o.lines, line)
	if len(o.lines) > runnerTailLines {
		o.lines = o.lines[len(o.lines)-runnerTailLines:]
	}
}

// tail is the runner's last lines, the one not ended by a newline included.
func (o *runnerOutput) tail() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := append([]string(nil), o.lines...)
	if p := strings.TrimSpace(string(o.part)); p != "" {
		out = append(out, p)
	}
	return out
}

// runnerTail is the last lines of the latest runner of the model name in the embedded
// runtime; nil when hearth saw none start (an external runtime's).
func runnerTail(name string) []string {
	m, err := server.GetModel(name)
	if err != nil {
		return nil
	}
	layouts.mu.Lock()
	o := layouts.outputs[m.ModelPath]
	layouts.mu.Unlock()
	if o == nil {
		return nil
	}
	return o.tail()
}

// cpuVariant is the CPU kernels this machine's runners run (internal/cpubuild).
func cpuVariant() string {
	if v := cpubuild.Selected().Chosen.Name; v != "" {
		return v
	}
	return "built-in"
}
