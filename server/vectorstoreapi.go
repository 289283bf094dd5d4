package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/storage"
	"hearth/vectorstores"
)

// The vector stores API (/v1/vector_stores, OpenAI's shapes) over the vectorstores
// service, which keeps the stores, ingests their files and searches them: this side
// decodes each request and frames what the service answers.

// vectorStoreRoutes adds the vector stores API to the routes of the Files API.
func (a *filesAPI) vectorStoreRoutes(g *gin.RouterGroup) {
	g.POST("/v1/vector_stores", a.createVectorStore)
	g.GET("/v1/vector_stores", a.listVectorStores)
	g.GET("/v1/vector_stores/:id", a.getVectorStore)
	g.POST("/v1/vector_stores/:id", a.updateVectorStore)
	g.DELETE("/v1/vector_stores/:id", a.deleteVectorStore)
	g.POST("/v1/vector_stores/:id/search", a.searchVectorStore)
	g.POST("/v1/vector_stores/:id/files", a.attachVectorStoreFile)
	g.GET("/v1/vector_stores/:id/files", a.listVectorStoreFiles)
	g.GET("/v1/vector_stores/:id/files/:file_id", a.getVectorStoreFile)
	g.POST("/v1/vector_stores/:id/files/:file_id", a.updateVectorStoreFile)
	g.DELETE("/v1/vector_stores/:id/files/:file_id", a.detachVectorStoreFile)
	g.POST("/v1/vector_stores/:id/file_batches", a.createFileBatch)
	g.GET("/v1/vector_stores/:id/file_batches/:batch_id", a.getFileBatch)
	g.POST("/v1/vector_stores/:id/file_batches/:batch_id/cancel", a.cancelFileBatch)
	g.GET("/v1/vector_stores/:id/file_batches/:batch_id/files", a.listFileBatchFiles)
}

// decodeJSON reads the body into v, a 400 naming the field whose type is wrong.
func decodeJSON(c *gin.Context, v any) error {
	body, err := readBody(c.Request.Body)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return hearth.InvalidRequest(te.Field, hearth.CodeInvalidType, fmt.Sprintf("Invalid type for '%s': expected %s.", te.Field, te.Type))
		}
		return hearth.InvalidRequest("", hearth.CodeInvalidJSON, "The body is not a JSON object of the request: "+err.Error())
	}
	return nil
}

// decodeFields reads the body of an update, whose fields are told apart from
// absent ones (and null from both), or answers the request when it cannot.
func (a *filesAPI) decodeFields(c *gin.Context) (map[string]json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if err := decodeJSON(c, &fields); err != nil {
		a.s.writeError(c, err)
		return nil, false
	}
	return fields, true
}

