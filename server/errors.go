package server

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"hearth"
)

// apiError is the one error encoder of every response path (HTTP, SSE, WebSocket): a
// *hearth.Error keeps its status and envelope; anything else is a 500 server_error
// whose details stay in the log (log), never in the answer.
func apiError(log *slog.Logger, err error, attrs ...any) *hearth.Error {
	var he *hearth.Error
	if !errors.As(err, &he) {
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
