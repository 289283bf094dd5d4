package ollama

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ollama/ollama/tokenizer"
)

// Long words. Ollama's WordPiece tokenizer (BERT's and nomic-bert's: most embedding
// models), which both the runtime's runner and hearth's token counts use, matches a
// word's pieces greedily from its longest prefix down, building and lowercasing each
// candidate: a word of n characters takes time of the order of n³ (a 1,000-character
// word 0.2 s, 8,000 characters 79 s), in a runner that goes on after the client has
// left and that every other request for the model waits behind. BERT's own WordPiece
// does not look at such a word: one longer than max_input_chars_per_word (100) is
// [UNK]. Ollama's has no such bound and hearth cannot change it, so hearth never hands
// it a longer word: every word over MaxWordChars becomes a short word the model's
// vocabulary reads as one [UNK] token, which is what BERT makes of it, at the cost of
// scanning the text once.

// MaxWordChars is the longest word, in characters, that a WordPiece tokenizer is given
// (BERT's max_input_chars_per_word).
const MaxWordChars = 100

// unknownWords are short words that no embedding vocabulary holds, tried in order for
// the one the model's tokenizer reads as exactly its [UNK] token: a letter of the
// Gothic alphabet (a letter, so that no tokenizer drops it as a control character),
// then a character of Unicode's private use area.
var unknownWords = []string{"\U00010330", "\uE000"}

// unknownWordOf is the word that t reads as its [UNK] token and nothing else, or ""
// when none of unknownWords is (then an over-long word is cut to MaxWordChars instead:
// its tokens are not BERT's, but they take no longer to find than a word's may).
func unknownWordOf(t tokenizer.Tokenizer) string {
	unk := t.Vocabulary().Encode("[UNK]")
	if unk < 0 {
		return ""
	}
	for _, w := range unknownWords {
		if ids, err := t.Encode(w, false); err == nil && slices.Equal(ids, []int32{unk}) {
			return w
		}
	}
	return ""
}

// boundWords is text with each word longer than MaxWordChars replaced by unknown (cut
// to its first MaxWordChars characters when unknown is ""). A word is what Ollama's
// WordPiece looks up as one: a run of characters between spaces, punctuation marks
// and CJK ideographs (each a word of its own). text comes back as it is, without a
// copy, when no word is over the bound.
func boundWords(text, unknown string) string {
	var sb strings.Builder
	done := 0         // text[:done] is in sb
	start, n := -1, 0 // the word being read (its byte offset) and its characters
	end := func(i int) {
		if start >= 0 && n > MaxWordChars {
			if sb.Len() == 0 {
				sb.Grow(len(text))
			}
			sb.WriteString(text[done:start])
			if unknown != "" {
				sb.WriteString(unknown)
			} else {
				cut := start
				for k := 0; k < MaxWordChars; k++ {
					_, size := utf8.DecodeRuneInString(text[cut:])
					cut += size
				}
				sb.WriteString(text[start:cut])
			}
			done = i
		}
		start, n = -1, 0
	}
	for i, r := range text {
		if unicode.IsSpace(r) || unicode.IsPunct(r) || isCJKIdeograph(r) {
			end(i)
			continue
		}
		if start < 0 {
			start = i
		}
		n++
	}
	end(len(text))
	if done == 0 {
		return text
	}
	sb.WriteString(text[done:])
	return sb.String()
}

// isCJKIdeograph reports whether r is one of the CJK ideographs Ollama's WordPiece
// makes a word of its own.
func isCJKIdeograph(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2CEAF || r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}
