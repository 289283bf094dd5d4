package engine

import (
	"strings"
	"testing"
)

// TestSharedPrefixLen: the block comparison finds the first differing byte wherever it
// falls relative to the 64-byte blocks, and the end of the shorter string.
func TestSharedPrefixLen(t *testing.T) {
	base := strings.Repeat("abcdefghij", 30) // 300 bytes
	for _, n := range []int{0, 1, 63, 64, 65, 127, 128, 129, 200, 299} {
		b := []byte(base)
		b[n] = 'X'
		if got := SharedPrefixLen(base, string(b)); got != n {
			t.Errorf("differing at %d: got %d", n, got)
		}
		if got := SharedPrefixLen(base, base[:n]); got != n {
			t.Errorf("prefix of %d: got %d", n, got)
		}
		if got := SharedPrefixLen(base[:n], base); got != n {
			t.Errorf("prefix of %d, swapped: got %d", n, got)
		}
	}
	if got := SharedPrefixLen(base, base); got != len(base) {
		t.Errorf("equal: got %d", got)
	}
}
