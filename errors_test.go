package hearth_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"testing"

	"hearth"
)

func TestErrorConstructors(t *testing.T) {
	for _, tc := range []struct {
		err                *hearth.Error
		status             int
		typ, code, param   string
		wantMessageSnippet string
	}{
		{hearth.InvalidRequest("tools[0].name", "invalid_value", "bad"), 400, "invalid_request_error", "invalid_value", "tools[0].name", "bad"},
		{hearth.ContextLengthExceeded("too long"), 400, "invalid_request_error", "context_length_exceeded", "input", "too long"},
		{hearth.InvalidAPIKey("Incorrect API key provided."), 401, "invalid_request_error", "invalid_api_key", "", "Incorrect"},
		{hearth.ModelNotFound("llama9"), 404, "not_found", "model_not_found", "model", "'llama9'"},
		{hearth.PreviousResponseNotFound("resp_x"), 404, "not_found", "previous_response_not_found", "previous_response_id", "'resp_x'"},
		{hearth.ResponseNotFound("resp_y"), 404, "not_found", "response_not_found", "response_id", "'resp_y'"},
		{hearth.TooManyRequests("queue full"), 429, "too_many_requests", "too_many_requests", "", "queue full"},
		{hearth.ServerError("oops"), 500, "server_error", "server_error", "", "oops"},
		{hearth.ModelError("runner died"), 500, "model_error", "model_error", "", "runner died"},
	} {
		e := tc.err
		if e.Status != tc.status || e.Type != tc.typ || e.Code != tc.code || e.Param != tc.param {
			t.Errorf("%+v: want status=%d type=%s code=%s param=%s", e, tc.status, tc.typ, tc.code, tc.param)
		}
		if ok, _ := regexp.MatchString(regexp.QuoteMeta(tc.wantMessageSnippet), e.Message); !ok {
			t.Errorf("message %q lacks %q", e.Message, tc.wantMessageSnippet)
		}
		// The HTTP body round-trips, status included.
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back hearth.Error
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(&back, e) {
			t.Errorf("round trip: got %+v, want %+v", &back, e)
		}
	}
}

func TestErrorJSON(t *testing.T) {
	data, _ := json.Marshal(hearth.InvalidRequest("max_output_tokens", "integer_below_min_value", "too small"))
	if want := `{"error":{"message":"too small","type":"invalid_request_error","param":"max_output_tokens","code":"integer_below_min_value"}}`; string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	data, _ = json.Marshal(&hearth.Error{Status: 500, Type: "server_error", Message: "x"})
	if want := `{"error":{"message":"x","type":"server_error","param":null,"code":null}}`; string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	var e hearth.Error
	if err := json.Unmarshal([]byte(`{"message":"not wrapped"}`), &e); err == nil {
		t.Error("a body without an error object was accepted")
	}
}

func TestErrorIsAnError(t *testing.T) {
	var err error = fmt.Errorf("decoding: %w", hearth.InvalidRequest("input", "invalid_type", "Invalid type for 'input'."))
	var e *hearth.Error
	if !errors.As(err, &e) || e.Param != "input" {
		t.Errorf("errors.As through %%w failed: %v", err)
	}
	if got, want := e.Error(), "invalid_request_error (input): Invalid type for 'input'."; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := hearth.ServerError("x").Error(); got != "server_error: x" {
		t.Errorf("Error() = %q", got)
	}
}

func TestNewID(t *testing.T) {
	a, b := hearth.NewID(hearth.PrefixResponse), hearth.NewID(hearth.PrefixResponse)
	if !regexp.MustCompile(`^resp_[0-9a-f]{32}$`).MatchString(a) || a == b {
		t.Errorf("NewID gave %q and %q", a, b)
	}
}
