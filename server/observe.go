package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"

	"hearth/respond"
)

// Gin context keys set by the request middleware and the handlers it observes.
const (
	metaKey = "hearth.meta"
)

// reqMeta is what the request log line and metrics need to know of a request, filled in
// by the handlers and the core as they learn it. Its Client is clientAddr's: the
// connection's peer, or what a trusted proxy says.
type reqMeta = respond.Meta

func meta(c *gin.Context) *reqMeta {
	if m, ok := c.Get(metaKey); ok {
		return m.(*reqMeta)
	}
	return &reqMeta{Start: time.Now(), Log: slog.Default()}
}

// requestID accepts a client's id when it is short and printable, so a client's own
// tracing ids carry through; otherwise hearth makes one.
func requestID(c *gin.Context) string {
	if id := c.GetHeader("X-Request-Id"); id != "" && len(id) <= 128 {
		ok := true
		for _, r := range id {
			if r <= ' ' || r > '~' {
				ok = false
				break
			}
		}
		if ok {
			return id
		}
	}
	var b [12]byte
	rand.Read(b[:])
	return "req_" + hex.EncodeToString(b[:])
}

// observe gives every request an id (echoed as x-request-id), then logs it and counts
// it once it is answered: one line per request, which also carries its response's
// account (status, tokens, time to first token) when the response ended with the
// request. It never logs bodies: prompt text is the team's business (--log-content opts
// in, in the response's account).
func (s middleware) observe(c *gin.Context) {
	m := &reqMeta{ID: requestID(c), Start: time.Now(), Key: "anonymous", Client: clientAddr(c), Line: &respond.RequestLine{}}
	m.Log = s.log.With("request_id", m.ID)
	c.Set(metaKey, m)
	c.Header("x-request-id", m.ID)
	c.Next()

	status := c.Writer.Status()
	route := c.FullPath()
	elapsed := time.Since(m.Start)
	response := m.Line.Write()
	s.metrics.Request(route, c.Request.Method, status, s.models.Label(m.Model), m.Key)
	if route != "" {
		s.metrics.Duration.WithLabelValues(route).Observe(elapsed.Seconds())
	}
	level := slog.LevelInfo
	switch {
	case route == "/healthz" || route == "/metrics":
		level = slog.LevelDebug
	case status >= 500:
		level = slog.LevelError
	case status >= 400:
		level = slog.LevelWarn
	}
	if !s.log.Enabled(context.Background(), level) {
		return
	}
	// Built from the record, not m.Log: the handlers add the key and model to m.Log
	// for their own lines, and this line names each once.
	attrs := make([]slog.Attr, 0, 10+len(response))
	attrs = append(attrs, slog.String("request_id", m.ID),
		slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path),
		slog.Int("status", status), slog.String("key", m.Key), slog.String("client", m.Client))
	if m.Model != "" {
		attrs = append(attrs, slog.String("model", logModel(m.Model)))
	}
	if m.Resolved != "" && m.Resolved != m.Model {
		attrs = append(attrs, slog.String("resolved_model", logModel(m.Resolved)))
	}
	if m.ResponseID != "" && response == nil {
		attrs = append(attrs, slog.String("response_id", m.ResponseID))
	}
	attrs = append(attrs, response...)
	attrs = append(attrs, slog.Duration("duration", elapsed))
	s.log.LogAttrs(context.Background(), level, "request", attrs...)
}
