package server

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"hearth"
)

// writeError is the one place errors become HTTP responses: a *hearth.Error keeps its
// status and envelope; anything else is a 500 whose details stay in the log.
func (s *Server) writeError(c *gin.Context, err error) {
	var he *hearth.Error
	if !errors.As(err, &he) {
		s.log.Error("request failed", "path", c.Request.URL.Path, "error", err)
		he = hearth.ServerError("The server had an error while processing your request.")
	}
	status := he.Status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	c.AbortWithStatusJSON(status, he)
}
