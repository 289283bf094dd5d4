package toolgrammar

import (
	"encoding/json"
	"math/rand"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParser feeds arbitrary output to every format. Invariants: no panic;
// the same events whole, split at one offset, byte by byte and in a random
// chunking; valid UTF-8; calls well nested with deltas adding up to compact
// JSON; with MalformedAsText, nothing is lost: every input byte that is not
// markup shows up in some event.
func FuzzParser(f *testing.F) {
	reg := testRegistry(f)
	ids := map[string]uint8{}
	for i, fm := range reg.Formats() {
		ids[fm.ID] = uint8(i)
	}
	for _, fx := range loadFixtures(f) {
		f.Add(ids[fx.format], int64(len(fx.input)), fx.input)
		f.Add(ids[fx.format], int64(len(fx.input)/2+1), fx.input)
	}
	f.Fuzz(func(t *testing.T, fid uint8, seed int64, in string) {
		if len(in) > 4096 {
			return
		}
		fm := reg.Formats()[int(fid)%len(reg.Formats())]
		opts := Options{Tools: testTools, StartInReasoning: seed&1 != 0}
		if seed&2 != 0 {
			opts.Malformed = MalformedAsError
		}
		want := normalize(parseChunks(fm, opts, []string{in}))
		checkInvariants(t, want)
		k := 0
		if len(in) > 0 {
			k = int(uint64(seed) % uint64(len(in)+1))
		}
		compareEvents(t, "split", want, normalize(parseChunks(fm, opts, splitAt(in, k))))
		rng := rand.New(rand.NewSource(seed))
		compareEvents(t, "random chunks", want, normalize(parseChunks(fm, opts, randomChunks(rng, in))))
		if len(in) <= 512 {
			var bytewise []string
			for i := 0; i < len(in); i++ {
				bytewise = append(bytewise, in[i:i+1])
			}
			compareEvents(t, "byte by byte", want, normalize(parseChunks(fm, opts, bytewise)))
		}
		if utf8.ValidString(in) {
			checkConservation(t, fm, opts, in, want)
		}
	})
}

// checkConservation checks that the parser neither invents nor loses prose:
// text and reasoning are always drawn, in order, from the input, and when
// the output is all message text it is exactly the input without markup.
// FuzzRoundTrip checks conservation of calls and reasoning exactly.
func checkConservation(t *testing.T, fm *Format, opts Options, in string, evs []Event) {
	var out strings.Builder
	for _, e := range evs {
		switch e.Kind {
		case TextDelta, ReasoningDelta:
			out.WriteString(e.Text)
		}
	}
	got := stripSpace(out.String())
	// What is left of the input once calls and delimiters are removed must
	// be a subsequence of the text+reasoning, and text+reasoning must be a
	// subsequence of the input (the parser never invents prose).
	if !isSubsequence(got, stripSpace(in)) {
		t.Fatalf("output text %q is not drawn from input %q", got, in)
	}
	// Exactly: when the whole output stayed message text (no call, no
	// reasoning, nothing malformed or reported as error), the output is the
	// input minus the markup the text state removes.
	for _, e := range evs {
		if e.Kind != TextDelta {
			return
		}
	}
	if opts.StartInReasoning || opts.Malformed != MalformedAsText {
		return
	}
	rest := in
	for _, d := range fm.compiled.text.ds {
		rest = strings.ReplaceAll(rest, d.s, "")
	}
	if fm.Tools.Kind == Harmony {
		// Headers are markup too; without calls, only check the direction
		// above.
		return
	}
	if want := stripSpace(rest); got != want {
		t.Fatalf("text lost: output %q, input without markup %q", got, want)
	}
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
			return -1
		}
		return r
	}, s)
}

func isSubsequence(sub, s string) bool {
	i := 0
	for j := 0; j < len(s) && i < len(sub); j++ {
		if s[j] == sub[i] {
			i++
		}
	}
	return i == len(sub)
}

