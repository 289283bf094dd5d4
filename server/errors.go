package server

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/storage"
)

// CodeStorageFull is the error code of a request that needed to store something while
// the database's disk was full: a 507, type server_error.
const CodeStorageFull = "storage_full"

// storageFullMessage says what a client can do about a full disk: nothing but wait.
const storageFullMessage = "hearth's storage is full: the database's disk has no space left, so nothing new can be stored. " +
	"What was stored is intact and can be read; retry once the operator has freed space."

// CodeStorageUnavailable is the error code of a request that needed the database while
// it could not be reached (down, restarting, refusing connections): a 503, type
// server_error, with Retry-After.
const CodeStorageUnavailable = "storage_unavailable"

// storageUnavailableMessage says what a client can do while the database is away.
const storageUnavailableMessage = "hearth's database cannot be reached right now (it may be restarting), so nothing could be read or stored. " +
	"Nothing of this request was stored; retry in a few seconds."

// storageRetryAfter is the Retry-After of a storage_unavailable error, in seconds: about
// the time a database takes to restart. hearth reconnects at the first request after it
// is back.
const storageRetryAfter = "5"

// apiError is the one error encoder of every response path (HTTP, SSE, WebSocket): a
// *hearth.Error keeps its status and envelope; a full disk is a 507 storage_full; a
// database that cannot be reached is a 503 storage_unavailable; anything else is a 500
// server_error whose details stay in the log (log), never in the answer.
func apiError(log *slog.Logger, err error, attrs ...any) *hearth.Error {
	var he *hearth.Error
	if !errors.As(err, &he) && errors.Is(err, storage.ErrFull) {
		log.Error("request failed", append(attrs, "error", err)...)
		return &hearth.Error{Status: http.StatusInsufficientStorage, Type: hearth.ErrTypeServer, Code: CodeStorageFull, Message: storageFullMessage}
	}
	if he == nil && errors.Is(err, storage.ErrUnavailable) {
		log.Error("request failed", append(attrs, "error", err)...)
		return &hearth.Error{Status: http.StatusServiceUnavailable, Type: hearth.ErrTypeServer, Code: CodeStorageUnavailable, Message: storageUnavailableMessage}
	}
	if he == nil {
		log.Error("request failed", append(attrs, "error", err)...)
		he = hearth.ServerError("The server had an error while processing your request.")
	}
	return he
}

// writeError answers an HTTP request with err, encoded by apiError.
func (s *Server) writeError(c *gin.Context, err error) {
	he := apiError(s.log, err, "path", c.Request.URL.Path)
	if retry := errorRetryAfter(he); retry != "" {
		c.Header("Retry-After", retry)
	}
	c.AbortWithStatusJSON(errorStatus(he), he)
}

// errorRetryAfter is the Retry-After an API error carries by its kind ("" for none):
// a database that cannot be reached is worth retrying soon.
func errorRetryAfter(he *hearth.Error) string {
	if he.Code == CodeStorageUnavailable {
		return storageRetryAfter
	}
	return ""
}

// errorStatus is the HTTP status of an API error; one without is a server error.
func errorStatus(he *hearth.Error) int {
	if he.Status == 0 {
		return http.StatusInternalServerError
	}
	return he.Status
}

// notStoredMessage is what a client is told of a response that ran but could not be
// stored (err: why), in its error event and its failed state.
func notStoredMessage(err error) string {
	if errors.Is(err, storage.ErrFull) {
		return "The response could not be stored: " + storageFullMessage
	}
	if errors.Is(err, storage.ErrUnavailable) {
		return "The response could not be stored: hearth's database cannot be reached right now (it may be restarting). Retry in a few seconds."
	}
	return "The response could not be stored."
}

// storeState names the database's state for /healthz from its health check's error,
// so that a load balancer or an operator need not parse the message: "ok",
// "unavailable" (cannot be reached; retry), "full" (no space for writes; reads work),
// "corrupt" (restore a backup), or "error" (anything else).
func storeState(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, storage.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, storage.ErrFull):
		return "full"
	case errors.Is(err, storage.ErrCorrupt):
		return "corrupt"
	}
	return "error"
}
