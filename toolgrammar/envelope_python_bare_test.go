package toolgrammar

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// everyChunking parses in whole, split at every offset, byte by byte and in
// random chunkings, requires the same events each time and returns them.
func everyChunking(t *testing.T, f *Format, opts Options, in string) []Event {
	t.Helper()
	want := normalize(parseChunks(f, opts, []string{in}))
	checkInvariants(t, want)
	for k := 0; k <= len(in); k++ {
		compareEvents(t, fmt.Sprintf("split at %d", k), want, normalize(parseChunks(f, opts, splitAt(in, k))))
	}
	bytewise := make([]string, len(in))
	for i := range in {
		bytewise[i] = in[i : i+1]
	}
	compareEvents(t, "byte by byte", want, normalize(parseChunks(f, opts, bytewise)))
	rng := rand.New(rand.NewSource(int64(len(in))))
	for r := 0; r < 100; r++ {
		chunks := randomChunks(rng, in)
		compareEvents(t, fmt.Sprintf("random chunking %q", chunks), want, normalize(parseChunks(f, opts, chunks)))
	}
	return want
}

// withoutBare is f with bare calls off: what the parser made of any output
// before the fallback existed.
func withoutBare(f *Format) *Format {
	g := *f
	g.compiled = nil
	g.Tools.Bare = false
	return &g
}

// TestPythonBareCalls: an answer that is nothing but Python calls of known tools is
// those calls, the same events the calls give between the markers, at the answer's
// offsets; anything else is exactly the text the parser makes of it without the
// fallback. Every case in every chunking.
func TestPythonBareCalls(t *testing.T) {
	type call struct{ name, args string }
	cases := []struct {
		name   string
		format string
		in     string
		// start is where the answer begins (after reasoning), for the marked form.
		start int
		think bool
		calls []call // nil: text
	}{
		{name: "list", format: "lfm2", in: `[get_weather(location="Paris")]`,
			calls: []call{{"get_weather", `{"location":"Paris"}`}}},
		{name: "no list", format: "lfm2", in: `get_weather(location="Paris, France", days=3)`,
			calls: []call{{"get_weather", `{"location":"Paris, France","days":3}`}}},
		{name: "two calls", format: "lfm2", in: "[get_weather(location='Paris', unit=\"celsius\"),get_time()]",
			calls: []call{{"get_weather", `{"location":"Paris","unit":"celsius"}`}, {"get_time", `{}`}}},
		{name: "blanks and newlines", format: "lfm2", in: "\n  [ search(query=\"a (b)\", tags=[\"x\", 'y'], exact=False) ,\n get_time() ]\n",
			calls: []call{{"search", `{"query":"a (b)","tags":["x","y"],"exact":false}`}, {"get_time", `{}`}}},
		{name: "calls without list, newline", format: "lfm2", in: "get_time()\nget_weather(location=\"Oslo\")",
			calls: []call{{"get_time", `{}`}, {"get_weather", `{"location":"Oslo"}`}}},
		{name: "list, trailing comma", format: "lfm2", in: `[get_time(),]`,
			calls: []call{{"get_time", `{}`}}},
		{name: "after reasoning", format: "lfm2-thinking", start: len("<think>The user wants the weather.</think>\n\n"),
			in:    "<think>The user wants the weather.</think>\n\n[get_weather(location=\"Paris\")]",
			calls: []call{{"get_weather", `{"location":"Paris"}`}}},
		{name: "after reasoning the prompt opened", format: "lfm2-thinking", think: true, start: len("The user wants the weather.</think>\n\n"),
			in:    "The user wants the weather.</think>\n\n[get_weather(location=\"Paris\")]",
			calls: []call{{"get_weather", `{"location":"Paris"}`}}},
		{name: "after written reasoning", format: "lfm2", start: len("<think>Weather.</think>"),
			in:    "<think>Weather.</think>get_time()",
			calls: []call{{"get_time", `{}`}}},

		{name: "text after the call", format: "lfm2", in: `get_weather(location="Paris") is the call I would make.`},
		{name: "text after the list", format: "lfm2", in: `[get_time()] now`},
		{name: "unknown tool", format: "lfm2", in: `[get_forecast(location="Paris")]`},
		{name: "unknown second tool", format: "lfm2", in: `[get_time(), get_forecast(location="Paris")]`},
		{name: "prefix of a name", format: "lfm2", in: "get the weather"},
		{name: "name without call", format: "lfm2", in: "search is what I can do."},
		{name: "bracket of prose", format: "lfm2", in: "[1] Paris is sunny."},
		{name: "list not closed", format: "lfm2", in: `[get_time()`},
		{name: "list closed twice", format: "lfm2", in: `[get_time()]]`},
		{name: "closed without list", format: "lfm2", in: `get_time()]`},
		{name: "closed before the last call", format: "lfm2", in: `[get_time()], get_time()]`},
		{name: "unterminated", format: "lfm2", in: `[get_weather(location="Par`},
		{name: "malformed arguments", format: "lfm2", in: `get_weather(location="Paris" unit="celsius")`},
		{name: "text first", format: "lfm2", in: `Sure: get_time()`},
		{name: "then a marked call", format: "lfm2", in: `get_time()<|tool_call_start|>[get_time()]<|tool_call_end|>`},
		{name: "then the closer", format: "lfm2", in: `[get_time()]<|tool_call_end|>`},
		{name: "then a stop string", format: "lfm2", in: `get_time()<|im_end|>`},
		{name: "after a marked call", format: "lfm2", in: "<|tool_call_start|>[get_time()]<|tool_call_end|>get_time()"},
		{name: "olmo3 has no bare calls", format: "olmo3", in: `get_weather(location="Paris")`},
	}
	opener, closer := "<|tool_call_start|>", "<|tool_call_end|>"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := testFormat(t, c.format)
			opts := Options{Tools: testTools, StartInReasoning: c.think}
			got := everyChunking(t, f, opts, c.in)
			if c.calls == nil {
				compareEvents(t, "against the parser without bare calls", normalize(parseChunks(withoutBare(f), opts, []string{c.in})), got)
				for _, e := range got {
					if e.Kind == CallBegin && !strings.Contains(c.in, opener) {
						t.Fatalf("a call in text: %s", marshalEvents(got))
					}
				}
				return
			}
			var calls []call
			for _, e := range got {
				switch e.Kind {
				case TextDelta, Malformed:
					t.Fatalf("not all calls: %s", marshalEvents(got))
				case CallEnd:
					calls = append(calls, call{e.Name, e.Text})
				}
			}
			if fmt.Sprint(calls) != fmt.Sprint(c.calls) {
				t.Fatalf("calls %v, want %v", calls, c.calls)
			}
			// The same events as between the markers, the opener's length apart.
			answer := strings.TrimLeft(c.in[c.start:], " \n")
			start := len(c.in) - len(answer)
			marked := normalize(parseChunks(f, opts, []string{c.in[:start] + opener + answer + closer}))
			var want []Event
			for _, e := range marked {
				if e.Offset >= int64(start+len(opener)) {
					e.Offset -= int64(len(opener))
				}
				if e.Kind == CallOpen {
					e.Text = ""
				}
				want = append(want, e)
			}
			compareEvents(t, "against the marked calls", want, got)
		})
	}
}

