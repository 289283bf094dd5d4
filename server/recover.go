package server

import (
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/gin-gonic/gin"
)

// recoverPanics turns a handler's panic into a 500 while nothing has been sent, and
// into a dropped connection once the response has started. gin's own Recovery
// swallows http.ErrAbortHandler (which httputil.ReverseProxy raises when the runtime's
// stream breaks) and then ends the chunked body cleanly, so a client such as Ollama's,
// which stops at the end of the stream without checking why, took a cut stream for a
// whole one. Re-raising ErrAbortHandler makes net/http close the connection without the
// final chunk: the client sees an unexpected EOF.
func (s middleware) recoverPanics(c *gin.Context) {
	defer func() {
		rec := recover()
		if rec == nil {
			return
		}
		if err, ok := rec.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			panic(http.ErrAbortHandler)
		}
		if c.Writer.Written() {
			s.log.Error("handler panicked mid-response", "path", c.Request.URL.Path, "panic", rec, "stack", string(debug.Stack()))
			panic(http.ErrAbortHandler)
		}
		s.writeError(c, fmt.Errorf("panic: %v\n%s", rec, debug.Stack()))
	}()
	c.Next()
}
