package ollama

import (
	"os"
	"regexp"
	"testing"
)

func TestRuntimeVersionMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`github\.com/ollama/ollama v(\S+)`).FindSubmatch(b)
	if m == nil || string(m[1]) != RuntimeVersion {
		t.Fatalf("go.mod requires ollama %q, RuntimeVersion is %q", m, RuntimeVersion)
	}
}

func TestParseURL(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:11434":         "http://127.0.0.1:11434",
		"localhost":               "http://localhost:11434",
		"http://gpu-box:11434/":   "http://gpu-box:11434",
		"https://ollama.internal": "https://ollama.internal:443",
		"http://[::1]:9000":       "http://[::1]:9000",
	} {
		u, err := ParseURL(in)
		if err != nil || u.String() != want {
			t.Errorf("ParseURL(%q) = %v, %v; want %s", in, u, err, want)
		}
	}
	for _, bad := range []string{"", "ftp://x", "http://%zz"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
}

// TestLabelAndPassthrough: a runtime at a URL is labelled by its host and port only (the
// label is shown to clients; the URL may carry credentials), and its passthrough target
// is the whole URL with the runtime's own transport.
func TestLabelAndPassthrough(t *testing.T) {
	rt, err := Connect("http://user:secret@gpu.lan:11434")
	if err != nil {
		t.Fatal(err)
	}
	if got := rt.Label(); got != "gpu.lan:11434" {
		t.Errorf("Label() = %q, want gpu.lan:11434", got)
	}
	target, transport := rt.PassthroughTarget()
	if target.String() != "http://user:secret@gpu.lan:11434" || transport != rt.Transport() {
		t.Errorf("PassthroughTarget() = %v, %v", target, transport)
	}
	if (&Runtime{Embedded: true}).Label() != "embedded" {
		t.Error("the embedded runtime is not labelled embedded")
	}
}
