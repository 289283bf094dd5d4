package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/gin-gonic/gin"
)

// Gin context keys set by the request middleware and the handlers it observes.
const (
	metaKey = "hearth.meta"
)

// reqMeta is what the request log line and metrics need to know of a request, filled in
// by the handlers as they learn it.
type reqMeta struct {
	id    string
	start time.Time
	// key is the caller's key name ("anonymous" without auth); fairness is the identity
	// admission shares slots by (the key, or the client address without auth).
	key, fairness string
	// client is the client's address (clientAddr): the connection's peer, or what a
	// trusted proxy says.
	client string
	// cacheGroup is the caller's cache group (engine.Inputs.CacheGroup): its key's,
	// or the group an admin put the key in; "" without keys.
	cacheGroup string
	model      string
	responseID string
	log        *slog.Logger
}

func meta(c *gin.Context) *reqMeta {
	if m, ok := c.Get(metaKey); ok {
		return m.(*reqMeta)
	}
	return &reqMeta{start: time.Now(), log: slog.Default()}
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
// it once it is answered. It never logs bodies: prompt text is the team's business
// (--log-content opts in, in the response log line).
func (s *Server) observe(c *gin.Context) {
	m := &reqMeta{id: requestID(c), start: time.Now(), key: "anonymous", client: clientAddr(c)}
	m.log = s.log.With("request_id", m.id)
	c.Set(metaKey, m)
	c.Header("x-request-id", m.id)
	c.Next()

	status := c.Writer.Status()
	route := c.FullPath()
	elapsed := time.Since(m.start)
	s.metrics.request(route, c.Request.Method, status, s.models.label(m.model), m.key)
	if route != "" {
		s.metrics.duration.WithLabelValues(route).Observe(elapsed.Seconds())
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
	attrs := []slog.Attr{
		slog.String("method", c.Request.Method), slog.String("path", c.Request.URL.Path),
		slog.Int("status", status), slog.Duration("duration", elapsed), slog.String("key", m.key),
		slog.String("client", m.client),
	}
	if m.model != "" {
		attrs = append(attrs, slog.String("model", logModel(m.model)))
	}
	if m.responseID != "" {
		attrs = append(attrs, slog.String("response_id", m.responseID))
	}
	m.log.LogAttrs(context.Background(), level, "request", attrs...)
}
