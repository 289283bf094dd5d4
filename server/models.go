package server

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"hearth/engine"
)

// openAIModel is one entry of OpenAI's GET /v1/models list.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Runtimes are where the model lives when several runtimes serve as one.
	Runtimes []string `json:"runtimes,omitempty"`
}

// modelEntry is the list entry of m; its runtimes only behind a pool of several.
func (s *Server) modelEntry(m engine.ListedModel) openAIModel {
	e := openAIModel{ID: m.Name, Object: "model", Created: m.ModifiedAt.Unix(), OwnedBy: "library"}
	if len(s.pool.Labels()) > 1 {
		e.Runtimes = m.Runtimes
	}
	return e
}

func (s *Server) listModels(c *gin.Context) {
	list, err := s.pool.Models(c.Request.Context())
	if err != nil {
		runtimeUnavailable(c, err)
		return
	}
	data := make([]openAIModel, 0, len(list))
	for _, m := range list {
		data = append(data, s.modelEntry(m))
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}

func (s *Server) getModel(c *gin.Context) {
	name := strings.TrimPrefix(c.Param("model"), "/")
	list, err := s.pool.Models(c.Request.Context())
	if err != nil {
		runtimeUnavailable(c, err)
		return
	}
	for _, m := range list {
		if m.Name == name || m.Model == name || strings.TrimSuffix(m.Name, ":latest") == name {
			c.JSON(http.StatusOK, s.modelEntry(m))
			return
		}
	}
	c.JSON(http.StatusNotFound, gin.H{"error": gin.H{
		"message": "model '" + name + "' not found", "type": "invalid_request_error", "param": "model", "code": "model_not_found",
	}})
}

func runtimeUnavailable(c *gin.Context, err error) {
	c.JSON(http.StatusBadGateway, gin.H{"error": gin.H{
		"message": "runtime unavailable: " + err.Error(), "type": "server_error", "param": nil, "code": "runtime_unavailable",
	}})
}
