// Package anthropic is the Anthropic Messages API (POST /v1/messages and
// /v1/messages/count_tokens) as a front door over hearth's core (server/door): a
// Messages request is decoded into a hearth request, run by the core like any
// /v1/responses request (the same enforcement, budgets, usage, keys, queueing,
// metrics and console), and its response or events are encoded as Messages content
// blocks and Anthropic's stream events. docs/anthropic.md says what maps to what.
package anthropic

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/engine"
	"hearth/respond"
	"hearth/server/door"
)

// Door serves the Messages API.
type Door struct{}

// New is the Messages door.
func New() *Door { return &Door{} }

// The door's paths.
const (
	pathMessages    = "/v1/messages"
	pathCountTokens = "/v1/messages/count_tokens"
)

// Routes registers POST /v1/messages and /v1/messages/count_tokens, and the doubled
// /v1/v1/messages a base URL that ends in /v1 makes (answered with how to fix it).
func (d *Door) Routes(r gin.IRoutes, host door.Host) {
	h := handler{host}
	r.POST(pathMessages, h.messages)
	r.POST(pathCountTokens, h.countTokens)
	r.Any("/v1/v1/messages", h.doubled)
	r.Any("/v1/v1/messages/count_tokens", h.doubled)
}

// Owns claims the Messages paths, and anything under /v1/v1/ (a base URL set with
// /v1, which Anthropic's clients add /v1 to again).
func (d *Door) Owns(path string) bool {
	return path == pathMessages || strings.HasPrefix(path, pathMessages+"/") || strings.HasPrefix(path, "/v1/v1/")
}

// WriteError answers in Anthropic's error shape:
// {"type":"error","error":{"type":...,"message":...}}, with the request's id in
// request-id as Anthropic's API sends it.
func (d *Door) WriteError(c *gin.Context, he *hearth.Error) {
	status := statusOf(he)
	setRequestID(c)
	c.AbortWithStatusJSON(status, errorBody(he))
}

// setRequestID copies the server's request id into Anthropic's request-id header.
func setRequestID(c *gin.Context) {
	if id := c.Writer.Header().Get("x-request-id"); id != "" {
		c.Header("request-id", id)
	}
}

// Anthropic's error types.
const (
	errInvalidRequest = "invalid_request_error"
	errAuthentication = "authentication_error"
	errPermission     = "permission_error"
	errNotFound       = "not_found_error"
	errTooLarge       = "request_too_large"
	errRateLimit      = "rate_limit_error"
	errAPI            = "api_error"
	errOverloaded     = "overloaded_error"
)

// statusOverloaded is Anthropic's status for an overloaded server: a full queue.
const statusOverloaded = 529

// statusOf is the status hearth's error is answered with: hearth's own, except that a
// full queue (not a key's rate limit) is Anthropic's 529 overloaded.
func statusOf(he *hearth.Error) int {
	if he.Status == 0 {
		return http.StatusInternalServerError
	}
	if he.Status == http.StatusTooManyRequests && queueFull(he) {
		return statusOverloaded
	}
	return he.Status
}

// queueFull tells a full queue from a key's rate limit or queue share among 429s: only
// the server-wide one is the server being overloaded.
func queueFull(he *hearth.Error) bool {
	return strings.HasPrefix(he.Message, "The server is busy")
}

// errorType is Anthropic's error type for a status.
func errorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return errAuthentication
	case status == http.StatusForbidden:
		return errPermission
	case status == http.StatusNotFound:
		return errNotFound
	case status == http.StatusRequestEntityTooLarge:
		return errTooLarge
	case status == http.StatusTooManyRequests:
		return errRateLimit
	case status == statusOverloaded || status == http.StatusServiceUnavailable:
		return errOverloaded
	case status >= 500:
		return errAPI
	}
	return errInvalidRequest
}

