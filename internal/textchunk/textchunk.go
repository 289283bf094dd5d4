// Package textchunk cuts a document's text into overlapping chunks of at most a number
// of tokens, as a vector store's static chunking strategy asks
// (max_chunk_size_tokens, chunk_overlap_tokens), counted by the embedding model's
// tokenizer.
//
// Chunks are cut between pieces: a piece is a run of characters between spaces and
// punctuation marks, or one punctuation mark, or one CJK ideograph — the words
// WordPiece tokenizers (BERT's, nomic's: most embedding models) split a text into
// before they look at the vocabulary — except that a punctuation mark of several bytes
// (« » — “ ” 。) starts the piece of the word after it, because the runtime's
// WordPiece reads it that way. A chunk's text is the document's own text from
// its first piece to its last, whitespace and line breaks included.
//
// A piece's tokens are counted once per distinct piece (with the whitespace before
// it, which tokenizers that mark a word's start count there), and a chunk takes as
// many pieces as their counts allow. For a WordPiece tokenizer the sum is the count of
// the chunk's text exactly; for others (byte-pair, SentencePiece) it is close, and
// every chunk is counted again whole: one that counts over the maximum loses pieces
// until it fits. So a chunk never counts more than the maximum (but for a single
// piece longer than the maximum, which is a chunk of its own), and the overlap is
// exact for WordPiece and close for the others.
package textchunk

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Counter returns how many tokens each text is, in order, as an embedding model's
// tokenizer counts them (without the special tokens it adds around an input).
type Counter func(texts []string) ([]int, error)

// Estimate is the Counter for when no tokenizer can be asked: a piece is a token.
// It counts from below (a word a tokenizer splits into three pieces counts once).
func Estimate(texts []string) ([]int, error) {
	out := make([]int, len(texts))
	for i, t := range texts {
		out[i] = len(pieces(t))
	}
	return out, nil
}

// span is one piece's place in the text, in bytes.
type span struct{ start, end int }

// pieces finds the pieces of text.
func pieces(text string) []span {
	var out []span
	word := -1 // the start of the word being read, -1 outside one
	end := func(i int) {
		if word >= 0 {
			out = append(out, span{word, i})
			word = -1
		}
	}
	for i, r := range text {
		switch {
		case unicode.IsSpace(r):
			end(i)
		case unicode.IsPunct(r) && utf8.RuneLen(r) > 1:
			// The runtime's WordPiece (Ollama 0.17.4) cuts a multi-byte punctuation
			// mark after its first byte and reads the rest with the word after it:
			// counted alone, the mark and that word would not add up to that.
			end(i)
			word = i
		case unicode.IsPunct(r) || isCJK(r):
			end(i)
			out = append(out, span{i, i + utf8.RuneLen(r)})
		default:
			if word < 0 {
				word = i
			}
		}
	}
	end(len(text))
	return out
}

// isCJK reports whether r is a CJK ideograph, a word of its own to BERT's tokenizer.
func isCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2CEAF || r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}

// Split cuts text into chunks of at most max tokens as count counts them, each
// starting at most overlap tokens before the previous one ended (as many whole
// pieces as fit). max must be positive and overlap in [0, max); a text without pieces
// has no chunks. An error is count's.
func Split(text string, max, overlap int, count Counter) ([]string, error) {
	if max <= 0 || overlap < 0 || overlap >= max {
		panic("textchunk: want 0 <= overlap < max")
	}
	ps := pieces(text)
	if len(ps) == 0 {
		return nil, nil
	}
	lens, err := pieceTokens(text, ps, count)
	if err != nil {
		return nil, err
	}
	c := cutter{text: text, pieces: ps, lens: lens, max: max, overlap: overlap}
	chunks, _ := c.cut(nil)
	// Counted whole, the chunks usually confirm the sums (always, for WordPiece);
	// where one does not, cut again, counting each chunk before taking it.
	n, err := countAll(count, chunks)
	if err != nil {
		return nil, err
	}
	for _, k := range n {
		if k > max {
			return c.cut(count)
		}
	}
	return chunks, nil
}

// pieceTokens counts each piece with the whitespace before it, each distinct one once.
func pieceTokens(text string, ps []span, count Counter) ([]int, error) {
	texts := make([]string, len(ps))
	seen := map[string]int{}
	var distinct []string
	for i, p := range ps {
		from := 0
		if i > 0 {
			from = ps[i-1].end
		}
		texts[i] = text[from:p.end]
		if _, ok := seen[texts[i]]; !ok {
			seen[texts[i]] = len(distinct)
			distinct = append(distinct, texts[i])
		}
	}
	n, err := countAll(count, distinct)
	if err != nil {
		return nil, err
	}
	lens := make([]int, len(ps))
	for i, t := range texts {
		lens[i] = n[seen[t]]
	}
	return lens, nil
}

// countAll calls count and checks that it answered for every text.
func countAll(count Counter, texts []string) ([]int, error) {
	n, err := count(texts)
	if err == nil && len(n) != len(texts) {
		err = fmt.Errorf("textchunk: %d counts for %d texts", len(n), len(texts))
	}
	return n, err
}

type cutter struct {
	text         string
	pieces       []span
	lens         []int
	max, overlap int
}

// cut cuts the chunks by the pieces' counts; with verify, each chunk is counted whole
// before it is taken, and loses pieces at its end while it counts over max.
func (c *cutter) cut(verify Counter) ([]string, error) {
	var chunks []string
	for first := 0; ; {
		last, sum := first, c.lens[first]
		for last+1 < len(c.pieces) && sum+c.lens[last+1] <= c.max {
			last++
			sum += c.lens[last]
		}
		for verify != nil && last > first {
			n, err := countAll(verify, []string{c.chunk(first, last)})
			if err != nil {
				return nil, err
			}
			if n[0] <= c.max {
				break
			}
			last--
		}
		chunks = append(chunks, c.chunk(first, last))
		if last == len(c.pieces)-1 {
			return chunks, nil
		}
		// The next chunk starts with the last pieces of this one that fit in the
		// overlap, after this one's start, and leaving room for a new piece.
		next, back := last+1, 0
		for next-1 > first && back+c.lens[next-1] <= c.overlap && back+c.lens[next-1]+c.lens[last+1] <= c.max {
			next--
			back += c.lens[next]
		}
		first = next
	}
}

func (c *cutter) chunk(first, last int) string {
	return c.text[c.pieces[first].start:c.pieces[last].end]
}
