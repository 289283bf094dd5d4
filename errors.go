package hearth

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Error types. The Open Responses specification lists error categories
// (invalid_request, not_found, too_many_requests, server_error, model_error)
// but its own example, OpenAI's API and every OpenAI client spell the 400
// category "invalid_request_error". hearth therefore sends:
//
//	400 invalid_request_error  the caller can fix the request
//	401 invalid_request_error  code invalid_api_key (OpenAI sends exactly this;
//	                           a wrong key is fixed by the caller too)
//	404 not_found              the spec's category for a missing resource
//	429 too_many_requests      the spec's category; code too_many_requests
//	500 server_error           hearth itself failed
//	500 model_error            the model or runtime failed on a valid request
//
// Clients branch on the HTTP status and on code, not on type, so the choice
// only has to be consistent and documented.
const (
	ErrTypeInvalidRequest  = "invalid_request_error"
	ErrTypeNotFound        = "not_found"
	ErrTypeTooManyRequests = "too_many_requests"
	ErrTypeServer          = "server_error"
	ErrTypeModel           = "model_error"
)

// Error codes hearth sends. The validation codes follow OpenAI's names so that
// clients written against OpenAI read them the same way.
const (
	CodeInvalidJSON              = "invalid_json"
	CodeInvalidType              = "invalid_type"
	CodeInvalidValue             = "invalid_value"
	CodeMissingRequiredParameter = "missing_required_parameter"
	CodeUnknownParameter         = "unknown_parameter"
	CodeEmptyString              = "empty_string"
	CodeEmptyArray               = "empty_array"
	CodeStringAboveMaxLength     = "string_above_max_length"
	CodeArrayAboveMaxLength      = "array_above_max_length"
	CodeObjectAboveMaxProperties = "object_above_max_properties"
	CodeIntegerBelowMinValue     = "integer_below_min_value"
	CodeIntegerAboveMaxValue     = "integer_above_max_value"
	CodeDecimalBelowMinValue     = "decimal_below_min_value"
	CodeDecimalAboveMaxValue     = "decimal_above_max_value"
	CodeDuplicateToolName        = "duplicate_tool_name"
	CodeContextLengthExceeded    = "context_length_exceeded"
	// A schema the runtime cannot turn into a grammar (text.format, a tool's
	// parameters), as OpenAI names a schema it cannot use.
	CodeInvalidJSONSchema         = "invalid_json_schema"
	CodeInvalidFunctionParameters = "invalid_function_parameters"

	CodeInvalidAPIKey            = "invalid_api_key"
	CodeModelNotFound            = "model_not_found"
	CodePreviousResponseNotFound = "previous_response_not_found"
	CodeResponseNotFound         = "response_not_found"
	CodeTooManyRequests          = "too_many_requests"
	CodeServerError              = "server_error"
	CodeModelError               = "model_error"
)

// Error is an API error: the one error type that crosses from hearth's
// packages to HTTP. Status is the HTTP status it maps to; the other fields are
// what the client sees in {"error": {...}}. Empty Param and Code are sent as
// null, as OpenAI does.
type Error struct {
	Status  int
	Type    string
	Code    string
	Message string
	Param   string
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s (%s): %s", e.Type, e.Param, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Type, e.Message)
}

// errorBody is the wire shape shared by HTTP error bodies and the payload of
// the streaming "error" event (ErrorPayload in the schema).
type errorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *Error) body() errorBody {
	return errorBody{Message: e.Message, Type: e.Type, Param: nullable(e.Param), Code: nullable(e.Code)}
}

// MarshalJSON writes the HTTP error body: {"error":{"message","type","param","code"}}.
func (e *Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Error errorBody `json:"error"`
	}{e.body()})
}

// UnmarshalJSON reads an HTTP error body. Status is not on the wire; it is
// restored from Type where the mapping is unambiguous so that a client-side
// round trip yields a usable *Error.
func (e *Error) UnmarshalJSON(data []byte) error {
	var w struct {
		Error *errorBody `json:"error"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if w.Error == nil {
		return fmt.Errorf("hearth: error body has no \"error\" object")
	}
	*e = Error{Type: w.Error.Type, Message: w.Error.Message, Param: deref(w.Error.Param), Code: deref(w.Error.Code)}
	e.Status = statusForType(e.Type, e.Code)
	return nil
}

func statusForType(typ, code string) int {
	switch {
	case code == CodeInvalidAPIKey:
		return http.StatusUnauthorized
	case typ == ErrTypeInvalidRequest:
		return http.StatusBadRequest
	case typ == ErrTypeNotFound:
		return http.StatusNotFound
	case typ == ErrTypeTooManyRequests:
		return http.StatusTooManyRequests
	default:
		return http.StatusInternalServerError
	}
}

// InvalidRequest is a 400: the request cannot be served as sent. param names
// the offending field as a path (input[2].content[0].image_url); code is one
// of the Code constants or empty.
func InvalidRequest(param, code, message string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: ErrTypeInvalidRequest, Code: code, Param: param, Message: message}
}

// InvalidAPIKey is a 401 for a missing or wrong bearer token.
func InvalidAPIKey(message string) *Error {
	return &Error{Status: http.StatusUnauthorized, Type: ErrTypeInvalidRequest, Code: CodeInvalidAPIKey, Message: message}
}

// NotFound is a 404 for a resource that does not exist or that the caller
// may not see; both look the same from outside so that ids do not leak.
func NotFound(param, code, message string) *Error {
	return &Error{Status: http.StatusNotFound, Type: ErrTypeNotFound, Code: code, Param: param, Message: message}
}

// ModelNotFound is the 404 for a model hearth does not know.
func ModelNotFound(model string) *Error {
	return NotFound("model", CodeModelNotFound, fmt.Sprintf("The model '%s' does not exist or is not available.", model))
}

// PreviousResponseNotFound is the 404 for a previous_response_id that is
// missing, expired or owned by someone else.
func PreviousResponseNotFound(id string) *Error {
	return NotFound("previous_response_id", CodePreviousResponseNotFound, fmt.Sprintf("Previous response with id '%s' not found.", id))
}

// ResponseNotFound is the 404 for GET/DELETE/cancel on an unknown response id.
func ResponseNotFound(id string) *Error {
	return NotFound("response_id", CodeResponseNotFound, fmt.Sprintf("Response with id '%s' not found.", id))
}

// TooManyRequests is a 429: hearth's admission queue is full.
func TooManyRequests(message string) *Error {
	return &Error{Status: http.StatusTooManyRequests, Type: ErrTypeTooManyRequests, Code: CodeTooManyRequests, Message: message}
}

// ContextLengthExceeded is the 400 for input that does not fit the model's
// context window with truncation disabled. Codex starts its compaction flow
// on exactly this code.
func ContextLengthExceeded(message string) *Error {
	return InvalidRequest("input", CodeContextLengthExceeded, message)
}

// ServerError is a 500 for a failure inside hearth.
func ServerError(message string) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: ErrTypeServer, Code: CodeServerError, Message: message}
}

// ModelError is a 500 for a failure of the model or runtime on a request
// that was itself valid (the runner crashed, the model produced nothing
// parseable under a hard constraint, ...).
func ModelError(message string) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: ErrTypeModel, Code: CodeModelError, Message: message}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
