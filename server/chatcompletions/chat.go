// Package chatcompletions is OpenAI's Chat Completions API (POST
// /v1/chat/completions) as a front door over hearth's core: a chat request is
// decoded into the hearth request it asks for (messages as input items, tools,
// tool_choice, response_format as text.format, max_tokens as max_output_tokens...),
// run by the core like any /v1/responses request (the same enforcement, budgets,
// usage, keys, queueing, metrics and console), and the response encoded as a
// chat.completion, or its events as chat.completion.chunk frames.
package chatcompletions

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/respond"
	"hearth/server/door"
)

// Path is the door's route.
const Path = "/v1/chat/completions"

// HeaderIgnored lists the request fields that were not used, as on /v1/responses.
const HeaderIgnored = "x-hearth-ignored"

// HeaderResponseID is the id of the hearth response a completion was made as: with
// store true, GET /v1/responses/{id} reads it back.
const HeaderResponseID = "x-hearth-response-id"

// Door serves Chat Completions.
type Door struct{}

// New is the Chat Completions door.
func New() door.Door { return Door{} }

// Routes registers POST /v1/chat/completions.
func (Door) Routes(r gin.IRoutes, host door.Host) {
	r.POST(Path, handler{host}.create)
}

// Owns reports the door's paths: the route and anything under /v1/chat/.
func (Door) Owns(path string) bool {
	return path == Path || strings.HasPrefix(path, "/v1/chat/")
}

// WriteError answers with OpenAI's error body.
func (Door) WriteError(c *gin.Context, he *hearth.Error) {
	e := openAIError(he)
	c.AbortWithStatusJSON(e.Status, e)
}

type handler struct{ host door.Host }

// fail answers err in OpenAI's shape, its field named as the client wrote it.
func (h handler) fail(c *gin.Context, err error, paths []string) {
	Door{}.WriteError(c, inChatTerms(h.host.APIError(c, err), paths))
}

// create serves POST /v1/chat/completions.
func (h handler) create(c *gin.Context) {
	body, err := h.host.ReadBody(c)
	if err != nil {
		h.fail(c, err, nil)
		return
	}
	cr, err := decodeChat(body)
	if err != nil {
		h.fail(c, err, nil)
		return
	}
	req := cr.req
	if err := h.host.Prepare(c, req, cr.ignored); err != nil {
		h.fail(c, err, cr.paths)
		return
	}
	if len(cr.ignored) > 0 {
		c.Header(HeaderIgnored, strings.Join(cr.ignored, ", "))
	}
	var sink respond.Sink
	var stream *chunkStream
	if req.Stream {
		stream = newChunkStream(c, h.host, cr)
		defer stream.Close()
		sink = stream
	}
	out, err := h.host.Core.Create(c.Request.Context(), h.host.Request(c, req), sink)
	if out.Retry != "" {
		c.Header("Retry-After", out.Retry)
	}
	if err != nil {
		if stream != nil && stream.Started() {
			// The stream is open: the failure is its last frame.
			stream.fail(openAIError(inChatTerms(h.host.APIError(c, err), cr.paths)))
			return
		}
		h.fail(c, err, cr.paths)
		return
	}
	if req.Stream {
		return
	}
	final := out.Response
	if final.Status == hearth.StatusFailed && final.Error != nil {
		h.fail(c, &hearth.Error{Status: http.StatusInternalServerError, Type: hearth.ErrTypeServer,
			Code: final.Error.Code, Message: final.Error.Message}, nil)
		return
	}
	c.Header(HeaderResponseID, final.ID)
	if out.Runtime != "" {
		c.Header("x-hearth-runtime", out.Runtime)
	}
	c.JSON(http.StatusOK, completion(final, cr.logprobs))
}
