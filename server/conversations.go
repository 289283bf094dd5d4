package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/engine"
	"hearth/storage"
)

// The Conversations API (/v1/conversations, OpenAI's shapes) and the conversation
// parameter of /v1/responses.
//
// A response created with a conversation sees the conversation's items followed by its
// own input, and when it ends completed or incomplete its input and output items are
// appended to the conversation in one transaction; a failed or cancelled response
// appends nothing. While it runs it holds the conversation: a second response on the
// same conversation, or an item added or deleted directly, is refused with 409
// conversation_locked rather than queued, so turns never interleave and a stuck client
// holds nobody else up (OpenAI's SDKs retry 409s). The hold lives in this process,
// which is the only one serving its database.

// conversationRoutes adds the Conversations API to the authenticated routes.
func (s *Server) conversationRoutes(g *gin.RouterGroup) {
	g.POST("/v1/conversations", s.createConversation)
	g.GET("/v1/conversations/:id", s.getConversation)
	g.POST("/v1/conversations/:id", s.updateConversation)
	g.DELETE("/v1/conversations/:id", s.deleteConversation)
	g.GET("/v1/conversations/:id/items", s.listConversationItems)
	g.POST("/v1/conversations/:id/items", s.addConversationItems)
	g.GET("/v1/conversations/:id/items/:item", s.getConversationItem)
	g.DELETE("/v1/conversations/:id/items/:item", s.deleteConversationItem)
}

// conversationLocks are the conversations a response is running on.
type conversationLocks struct {
	mu   sync.Mutex
	held map[string]bool
}

// lockConversation takes the hold on the owner's conversation id, or says why not:
// storage.ErrConversationNotFound, or conversation_locked. The owner is checked
// first, so that another key's conversation answers as an unknown one does (404)
// rather than telling that it exists and is busy (409), and so that no other key can
// hold it, even for the moment its own check would take. The callers read the
// conversation again under the hold, which a delete in between is caught by.
func (s *Server) lockConversation(ctx context.Context, owner, id string) error {
	if _, err := s.db.GetConversation(ctx, owner, id); err != nil {
		return err
	}
	if !s.convLocks.lock(id) {
		return hearth.ConversationLocked(id)
	}
	return nil
}

func (l *conversationLocks) lock(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[id] {
		return false
	}
	if l.held == nil {
		l.held = map[string]bool{}
	}
	l.held[id] = true
	return true
}

func (l *conversationLocks) unlock(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held, id)
}

func (l *conversationLocks) locked(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[id]
}

// conversationTurn is a response's hold on its conversation, from loading the
// conversation as history to appending the response to it. A nil turn (a response
// without a conversation) does nothing.
type conversationTurn struct {
	s         *Server
	id, owner string
	items     []hearth.Item // the conversation as the response found it
	handed    bool          // a run owns the turn now
	once      sync.Once
}

// beginConversationTurn takes the conversation of req, if it names one, and loads its
// items: the history the response continues. The caller must hand the turn to its run
// (handOff) or abandon it. Unknown, deleted and foreign conversations are a 404; one
// a response is running on is a 409; an input item reusing an id of the conversation
// (or of an earlier input item) is a 400, since the conversation keeps ids unique.
func (s *Server) beginConversationTurn(ctx context.Context, owner string, req *hearth.CreateResponseRequest) (*conversationTurn, error) {
	id := req.ConversationID()
	if id == "" {
		return nil, nil
	}
	if s.db == nil {
		return nil, hearth.ConversationNotFound("conversation", id)
	}
	if err := s.lockConversation(ctx, owner, id); err != nil {
		if errors.Is(err, storage.ErrConversationNotFound) {
			err = hearth.ConversationNotFound("conversation", id)
		}
		return nil, err
	}
	t := &conversationTurn{s: s, id: id, owner: owner}
	stored, err := s.db.ConversationItems(ctx, owner, id)
	if err == nil {
		t.items, err = s.decodeStoredItems(stored, id)
	}
	if err == nil {
		taken := make(map[string]bool, len(stored))
		for _, it := range stored {
			taken[it.ID] = true
		}
		err = hearth.UniqueItemIDs(req.Input, "input", taken)
	}
	if errors.Is(err, storage.ErrConversationNotFound) {
		err = hearth.ConversationNotFound("conversation", id)
	}
	if err != nil {
		t.release()
		return nil, err
	}
	return t, nil
}

// history is the conversation's items, which the response's input follows.
func (t *conversationTurn) history() []hearth.Item {
	if t == nil {
		return nil
	}
	return t.items
}

// handOff gives the turn to the run that executes the response: the run appends and
// releases it when the response ends.
func (t *conversationTurn) handOff() *conversationTurn {
	if t != nil {
		t.handed = true
	}
	return t
}

