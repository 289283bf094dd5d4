package vectorstores

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"hearth/engine"
	"hearth/internal/textchunk"
)

// tokenizerFunc is an engine.Tokenizer of a function, counting its calls.
type tokenizerFunc struct {
	calls int
	fn    func(texts []string) ([]int, error)
}

func (f *tokenizerFunc) CountTokens(_ context.Context, _ string, texts []string) ([]int, error) {
	f.calls++
	return f.fn(texts)
}

// TestIngestCounter: a file's chunks are counted by the runtime's tokenizer; one that
// cannot tokenize for the model leaves the whole file to the estimate (asked once,
// then no more), and the log says so; another error is the file's.
func TestIngestCounter(t *testing.T) {
	var logged strings.Builder
	in := &ingester{log: slog.New(slog.NewTextHandler(&logged, nil))}
	j := ingestJob{storeID: "vs_1", fileID: "file-1", model: "m"}

	in.tokens = &tokenizerFunc{fn: func(texts []string) ([]int, error) { return []int{7, 7}, nil }}
	if n, err := in.counter(context.Background(), j)([]string{"a", "b"}); err != nil || !slices.Equal(n, []int{7, 7}) {
		t.Errorf("counted %v %v", n, err)
	}

	none := &tokenizerFunc{fn: func([]string) ([]int, error) { return nil, engine.ErrNoTokenizer }}
	in.tokens = none
	count := in.counter(context.Background(), j)
	for range 2 {
		n, err := count([]string{"one, two", "three"})
		want, _ := textchunk.Estimate([]string{"one, two", "three"})
		if err != nil || !slices.Equal(n, want) {
			t.Errorf("estimated %v %v, want %v", n, err, want)
		}
	}
	if none.calls != 1 || !strings.Contains(logged.String(), "chunk sizes estimated") {
		t.Errorf("tokenizer asked %d times; log %q", none.calls, logged.String())
	}

	boom := errors.New("boom")
	in.tokens = &tokenizerFunc{fn: func([]string) ([]int, error) { return nil, boom }}
	in.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := in.counter(context.Background(), j)([]string{"a"}); !errors.Is(err, boom) {
		t.Errorf("err %v", err)
	}
}
