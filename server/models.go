package server

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// openAIModel is one entry of OpenAI's GET /v1/models list.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) listModels(c *gin.Context) {
	list, err := s.rt.Models(c.Request.Context())
	if err != nil {
		runtimeUnavailable(c, err)
		return
	}
	data := make([]openAIModel, 0, len(list))
	for _, m := range list {
		data = append(data, openAIModel{ID: m.Name, Object: "model", Created: m.ModifiedAt.Unix(), OwnedBy: "library"})
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data})
}

func (s *Server) getModel(c *gin.Context) {
	name := strings.TrimPrefix(c.Param("model"), "/")
	list, err := s.rt.Models(c.Request.Context())
	if err != nil {
		runtimeUnavailable(c, err)
		return
	}
	for _, m := range list {
		if m.Name == name || m.Model == name || strings.TrimSuffix(m.Name, ":latest") == name {
			c.JSON(http.StatusOK, openAIModel{ID: m.Name, Object: "model", Created: m.ModifiedAt.Unix(), OwnedBy: "library"})
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
