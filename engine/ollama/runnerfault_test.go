package ollama

import (
	"errors"
	"net/http"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth/engine"
)

// Ollama's embed handler answers its runner's failures as 400s: they are the
// runtime's (a 5xx to hearth's client), and the request's own faults stay 400s.
func TestRunnerFaultIsNotTheRequests(t *testing.T) {
	for msg, want := range map[string]int{
		`do embedding request: Post "http://127.0.0.1:33059/embedding": EOF`:                                                   http.StatusBadGateway,
		`do embedding request: Post "http://127.0.0.1:33059/embedding": dial tcp 127.0.0.1:33059: connect: connection refused`: http.StatusBadGateway,
		`error reading embed response: read tcp 127.0.0.1:5->127.0.0.1:6: read: connection reset by peer`:                      http.StatusBadGateway,
		`llama runner process has terminated: signal: killed`:                                                                  http.StatusBadGateway,
		`input exceeds maximum context length and cannot be truncated further`:                                                 http.StatusBadRequest,
		`this model does not support embeddings`:                                                                               http.StatusBadRequest,
	} {
		err := statusError(api.StatusError{StatusCode: http.StatusBadRequest, ErrorMessage: msg})
		var se *engine.StatusError
		if !errors.As(err, &se) || se.StatusCode != want {
			t.Errorf("%q: %v, want status %d", msg, err, want)
		}
	}
}
