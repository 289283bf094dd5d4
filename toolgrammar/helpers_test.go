package toolgrammar

import (
	"encoding/json"
	"os"
	"sync"
	"testing"
)

var (
	regOnce sync.Once
	reg     *Registry
	regErr  error
)

// testRegistry loads ../models.json, the file the root package embeds, so
// the tests and the binary always agree.
func testRegistry(t testing.TB) *Registry {
	regOnce.Do(func() {
		data, err := os.ReadFile("../models.json")
		if err != nil {
			regErr = err
			return
		}
		reg, regErr = LoadFormats(data)
	})
	if regErr != nil {
		t.Fatal(regErr)
	}
	return reg
}

func testFormat(t testing.TB, id string) *Format {
	f := testRegistry(t).Lookup(id)
	if f == nil {
		t.Fatalf("no format %q in models.json", id)
	}
	return f
}

// testTools is the tool set every fixture is parsed with; XML formats type
// their values by it.
var testTools = []Tool{
	{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},"required":["location"]}`)},
	{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"filters":{"type":"object"},"exact":{"type":"boolean"},"tags":{"type":"array","items":{"type":"string"}}},"required":["query"]}`)},
	{Name: "write_file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`)},
	{Name: "get_time", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
}

// parseChunks feeds chunks and returns all events, copied.
func parseChunks(f *Format, opts Options, chunks []string) []Event {
	p := NewParser(f, opts)
	var all []Event
	for _, c := range chunks {
		all = append(all, p.Feed(c)...)
	}
	return append(all, p.Close()...)
}

// normalize merges adjacent deltas of the same kind and call, and clears
// delta offsets: how a stream is cut into deltas depends on chunking, what
// it adds up to must not.
func normalize(evs []Event) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind.IsDelta() {
			e.Offset = 0
			if n := len(out); n > 0 && out[n-1].Kind == e.Kind && out[n-1].Index == e.Index {
				out[n-1].Text += e.Text
				continue
			}
		}
		out = append(out, e)
	}
	return out
}

// splitAt cuts s at the given offsets.
func splitAt(s string, cuts ...int) []string {
	var out []string
	prev := 0
	for _, c := range cuts {
		out = append(out, s[prev:c])
		prev = c
	}
	return append(out, s[prev:])
}
