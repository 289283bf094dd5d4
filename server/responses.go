package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/respond"
)

// Decoding is the first step of the request path (prologue.go): authentication ran
// before (the middleware, the same bearer key for HTTP and the WebSocket upgrade), then
// the request timeout (timed), decoding, validation and limits (decodeRequest). Errors
// have one encoder (apiError).

// responsesAPI serves /v1/responses: creating (JSON, SSE, background, WebSocket),
// compacting, retrieving (with stream replay), cancelling and deleting responses,
// and listing their input items, each over the core (respond.Service).
type responsesAPI struct{ *Server }

// decoder decodes a create-shaped body; it returns the fields it did not use.
type decoder func([]byte) (*hearth.CreateResponseRequest, []string, error)

// readRequest reads a create-shaped body and runs decodeRequest on it. On failure it
// has answered with the error and returns false.
func (s responsesAPI) readRequest(c *gin.Context, decode decoder) (*hearth.CreateResponseRequest, bool) {
	// Sized by Content-Length up to a bound: a client must not make hearth hold
	// memory it has not sent.
	body, err := readBodySized(c.Request.Body, min(c.Request.ContentLength, s.maxBody, bodyPrealloc))
	if err != nil {
		s.writeError(c, err)
		return nil, false
	}
	req, ignored, err := s.decodeRequest(meta(c), body, decode, nil)
	if err != nil {
		s.writeError(c, err)
		return nil, false
	}
	if len(ignored) > 0 {
		// Clients add fields faster than servers learn them; say what was not used
		// rather than failing or pretending.
		c.Header("x-hearth-ignored", strings.Join(boundIgnored(ignored), ", "))
	}
	return req, true
}

// decodeRequest decodes and validates a body, records the model for the request's log
// line and metrics, and applies the limits. ignored are fields the path already
// dropped; the decoder's are added, and all are logged: clients add fields faster
// than servers learn them, so hearth says what it did not use rather than failing or
// pretending.
func (s *Server) decodeRequest(m *reqMeta, body []byte, decode decoder, ignored []string) (*hearth.CreateResponseRequest, []string, error) {
	req, more, err := decode(body)
	if err != nil {
		return nil, nil, err
	}
	if err := hearth.RequireInput(req, more); err != nil {
		return nil, nil, err
	}
	more, err = s.core.HostedIgnored(req, more)
	if err != nil {
		return nil, nil, err
	}
	ignored = append(ignored, more...)
	m.Model = req.Model
	m.Log = m.Log.With("model", logModel(req.Model))
	if err := s.limits.Check(req); err != nil {
		return nil, nil, err
	}
	if err := s.core.CheckAccess(m.Key, req); err != nil {
		return nil, nil, err
	}
	if len(ignored) > 0 {
		m.Log.Warn("ignored request fields", "fields", boundIgnored(ignored))
	}
	return req, ignored, nil
}

// timed bounds a request's context by --request-timeout, the cause telling a timeout
// from a client that left.
func (s *Server) timed(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.limits.RequestTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, s.limits.RequestTimeout, respond.ErrRequestTimeout)
}

// HeaderRuntime names the runtime that served a response (engine/pool's label:
// "embedded" or host:port), so a client or an operator sees where a chain lives.
const HeaderRuntime = "x-hearth-runtime"

// HeaderCompactionFallback is "true" on a /v1/responses/compact answer whose model
// wrote no summary, so that its compaction item carries the conversation's latest
// items instead (engine.FallbackSummary).
const HeaderCompactionFallback = "x-hearth-compaction-fallback"

// IncompleteRequestTimeout is the incomplete reason of a response --request-timeout cut.
const IncompleteRequestTimeout = respond.IncompleteRequestTimeout

// request is the core's request for an HTTP request of c.
func request(c *gin.Context, req *hearth.CreateResponseRequest) *respond.Request {
	return &respond.Request{Body: req, Meta: meta(c), Owner: owner(c), Epoch: epochOf(c)}
}

