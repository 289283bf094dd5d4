package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"hearth"
)

// The Conversations API (/v1/conversations, OpenAI's shapes), over the core's
// conversations (respond.Conversations, which also says how a response runs on one).

// conversationsAPI serves the Conversations API.
type conversationsAPI struct{ *Server }

// conversationRoutes adds the Conversations API to the authenticated routes.
func (s conversationsAPI) conversationRoutes(g *gin.RouterGroup) {
	g.POST("/v1/conversations", s.createConversation)
	g.GET("/v1/conversations/:id", s.getConversation)
	g.POST("/v1/conversations/:id", s.updateConversation)
	g.DELETE("/v1/conversations/:id", s.deleteConversation)
	g.GET("/v1/conversations/:id/items", s.listConversationItems)
	g.POST("/v1/conversations/:id/items", s.addConversationItems)
	g.GET("/v1/conversations/:id/items/:item", s.getConversationItem)
	g.DELETE("/v1/conversations/:id/items/:item", s.deleteConversationItem)
}

// noDatabase answers for a server without storage, where no conversation exists.
func (s conversationsAPI) noDatabase(c *gin.Context) bool {
	if s.db != nil {
		return false
	}
	s.writeError(c, hearth.ConversationNotFound("conversation_id", c.Param("id")))
	return true
}

// readConversationBody reads and decodes a body; on failure it has answered.
func readConversationBody[T any](s *Server, c *gin.Context, decode func([]byte) (T, []string, error)) (T, bool) {
	var zero T
	body, err := readBody(c.Request.Body)
	if err != nil {
		s.writeError(c, err)
		return zero, false
	}
	v, ignored, err := decode(body)
	if err != nil {
		s.writeError(c, err)
		return zero, false
	}
	if len(ignored) > 0 {
		c.Header("x-hearth-ignored", strings.Join(ignored, ", "))
	}
	return v, true
}

// createConversation serves POST /v1/conversations.
func (s conversationsAPI) createConversation(c *gin.Context) {
	if s.db == nil {
		s.writeError(c, hearth.ServerError("This server keeps no database: conversations need one."))
		return
	}
	req, ok := readConversationBody(s.Server, c, hearth.DecodeCreateConversationRequest)
	if !ok {
		return
	}
	conv, err := s.core.Conversations().Create(c.Request.Context(), owner(c), req)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, conv)
}

func (s conversationsAPI) getConversation(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	conv, err := s.core.Conversations().Get(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, conv)
}

// updateConversation serves POST /v1/conversations/{id}: metadata replaces the
// conversation's metadata (null clears it).
func (s conversationsAPI) updateConversation(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	meta, ok := readConversationBody(s.Server, c, hearth.DecodeConversationUpdateRequest)
	if !ok {
		return
	}
	conv, err := s.core.Conversations().Update(c.Request.Context(), owner(c), c.Param("id"), meta)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, conv)
}

// deleteConversation deletes a conversation and its items; the responses appended to
// it stay.
func (s conversationsAPI) deleteConversation(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	id := c.Param("id")
	if err := s.core.Conversations().Delete(c.Request.Context(), owner(c), id); err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "object": hearth.ObjectConversationDeleted, "deleted": true})
}

// includable are the include values OpenAI's conversation item routes take. hearth
// lists items as they were stored (a reasoning item carries encrypted_content when
// its response asked for it), so they select nothing more here, but a value outside
// the list is a client's mistake worth a 400.
var includable = []string{
	"code_interpreter_call.outputs", "computer_call_output.output.image_url",
	"file_search_call.results", "message.input_image.image_url", "message.output_text.logprobs",
	"reasoning.encrypted_content", "web_search_call.action.sources", "web_search_call.results",
}

// checkInclude validates include (or include[], as the OpenAI SDKs send arrays).
func checkInclude(c *gin.Context) error {
	values := append(c.QueryArray("include"), c.QueryArray("include[]")...)
	for i, v := range values {
		if !slices.Contains(includable, v) {
			return hearth.InvalidRequest(fmt.Sprintf("include[%d]", i), hearth.CodeInvalidValue,
				fmt.Sprintf("Invalid value for 'include[%d]': '%s'.", i, v))
		}
	}
	return nil
}

// listConversationItems serves GET /v1/conversations/{id}/items with the paging of
// input_items: after (an item id), limit (1-100, default 20), order (default desc).
func (s conversationsAPI) listConversationItems(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	limit, order, err := pageParams(c)
	if err == nil {
		err = checkInclude(c)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	items, more, err := s.core.Conversations().Items(c.Request.Context(), owner(c), c.Param("id"), c.Query("after"), limit, order)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, itemList(items, more))
}

// addConversationItems serves POST /v1/conversations/{id}/items: up to 20 items,
// appended in order; the answer lists them as stored.
func (s conversationsAPI) addConversationItems(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	if err := checkInclude(c); err != nil {
		s.writeError(c, err)
		return
	}
	items, ok := readConversationBody(s.Server, c, hearth.DecodeConversationItemsRequest)
	if !ok {
		return
	}
	stored, err := s.core.Conversations().Add(c.Request.Context(), owner(c), c.Param("id"), items)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, itemList(stored, false))
}

func (s conversationsAPI) getConversationItem(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	if err := checkInclude(c); err != nil {
		s.writeError(c, err)
		return
	}
	it, err := s.core.Conversations().Item(c.Request.Context(), owner(c), c.Param("id"), c.Param("item"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json", it.JSON)
}

// deleteConversationItem deletes one item and answers with the conversation, as
// OpenAI does.
func (s conversationsAPI) deleteConversationItem(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	conv, err := s.core.Conversations().DeleteItem(c.Request.Context(), owner(c), c.Param("id"), c.Param("item"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, conv)
}
