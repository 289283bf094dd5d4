package ollama

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"

	"hearth/engine"
)

// The token bound of a model (engine.TokenBound) comes from its vocabulary, which the
// runtime's verbose model info lists (tokenizer.ggml.tokens): the same for the embedded
// runtime and an external one. It is read once per model name and modification time.

type tokenBounds struct {
	mu   sync.Mutex
	kept map[string]*engine.TokenBound
}

// tokenBound is the token bound of the model show describes; nil when the runtime
// does not list its vocabulary or its tokenizer is of a kind whose texts are not what
// its tokens cover (WordPiece and others normalise the text first).
func (s seam) tokenBound(ctx context.Context, name string, show *api.ShowResponse) *engine.TokenBound {
	key := name + "@" + show.ModifiedAt.String()
	s.bounds.mu.Lock()
	b, ok := s.bounds.kept[key]
	s.bounds.mu.Unlock()
	if ok {
		return b
	}
	verbose, err := s.c.Show(ctx, &api.ShowRequest{Model: name, Verbose: true})
	if err != nil {
		return nil
	}
	b = vocabularyBound(verbose.ModelInfo)
	s.bounds.mu.Lock()
	s.bounds.kept[key] = b
	s.bounds.mu.Unlock()
	return b
}

// vocabularyBound is the bound of a model info's vocabulary. A token's string is the
// text it covers in an encoded form (GPT-2's byte-to-unicode mapping for "gpt2"
// vocabularies; "▁" for a space and <0xXX> for a byte in SentencePiece "llama" ones),
// except for added and special tokens, stored as the text itself. Each token is
// counted as both forms, so the bound holds whichever a token is.
func vocabularyBound(info map[string]any) *engine.TokenBound {
	kind, _ := info["tokenizer.ggml.model"].(string)
	var decode func(string) string
	switch kind {
	case "gpt2":
		decode = decodeGPT2
	case "llama":
		decode = decodeSentencePiece
	default:
		return nil
	}
	raw, _ := info["tokenizer.ggml.tokens"].([]any)
	texts := make([]string, 0, 2*len(raw))
	for _, v := range raw {
		t, ok := v.(string)
		if !ok {
			return nil
		}
		texts = append(texts, t, decode(t))
	}
	return engine.NewTokenBound(texts)
}

// gpt2Bytes maps GPT-2's byte-to-unicode characters back to their bytes: printable
// Latin-1 stands for itself, every other byte b for the rune 256+n, n counting those
// bytes in order.
var gpt2Bytes = func() map[rune]byte {
	m := map[rune]byte{}
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			m[rune(b)] = byte(b)
			continue
		}
		m[rune(256+n)] = byte(b)
		n++
	}
	return m
}()

func decodeGPT2(t string) string {
	var sb strings.Builder
	for _, r := range t {
		if b, ok := gpt2Bytes[r]; ok {
			sb.WriteByte(b)
		} else {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func decodeSentencePiece(t string) string {
	if len(t) == 6 && strings.HasPrefix(t, "<0x") && t[5] == '>' {
		if b, err := strconv.ParseUint(t[3:5], 16, 8); err == nil {
			return string([]byte{byte(b)})
		}
	}
	return strings.ReplaceAll(t, "▁", " ")
}
