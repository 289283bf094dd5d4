package toolgrammar

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/fixtures")

type fixture struct {
	format string
	name   string
	path   string
	input  string
	opts   Options
}

// loadFixtures reads testdata/fixtures/<format id>/<case>.txt. A case name
// carries options: "+prompt-think" starts in reasoning (the prompt opened
// it), "+error" uses MalformedAsError.
func loadFixtures(t testing.TB) []fixture {
	paths, err := filepath.Glob("testdata/fixtures/*/*.txt")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var fx []fixture
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".txt")
		opts := Options{Tools: testTools}
		opts.StartInReasoning = strings.Contains(name, "+prompt-think")
		if strings.Contains(name, "+error") {
			opts.Malformed = MalformedAsError
		}
		fx = append(fx, fixture{format: filepath.Base(filepath.Dir(p)), name: name, path: p, input: string(data), opts: opts})
	}
	return fx
}

func marshalEvents(evs []Event) []byte {
	var b bytes.Buffer
	b.WriteString("[\n")
	for i, e := range evs {
		j, _ := json.Marshal(e)
		b.Write(j)
		if i < len(evs)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]\n")
	return b.Bytes()
}

// TestFixtures checks every fixture against its golden events, then feeds it
// split at every byte offset, byte by byte, and in random chunkings, and
// requires the same events every time.
func TestFixtures(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		t.Run(fx.format+"/"+fx.name, func(t *testing.T) {
			f := testFormat(t, fx.format)
			want := normalize(parseChunks(f, fx.opts, []string{fx.input}))
			checkInvariants(t, want)
			golden := strings.TrimSuffix(fx.path, ".txt") + ".golden.json"
			got := marshalEvents(want)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			exp, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(exp, got) {
				t.Fatalf("events differ from %s:\n got: %s\nwant: %s", golden, got, exp)
			}
			in := fx.input
			for k := 0; k <= len(in); k++ {
				compareEvents(t, fmt.Sprintf("split at %d", k), want, normalize(parseChunks(f, fx.opts, splitAt(in, k))))
			}
			bytewise := make([]string, len(in))
			for i := 0; i < len(in); i++ {
				bytewise[i] = in[i : i+1]
			}
			compareEvents(t, "byte by byte", want, normalize(parseChunks(f, fx.opts, bytewise)))
			rng := rand.New(rand.NewSource(int64(len(in))))
			for r := 0; r < 200; r++ {
				chunks := randomChunks(rng, in)
				compareEvents(t, fmt.Sprintf("random chunking %q", chunks), want, normalize(parseChunks(f, fx.opts, chunks)))
			}
		})
	}
}

func randomChunks(rng *rand.Rand, s string) []string {
	var out []string
	for len(s) > 0 {
		n := 1 + rng.Intn(8)
		if rng.Intn(10) == 0 {
			n = rng.Intn(len(s) + 1)
		}
		if n > len(s) {
			n = len(s)
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func compareEvents(t testing.TB, how string, want, got []Event) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d events, want %d\n got: %s\nwant: %s", how, len(got), len(want), marshalEvents(got), marshalEvents(want))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: event %d is %v, want %v\n got: %s\nwant: %s", how, i, got[i], want[i], marshalEvents(got), marshalEvents(want))
		}
	}
}

// checkInvariants checks what holds for any event stream: valid UTF-8,
// calls that begin before their deltas and end once, arguments deltas that
// add up to valid canonical JSON, and no markup-only deltas.
func checkInvariants(t testing.TB, evs []Event) {
	t.Helper()
	open := map[int]*strings.Builder{}
	seen := map[int]bool{}
	for i, e := range evs {
		if !utf8.ValidString(e.Text) || !utf8.ValidString(e.Name) {
			t.Fatalf("event %d: invalid UTF-8: %v", i, e)
		}
		switch e.Kind {
		case TextDelta, ReasoningDelta:
			if e.Text == "" {
				t.Fatalf("event %d: empty delta", i)
			}
		case CallBegin:
			if seen[e.Index] || e.Index < 0 {
				t.Fatalf("event %d: call index %d reused", i, e.Index)
			}
			seen[e.Index] = true
			open[e.Index] = &strings.Builder{}
		case ArgumentsDelta:
			b, ok := open[e.Index]
			if !ok {
				t.Fatalf("event %d: arguments for call %d that is not open", i, e.Index)
			}
			b.WriteString(e.Text)
		case CallEnd:
			b, ok := open[e.Index]
			if !ok {
				t.Fatalf("event %d: end of call %d that is not open", i, e.Index)
			}
			if b.String() != e.Text {
				t.Fatalf("event %d: deltas %q do not add up to arguments %q", i, b.String(), e.Text)
			}
			if !json.Valid([]byte(e.Text)) || !strings.HasPrefix(e.Text, "{") {
				t.Fatalf("event %d: arguments are not a JSON object: %q", i, e.Text)
			}
			var c bytes.Buffer
			_ = json.Compact(&c, []byte(e.Text))
			if c.String() != e.Text {
				t.Fatalf("event %d: arguments not compact: %q", i, e.Text)
			}
			delete(open, e.Index)
		case Malformed:
			if e.Index >= 0 {
				if _, ok := open[e.Index]; !ok {
					t.Fatalf("event %d: malformed withdraws call %d that is not open", i, e.Index)
				}
				delete(open, e.Index)
			}
		}
	}
	if len(open) != 0 {
		t.Fatalf("calls left open: %v", open)
	}
}
