package server

import (
	"strconv"

	"github.com/gin-gonic/gin"

	"hearth/internal/tracing"
)

// traceRequests starts a server span for every request (Config.Tracing), the child of
// the client's span when it sent a W3C traceparent header, and named by its route
// once the router knows it ("POST /v1/responses"), as the HTTP semantic conventions
// name server spans. The core's and the engine's spans of the request go under it.
// It is not installed when tracing is off.
func traceRequests(p *tracing.Provider) gin.HandlerFunc {
	return func(c *gin.Context) {
		req := c.Request
		ctx, span := p.StartRequest(req.Context(), req.Header, req.Method)
		c.Request = req.WithContext(ctx)
		c.Next()
		route := c.FullPath()
		if route != "" {
			span.SetName(req.Method + " " + route)
			span.Str("http.route", route)
		}
		status := c.Writer.Status()
		span.Str("http.request.method", req.Method)
		span.Str("url.path", req.URL.Path)
		span.Int("http.response.status_code", status)
		if id := c.Writer.Header().Get("x-request-id"); id != "" {
			span.Str("hearth.request.id", id)
		}
		if m, ok := c.Get(metaKey); ok {
			if meta := m.(*reqMeta); meta.Key != "" {
				span.Str("hearth.key", meta.Key)
			}
		}
		if status >= 500 {
			// A client's error is the client's; a server span fails on hearth's own.
			span.FailWith("HTTP " + strconv.Itoa(status))
		}
		span.End()
	}
}
