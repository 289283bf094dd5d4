package scriptmodel

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Token types as llama.cpp reads them from tokenizer.ggml.token_type.
const (
	tokenNormal      int32 = 1
	tokenControl     int32 = 3
	tokenUserDefined int32 = 4
)

const (
	bosID = 0
	eosID = 1
	// byteBase is the id of byte 0; bytes take the next 256 ids.
	byteBase = 2
	// firstPieceID is the first id after the control and byte tokens.
	firstPieceID = byteBase + 256

	// BOS and EOS are the control tokens' texts (Spec.BOS may name BOS otherwise).
	BOS = "<|bos|>"
	EOS = "<|eos|>"
)

// byteToUnicode is GPT-2's reversible mapping of bytes to printable runes, which a
// `gpt2` tokenizer expects its byte tokens to be spelled in.
func byteToUnicode() [256]rune {
	var m [256]rune
	printable := func(b int) bool {
		return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
	}
	n := 0
	for b := 0; b < 256; b++ {
		if printable(b) {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// vocab is the token list of a script model: control tokens, the 256 byte tokens, then
// one user-defined token per distinct multi-byte piece.
type vocab struct {
	tokens []string
	types  []int32
	ids    map[string]int // user-defined pieces by text
}

// newVocab starts a vocabulary whose beginning-of-sequence token is spelled bos.
func newVocab(bos string) *vocab {
	v := &vocab{ids: map[string]int{}}
	v.add(bos, tokenControl)
	v.add(EOS, tokenControl)
	b2u := byteToUnicode()
	for b := 0; b < 256; b++ {
		v.add(string(b2u[b]), tokenNormal)
	}
	return v
}

func (v *vocab) add(text string, typ int32) int {
	id := len(v.tokens)
	v.tokens = append(v.tokens, text)
	v.types = append(v.types, typ)
	if typ == tokenUserDefined {
		v.ids[text] = id
	}
	return id
}

// claim returns the id of a new user-defined token for text, which must not be taken.
func (v *vocab) claim(text string) (int, bool) {
	if _, taken := v.ids[text]; taken || text == v.tokens[bosID] || text == EOS || len(text) < 2 {
		return 0, false
	}
	return v.add(text, tokenUserDefined), true
}

// splitPieces cuts text into the pieces a script is written in: markup such as
// `<tool_call>` alone, otherwise words with their leading space. Pieces are what the model
// emits one token at a time, so the piece count is the script's token count.
func splitPieces(text string) []string {
	var pieces []string
	start := 0
	cut := func(i int) {
		if i > start {
			pieces = append(pieces, text[start:i])
			start = i
		}
	}
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == '<' || c == '[':
			cut(i)
		case c == '>' || c == ']':
			cut(i + 1)
		case c == ' ' || c == '\n':
			// a space starts the next word, a newline ends the current one
			if c == '\n' {
				cut(i)
				cut(i + 1)
			} else {
				cut(i)
			}
		}
	}
	cut(len(text))
	// Single bytes are the byte tokens, which carry the grammar preference ranking and
	// cannot be a script's step: join each to its neighbour.
	var joined []string
	for i := 0; i < len(pieces); i++ {
		p := pieces[i]
		for len(p) < 2 && i+1 < len(pieces) {
			i++
			p += pieces[i]
		}
		if len(p) < 2 && len(joined) > 0 {
			joined[len(joined)-1] += p
			continue
		}
		joined = append(joined, p)
	}
	return joined
}

// claimPieces turns pieces into fresh token ids. A token's successor must be unique (the
// same token cannot continue two scripts differently), so a piece whose text is already
// taken is first joined with the pieces after it ("the" + " local"), then, failing that,
// split at another point.
func (v *vocab) claimPieces(pieces []string) ([]int, error) {
	var ids []int
	for i := 0; i < len(pieces); i++ {
		p := pieces[i]
		for j := i + 1; ; j++ {
			if _, taken := v.ids[p]; !taken || j >= len(pieces) {
				break
			}
			p += pieces[j]
			i = j
		}
		got, err := v.claimPiece(p)
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	return ids, nil
}

func (v *vocab) claimPiece(p string) ([]int, error) {
	if id, ok := v.claim(p); ok {
		return []int{id}, nil
	}
	// Try every cut point that keeps UTF-8 intact, longest left part first.
	for i := len(p) - 1; i > 0; i-- {
		if !utf8.RuneStart(p[i]) {
			continue
		}
		left, right := p[:i], p[i:]
		if _, taken := v.ids[left]; taken || len(left) < 2 || len(right) < 2 {
			continue
		}
		// Claim left, then right (which may split again).
		lid, _ := v.claim(left)
		rest, err := v.claimPiece(right)
		if err != nil {
			// undo left to keep the vocabulary consistent
			v.tokens, v.types = v.tokens[:lid], v.types[:lid]
			delete(v.ids, left)
			continue
		}
		return append([]int{lid}, rest...), nil
	}
	return nil, fmt.Errorf("script piece %q repeats text already used and cannot be split into unused pieces; rephrase it", p)
}

// text returns the concatenated text of ids.
func (v *vocab) text(ids []int) string {
	var sb strings.Builder
	for _, id := range ids {
		sb.WriteString(v.tokens[id])
	}
	return sb.String()
}