// TestPythonBareCallsWait: a bare answer of calls comes out only when the output
// ends; text that begins like one comes out as soon as it is not one.
func TestPythonBareCallsWait(t *testing.T) {
	f := testFormat(t, "lfm2")
	p := NewParser(f, Options{Tools: testTools})
	for _, chunk := range []string{"[get", "_weather(location=", `"Paris"`, ")", "]", "\n"} {
		if evs := p.Feed(chunk); len(evs) > 0 {
			t.Fatalf("events before the end of the output, at %q: %v", chunk, evs)
		}
	}
	if evs := p.Close(); len(evs) < 4 || evs[0].Kind != CallOpen || evs[len(evs)-1].Kind != CallEnd {
		t.Fatalf("at the end: %v", evs)
	}

	p = NewParser(f, Options{Tools: testTools})
	if evs := p.Feed("Hello"); len(evs) != 1 || evs[0].Kind != TextDelta || evs[0].Text != "Hello" {
		t.Fatalf("prose waited: %v", evs)
	}
	p = NewParser(f, Options{Tools: testTools})
	for _, chunk := range []string{"get_time", "()", " now"} {
		evs := p.Feed(chunk)
		if chunk != " now" && len(evs) > 0 {
			t.Fatalf("events at %q: %v", chunk, evs)
		}
		if chunk == " now" && (len(evs) != 1 || evs[0].Text != "get_time() now") {
			t.Fatalf("at %q: %v, want the text so far", chunk, evs)
		}
	}
}

