package ollama

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/ollama/ollama/fs/ggml"
	"github.com/ollama/ollama/types/model"
)

// The model's own chat template. /api/show leaves tokenizer.chat_template out of its
// model_info, so hearth reads the GGUF file's header itself, from the models directory
// the runtime keeps its models in: the model's manifest (manifests/<host>/<namespace>/
// <model>/<tag>) names the model layer, whose blob (blobs/sha256-<hex>) is the GGUF.

// ggufChat is what the GGUF file of a model says about its prompts.
type ggufChat struct {
	// Digest is the sha256 of the model's manifest, as the runtime's /api/tags gives it.
	Digest string
	// Template is tokenizer.chat_template, "" when the file has none.
	Template string
	// BOS and EOS are the texts of the tokenizer's bos and eos tokens, "" when the file
	// does not name them.
	BOS, EOS string
}

const modelLayerMediaType = "application/vnd.ollama.image.model"

var blobDigest = regexp.MustCompile(`^sha256[:-][0-9a-f]{64}$`)

// ggufChats caches the GGUF reading by manifest digest: decoding a header reads the
// whole vocabulary, and a model's file does not change under one digest.
var ggufChats sync.Map // string -> *ggufChat

// readGGUFChat reads the chat template and BOS/EOS texts of the model called name from
// modelsDir. A model the directory lacks is os.ErrNotExist (wrapped).
func readGGUFChat(modelsDir, name string) (*ggufChat, error) {
	n := model.ParseName(name)
	if !n.IsValid() || modelsDir == "" {
		return nil, fmt.Errorf("engine: model %q in %q: %w", name, modelsDir, os.ErrNotExist)
	}
	raw, err := os.ReadFile(filepath.Join(modelsDir, "manifests", n.Filepath()))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	digest := hex.EncodeToString(sum[:])
	if c, ok := ggufChats.Load(digest); ok {
		return c.(*ggufChat), nil
	}
	var m struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("engine: the manifest of %s: %w", name, err)
	}
	blob := ""
	for _, l := range m.Layers {
		if l.MediaType == modelLayerMediaType {
			blob = l.Digest
			break
		}
	}
	if !blobDigest.MatchString(blob) {
		return nil, fmt.Errorf("engine: the manifest of %s names no model file", name)
	}
	f, err := os.Open(filepath.Join(modelsDir, "blobs", strings.Replace(blob, ":", "-", 1)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// -1: every array whole; the vocabulary is needed for the BOS and EOS texts.
	g, err := ggml.Decode(f, -1)
	if err != nil {
		return nil, fmt.Errorf("engine: read the GGUF header of %s: %w", name, err)
	}
	kv := g.KV()
	c := &ggufChat{Digest: digest, Template: kv.ChatTemplate()}
	tokens := kv.Strings("tokenizer.ggml.tokens")
	token := func(key string) string {
		v, ok := kv[key]
		if !ok {
			return ""
		}
		var id int
		switch x := v.(type) {
		case uint32:
			id = int(x)
		case int32:
			id = int(x)
		case uint64:
			id = int(x)
		default:
			return ""
		}
		if id < 0 || id >= len(tokens) {
			return ""
		}
		return tokens[id]
	}
	c.BOS, c.EOS = token("tokenizer.ggml.bos_token_id"), token("tokenizer.ggml.eos_token_id")
	actual, _ := ggufChats.LoadOrStore(digest, c)
	return actual.(*ggufChat), nil
}
