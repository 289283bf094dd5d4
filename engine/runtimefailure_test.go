package engine

import "testing"

// A runtime's failure reaches the client without the directories of the host's paths
// and without its addresses (URLs, ports); the files' own names stay.
func TestRuntimeFailureHidesHostDirectories(t *testing.T) {
	for in, want := range map[string]string{
		"unable to load model: /home/alice/.ollama/models/blobs/sha256-8bfd2b70":                                                                  "unable to load model: sha256-8bfd2b70",
		"error starting llama-server: llama-server binary not found (checked: /opt/ollama/lib/ollama/llama-server, /usr/lib/ollama/llama-server)": "error starting llama-server: llama-server binary not found (checked: llama-server, llama-server)",
		`Post "http://127.0.0.1:37791/api/generate": read tcp 127.0.0.1:36414->127.0.0.1:37791: read: connection reset by peer`:                   `Post "[address]": read tcp [address]: read: connection reset by peer`,
		`open C:\Users\bob\.ollama\models\blobs\sha256-1: access denied`:                                                                          `open sha256-1: access denied`,
		"model path=/srv/models/x.gguf failed":                                                                                                    "model path=x.gguf failed",
		"llama runner process has terminated: exit status 2":                                                                                      "llama runner process has terminated: exit status 2",
		"relative/dir/file and a/b stay":                                                                                                          "relative/dir/file and a/b stay",
	} {
		if got := RuntimeFailure(in).Message; got != "The runtime failed: "+want {
			t.Errorf("%q:\n got %q\nwant %q", in, got, "The runtime failed: "+want)
		}
	}
}
