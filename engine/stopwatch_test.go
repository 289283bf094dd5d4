package engine

import (
	"strings"
	"testing"
)

// TestStopWatch feeds outputs chunk by chunk and checks what is output, where it stops
// and which stop string matched.
func TestStopWatch(t *testing.T) {
	cases := []struct {
		name    string
		stops   []string
		chunks  []string
		out     string
		matched string
	}{
		{"whole in a chunk", []string{"STOP"}, []string{"one two STOP three"}, "one two ", "STOP"},
		{"split across chunks", []string{"world"}, []string{"hello wo", "r", "ld and more"}, "hello ", "world"},
		{"never appears", []string{"zzz"}, []string{"a z", "z b"}, "a zz b", ""},
		{"prefix then not", []string{"abc"}, []string{"xab", "d"}, "xabd", ""},
		{"self-overlapping", []string{"aab"}, []string{"aa", "ab tail"}, "a", "aab"},
		{"first completed wins", []string{"bcd", "c"}, []string{"ab", "cd"}, "ab", "c"},
		{"earlier start at same end", []string{"c", "abc"}, []string{"xab", "c"}, "x", "abc"},
		{"empty stops ignored", []string{"", "."}, []string{"Hi. There"}, "Hi", "."},
		{"multibyte", []string{"é!"}, []string{"café", "! ok"}, "caf", "é!"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newStopWatch(c.stops)
			var out strings.Builder
			stopped := false
			for _, ch := range c.chunks {
				text, s := w.feed(ch)
				out.WriteString(text)
				if s {
					stopped = true
					break
				}
			}
			if !stopped {
				out.WriteString(w.flush())
			}
			if out.String() != c.out {
				t.Errorf("output %q, want %q", out.String(), c.out)
			}
			matched := ""
			if stopped {
				matched = w.matched
			}
			if matched != c.matched {
				t.Errorf("matched %q, want %q", matched, c.matched)
			}
		})
	}
	if newStopWatch(nil) != nil || newStopWatch([]string{""}) != nil {
		t.Error("a watch of no stop strings is not nil")
	}
}

// BenchmarkStopWatch is the watch's cost per output chunk: four stop strings (Chat
// Completions' most) over token-sized chunks that never complete one.
func BenchmarkStopWatch(b *testing.B) {
	chunks := strings.Fields("Hello from hearth. This reply comes from a script model, and it goes on a while")
	w := newStopWatch([]string{"\n\nHuman:", "</answer>", "STOP", "from a script model."})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.feed(" " + chunks[i%len(chunks)])
	}
}
