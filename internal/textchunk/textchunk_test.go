package textchunk

import (
	"slices"
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	for _, c := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"  \n\t ", 0},
		{"hello", 1},
		{"hello, world!", 4},
		{"naïve café 42x", 3},
		{"a-b", 3},
		{"日本語", 1},
	} {
		if got := Count(c.text); got != c.want {
			t.Errorf("Count(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}

func TestSplit(t *testing.T) {
	text := "one two three four five six seven"
	for _, c := range []struct {
		max, overlap int
		want         []string
	}{
		{10, 0, []string{text}},
		{7, 3, []string{text}},
		{3, 0, []string{"one two three", "four five six", "seven"}},
		{3, 1, []string{"one two three", "three four five", "five six seven"}},
		{4, 2, []string{"one two three four", "three four five six", "five six seven"}},
		{2, 1, []string{"one two", "two three", "three four", "four five", "five six", "six seven"}},
	} {
		if got := Split(text, c.max, c.overlap); !slices.Equal(got, c.want) {
			t.Errorf("Split(%d, %d) = %q, want %q", c.max, c.overlap, got, c.want)
		}
	}
	// The document's own text between the first and last token: lines kept,
	// surrounding space dropped.
	if got := Split("  # Title\n\nA line.\n", 100, 0); !slices.Equal(got, []string{"# Title\n\nA line."}) {
		t.Errorf("kept text: %q", got)
	}
	if got := Split(" \n ", 5, 1); got != nil {
		t.Errorf("no tokens: %q", got)
	}
	// Every chunk within the bound, and every token in some chunk.
	long := strings.Repeat("alpha beta, gamma. ", 500)
	chunks := Split(long, 100, 40)
	for i, ch := range chunks {
		if n := Count(ch); n > 100 {
			t.Errorf("chunk %d has %d tokens", i, n)
		}
	}
	if n := Count(long); len(chunks) != 1+(n-100+59)/60 {
		t.Errorf("%d chunks of %d tokens", len(chunks), n)
	}
	if !strings.HasSuffix(long, chunks[len(chunks)-1]+" ") {
		t.Errorf("last chunk does not end the text: %q", chunks[len(chunks)-1])
	}
}
