package engine

import "errors"

// stopWatch finds the request's own stop strings (a front door's stop or
// stop_sequences) in the raw output. The runtime reports the same done reason for a
// stop string as for the model's end of turn, so the engine watches for them itself:
// the caller can then say which one ended the output (Anthropic's stop_sequence).
// Text that may be the start of a stop string is held back until the next chunk
// tells, so a stop string split across chunks is found and none of it is output.
// Each stop string is matched as a KMP automaton: the output is read once, whatever
// the stop strings' lengths.
type stopWatch struct {
	stops []stopString
	held  string
	// matched is the stop string that ended the output.
	matched string
}

type stopString struct {
	s string
	// fail[i] is the length of the longest proper prefix of s[:i+1] that is also
	// its suffix; at is how much of s the output ends with.
	fail []int
	at   int
}

// newStopWatch returns the watch of stops; nil (which watches nothing) when there
// are none.
func newStopWatch(stops []string) *stopWatch {
	var w stopWatch
	for _, s := range stops {
		if s == "" {
			continue
		}
		fail := make([]int, len(s))
		for i, k := 1, 0; i < len(s); i++ {
			for k > 0 && s[i] != s[k] {
				k = fail[k-1]
			}
			if s[i] == s[k] {
				k++
			}
			fail[i] = k
		}
		w.stops = append(w.stops, stopString{s: s, fail: fail})
	}
	if len(w.stops) == 0 {
		return nil
	}
	return &w
}

// feed takes a chunk of output and returns the text that may be output now. stopped
// is true when a stop string ended the output: text is what came before it, and
// nothing after it counts. The stop string that completes first ends the output, as
// the runtime's own stop strings do.
func (w *stopWatch) feed(chunk string) (text string, stopped bool) {
	if w == nil {
		return chunk, false
	}
	buf := w.held + chunk
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		at := -1
		for j := range w.stops {
			st := &w.stops[j]
			for st.at > 0 && st.s[st.at] != c {
				st.at = st.fail[st.at-1]
			}
			if st.s[st.at] == c {
				st.at++
			}
			if st.at == len(st.s) {
				// Completed here; of two, the one that began first.
				if start := len(w.held) + i + 1 - len(st.s); at < 0 || start < at {
					at, w.matched = start, st.s
				}
				st.at = st.fail[st.at-1]
			}
		}
		if at >= 0 {
			w.held = ""
			return buf[:at], true
		}
	}
	// Hold back the longest end of the output that begins a stop string.
	keep := 0
	for _, st := range w.stops {
		keep = max(keep, st.at)
	}
	w.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// flush returns the text held back when the output ended without a stop string.
func (w *stopWatch) flush() string {
	if w == nil {
		return ""
	}
	t := w.held
	w.held = ""
	return t
}

// errStopSequence leaves a generation whose output reached one of the request's stop
// strings: nothing the runtime writes after it is output.
var errStopSequence = errors.New("engine: the output reached a stop sequence")