// FuzzRoundTrip builds outputs from segments (text, reasoning, calls
// written the way an engine writes constrained calls), renders them in a
// format, parses them in random chunks and requires every segment back.
func FuzzRoundTrip(f *testing.F) {
	reg := testRegistry(f)
	for i := range reg.Formats() {
		f.Add(uint8(i), []byte{0, 1, 2, 0, 2, 2, 1, 0}, "Hello wörld, 日本 \"quoted\" \\ back\nslash </tool_call> [ARGS] <|end|> {x}", int64(i))
	}
	f.Fuzz(func(t *testing.T, fid uint8, ops []byte, pool string, seed int64) {
		if len(ops) > 64 || len(pool) > 2048 || !utf8.ValidString(pool) {
			return
		}
		fm := reg.Formats()[int(fid)%len(reg.Formats())]
		out, want := renderSegments(fm, ops, pool)
		rng := rand.New(rand.NewSource(seed))
		evs := normalize(parseChunks(fm, Options{Tools: testTools}, randomChunks(rng, out)))
		checkInvariants(t, evs)
		var got []Event
		for _, e := range evs {
			switch e.Kind {
			case TextDelta, ReasoningDelta:
				got = append(got, Event{Kind: e.Kind, Text: e.Text})
			case CallEnd:
				got = append(got, Event{Kind: e.Kind, Name: e.Name, Text: e.Text})
			case Malformed:
				t.Fatalf("malformed %v in %q", e, out)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("output %q\n got %v\nwant %v", out, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("output %q\nevent %d: got %v, want %v", out, i, got[i], want[i])
			}
		}
	})
}

// renderSegments turns ops into model output in format fm and the events
// the parser must give back (deltas merged).
func renderSegments(fm *Format, ops []byte, pool string) (string, []Event) {
	e := &fm.Tools
	// Prose may not contain anything that starts markup.
	bad := map[byte]bool{'{': true, '`': true}
	for _, d := range fm.compiled.text.ds {
		bad[d.s[0]] = true
	}
	prose := strings.Map(func(r rune) rune {
		if r < utf8.RuneSelf && bad[byte(r)] {
			return -1
		}
		return r
	}, pool)
	take := func(n int) string {
		if len(prose) == 0 {
			return ""
		}
		n = n % (len(prose) + 1)
		s := prose[:n]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		prose = prose[len(s):] + s
		return s
	}
	valuePool := pool
	if e.Kind == XMLParams || e.Kind == GemmaCall || e.KeyOpen != "" {
		valuePool = strings.ReplaceAll(pool, "<", "")
	}
	value := func(n int) string {
		s := valuePool
		if len(s) > n {
			s = s[:n]
		}
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		return s
	}
	var b strings.Builder
	var want []Event
	last := -1
	inGroup := false
	for i := 0; i+1 < len(ops); i += 2 {
		kind, n := ops[i]%3, int(ops[i+1])
		if kind == 0 && last == 0 || kind == 1 && fm.Reasoning == nil && e.Kind != Harmony {
			continue // adjacent prose would merge; no reasoning in this format
		}
		if inGroup && kind != 2 {
			b.WriteString(e.GroupClose)
			inGroup = false
		}
		switch kind {
		case 0, 1:
			s := take(n)
			trimmed := strings.Trim(s, " \t\r\n")
			k := TextDelta
			if kind == 1 {
				k = ReasoningDelta
			}
			switch {
			case e.Kind == Harmony && e.Channel == "" && kind == 0:
				b.WriteString(e.Start + "assistant to=user" + e.Message + s + e.End[0])
			case e.Kind == Harmony && e.Channel == "":
				b.WriteString(e.Start + "assistant to=" + e.ReasoningRecipient + e.Message + s + e.End[0])
			case e.Kind == Harmony && kind == 0:
				b.WriteString(e.Start + "assistant" + e.Channel + "final" + e.Message + s + "<|end|>")
			case e.Kind == Harmony:
				b.WriteString(e.Start + "assistant" + e.Channel + e.ReasoningChannel + e.Message + s + "<|end|>")
			case kind == 1:
				b.WriteString(fm.Reasoning.Open + s + fm.Reasoning.Close)
			default:
				if trimmed == "" {
					continue
				}
				b.WriteString(s)
			}
			if trimmed != "" {
				want = append(want, Event{Kind: k, Text: trimmed})
			}
		case 2:
			path, content := value(n%7), value(n)
			var args []byte
			args = append(args, `{"path":"`...)
			args = appendJSONString(args, path)
			args = append(args, `","content":"`...)
			args = appendJSONString(args, content)
			args = append(args, `"}`...)
			soFar := b.String()
			switch fm.Plan() {
			case PlanCall:
				obj := `{"` + fm.compiled.nameKey + `":"write_file","` + fm.compiled.argsKey + `":` + string(args) + `}`
				if e.Kind == JSONArray {
					obj = "[" + obj + "]"
				}
				b.WriteString(fm.CallPrefix(soFar) + obj + fm.CallSuffix())
			case PlanNameThenArgs:
				b.WriteString(fm.CallPrefix(soFar) + fm.ArgumentsPrefix("write_file") + string(args) + fm.CallSuffix())
				inGroup = e.GroupOpen != ""
			case PlanNameOnly:
				b.WriteString(fm.CallPrefix(soFar) + fm.ArgumentsPrefix("write_file"))
				if e.Kind == PythonCall {
					pq, _ := json.Marshal(path)
					cq, _ := json.Marshal(content)
					end := ")"
					if e.CallList {
						end += "]"
					}
					b.WriteString("path=" + string(pq) + ", content=" + string(cq) + end + e.Close)
					break
				}
				if q := e.StringDelim; q != "" {
					b.WriteString("path:" + q + path + q + ",content:" + q + content + q + "}" + e.Close)
					break
				}
				for _, kv := range [][2]string{{"path", path}, {"content", content}} {
					if e.ValueOpen != "" {
						b.WriteString(e.KeyOpen + kv[0] + e.KeyClose + e.ValueOpen + kv[1] + e.ValueClose)
					} else if e.Kind == Harmony {
						// Glimmer's values are raw, as its renderer writes them.
						b.WriteString(e.KeyOpen + kv[0] + e.KeyClose + kv[1] + e.ValueClose + "\n")
					} else {
						b.WriteString(e.KeyOpen + kv[0] + e.KeyClose + "\n" + kv[1] + "\n" + e.ValueClose + "\n")
					}
				}
				b.WriteString(e.FunctionClose + e.Close)
			}
			want = append(want, Event{Kind: CallEnd, Name: "write_file", Text: string(args)})
		}
		last = int(kind)
	}
	if inGroup {
		b.WriteString(e.GroupClose)
	}
	return b.String(), want
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}
