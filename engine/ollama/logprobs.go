package ollama

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"

	"hearth"
)

// logprobs converts the runtime's log probabilities of a chunk's tokens; nil when it
// sent none.
func logprobs(lps []api.Logprob) []hearth.LogProb {
	if len(lps) == 0 {
		return nil
	}
	out := make([]hearth.LogProb, len(lps))
	for i, lp := range lps {
		// top_logprobs is an array in the API even where none were asked for.
		out[i] = hearth.LogProb{Token: lp.Token, Logprob: lp.Logprob, Bytes: tokenBytes(lp.Token, lp.Bytes),
			TopLogprobs: make([]hearth.TopLogProb, len(lp.TopLogprobs))}
		for j, t := range lp.TopLogprobs {
			out[i].TopLogprobs[j] = hearth.TopLogProb{Token: t.Token, Logprob: t.Logprob, Bytes: tokenBytes(t.Token, t.Bytes)}
		}
	}
	return out
}

// tokenBytes are a token's bytes as the runtime sent them, else its text's: the API
// requires them, and a token that is part of a UTF-8 sequence has no text of its own.
func tokenBytes(token string, bytes []int) []int {
	if bytes != nil {
		return bytes
	}
	out := make([]int, len(token))
	for i := range len(token) {
		out[i] = int(token[i])
	}
	return out
}

// LogprobsSince is the first Ollama release whose /api/generate returns log
// probabilities (`logprobs`, `top_logprobs`): an older one ignores the fields, and its
// answer would be a response without them.
const LogprobsSince = "0.12.11"

// versioner is the part of Ollama's API client that says the runtime's version;
// *api.Client implements it. A Client without it (a test's fake) is taken to be as
// new as the embedded module.
type versioner interface {
	Version(ctx context.Context) (string, error)
}

// logprobsGate asks the runtime its version once and remembers whether it returns log
// probabilities. A failed question is asked again next time, and until then the
// runtime is not refused.
type logprobsGate struct {
	mu     sync.Mutex
	known  bool
	reason string
}

// check returns why the runtime behind c cannot return log probabilities, "" when it
// can.
func (g *logprobsGate) check(ctx context.Context, c Client) string {
	v, ok := c.(versioner)
	if g == nil || !ok {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.known {
		return g.reason
	}
	version, err := v.Version(ctx)
	if err != nil {
		return ""
	}
	g.known = true
	if VersionBefore(version, LogprobsSince) {
		g.reason = fmt.Sprintf("the runtime is Ollama %s, which returns no log probabilities (they came with Ollama %s)", version, LogprobsSince)
	}
	return g.reason
}

// VersionBefore reports whether release version v ("0.12.3", "v0.17.4-rc1") of Ollama
// is older than min. A version it cannot read (a development build) is not older.
func VersionBefore(v, min string) bool {
	a, okA := releaseNumbers(v)
	b, _ := releaseNumbers(min)
	if !okA || (a[0] == 0 && a[1] == 0 && a[2] == 0) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func releaseNumbers(v string) ([3]int, bool) {
	var n [3]int
	v = strings.TrimPrefix(v, "v")
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return n, false
	}
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil {
			return n, false
		}
		n[i] = x
	}
	return n, true
}
