package engine

// TokenBound bounds from below how many tokens a model's tokenizer makes of a text,
// from its vocabulary alone, without tokenizing it: every token covers at most
// Longest bytes, so a text of n bytes is at least n/Longest tokens; and a token covers
// at most Runs[c] consecutive bytes of one class c (punctuation, digits, whitespace,
// ...), so a run of n such bytes in the text needs at least n/Runs[c] tokens.
//
// Why it matters: tokenizing is where untrusted text meets C++ (llama.cpp's
// pre-tokenizer falls back to std::regex for most vocabularies, which recurses once
// per character of a run, so a long enough run of punctuation overflows the
// thread's stack and kills the runner). A text whose bound already exceeds the
// context window cannot fit: it is refused before any tokenizer sees it, at the cost
// of one pass over its bytes. The bound never refuses a text that would fit.
type TokenBound struct {
	// Longest is the most bytes one token of the vocabulary covers.
	Longest int
	// Runs is, per byte class, the longest run of bytes of that class inside one
	// token; 0 where no token holds the class (the class is then not bounded: an
	// unknown token may cover a whole run).
	Runs [NumByteClasses]int
}

// Byte classes of TokenBound.Runs: each byte belongs to exactly one.
const (
	ClassPunct    = iota // ASCII punctuation and symbols: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
	ClassDigit           // 0-9
	ClassSpace           // ASCII whitespace and control bytes
	ClassLetter          // A-Z a-z
	ClassNonASCII        // every byte of a multi-byte character, and invalid UTF-8
	NumByteClasses
)

// ByteClass is the class of b.
func ByteClass(b byte) int {
	switch {
	case b >= 0x80:
		return ClassNonASCII
	case b >= '0' && b <= '9':
		return ClassDigit
	case b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z':
		return ClassLetter
	case b <= ' ' || b == 0x7f:
		return ClassSpace
	}
	return ClassPunct
}

// NewTokenBound is the bound of a vocabulary given as each token's text (the bytes it
// stands for; a caller that only has an encoded form passes something at least as
// long, which loosens the bound and keeps it right). Nil when there is none.
func NewTokenBound(tokens []string) *TokenBound {
	b := &TokenBound{}
	for _, t := range tokens {
		b.Longest = max(b.Longest, len(t))
		for i := 0; i < len(t); {
			c := ByteClass(t[i])
			j := i + 1
			for j < len(t) && ByteClass(t[j]) == c {
				j++
			}
			b.Runs[c] = max(b.Runs[c], j-i)
			i = j
		}
	}
	if b.Longest == 0 {
		return nil
	}
	return b
}

// Min is the fewest tokens text can be: the larger of its bytes over the longest
// token and, for its longest run of each bounded class, the run over that class's
// longest run in a token. One pass over text, no allocation.
func (b *TokenBound) Min(text string) int {
	if b == nil || b.Longest <= 0 || len(text) == 0 {
		return 0
	}
	n := ceilDiv(len(text), b.Longest)
	for i := 0; i < len(text); {
		c := ByteClass(text[i])
		j := i + 1
		for j < len(text) && ByteClass(text[j]) == c {
			j++
		}
		if r := b.Runs[c]; r > 0 {
			n = max(n, ceilDiv(j-i, r))
		}
		i = j
	}
	return n
}

// MaxBytes is the most bytes a text of at most window tokens can have.
func (b *TokenBound) MaxBytes(window int) int {
	if b == nil {
		return 0
	}
	return window * b.Longest
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
