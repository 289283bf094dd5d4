package engine

import (
	"slices"
	"testing"
)

// TestNearestNames: the names a model_not_found suggests are the nearest by edit
// distance (a swap of adjacent letters is one edit, a ":latest" tag and case are no
// edit), only those at the nearest distance, and none when every name is far.
func TestNearestNames(t *testing.T) {
	names := []string{"qwen3:8b", "qwen3:4b", "qwen3:0.6b", "llama3.2:latest", "hearth-script-plain:latest", "hearth-script-long:latest", "gemma3:4b"}
	cases := []struct {
		name string
		want []string
	}{
		{"qwen3:8bb", []string{"qwen3:8b"}},
		{"qwen3:2b", []string{"qwen3:4b", "qwen3:8b"}},
		{"Llama3.2", []string{"llama3.2:latest"}},
		{"lamma3.2", []string{"llama3.2:latest"}},
		{"hearth-script-plian", []string{"hearth-script-plain:latest"}},
		{"mistral:7b", nil},
		{"qwen3:8b", []string{"qwen3:4b"}}, // itself is no suggestion
		{"", nil},
	}
	for _, c := range cases {
		if got := NearestNames(c.name, names); !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("NearestNames(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"kitten", "sitting", 3}, {"plian", "plain", 1}, {"qwen3", "qwne3", 1},
	} {
		if got := editDistance(c.a, c.b); got != c.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
