package engine_test

import (
	"strings"
	"testing"

	"hearth/engine"
)

// TestTokenBound: the fewest tokens a text can be, from the vocabulary's longest
// token and its longest run of each byte class; a class no token holds is not bounded.
func TestTokenBound(t *testing.T) {
	b := engine.NewTokenBound([]string{"hello", `""`, "12", " ", "{\"a\":"})
	cases := []struct {
		text string
		want int
	}{
		{"", 0},
		{"hello", 1},
		{strings.Repeat(`"`, 30_000), 15_000},     // runs of punctuation: at most 2 per token
		{strings.Repeat("{", 9), 5},               // `{"a":` holds runs of 2
		{strings.Repeat("7", 1001), 501},          // digits: 2 per token
		{strings.Repeat("x", 50), 10},             // letters: 5 per token
		{strings.Repeat("中", 10), 6},              // no token holds non-ASCII: only Longest (5) bounds it
		{"ab" + strings.Repeat(" ", 7) + "cd", 7}, // a token holds one space
		{strings.Repeat("a\"", 100), 40},          // mixed: bytes over the longest token
	}
	for _, c := range cases {
		if got := b.Min(c.text); got != c.want {
			t.Errorf("Min(%.20q... %d bytes) = %d, want %d", c.text, len(c.text), got, c.want)
		}
	}
	if got := b.MaxBytes(4096); got != 4096*5 {
		t.Errorf("MaxBytes(4096) = %d", got)
	}
	var none *engine.TokenBound
	if none.Min("anything") != 0 || engine.NewTokenBound(nil) != nil {
		t.Error("no vocabulary bounds nothing")
	}
}

// BenchmarkTokenBound measures the bound of 3 MB of text (what a request may carry):
// one pass over its bytes.
func BenchmarkTokenBound(b *testing.B) {
	bound := engine.NewTokenBound([]string{"hello", `""`, "12", " "})
	text := strings.Repeat(`"`, 3<<20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		bound.Min(text)
	}
}
