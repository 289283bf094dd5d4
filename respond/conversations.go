package respond

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

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
func (s *Service) lockConversation(ctx context.Context, owner, id string) error {
	if _, err := s.db.GetConversation(ctx, owner, id); err != nil {
		return err
	}
	if !s.convs.locks.lock(id) {
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
	s         *Service
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
func (s *Service) beginConversationTurn(ctx context.Context, owner string, req *hearth.CreateResponseRequest) (*conversationTurn, error) {
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
		t.once.Do(func() { t.s.convs.locks.unlock(t.id) })
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

func (s *Service) decodeStoredItems(stored []storage.Item, conversation string) ([]hearth.Item, error) {
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
func conversationObject(c *storage.Conversation) *hearth.Conversation {
	var meta map[string]string
	json.Unmarshal(c.Metadata, &meta) // storage keeps valid JSON objects of strings
	return &hearth.Conversation{ID: c.ID, Object: hearth.ObjectConversation, CreatedAt: c.CreatedAt.Unix(), Metadata: meta}
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

// Conversations serves the Conversations API: conversations and their items, under
// the caller's key (owner). Without a store no conversation exists.
type Conversations struct {
	s *Service
	// locks are the conversations a response is running on.
	locks conversationLocks
}

// newConversationItems gives items without an id one and the finished status, as the
// conversation will list them.
func newConversationItems(items []hearth.Item) []storage.Item {
	assignInputIDs(items)
	return conversationItems(items)
}

// check makes items fit to keep: sealed items hearth can open, files read in.
func (cs *Conversations) check(ctx context.Context, owner string, items []hearth.Item) error {
	if err := cs.s.engine.CheckSealed(items, "items"); err != nil {
		return err
	}
	if cs.s.files != nil {
		return cs.s.files.ResolveFiles(ctx, owner, items, "items")
	}
	return nil
}

// Create creates a conversation with req's items and metadata.
func (cs *Conversations) Create(ctx context.Context, owner string, req *hearth.CreateConversationRequest) (*hearth.Conversation, error) {
	db := cs.s.db
	if db == nil {
		return nil, hearth.ServerError("This server keeps no database: conversations need one.")
	}
	if err := cs.check(ctx, owner, req.Items); err != nil {
		return nil, err
	}
	meta, _ := json.Marshal(req.Metadata)
	rec := storage.NewConversation{ID: hearth.NewID(hearth.PrefixConversation), Owner: owner, Metadata: meta,
		Items: newConversationItems(req.Items), CreatedAt: time.Now()}
	if err := db.CreateConversation(ctx, rec); err != nil {
		return nil, conversationError(err, rec.ID, "", "items")
	}
	return &hearth.Conversation{ID: rec.ID, Object: hearth.ObjectConversation,
		CreatedAt: rec.CreatedAt.Unix(), Metadata: req.Metadata}, nil
}

// Get returns a conversation.
func (cs *Conversations) Get(ctx context.Context, owner, id string) (*hearth.Conversation, error) {
	if cs.s.db == nil {
		return nil, hearth.ConversationNotFound("conversation_id", id)
	}
	conv, err := cs.s.db.GetConversation(ctx, owner, id)
	if err != nil {
		return nil, conversationError(err, id, "", "")
	}
	return conversationObject(conv), nil
}

// Update replaces a conversation's metadata (nil clears it).
func (cs *Conversations) Update(ctx context.Context, owner, id string, metadata map[string]string) (*hearth.Conversation, error) {
	if cs.s.db == nil {
		return nil, hearth.ConversationNotFound("conversation_id", id)
	}
	raw, _ := json.Marshal(metadata)
	conv, err := cs.s.db.UpdateConversation(ctx, owner, id, raw)
	if err != nil {
		return nil, conversationError(err, id, "", "")
	}
	return conversationObject(conv), nil
}

// Delete deletes a conversation and its items; the responses appended to it stay. A
// response running on it finishes and appends nothing.
func (cs *Conversations) Delete(ctx context.Context, owner, id string) error {
	if cs.s.db == nil {
		return hearth.ConversationNotFound("conversation_id", id)
	}
	if err := cs.s.db.DeleteConversation(ctx, owner, id); err != nil {
		return conversationError(err, id, "", "")
	}
	return nil
}

// Items lists a conversation's items with the paging of input_items: after (an item
// id), limit, order.
func (cs *Conversations) Items(ctx context.Context, owner, id, after string, limit int, order storage.Order) ([]storage.Item, bool, error) {
	if cs.s.db == nil {
		return nil, false, hearth.ConversationNotFound("conversation_id", id)
	}
	items, more, err := cs.s.db.ListConversationItems(ctx, owner, id, after, limit, order)
	if errors.Is(err, storage.ErrInvalidCursor) {
		return nil, false, hearth.InvalidRequest("after", hearth.CodeInvalidValue, "after is not an item of this conversation.")
	}
	if err != nil {
		return nil, false, conversationError(err, id, "", "")
	}
	return items, more, nil
}

// Add appends items to a conversation, in order, and returns them as stored. Refused
// (409) while a response runs on it.
func (cs *Conversations) Add(ctx context.Context, owner, id string, items []hearth.Item) ([]storage.Item, error) {
	if cs.s.db == nil {
		return nil, hearth.ConversationNotFound("conversation_id", id)
	}
	if err := cs.check(ctx, owner, items); err != nil {
		return nil, err
	}
	if err := cs.s.lockConversation(ctx, owner, id); err != nil {
		return nil, conversationError(err, id, "", "")
	}
	defer cs.locks.unlock(id)
	stored := newConversationItems(items)
	if err := cs.s.db.AppendConversationItems(ctx, owner, id, "", stored); err != nil {
		return nil, conversationError(err, id, "", "items")
	}
	return stored, nil
}

// Item returns one item of a conversation, as stored.
func (cs *Conversations) Item(ctx context.Context, owner, id, itemID string) (*storage.Item, error) {
	if cs.s.db == nil {
		return nil, hearth.ConversationNotFound("conversation_id", id)
	}
	it, err := cs.s.db.GetConversationItem(ctx, owner, id, itemID)
	if err != nil {
		return nil, conversationError(err, id, itemID, "")
	}
	return it, nil
}

// DeleteItem deletes one item and returns the conversation, as OpenAI does. Refused
// while a response runs on the conversation: the response continues from the items
// it loaded.
func (cs *Conversations) DeleteItem(ctx context.Context, owner, id, itemID string) (*hearth.Conversation, error) {
	if cs.s.db == nil {
		return nil, hearth.ConversationNotFound("conversation_id", id)
	}
	if err := cs.s.lockConversation(ctx, owner, id); err != nil {
		return nil, conversationError(err, id, itemID, "")
	}
	defer cs.locks.unlock(id)
	conv, err := cs.s.db.DeleteConversationItem(ctx, owner, id, itemID)
	if err != nil {
		return nil, conversationError(err, id, itemID, "")
	}
	return conversationObject(conv), nil
}
