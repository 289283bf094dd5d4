package toolgrammar

import (
	"strings"
	"testing"
)

// With PauseAtDecisions, resuming after every pause gives the same events
// as parsing straight through, and each pause sits exactly at its decision
// point.
func TestPauseAndResume(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		f := testFormat(t, fx.format)
		want := normalize(parseChunks(f, fx.opts, []string{fx.input}))
		opts := fx.opts
		opts.PauseAtDecisions = true
		for _, chunks := range [][]string{{fx.input}, splitAt(fx.input, len(fx.input)/2)} {
			p := NewParser(f, opts)
			var all []Event
			for _, c := range chunks {
				evs := p.Feed(c)
				for {
					all = append(all, evs...)
					if n := len(evs); n > 0 && evs[n-1].Kind.IsDecisionPoint() {
						last := evs[n-1]
						if consumed := int64(len(fx.input[:last.Offset])); last.Offset != consumed {
							t.Fatalf("%s/%s: bad offset %v", fx.format, fx.name, last)
						}
					}
					if p.Pending() == "" || len(evs) == 0 {
						break
					}
					evs = p.Feed("")
				}
			}
			all = append(all, p.Close()...)
			compareEvents(t, fx.format+"/"+fx.name+" paused", want, normalize(all))
		}
	}
}

// An engine stops at the first call opener, drops what the model wrote
// after it and writes a constrained call of its own choosing instead.
func TestEngineForcesCallAtOpener(t *testing.T) {
	f := testFormat(t, "qwen3")
	p := NewParser(f, Options{PauseAtDecisions: true})
	output := "<think>\nok\n</think>\n\nLet me call.\n<tool_call>\n{\"name\": \"wrong_tool\", \"arguments\": {}}\n</tool_call>"
	var all []Event
	evs := p.Feed(output)
	for {
		all = append(all, evs...)
		if len(evs) > 0 && evs[len(evs)-1].Kind == CallOpen {
			break
		}
		evs = p.Feed("")
	}
	open := all[len(all)-1]
	if !strings.HasSuffix(output[:open.Offset], "<tool_call>") || !strings.HasPrefix(p.Pending(), "\n{\"name\": \"wrong_tool\"") {
		t.Fatalf("paused at %v with pending %q", open, p.Pending())
	}
	p.Discard()
	// The constrained continuation (grammar from CallSchema) and the closer.
	all = append(all, p.Feed(`{"name":"get_time","arguments":{}}`)...)
	all = append(all, p.Feed(f.CallSuffix())...)
	all = append(all, p.Close()...)
	if got := summary(all); got != "reasoning:ok | reasoning_end | text:Let me call. | begin:get_time | end:get_time{}" {
		t.Fatalf("got %s", got)
	}
}
