package anthropic

import (
	"net/http"
	"testing"

	"hearth"
	"hearth/internal/admission"
)

// TestErrorShape: hearth's errors map to Anthropic's types and statuses; of the 429s
// admission makes, only the server's full queue is 529 overloaded_error (the texts come
// from admission itself, so a reworded refusal fails here).
func TestErrorShape(t *testing.T) {
	cases := []struct {
		err    *hearth.Error
		status int
		typ    string
	}{
		{hearth.TooManyRequests((&admission.Rejected{Reason: admission.ReasonQueueFull, Model: "m"}).Error()), statusOverloaded, errOverloaded},
		{hearth.TooManyRequests((&admission.Rejected{Reason: admission.ReasonKeyQueueFull, Model: "m"}).Error()), 429, errRateLimit},
		{hearth.TooManyRequests((&admission.Rejected{Reason: admission.ReasonRateLimited}).Error()), 429, errRateLimit},
		{hearth.InvalidAPIKey("no"), 401, errAuthentication},
		{&hearth.Error{Status: http.StatusForbidden, Message: "admin only"}, 403, errPermission},
		{&hearth.Error{Status: http.StatusNotFound, Message: "no model"}, 404, errNotFound},
		{&hearth.Error{Status: http.StatusRequestEntityTooLarge, Message: "big"}, 413, errTooLarge},
		{&hearth.Error{Message: "fault"}, 500, errAPI},
		{hearth.InvalidRequest("max_tokens", "x", "Field required"), 400, errInvalidRequest},
	}
	for _, tc := range cases {
		if got := statusOf(tc.err); got != tc.status {
			t.Errorf("%q: status %d, want %d", tc.err.Message, got, tc.status)
		}
		if got := errorBody(tc.err); got.Type != "error" || got.Error.Type != tc.typ {
			t.Errorf("%q: %+v, want type %s", tc.err.Message, got, tc.typ)
		}
	}
	// The field leads the message, as Anthropic's do.
	if got := errorBody(hearth.InvalidRequest("max_tokens", "x", "Field required")).Error.Message; got != "max_tokens: Field required" {
		t.Errorf("message %q", got)
	}
}
