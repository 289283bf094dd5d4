package vectorstores

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"hearth"
	"hearth/engine"
)

// The runtime's refusals of a model become a 400 naming the model and saying why; its
// failures stay server errors, worded as a generation's ("The runtime failed: ...").
func TestEmbedError(t *testing.T) {
	const model = "gen:latest"
	for _, tc := range []struct {
		name   string
		err    error
		status int
	}{
		{"refused", &engine.StatusError{StatusCode: http.StatusBadRequest, Message: "this model does not support embeddings"}, http.StatusBadRequest},
		// Ollama 0.30 and later, for a generation model (llama-server's own words).
		{"not implemented", &engine.StatusError{StatusCode: http.StatusNotImplemented, Message: "This server does not support embeddings. Start it with `--embeddings`"}, http.StatusBadRequest},
		{"failed", &engine.StatusError{StatusCode: http.StatusInternalServerError, Message: "llama-server process has terminated"}, http.StatusInternalServerError},
		{"not found", engine.ErrModelNotFound, http.StatusNotFound},
	} {
		got := EmbedError(tc.err, model)
		var he *hearth.Error
		if !errors.As(got, &he) {
			if tc.status != 0 {
				t.Errorf("%s: %v, want a %d", tc.name, got, tc.status)
			}
			continue
		}
		if he.Status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, he.Status, he.Message, tc.status)
		}
		if tc.status == http.StatusInternalServerError && he.Message != "The runtime failed: "+tc.err.(*engine.StatusError).Message {
			t.Errorf("%s: message %q, want the runtime's failure", tc.name, he.Message)
		}
		if tc.status == http.StatusBadRequest && (he.Param != "model" || !strings.Contains(he.Message, model) || !strings.Contains(he.Message, tc.err.Error())) {
			t.Errorf("%s: param %q message %q, want the model and the runtime's reason", tc.name, he.Param, he.Message)
		}
	}
}
