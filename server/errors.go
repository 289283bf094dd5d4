package server

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/respond"
	"hearth/storage"
)

// CodeStorageFull is the error code of a request that needed to store something while
// the database's disk was full: a 507, type server_error.
const CodeStorageFull = respond.CodeStorageFull

// CodeStorageUnavailable is the error code of a request that needed the database while
// it could not be reached: a 503, type server_error, with Retry-After.
const CodeStorageUnavailable = respond.CodeStorageUnavailable

// storageRetryAfter is the Retry-After of a storage_unavailable error, in seconds: about
// the time a database takes to restart. hearth reconnects at the first request after it
// is back.
const storageRetryAfter = "5"

// apiError is the one error encoder of every response path (respond.APIError).
func apiError(log *slog.Logger, err error, attrs ...any) *hearth.Error {
	return respond.APIError(log, err, attrs...)
}

// writeError answers an HTTP request with err, encoded by apiError.
func (s *Server) writeError(c *gin.Context, err error) {
	he := apiError(s.log, err, "path", c.Request.URL.Path)
	if retry := errorRetryAfter(he); retry != "" {
		c.Header("Retry-After", retry)
	}
	if d := s.doorOf(c.Request.URL.Path); d != nil {
		d.WriteError(c, he)
		return
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
