// Package door is what the server gives a front door: an API other than
// /v1/responses (Chat Completions, Anthropic Messages) served over the same core.
//
// A door decodes its API's request into a hearth request, runs it through the core
// (respond.Service.Create) with a sink that encodes the core's events as its API's
// stream, and writes errors in its API's shape. Everything else is the server's, the
// same for every door: authentication and roles, the origin and host boundary, the
// body's bound, the request's record (log line, metrics, console) and its timeout,
// and the checks a request passes before it runs (limits, hosted-tool access).
// So a request on any API is the same engine run with the same enforcement, budgets,
// usage, keys and queueing; only decoding, encoding and error mapping differ.
package door

import (
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/respond"
)

// Host is what the server lends a door's handlers.
type Host struct {
	// Core makes the responses.
	Core *respond.Service
	// ReadBody reads the request's body within the server's bound (a body past it is
	// a 413 error).
	ReadBody func(c *gin.Context) ([]byte, error)
	// Prepare checks a decoded request the way /v1/responses checks its own: input
	// present, hosted tools known, the limits, the caller's access to what it names;
	// and records the model for the request's log line and metrics. ignored names the
	// fields the door did not use: they are logged, and the door may say so to the
	// client.
	Prepare func(c *gin.Context, req *hearth.CreateResponseRequest, ignored []string) error
	// Request is the core's request for c carrying req: who asks (the request's
	// record, its owner, the chain epoch authentication read).
	Request func(c *gin.Context, req *hearth.CreateResponseRequest) *respond.Request
	// APIError is the one mapping of an error to an API error (a status, a type, a
	// code, a message naming the field), logging hearth's own faults; a door writes
	// the result in its API's shape.
	APIError func(c *gin.Context, err error) *hearth.Error
	// Heartbeat is the silence after which a stream sends a keep-alive (clients give
	// up on a silent stream while a model loads), WriteTimeout the bound of one
	// stream write: the server's settings, the same on every door.
	Heartbeat, WriteTimeout time.Duration
}

// A Door is one API over the core.
type Door interface {
	// Routes registers the door's handlers on r, behind the server's
	// authentication and bounds; they use host for everything else.
	Routes(r gin.IRoutes, host Host)
	// Owns reports whether path is the door's, so that an error the server answers
	// before the door's handler runs (a missing key, a body too large, an unknown
	// route under its prefix) is written in the door's shape.
	Owns(path string) bool
	// WriteError answers c with he in the door's shape, at he's status (500 when it
	// has none), and aborts the handler chain.
	WriteError(c *gin.Context, he *hearth.Error)
}