// TestPythonBareCallTools: only the tools Options.BareCallTools names make a bare
// answer calls (the engine passes the tools tool_choice allows); the others are text.
func TestPythonBareCallTools(t *testing.T) {
	f := testFormat(t, "lfm2")
	for _, c := range []struct {
		allowed []string
		in      string
		call    bool
	}{
		{nil, `get_weather(location="Paris")`, true},
		{[]string{"get_time"}, `get_time()`, true},
		{[]string{"get_time"}, `get_weather(location="Paris")`, false},
		{[]string{"get_time"}, `[get_time(), get_weather(location="Paris")]`, false},
		{[]string{}, `get_time()`, false},
	} {
		evs := parseChunks(f, Options{Tools: testTools, BareCallTools: c.allowed}, []string{c.in})
		call := len(evs) > 0 && evs[0].Kind == CallOpen
		if call != c.call {
			t.Errorf("%v %s: %s", c.allowed, c.in, marshalEvents(evs))
		}
	}
}

// TestPythonBareCallsDiscard: Discard drops an answer held back as bare calls, as it
// drops any output not parsed yet.
func TestPythonBareCallsDiscard(t *testing.T) {
	p := NewParser(testFormat(t, "lfm2"), Options{Tools: testTools})
	p.Feed("get_time(")
	p.Discard()
	if evs := normalize(append(p.Feed("Hello."), p.Close()...)); len(evs) != 1 || evs[0].Text != "Hello." || evs[0].Kind != TextDelta {
		t.Fatalf("after Discard: %v", evs)
	}
}

// FuzzPythonBareCalls: on any output the bare-call fallback changes nothing but an
// answer it reads as calls: the events are the parser's without it, or the same
// events up to the answer and then calls only; in every chunking alike.
func FuzzPythonBareCalls(f *testing.F) {
	for _, s := range []string{
		`[get_weather(location="Paris")]`, "get_time()\nsearch(query='a', exact=True)", `get_time() now`,
		"<think>x</think>[get_time(), get_weather(location=\"Oslo\")]", `[get_time()]]`, `get_time()<|im_end|>`,
	} {
		f.Add(s, int64(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, in string, seed int64) {
		if len(in) > 2048 {
			return
		}
		fm := testFormat(t, "lfm2")
		opts := Options{Tools: testTools, StartInReasoning: seed&1 != 0}
		got := normalize(parseChunks(fm, opts, []string{in}))
		checkInvariants(t, got)
		k := int(uint64(seed) % uint64(len(in)+1))
		compareEvents(t, "split", got, normalize(parseChunks(fm, opts, splitAt(in, k))))
		compareEvents(t, "random chunks", got, normalize(parseChunks(fm, opts, randomChunks(rand.New(rand.NewSource(seed)), in))))
		plain := normalize(parseChunks(withoutBare(fm), opts, []string{in}))
		i := 0
		for i < len(got) && i < len(plain) && got[i] == plain[i] {
			i++
		}
		if i == len(got) && i == len(plain) {
			return
		}
		// Where they differ the answer began: calls to the end, and the plain
		// parser had nothing but text (and what follows it) there.
		if got[i].Kind != CallOpen || got[i].Text != "" {
			t.Fatalf("differs at event %d:\n bare: %s\nplain: %s", i, marshalEvents(got), marshalEvents(plain))
		}
		for _, e := range got[i:] {
			switch e.Kind {
			case CallOpen, CallBegin, ArgumentsDelta, CallEnd:
			default:
				t.Fatalf("not calls after event %d: %s", i, marshalEvents(got))
			}
		}
	})
}

// BenchmarkPythonBareCalls parses a 1 MB call (a file's content) fed in 4-byte chunks,
// between the markers and bare: held back whole until the end, the bare one must still
// be read in linear time.
//
//	go test ./toolgrammar -run '^$' -bench BenchmarkPythonBareCalls -count 3
func BenchmarkPythonBareCalls(b *testing.B) {
	f := testFormat(b, "lfm2")
	line := `package main // Ünïcödé, "quotes", \backslashes\ and (parens)` + "\n"
	content := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(strings.Repeat(line, (1<<20)/len(line)))
	call := `[write_file(path="main.go", content="` + content + `")]`
	for _, c := range []struct{ name, in string }{
		{"marked", "<|tool_call_start|>" + call + "<|tool_call_end|>"},
		{"bare", call},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.in)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p := NewParser(f, Options{Tools: testTools})
				ends := 0
				count := func(evs []Event) {
					for _, e := range evs {
						if e.Kind == CallEnd {
							ends++
						}
					}
				}
				for j := 0; j < len(c.in); j += 4 {
					count(p.Feed(c.in[j:min(j+4, len(c.in))]))
				}
				if count(p.Close()); ends != 1 {
					b.Fatalf("%d calls, want 1", ends)
				}
			}
		})
	}
}
