package textchunk

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func estimate(text string) int {
	n, _ := Estimate([]string{text})
	return n[0]
}

func split(t *testing.T, text string, max, overlap int, count Counter) []string {
	t.Helper()
	chunks, err := Split(text, max, overlap, count)
	if err != nil {
		t.Fatal(err)
	}
	return chunks
}

func TestEstimate(t *testing.T) {
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
		{"a+b $5", 2}, // symbols are not punctuation: WordPiece keeps them in the word
		{"日本語", 3},
		{"«quote» — end。", 5}, // «quote, », —, end, 。: a multi-byte mark starts the next word's piece
	} {
		if got := estimate(c.text); got != c.want {
			t.Errorf("Estimate(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}

func TestSplitEstimate(t *testing.T) {
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
		if got := split(t, text, c.max, c.overlap, Estimate); !slices.Equal(got, c.want) {
			t.Errorf("Split(%d, %d) = %q, want %q", c.max, c.overlap, got, c.want)
		}
	}
	// The document's own text between the first and last piece: lines kept,
	// surrounding space dropped.
	if got := split(t, "  # Title\n\nA line.\n", 100, 0, Estimate); !slices.Equal(got, []string{"# Title\n\nA line."}) {
		t.Errorf("kept text: %q", got)
	}
	if got := split(t, " \n ", 5, 1, Estimate); got != nil {
		t.Errorf("no pieces: %q", got)
	}
	long := strings.Repeat("alpha beta, gamma. ", 500)
	chunks := split(t, long, 100, 40, Estimate)
	for i, ch := range chunks {
		if n := estimate(ch); n > 100 {
			t.Errorf("chunk %d has %d tokens", i, n)
		}
	}
	if n := estimate(long); len(chunks) != 1+(n-100+59)/60 {
		t.Errorf("%d chunks of %d tokens", len(chunks), n)
	}
	if !strings.HasSuffix(long, chunks[len(chunks)-1]+" ") {
		t.Errorf("last chunk does not end the text: %q", chunks[len(chunks)-1])
	}
}

// subwords is a tokenizer that splits each piece into runs of 3 characters: additive
// over pieces, like WordPiece.
func subwords(texts []string) ([]int, error) {
	out := make([]int, len(texts))
	for i, t := range texts {
		for _, p := range pieces(t) {
			out[i] += (utf8.RuneCountInString(t[p.start:p.end]) + 2) / 3
		}
	}
	return out, nil
}

func TestSplitCounted(t *testing.T) {
	// Token counts: the 1, abcdef 2, xy 1, abcdefghi 3.
	text := "the abcdef xy abcdefghi the xy"
	for _, c := range []struct {
		max, overlap int
		want         []string
	}{
		{11, 0, []string{text}},
		{4, 0, []string{"the abcdef xy", "abcdefghi the", "xy"}},
		// abcdef (2) + xy (1) would fit in the overlap, but then abcdefghi (3)
		// would not fit after them: the overlap gives way to a new piece.
		{5, 3, []string{"the abcdef xy", "xy abcdefghi the", "the xy"}},
		{3, 1, []string{"the abcdef", "xy", "abcdefghi", "the xy"}},
	} {
		if got := split(t, text, c.max, c.overlap, subwords); !slices.Equal(got, c.want) {
			t.Errorf("Split(%d, %d) = %q, want %q", c.max, c.overlap, got, c.want)
		}
	}
}

// TestSplitRecountsChunks checks the guard for tokenizers that are not additive over
// pieces: a chunk that counts whole over the maximum loses pieces until it fits.
func TestSplitRecountsChunks(t *testing.T) {
	// Each piece counts 1 alone, but a text of several counts one more per piece
	// after the first (as if joins cost a token).
	joins := func(texts []string) ([]int, error) {
		out := make([]int, len(texts))
		for i, t := range texts {
			out[i] = max(0, 2*len(pieces(t))-1)
		}
		return out, nil
	}
	text := strings.Repeat("word ", 40)
	chunks := split(t, text, 9, 2, joins)
	for i, ch := range chunks {
		if n, _ := joins([]string{ch}); n[0] > 9 {
			t.Errorf("chunk %d counts %d", i, n[0])
		}
	}
	if len(chunks) == 0 || chunks[0] != "word word word word word" {
		t.Errorf("first chunk %q, want 5 words (9 tokens)", chunks[0])
	}
	// An error of the counter is Split's.
	boom := errors.New("boom")
	if _, err := Split(text, 9, 2, func([]string) ([]int, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("err %v", err)
	}
	if _, err := Split(text, 9, 2, func([]string) ([]int, error) { return []int{1}, nil }); err == nil {
		t.Error("a short answer accepted")
	}
}