// createResponse serves POST /v1/responses: decode and validate, then the core
// (respond.Service.Create) runs the prologue (every request problem is still an HTTP
// error then), stores the response as in progress, generates, stores the result, and
// only then sends the terminal event. A JSON reply is the final response; a stream's
// events are framed as SSE; a background response answers at once with the queued
// response.
func (s responsesAPI) createResponse(c *gin.Context) {
	req, ok := s.readRequest(c, hearth.DecodeCreateRequest)
	if !ok {
		return
	}
	var sink respond.Sink
	if req.Stream {
		sse := s.newSSEStream(c)
		defer sse.Close()
		sink = sse
	}
	out, err := s.core.Create(c.Request.Context(), request(c, req), sink)
	if out.Retry != "" {
		c.Header("Retry-After", out.Retry)
	}
	if out.Runtime != "" && !req.Stream {
		// Where it ran: a runtime that refused it moved it. (A stream says so in
		// its headers, when it opens.)
		c.Header(HeaderRuntime, out.Runtime)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	switch final := out.Response; {
	case req.Stream:
	case req.Background:
		c.JSON(http.StatusOK, final)
	case final.Status == hearth.StatusFailed && final.Error != nil:
		s.writeError(c, &hearth.Error{Status: http.StatusInternalServerError, Type: hearth.ErrTypeServer,
			Code: final.Error.Code, Message: final.Error.Message})
	default:
		// The response's own encoding, as c.JSON would write it, without encoding/json's
		// second pass over the bytes to compact and check them; as stored, when it was.
		body := out.JSON
		if body == nil {
			var err error
			if body, err = final.MarshalJSON(); err != nil {
				s.writeError(c, hearth.ServerError("The response could not be encoded: "+err.Error()))
				return
			}
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	}
}

// compactResponse serves POST /v1/responses/compact: decode and validate as a create
// request; the core runs the same prologue and admission, the summarising generation,
// and answers with the compacted window. Nothing is stored: the window belongs to the
// client, which sends it as input from then on.
func (s responsesAPI) compactResponse(c *gin.Context) {
	req, ok := s.readRequest(c, hearth.DecodeCompactRequest)
	if !ok {
		return
	}
	res, err := s.core.Compact(c.Request.Context(), request(c, req))
	if res.Retry != "" {
		c.Header("Retry-After", res.Retry)
	}
	if res.Runtime != "" {
		c.Header(HeaderRuntime, res.Runtime)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	if res.Fallback {
		// The model wrote no summary: the item carries the latest items instead
		// (engine.FallbackSummary), and the client may want to know.
		c.Header(HeaderCompactionFallback, "true")
	}
	c.JSON(http.StatusOK, res.Response)
}

// inputTokens serves POST /v1/responses/input_tokens: the input tokens a create
// request would take, counted over the prompt the engine renders with the model's own
// tokenizer (respond.Service.InputTokens); the same request run reports the same
// usage.input_tokens. Nothing is stored or generated.
func (s responsesAPI) inputTokens(c *gin.Context) {
	req, ok := s.readRequest(c, hearth.DecodeCreateRequest)
	if !ok {
		return
	}
	n, err := s.core.InputTokens(c.Request.Context(), request(c, req))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"object": "response.input_tokens", "input_tokens": n})
}

// readBody reads a request body bounded by http.MaxBytesReader; too large is a 413,
// anything else unreadable a 400.
func readBody(r io.Reader) ([]byte, error) { return readBodySized(r, -1) }

// bodyPrealloc bounds the buffer readBodySized sets aside before the body arrives.
const bodyPrealloc = 1 << 20

// readBodySized is readBody for a body of about size bytes (its Content-Length, -1 if
// unknown; the caller bounds it): read into one buffer of that size, a 185 KB Codex
// body is not copied through a dozen growing ones.
func readBodySized(r io.Reader, size int64) ([]byte, error) {
	var body []byte
	var err error
	if size <= 0 {
		body, err = io.ReadAll(r)
	} else {
		// io.ReadAll's loop over a buffer of the right size (+1: the read that meets
		// EOF needs room).
		body = make([]byte, 0, size+1)
		for {
			if len(body) == cap(body) {
				body = append(body, 0)[:len(body)]
			}
			n, rerr := r.Read(body[len(body):cap(body)])
			body = body[:len(body)+n]
			if rerr != nil {
				if rerr != io.EOF {
					err = rerr
				}
				break
			}
		}
	}
	if err == nil {
		return body, nil
	}
	return nil, bodyError(err)
}

// bodyError words a failure to read a request body as the API error the client gets.
func bodyError(err error) error {
	if errors.Is(err, errBodyTimeout) {
		return &hearth.Error{Status: http.StatusRequestTimeout, Type: hearth.ErrTypeInvalidRequest,
			Code: "request_body_timeout", Message: "The request body did not arrive in time."}
	}
	var full *hearth.Error
	if errors.As(err, &full) {
		return full // the bodies of all requests are over their budget (bodybudget.go)
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return &hearth.Error{Status: http.StatusRequestEntityTooLarge, Type: hearth.ErrTypeInvalidRequest,
			Code: "request_too_large", Message: fmt.Sprintf("The request body exceeds %d bytes.", tooLarge.Limit)}
	}
	return hearth.InvalidRequest("", "invalid_body", "Could not read the request body: "+err.Error())
}
