package server

import (
	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/respond"
	"hearth/server/anthropic"
	"hearth/server/chatcompletions"
	"hearth/server/door"
)

// doors are the APIs the server serves over the core besides /v1/responses, each in
// its own package (server/door says what a door is given and what it owns).
func doors() []door.Door {
	return []door.Door{
		chatcompletions.New(),
		anthropic.New(),
	}
}

// serveDoors registers every door's routes on r, behind the server's middleware and
// the request timeout.
func (s *Server) serveDoors(r *gin.RouterGroup) {
	host := door.Host{
		Core: s.core,
		ReadBody: func(c *gin.Context) ([]byte, error) {
			// Sized by Content-Length up to a bound, as /v1/responses reads its own.
			return readBodySized(c.Request.Body, min(c.Request.ContentLength, s.maxBody, bodyPrealloc))
		},
		Prepare: func(c *gin.Context, req *hearth.CreateResponseRequest, ignored []string) error {
			_, _, err := s.decodeRequest(meta(c), nil, func([]byte) (*hearth.CreateResponseRequest, []string, error) {
				return req, nil, nil
			}, ignored)
			return err
		},
		Request: func(c *gin.Context, req *hearth.CreateResponseRequest) *respond.Request { return request(c, req) },
		APIError: func(c *gin.Context, err error) *hearth.Error {
			return apiError(s.log, err, "path", c.Request.URL.Path)
		},
		Heartbeat: s.heartbeat, WriteTimeout: s.writeTimeout,
	}
	timed := r.Group("", middleware{s}.requestTimeout)
	for _, d := range s.doors {
		d.Routes(timed, host)
	}
}

// doorOf is the door that owns path, nil for the server's own paths.
func (s *Server) doorOf(path string) door.Door {
	for _, d := range s.doors {
		if d.Owns(path) {
			return d
		}
	}
	return nil
}