// abandon releases a turn no run took over (the request failed before it started).
func (t *conversationTurn) abandon() {
	if t != nil && !t.handed {
		t.release()
	}
}

func (t *conversationTurn) release() {
	if t != nil {
		t.once.Do(func() { t.s.convLocks.unlock(t.id) })
	}
}

// appendResponse appends the finished response's input and output to the conversation,
// in one transaction, and releases the conversation. Completed and incomplete responses
// are appended (an incomplete one's output is what the model said, marked incomplete,
// as OpenAI keeps it), except one whose client went away: that client never saw the
// turn end and sends it again, which would otherwise repeat the turn. Failed and
// cancelled responses append nothing. A conversation deleted meanwhile stays deleted.
func (t *conversationTurn) appendResponse(ctx context.Context, input []hearth.Item, final *hearth.Response) error {
	if t == nil {
		return nil
	}
	defer t.release()
	switch {
	case final.Status == hearth.StatusCompleted:
	case final.Status == hearth.StatusIncomplete &&
		(final.IncompleteDetails == nil || final.IncompleteDetails.Reason != engine.IncompleteClientDisconnected):
	default:
		return nil
	}
	items := make([]hearth.Item, 0, len(input)+len(final.Output))
	items = append(items, input...)
	items = append(items, final.Output...)
	// The client may be gone; the conversation must still get the turn it was shown.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := t.s.db.AppendConversationItems(ctx, t.owner, t.id, final.ID, conversationItems(items))
	if errors.Is(err, storage.ErrConversationNotFound) {
		t.s.log.Info("conversation deleted while a response ran on it; nothing appended", "conversation", t.id, "response", final.ID)
		return nil
	}
	return err
}

// conversationItems are items as a conversation stores them: with the status OpenAI
// reports for finished items where they carry none.
func conversationItems(items []hearth.Item) []storage.Item {
	out := make([]hearth.Item, len(items))
	for i, it := range items {
		hearth.ConversationItemStatus(&it)
		out[i] = it
	}
	return storedItems(out)
}

func (s *Server) decodeStoredItems(stored []storage.Item, conversation string) ([]hearth.Item, error) {
	items := make([]hearth.Item, len(stored))
	for i, it := range stored {
		var err error
		if items[i], err = s.items.decode(it.JSON); err != nil {
			return nil, fmt.Errorf("stored item %s of conversation %s: %w", it.ID, conversation, err)
		}
	}
	return items, nil
}

// conversationObject is the API's conversation object for a stored conversation.
func conversationObject(c *storage.Conversation) hearth.Conversation {
	var meta map[string]string
	json.Unmarshal(c.Metadata, &meta) // storage keeps valid JSON objects of strings
	return hearth.Conversation{ID: c.ID, Object: hearth.ObjectConversation, CreatedAt: c.CreatedAt.Unix(), Metadata: meta}
}

// conversationError maps storage's errors to the API's: 404s naming what was not
// found, 400 for a duplicate item id (param names the item at index offset+i of the
// items sent as path), anything else a 500.
func conversationError(err error, id, itemID, path string) error {
	var dup *storage.DuplicateItemError
	switch {
	case errors.Is(err, storage.ErrConversationNotFound):
		return hearth.ConversationNotFound("conversation_id", id)
	case errors.Is(err, storage.ErrItemNotFound):
		return hearth.NotFound("item_id", hearth.CodeItemNotFound,
			fmt.Sprintf("Item with id '%s' not found in conversation '%s'.", itemID, id))
	case errors.As(err, &dup) && path != "":
		p := fmt.Sprintf("%s[%d].id", path, dup.Index)
		return hearth.InvalidRequest(p, hearth.CodeDuplicateItemID,
			fmt.Sprintf("Invalid '%s': an item with id '%s' is already in the conversation.", p, dup.ID))
	}
	return err
}

