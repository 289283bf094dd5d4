// Package server is hearth's HTTP face: Gin routes for the Open Responses API, the
// OpenAI-style model list, health, and a passthrough of Ollama's own API to the runtime.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/gin-gonic/gin"

	"hearth/engine/ollama"
)

// Pinger is anything whose health /healthz reports, such as the database.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Config wires a Server to its parts.
type Config struct {
	Runtime *ollama.Runtime
	// Database is checked by /healthz; nil means none is configured.
	Database Pinger
	Logger   *slog.Logger
}

// Server routes HTTP requests to hearth's parts.
type Server struct {
	rt     *ollama.Runtime
	db     Pinger
	log    *slog.Logger
	router *gin.Engine
	proxy  *httputil.ReverseProxy
}

func init() { gin.SetMode(gin.ReleaseMode) }

// New builds a Server and its routes.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Server{rt: cfg.Runtime, db: cfg.Database, log: log}
	s.proxy = newRuntimeProxy(cfg.Runtime, log)

	r := gin.New()
	r.Use(gin.Recovery())
	r.HandleMethodNotAllowed = true
	r.GET("/healthz", s.health)
	r.GET("/v1/models", s.listModels)
	r.GET("/v1/models/*model", s.getModel)
	// Ollama's own API, and its OpenAI-compatible endpoints hearth does not serve
	// itself, pass through so ollama clients (`OLLAMA_HOST=<hearth> ollama list`) work.
	r.Any("/api/*path", s.passthrough)
	for _, p := range []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings"} {
		r.POST(p, s.passthrough)
	}
	r.NoRoute(func(c *gin.Context) {
		c.JSON(http.StatusNotFound, gin.H{"error": gin.H{
			"message": "no route for " + c.Request.Method + " " + c.Request.URL.Path,
			"type":    "invalid_request_error", "param": nil, "code": "not_found",
		}})
	})
	s.router = r
	return s
}

// ServeHTTP makes Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// health reports readiness of hearth, the runtime and the database; 503 when any part
// is not ready, so a load balancer or a supervisor can act on the status alone.
func (s *Server) health(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	status := http.StatusOK
	check := func(p func(context.Context) error) gin.H {
		if err := p(ctx); err != nil {
			status = http.StatusServiceUnavailable
			return gin.H{"ok": false, "error": err.Error()}
		}
		return gin.H{"ok": true}
	}
	rt := check(s.rt.Ready)
	rt["url"] = s.rt.URL.String()
	rt["embedded"] = s.rt.Embedded
	body := gin.H{"runtime": rt}
	if s.db != nil {
		body["database"] = check(s.db.Ping)
	}
	body["status"] = "ok"
	if status != http.StatusOK {
		body["status"] = "unavailable"
	}
	c.JSON(status, body)
}
