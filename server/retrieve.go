package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/storage"
)

// stored loads a response the caller owns; a missing or foreign id is a 404.
func (s responsesAPI) stored(c *gin.Context) (*storage.Response, bool) {
	rec, err := s.core.Get(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return nil, false
	}
	return rec, true
}

// getResponse serves GET /v1/responses/{id}; with ?stream=true it streams the
// response's events as they were sent, with their sequence numbers: those after
// starting_after (all of them without it), live while the response runs (the core's
// Replay).
func (s responsesAPI) getResponse(c *gin.Context) {
	after := -1
	if v, ok := c.GetQuery("starting_after"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.writeError(c, hearth.InvalidRequest("starting_after", "invalid_value",
				"starting_after must be a non-negative integer: the sequence number of the last event the client has."))
			return
		}
		after = n
	}
	rec, ok := s.stored(c)
	if !ok {
		return
	}
	if stream, _ := strconv.ParseBool(c.Query("stream")); !stream {
		c.Data(http.StatusOK, "application/json", rec.Body)
		return
	}
	sse := s.newSSEStream(c)
	defer sse.Close()
	if err := s.core.Replay(c.Request.Context(), owner(c), rec, after, sse); err != nil {
		s.writeError(c, err)
	}
}

func (s responsesAPI) deleteResponse(c *gin.Context) {
	id := c.Param("id")
	if err := s.core.Delete(c.Request.Context(), owner(c), id); err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"id": id, "object": "response", "deleted": true})
}

// listInputItems serves GET /v1/responses/{id}/input_items with OpenAI's paging:
// after (an item id), limit (1-100, default 20), order (asc or desc, default desc).
func (s responsesAPI) listInputItems(c *gin.Context) {
	rec, ok := s.stored(c)
	if !ok {
		return
	}
	limit, order, err := pageParams(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	items, more, err := s.core.InputItems(c.Request.Context(), owner(c), rec.ID, c.Query("after"), limit, order)
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, itemList(items, more))
}

// cancelResponse serves POST /v1/responses/{id}/cancel. Only background responses can
// be cancelled (OpenAI's rule); cancelling a cancelled one returns it again.
func (s responsesAPI) cancelResponse(c *gin.Context) {
	rec, err := s.core.Cancel(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		s.writeError(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json", rec.Body)
}

// pageParams reads limit and order as GET input_items does.
func pageParams(c *gin.Context) (int, storage.Order, error) {
	limit := storage.DefaultListLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > storage.MaxListLimit {
			return 0, "", hearth.InvalidRequest("limit", hearth.CodeInvalidValue,
				fmt.Sprintf("limit must be an integer from 1 to %d.", storage.MaxListLimit))
		}
		limit = n
	}
	switch v := c.Query("order"); v {
	case "", "desc":
		return limit, storage.Desc, nil
	case "asc":
		return limit, storage.Asc, nil
	}
	return 0, "", hearth.InvalidRequest("order", hearth.CodeInvalidValue, "order must be 'asc' or 'desc'.")
}

// itemList is the API's list object of items.
func itemList(items []storage.Item, more bool) gin.H {
	data := make([]json.RawMessage, len(items))
	var first, last any
	for i, it := range items {
		data[i] = it.JSON
	}
	if len(items) > 0 {
		first, last = items[0].ID, items[len(items)-1].ID
	}
	return gin.H{"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": more}
}
