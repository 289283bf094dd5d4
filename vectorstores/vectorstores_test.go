package vectorstores

import (
	"errors"
	"strings"
	"testing"

	"hearth"
)

// TestOnlyEmbeddingModel: a store created without a model gets the one embedding
// model the runtimes serve; none or several is a 400 on the extension field that says
// what to do and names them.
func TestOnlyEmbeddingModel(t *testing.T) {
	if m, err := onlyEmbeddingModel([]string{"nomic-embed-text:latest"}); err != nil || m != "nomic-embed-text:latest" {
		t.Errorf("one: %q %v", m, err)
	}
	for _, c := range []struct {
		found []string
		says  []string
	}{
		{nil, []string{"no embedding model", "ollama pull"}},
		{[]string{"nomic-embed-text:latest", "bge-m3:latest"}, []string{"nomic-embed-text:latest, bge-m3:latest", "--embedding-model"}},
	} {
		_, err := onlyEmbeddingModel(c.found)
		var he *hearth.Error
		if !errors.As(err, &he) || he.Status != 400 || he.Param != "hearth.embedding_model" {
			t.Errorf("%v: %v", c.found, err)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(he.Message, s) {
				t.Errorf("%v: %q does not say %q", c.found, he.Message, s)
			}
		}
	}
}
