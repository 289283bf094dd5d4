package ollama

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestRuntimeRecords: a record the runtime's code makes is a debug record of hearth's
// log, marked from=runtime with the runtime's level, shown only at debug; a record of
// hearth's own code passes at its level.
func TestRuntimeRecords(t *testing.T) {
	var pcs [1]uintptr
	runtime.Callers(1, pcs[:]) // this function: hearth's code
	for _, tc := range []struct {
		level      slog.Level
		pc         uintptr
		want, skip string
	}{
		{slog.LevelInfo, 0, "", "msg"},
		{slog.LevelDebug, 0, `level=DEBUG msg=made from=runtime runtime_level=INFO k=v`, ""},
		{slog.LevelInfo, pcs[0], `level=INFO msg=made k=v`, "from=runtime"},
		{slog.LevelDebug, pcs[0], `level=INFO msg=made k=v`, "from=runtime"},
	} {
		var buf bytes.Buffer
		h := runtimeRecords{hearth: slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level}), runtime: slog.LevelInfo}
		r := slog.NewRecord(time.Time{}, slog.LevelInfo, "made", tc.pc)
		r.AddAttrs(slog.String("k", "v"))
		if h.Enabled(context.Background(), slog.LevelInfo) {
			h.Handle(context.Background(), r)
		}
		got := buf.String()
		if (tc.want != "" && !strings.Contains(got, tc.want)) || (tc.skip != "" && strings.Contains(got, tc.skip)) {
			t.Errorf("hearth at %v, pc %v: %q, want %q without %q", tc.level, tc.pc != 0, got, tc.want, tc.skip)
		}
	}
}

// TestRunnerOutputTail: a runner's writer keeps its last lines, however the output is
// split into writes, and passes every byte on.
func TestRunnerOutputTail(t *testing.T) {
	var next bytes.Buffer
	o := &runnerOutput{next: &next}
	var all strings.Builder
	for i := range runnerTailLines + 5 {
		all.WriteString("line " + string(rune('a'+i)) + "\n")
	}
	all.WriteString("unfinished")
	text := all.String()
	for i := 0; i < len(text); i += 7 {
		o.Write([]byte(text[i:min(i+7, len(text))]))
	}
	if next.String() != text {
		t.Errorf("passed on %q, want %q", next.String(), text)
	}
	tail := o.tail()
	if len(tail) != runnerTailLines+1 || tail[0] != "line f" || tail[len(tail)-2] != "line "+string(rune('a'+runnerTailLines+4)) || tail[len(tail)-1] != "unfinished" {
		t.Errorf("tail = %q", tail)
	}
}

// TestLineWriter: whole lines, each once, blank ones dropped.
func TestLineWriter(t *testing.T) {
	var got []string
	w := &lineWriter{emit: func(l string) { got = append(got, l) }}
	w.Write([]byte("[GIN] one\r\n\n[GIN] t"))
	w.Write([]byte("wo\n"))
	if strings.Join(got, "|") != "[GIN] one|[GIN] two" {
		t.Errorf("lines %q", got)
	}
}
