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

// apiError is the one error encoder of every response path (HTTP, SSE, WebSocket): a
// *hearth.Error keeps its status and envelope; a full disk is a 507 storage_full;
// anything else is a 500 server_error whose details stay in the log (log), never in
// the answer.
func apiError(log *slog.Logger, err error, attrs ...any) *hearth.Error {
	var he *hearth.Error
	if !errors.As(err, &he) && errors.Is(err, storage.ErrFull) {
		log.Error("request failed", append(attrs, "error", err)...)
		return &hearth.Error{Status: http.StatusInsufficientStorage, Type: hearth.ErrTypeServer, Code: CodeStorageFull, Message: storageFullMessage}
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
	c.AbortWithStatusJSON(errorStatus(he), he)
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
	return "The response could not be stored."
}