// noDatabase answers for a server without storage, where no conversation exists.
func (s *Server) noDatabase(c *gin.Context) bool {
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

// newConversationItems gives items without an id one and the finished status, as the
// conversation will list them.
func newConversationItems(items []hearth.Item) []storage.Item {
	assignInputIDs(items)
	return conversationItems(items)
}

// createConversation serves POST /v1/conversations.
func (s *Server) createConversation(c *gin.Context) {
	if s.db == nil {
		s.writeError(c, hearth.ServerError("This server keeps no database: conversations need one."))
		return
	}
	req, ok := readConversationBody(s, c, hearth.DecodeCreateConversationRequest)
	if !ok {
		return
	}
	if err := s.engine.CheckSealed(req.Items, "items"); err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.vectorStores.ResolveFiles(c.Request.Context(), owner(c), req.Items, "items"); err != nil {
		s.writeError(c, err)
		return
	}
	meta, _ := json.Marshal(req.Metadata)
	rec := storage.NewConversation{ID: hearth.NewID(hearth.PrefixConversation), Owner: owner(c), Metadata: meta,
		Items: newConversationItems(req.Items), CreatedAt: time.Now()}
	if err := s.db.CreateConversation(c.Request.Context(), rec); err != nil {
		s.writeError(c, conversationError(err, rec.ID, "", "items"))
		return
	}
	c.JSON(http.StatusOK, hearth.Conversation{ID: rec.ID, Object: hearth.ObjectConversation,
		CreatedAt: rec.CreatedAt.Unix(), Metadata: req.Metadata})
}

func (s *Server) getConversation(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	conv, err := s.db.GetConversation(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		s.writeError(c, conversationError(err, c.Param("id"), "", ""))
		return
	}
	c.JSON(http.StatusOK, conversationObject(conv))
}

// updateConversation serves POST /v1/conversations/{id}: metadata replaces the
// conversation's metadata (null clears it).
func (s *Server) updateConversation(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	meta, ok := readConversationBody(s, c, hearth.DecodeConversationUpdateRequest)
	if !ok {
		return
	}
	raw, _ := json.Marshal(meta)
	conv, err := s.db.UpdateConversation(c.Request.Context(), owner(c), c.Param("id"), raw)
	if err != nil {
		s.writeError(c, conversationError(err, c.Param("id"), "", ""))
		return
	}
	c.JSON(http.StatusOK, conversationObject(conv))
}

// deleteConversation deletes a conversation and its items; the responses appended to
// it stay. A response running on it finishes and appends nothing.
func (s *Server) deleteConversation(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	id := c.Param("id")
	if err := s.db.DeleteConversation(c.Request.Context(), owner(c), id); err != nil {
		s.writeError(c, conversationError(err, id, "", ""))
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
func (s *Server) listConversationItems(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	id := c.Param("id")
	limit, order, err := pageParams(c)
	if err == nil {
		err = checkInclude(c)
	}
	if err != nil {
		s.writeError(c, err)
		return
	}
	items, more, err := s.db.ListConversationItems(c.Request.Context(), owner(c), id, c.Query("after"), limit, order)
	if errors.Is(err, storage.ErrInvalidCursor) {
		s.writeError(c, hearth.InvalidRequest("after", hearth.CodeInvalidValue, "after is not an item of this conversation."))
		return
	}
	if err != nil {
		s.writeError(c, conversationError(err, id, "", ""))
		return
	}
	c.JSON(http.StatusOK, itemList(items, more))
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

// addConversationItems serves POST /v1/conversations/{id}/items: up to 20 items,
// appended in order; the answer lists them as stored.
func (s *Server) addConversationItems(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	id := c.Param("id")
	if err := checkInclude(c); err != nil {
		s.writeError(c, err)
		return
	}
	items, ok := readConversationBody(s, c, hearth.DecodeConversationItemsRequest)
	if !ok {
		return
	}
	if err := s.engine.CheckSealed(items, "items"); err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.vectorStores.ResolveFiles(c.Request.Context(), owner(c), items, "items"); err != nil {
		s.writeError(c, err)
		return
	}
	if err := s.lockConversation(c.Request.Context(), owner(c), id); err != nil {
		s.writeError(c, conversationError(err, id, "", ""))
		return
	}
	defer s.convLocks.unlock(id)
	stored := newConversationItems(items)
	if err := s.db.AppendConversationItems(c.Request.Context(), owner(c), id, "", stored); err != nil {
		s.writeError(c, conversationError(err, id, "", "items"))
		return
	}
	c.JSON(http.StatusOK, itemList(stored, false))
}

func (s *Server) getConversationItem(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	id, itemID := c.Param("id"), c.Param("item")
	if err := checkInclude(c); err != nil {
		s.writeError(c, err)
		return
	}
	it, err := s.db.GetConversationItem(c.Request.Context(), owner(c), id, itemID)
	if err != nil {
		s.writeError(c, conversationError(err, id, itemID, ""))
		return
	}
	c.Data(http.StatusOK, "application/json", it.JSON)
}

// deleteConversationItem deletes one item and answers with the conversation, as
// OpenAI does. Refused while a response runs on the conversation: the response
// continues from the items it loaded.
func (s *Server) deleteConversationItem(c *gin.Context) {
	if s.noDatabase(c) {
		return
	}
	id, itemID := c.Param("id"), c.Param("item")
	if err := s.lockConversation(c.Request.Context(), owner(c), id); err != nil {
		s.writeError(c, conversationError(err, id, itemID, ""))
		return
	}
	defer s.convLocks.unlock(id)
	conv, err := s.db.DeleteConversationItem(c.Request.Context(), owner(c), id, itemID)
	if err != nil {
		s.writeError(c, conversationError(err, id, itemID, ""))
		return
	}
	c.JSON(http.StatusOK, conversationObject(conv))
}
