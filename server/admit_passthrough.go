package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/gin-gonic/gin"

	"hearth"
)

// generatingPaths are the passthrough routes that run a model; they share admission
// with /v1/responses, so a client of Ollama's own API neither skips the queue nor
// starves the team.
var generatingPaths = map[string]bool{
	"/api/generate": true, "/api/chat": true, "/api/embed": true, "/api/embeddings": true,
	"/v1/completions": true, "/v1/embeddings": true,
}

// admitPassthrough holds a generating passthrough request until its model has a slot
// (no events to send: the client simply waits), or answers 429 like /v1/responses.
func (s *Server) admitPassthrough(c *gin.Context) {
	if c.Request.Method != http.MethodPost || !(generatingPaths[c.Request.URL.Path] || c.Request.URL.Path == "/api/show") {
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
		// Format is Ollama's `format` ("json" or a JSON schema); ResponseFormat the
		// OpenAI-compatible routes' json_schema, which the runtime turns into one.
		Format         json.RawMessage `json:"format"`
		ResponseFormat struct {
			JSONSchema struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if json.Unmarshal(body, &probe) != nil || probe.Model == "" {
		return // the runtime explains what is wrong with it
	}
	// A request for a model goes to a runtime of the pool that has it (and a
	// passthrough), the least loaded.
	label := s.admission.LeastLoaded(probe.Model, s.passthroughCandidates(probe.Model))
	c.Set(passthroughRuntimeKey, label)
	c.Header(HeaderRuntime, label)
	if !generatingPaths[c.Request.URL.Path] {
		return
	}
	if err := s.checkPassthroughFormat(c.Request.Context(), probe.Format, "format"); err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.checkPassthroughFormat(c.Request.Context(), probe.ResponseFormat.JSONSchema.Schema, "response_format.json_schema.schema"); err != nil {
		s.writeError(c, err)
		return
	}
	m := meta(c)
	m.Model = probe.Model
	t, retry, err := s.admissions.Enter(m, probe.Model, label)
	if retry != "" {
		c.Header("Retry-After", retry)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	defer t.Done()
	err = t.Wait(c.Request.Context())
	s.metrics.QueueWait.WithLabelValues(s.models.Label(probe.Model)).Observe(t.Waited().Seconds())
	if err != nil {
		c.Abort() // the client left while waiting
		return
	}
	c.Next()
}

// checkPassthroughFormat refuses a JSON schema the runtime cannot turn into a grammar,
// as /v1/responses does: a user key must not be able to make a model runner allocate
// until it is killed (a repetition whose minimum exceeds its maximum does that).
func (s *Server) checkPassthroughFormat(ctx context.Context, schema json.RawMessage, param string) error {
	if len(bytes.TrimSpace(schema)) == 0 || bytes.TrimSpace(schema)[0] != '{' {
		return nil // absent, null or "json": nothing to turn into a grammar
	}
	if err := s.engine.CheckFormat(ctx, schema); err != nil {
		return hearth.InvalidRequest(param, hearth.CodeInvalidJSONSchema, fmt.Sprintf("Invalid '%s': %v.", param, err))
	}
	return nil
}
