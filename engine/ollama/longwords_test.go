package ollama

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ollama/ollama/tokenizer"

	"hearth/scriptmodel"
)

// A word over MaxWordChars becomes the unknown word, wherever it stands between
// spaces, punctuation and CJK ideographs; words within the bound, and texts without
// a long word, stay as they are.
func TestBoundWords(t *testing.T) {
	const u = "<?>"
	long := strings.Repeat("a", MaxWordChars+1)
	atBound := strings.Repeat("é", MaxWordChars)
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"kettle ships", "kettle ships"},
		{atBound, atBound},
		{long, u},
		{"the " + long + " ships", "the " + u + " ships"},
		{long + "." + long + "," + atBound, u + "." + u + "," + atBound},
		{"(" + long + ")\n\t" + long, "(" + u + ")\n\t" + u},
		{"東" + long + "京", "東" + u + "京"},
		{"«" + long + "»", "«" + u + "»"},
		{strings.Repeat("é", MaxWordChars+1) + " x", u + " x"},
	} {
		if got := boundWords(c.in, u); got != c.want {
			t.Errorf("%.40q...: got %.60q, want %.60q", c.in, got, c.want)
		}
	}
	// No unknown word: the word is cut to the bound.
	if got := boundWords("x "+strings.Repeat("é", 3*MaxWordChars), ""); got != "x "+atBound {
		t.Errorf("cut: got %q", got)
	}
}

// The script embedding model's WordPiece tokenizer (Ollama's, over its vocabulary)
// reads a word of 8,000 characters as one [UNK], as BERT's does, where Ollama's alone
// would try some 85 billion candidate pieces (a minute and more) and then give a token
// per character; the unknown word is the Gothic letter, a single [UNK].
func TestLongWordIsUnknown(t *testing.T) {
	e := scriptmodel.NewEmbedder(scriptmodel.DefaultEmbedWords)
	tok := newOllamaTokenizer(tokenizer.NewWordPiece(&tokenizer.Vocabulary{Values: e.Vocabulary()}, true), true)
	if tok.unknown != unknownWords[0] {
		t.Fatalf("unknown word %q, want %q", tok.unknown, unknownWords[0])
	}
	word := strings.Repeat("xyzzy", 1600)
	for _, c := range []struct {
		text string
		want int
	}{
		{word, 1},
		{"the kettle " + word + " ships.", 5},
		{word + "," + word, 3},
		{strings.Repeat("x", MaxWordChars), MaxWordChars}, // within the bound: a token per letter
	} {
		n, err := tok.count(c.text)
		if err != nil || n != c.want {
			t.Errorf("%.30q... counts %d tokens (%v), want %d", c.text, n, err, c.want)
		}
	}
	ids, _ := tok.t.Encode(tok.bound("the "+word), false)
	if unk := tok.t.Vocabulary().Encode("[UNK]"); len(ids) != 2 || ids[1] != unk {
		t.Errorf("the long word is %v, want [the, [UNK]=%d]", ids, unk)
	}
}

// BenchmarkLongWord: counting one word of 1,000, 4,000 and 8,000 characters with the
// script embedding model's WordPiece tokenizer, as Ollama's runner tokenizes it
// ("raw") and as hearth now gives it ("bounded"). Run the raw ones once each:
//
//	go test -run '^$' -bench 'LongWord' -benchtime 1x ./engine/ollama
func BenchmarkLongWord(b *testing.B) {
	e := scriptmodel.NewEmbedder(scriptmodel.DefaultEmbedWords)
	wp := tokenizer.NewWordPiece(&tokenizer.Vocabulary{Values: e.Vocabulary()}, true)
	tok := newOllamaTokenizer(wp, true)
	for _, n := range []int{1000, 4000, 8000} {
		word := strings.Repeat("xyzzy", n/5)
		b.Run(fmt.Sprintf("raw/%d", n), func(b *testing.B) {
			for range b.N {
				wp.Encode(word, false)
			}
		})
		b.Run(fmt.Sprintf("bounded/%d", n), func(b *testing.B) {
			for range b.N {
				tok.count(word)
			}
		})
	}
}