// reply writes the service's answer: v, or its error.
func (a *filesAPI) reply(c *gin.Context, v any, err error) {
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// createVectorStore serves POST /v1/vector_stores.
func (a *filesAPI) createVectorStore(c *gin.Context) {
	var req vectorstores.CreateRequest
	if err := decodeJSON(c, &req); err != nil {
		a.s.writeError(c, err)
		return
	}
	v, err := a.vs.CreateVectorStore(c.Request.Context(), owner(c), req)
	a.reply(c, v, err)
}

// listQuery reads a list's limit, order and after.
func listQuery(c *gin.Context, max int) (limit int, order storage.Order, after string, err error) {
	order, after = storage.Desc, c.Query("after")
	if v := c.Query("limit"); v != "" {
		n, e := strconv.Atoi(v)
		if e != nil || n < 1 || n > max {
			return 0, order, after, hearth.InvalidRequest("limit", hearth.CodeInvalidValue, fmt.Sprintf("limit must be an integer from 1 to %d.", max))
		}
		limit = n
	}
	switch c.Query("order") {
	case "", "desc":
	case "asc":
		order = storage.Asc
	default:
		return 0, order, after, hearth.InvalidRequest("order", hearth.CodeInvalidValue, "order must be 'asc' or 'desc'.")
	}
	if c.Query("before") != "" {
		return 0, order, after, hearth.InvalidRequest("before", hearth.CodeInvalidValue, "hearth pages with 'after' only; 'before' is not supported.")
	}
	return limit, order, after, nil
}

// listPage writes a page of the API's objects, with OpenAI's cursors.
func listPage[T any](c *gin.Context, data []T, id func(T) string, more bool) {
	var first, last any
	if len(data) > 0 {
		first, last = id(data[0]), id(data[len(data)-1])
	}
	c.JSON(http.StatusOK, gin.H{"object": "list", "data": data, "first_id": first, "last_id": last, "has_more": more})
}

// listVectorStores serves GET /v1/vector_stores.
func (a *filesAPI) listVectorStores(c *gin.Context) {
	limit, order, after, err := listQuery(c, storage.MaxVectorStoreListLimit)
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	stores, more, err := a.vs.ListVectorStores(c.Request.Context(), owner(c), storage.VectorStoreQuery{After: after, Limit: limit, Order: order})
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	listPage(c, stores, func(v hearth.VectorStore) string { return v.ID }, more)
}

// getVectorStore serves GET /v1/vector_stores/{id}.
func (a *filesAPI) getVectorStore(c *gin.Context) {
	v, err := a.vs.GetVectorStore(c.Request.Context(), owner(c), c.Param("id"))
	a.reply(c, v, err)
}

// updateVectorStore serves POST /v1/vector_stores/{id}: name, expires_after (null
// removes it), metadata.
func (a *filesAPI) updateVectorStore(c *gin.Context) {
	req, ok := a.decodeFields(c)
	if !ok {
		return
	}
	v, err := a.vs.UpdateVectorStore(c.Request.Context(), owner(c), c.Param("id"), req)
	a.reply(c, v, err)
}

// deleteVectorStore serves DELETE /v1/vector_stores/{id}: the store, its chunks and
// its attachments go; the files stay.
func (a *filesAPI) deleteVectorStore(c *gin.Context) {
	id := c.Param("id")
	err := a.vs.DeleteVectorStore(c.Request.Context(), owner(c), id)
	a.reply(c, hearth.Deleted{ID: id, Object: hearth.ObjectVectorStoreDeleted, Deleted: true}, err)
}

// attachVectorStoreFile serves POST /v1/vector_stores/{id}/files.
func (a *filesAPI) attachVectorStoreFile(c *gin.Context) {
	var req vectorstores.FileRequest
	if err := decodeJSON(c, &req); err != nil {
		a.s.writeError(c, err)
		return
	}
	f, err := a.vs.AttachFile(c.Request.Context(), owner(c), c.Param("id"), req)
	a.reply(c, f, err)
}

// listVectorStoreFiles serves GET /v1/vector_stores/{id}/files (filter: a status).
func (a *filesAPI) listVectorStoreFiles(c *gin.Context) { a.listFilesOf(c, "") }

// listFileBatchFiles serves GET /v1/vector_stores/{id}/file_batches/{batch_id}/files.
func (a *filesAPI) listFileBatchFiles(c *gin.Context) {
	if _, err := a.vs.GetFileBatch(c.Request.Context(), owner(c), c.Param("id"), c.Param("batch_id")); err != nil {
		a.s.writeError(c, err)
		return
	}
	a.listFilesOf(c, c.Param("batch_id"))
}

func (a *filesAPI) listFilesOf(c *gin.Context, batchID string) {
	limit, order, after, err := listQuery(c, storage.MaxVectorStoreListLimit)
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	q := storage.VectorStoreFileQuery{Status: c.Query("filter"), BatchID: batchID, After: after, Limit: limit, Order: order}
	files, more, err := a.vs.ListStoreFiles(c.Request.Context(), owner(c), c.Param("id"), q)
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	listPage(c, files, func(f hearth.VectorStoreFile) string { return f.ID }, more)
}

// getVectorStoreFile serves GET /v1/vector_stores/{id}/files/{file_id}.
func (a *filesAPI) getVectorStoreFile(c *gin.Context) {
	f, err := a.vs.GetStoreFile(c.Request.Context(), owner(c), c.Param("id"), c.Param("file_id"))
	a.reply(c, f, err)
}

// updateVectorStoreFile serves POST /v1/vector_stores/{id}/files/{file_id}: the
// file's attributes replaced (null clears them).
func (a *filesAPI) updateVectorStoreFile(c *gin.Context) {
	req, ok := a.decodeFields(c)
	if !ok {
		return
	}
	f, err := a.vs.UpdateStoreFile(c.Request.Context(), owner(c), c.Param("id"), c.Param("file_id"), req)
	a.reply(c, f, err)
}

// detachVectorStoreFile serves DELETE /v1/vector_stores/{id}/files/{file_id}: the
// file leaves the store with its chunks; the upload stays.
func (a *filesAPI) detachVectorStoreFile(c *gin.Context) {
	id := c.Param("file_id")
	err := a.vs.DetachFile(c.Request.Context(), owner(c), c.Param("id"), id)
	a.reply(c, hearth.Deleted{ID: id, Object: hearth.ObjectVectorStoreFileDeleted, Deleted: true}, err)
}

// createFileBatch serves POST /v1/vector_stores/{id}/file_batches.
func (a *filesAPI) createFileBatch(c *gin.Context) {
	var req vectorstores.BatchRequest
	if err := decodeJSON(c, &req); err != nil {
		a.s.writeError(c, err)
		return
	}
	b, err := a.vs.CreateFileBatch(c.Request.Context(), owner(c), c.Param("id"), req)
	a.reply(c, b, err)
}

// getFileBatch serves GET /v1/vector_stores/{id}/file_batches/{batch_id}.
func (a *filesAPI) getFileBatch(c *gin.Context) {
	b, err := a.vs.GetFileBatch(c.Request.Context(), owner(c), c.Param("id"), c.Param("batch_id"))
	a.reply(c, b, err)
}

// cancelFileBatch serves POST .../file_batches/{batch_id}/cancel: the batch's files
// not yet ingested are cancelled.
func (a *filesAPI) cancelFileBatch(c *gin.Context) {
	b, err := a.vs.CancelFileBatch(c.Request.Context(), owner(c), c.Param("id"), c.Param("batch_id"))
	a.reply(c, b, err)
}

// searchVectorStore serves POST /v1/vector_stores/{id}/search.
func (a *filesAPI) searchVectorStore(c *gin.Context) {
	var raw vectorstores.SearchRequest
	if err := decodeJSON(c, &raw); err != nil {
		a.s.writeError(c, err)
		return
	}
	req, err := vectorstores.ParseSearch(raw)
	if err != nil {
		a.s.writeError(c, err)
		return
	}
	if raw.RewriteQuery {
		c.Header("x-hearth-ignored", "rewrite_query")
	}
	page, err := a.vs.Search(c.Request.Context(), owner(c), c.Param("id"), req)
	a.reply(c, page, err)
}
