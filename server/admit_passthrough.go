package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"
)

// generatingPaths are the passthrough routes that run a model; they share admission
// with /v1/responses, so a client of Ollama's own API neither skips the queue nor
// starves the team.
var generatingPaths = map[string]bool{
	"/api/generate": true, "/api/chat": true, "/api/embed": true, "/api/embeddings": true,
	"/v1/chat/completions": true, "/v1/completions": true, "/v1/embeddings": true,
}

// admitPassthrough holds a generating passthrough request until its model has a slot
// (no events to send: the client simply waits), or answers 429 like /v1/responses.
func (s *Server) admitPassthrough(c *gin.Context) {
	if c.Request.Method != http.MethodPost || !generatingPaths[c.Request.URL.Path] {
		return
	}
	body, err := readBody(http.MaxBytesReader(c.Writer, c.Request.Body, s.maxBody))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Request.Body = io.NopCloser(bytes.NewReader(body))
	var probe struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &probe) != nil || probe.Model == "" {
		return // the runtime explains what is wrong with it
	}
	m := meta(c)
	m.model = probe.Model
	t, err := s.enter(c, m, probe.Model)
	if err != nil {
		s.writeError(c, err)
		return
	}
	defer t.Done()
	err = t.Wait(c.Request.Context())
	s.metrics.queueWait.WithLabelValues(s.models.label(probe.Model)).Observe(t.Waited().Seconds())
	if err != nil {
		c.Abort() // the client left while waiting
		return
	}
	c.Next()
}
