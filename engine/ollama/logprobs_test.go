package ollama

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth/engine"
)

func TestVersionBefore(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"0.12.10", true}, {"0.9.6", true}, {"v0.12.3-rc1", true},
		{"0.12.11", false}, {"0.17.4", false}, {"1.0.0", false},
		{"0.0.0", false}, {"dev", false}, {"", false},
	} {
		if got := VersionBefore(tc.v, LogprobsSince); got != tc.want {
			t.Errorf("VersionBefore(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// versionClient is a Client that says its version; a failure is asked again.
type versionClient struct {
	Client
	version string
	fail    bool
	asked   int
}

func (c *versionClient) Version(context.Context) (string, error) {
	c.asked++
	if c.fail {
		return "", errors.New("unreachable")
	}
	return c.version, nil
}

func TestLogprobsGate(t *testing.T) {
	old := &versionClient{version: "0.12.3"}
	g := &logprobsGate{}
	for range 2 {
		if r := g.check(context.Background(), old); !strings.Contains(r, "0.12.3") || !strings.Contains(r, LogprobsSince) {
			t.Errorf("old runtime: %q", r)
		}
	}
	if old.asked != 1 {
		t.Errorf("asked the version %d times, want once", old.asked)
	}
	down := &versionClient{version: "0.12.3", fail: true}
	g = &logprobsGate{}
	if r := g.check(context.Background(), down); r != "" {
		t.Errorf("unknown version refused: %q", r)
	}
	down.fail = false
	if r := g.check(context.Background(), down); r == "" || down.asked != 2 {
		t.Errorf("after a failure: %q, asked %d", r, down.asked)
	}
	if r := (&logprobsGate{}).check(context.Background(), &versionClient{version: RuntimeVersion}); r != "" {
		t.Errorf("the embedded version refused: %q", r)
	}
}

// The request asks Ollama for them, and the chunks carry them with their bytes and an
// alternatives array even where none were asked.
func TestLogprobsConversion(t *testing.T) {
	got := logprobs([]api.Logprob{{TokenLogprob: api.TokenLogprob{Token: "hi", Logprob: -0.5}}})
	if len(got) != 1 || got[0].Token != "hi" || got[0].Logprob != -0.5 || len(got[0].Bytes) != 2 || got[0].TopLogprobs == nil {
		t.Errorf("converted %+v", got)
	}
	if logprobs(nil) != nil {
		t.Error("no logprobs became some")
	}
	if g := APIRequest(&engine.GenerateRequest{Logprobs: true, TopLogprobs: 3}); !g.Logprobs || g.TopLogprobs != 3 {
		t.Errorf("request logprobs=%v top=%d", g.Logprobs, g.TopLogprobs)
	}
	if g := APIRequest(&engine.GenerateRequest{TopLogprobs: 3}); g.Logprobs || g.TopLogprobs != 0 {
		t.Errorf("unasked request logprobs=%v top=%d", g.Logprobs, g.TopLogprobs)
	}
}
