package engine

import (
	"testing"
	"time"
)

// The prompt cache's life asked for is the model's keep-alive in the runtime.
func TestPromptCacheKeepAlive(t *testing.T) {
	for _, tc := range []struct {
		fields string
		want   time.Duration // 0: not sent
	}{
		{``, 0},
		{`"prompt_cache_retention":"in_memory",`, 0},
		{`"prompt_cache_retention":"24h",`, 24 * time.Hour},
		{`"prompt_cache_options":{"ttl":"45m"},"prompt_cache_retention":"24h",`, 45 * time.Minute},
	} {
		j := newFakeJob(t, &fakeRuntime{show: qwenShow()}, `{"model":"m",`+tc.fields+`"input":"hi"}`)
		got := j.GenerateRequest().KeepAlive
		if tc.want == 0 && got != nil || tc.want != 0 && (got == nil || *got != tc.want) {
			t.Errorf("%s: keep-alive %v, want %v", tc.fields, got, tc.want)
		}
	}
}
