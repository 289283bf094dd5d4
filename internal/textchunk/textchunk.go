// Package textchunk cuts a document's text into overlapping chunks of at most a number
// of tokens, as a vector store's static chunking strategy asks
// (max_chunk_size_tokens, chunk_overlap_tokens).
//
// A token here is a word: a run of letters and digits, or one other visible
// character (punctuation, a symbol). That approximates the subword tokenizers of
// embedding models from below: a word an embedding model splits into three pieces
// counts once. It is used because the runtime seam offers no tokenizer, and it keeps
// chunks on word boundaries. A chunk's text is the document's own text from its first
// token to its last, whitespace and line breaks included.
package textchunk

import (
	"unicode"
	"unicode/utf8"
)

// span is one token's place in the text, in bytes.
type span struct{ start, end int }

// tokens finds the tokens of text.
func tokens(text string) []span {
	var out []span
	word := -1 // the start of the word being read, -1 outside one
	for i, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			if word < 0 {
				word = i
			}
		default:
			if word >= 0 {
				out = append(out, span{word, i})
				word = -1
			}
			if !unicode.IsSpace(r) && unicode.IsPrint(r) {
				out = append(out, span{i, i + utf8.RuneLen(r)})
			}
		}
	}
	if word >= 0 {
		out = append(out, span{word, len(text)})
	}
	return out
}

// Count returns the number of tokens of text, as Split counts them.
func Count(text string) int { return len(tokens(text)) }

// Split cuts text into chunks of at most max tokens, each starting overlap tokens
// before the previous one ended. max must be positive and overlap in [0, max); a text
// without tokens has no chunks.
func Split(text string, max, overlap int) []string {
	if max <= 0 || overlap < 0 || overlap >= max {
		panic("textchunk: want 0 <= overlap < max")
	}
	toks := tokens(text)
	var chunks []string
	for first := 0; first < len(toks); first += max - overlap {
		last := min(first+max, len(toks)) - 1
		chunks = append(chunks, text[toks[first].start:toks[last].end])
		if last == len(toks)-1 {
			break
		}
	}
	return chunks
}