// errorObject is the error member of Anthropic's error body and error event.
type errorObject struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type errorEnvelope struct {
	Type  string      `json:"type"`
	Error errorObject `json:"error"`
}

func errorBody(he *hearth.Error) errorEnvelope {
	msg := he.Message
	if he.Param != "" && !strings.Contains(msg, he.Param) {
		// Anthropic's messages name the field first ("max_tokens: Field required").
		msg = he.Param + ": " + msg
	}
	return errorEnvelope{Type: "error", Error: errorObject{Type: errorType(statusOf(he)), Message: msg}}
}

type handler struct{ host door.Host }

// fail answers c with err in Anthropic's shape.
func (h handler) fail(c *gin.Context, err error) {
	he := h.host.APIError(c, err)
	(&Door{}).WriteError(c, he)
}

// doubled answers a request to /v1/v1/...: a client whose base URL ends in /v1 adds
// /v1/messages to it.
func (h handler) doubled(c *gin.Context) {
	h.fail(c, &hearth.Error{Status: http.StatusNotFound, Type: hearth.ErrTypeInvalidRequest, Code: "not_found",
		Message: "Not found: " + c.Request.URL.Path + ". The base URL ends in /v1, and Anthropic's clients add /v1/messages to it: " +
			"set the base URL without the /v1 (e.g. ANTHROPIC_BASE_URL=http://host:port)."})
}

// read reads and decodes a Messages body into a prepared hearth request; on failure
// it has answered.
func (h handler) read(c *gin.Context, count bool) (*hearth.CreateResponseRequest, *decoded, bool) {
	body, err := h.host.ReadBody(c)
	if err != nil {
		h.fail(c, err)
		return nil, nil, false
	}
	searchable := slices.ContainsFunc(h.host.Core.HostedKinds(), func(k engine.HostedKind) bool { return k.ToolType() == "tool_search" })
	d, err := decodeMessages(body, count, searchable)
	if err != nil {
		h.fail(c, err)
		return nil, nil, false
	}
	if err := h.host.Prepare(c, d.req, d.ignored); err != nil {
		h.fail(c, err)
		return nil, nil, false
	}
	if len(d.ignored) > 0 {
		c.Header("x-hearth-ignored", strings.Join(d.ignored, ", "))
	}
	return d.req, d, true
}

// messages serves POST /v1/messages.
func (h handler) messages(c *gin.Context) {
	setRequestID(c)
	req, d, ok := h.read(c, false)
	if !ok {
		return
	}
	var sink respond.Sink
	var stream *streamSink
	if req.Stream {
		stream = newStreamSink(c, req.Model, d, h.host)
		defer stream.Close()
		sink = stream
	}
	out, err := h.host.Core.Create(c.Request.Context(), h.host.Request(c, req), sink)
	if out.Retry != "" {
		c.Header("Retry-After", out.Retry)
	}
	if err != nil {
		if stream != nil && stream.Started() {
			stream.fail(h.host.APIError(c, err))
			return
		}
		h.fail(c, err)
		return
	}
	if stream != nil {
		return
	}
	final := out.Response
	if final.Status == hearth.StatusFailed && final.Error != nil {
		h.fail(c, &hearth.Error{Status: http.StatusInternalServerError, Type: hearth.ErrTypeServer,
			Code: final.Error.Code, Message: final.Error.Message})
		return
	}
	c.JSON(http.StatusOK, encodeMessage(final, req.Model, d))
}

// countTokens serves POST /v1/messages/count_tokens: the tokens the prompt of the
// same request would take, counted by the model's own tokenizer over the prompt the
// engine renders (respond.Service.InputTokens).
func (h handler) countTokens(c *gin.Context) {
	setRequestID(c)
	req, _, ok := h.read(c, true)
	if !ok {
		return
	}
	n, err := h.host.Core.InputTokens(c.Request.Context(), h.host.Request(c, req))
	if err != nil {
		h.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"input_tokens": n})
}
