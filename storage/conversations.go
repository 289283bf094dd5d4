package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Conversations: a durable, ordered list of items per conversation,
// owned by one key like a response. Items are stored as the API presents them; the
// server decides what goes in.

// Errors of the conversation methods, apart from ErrInvalidCursor (an after that is not
// an item of the conversation).
var (
	// ErrConversationNotFound: the conversation does not exist, was deleted, or belongs
	// to another owner (indistinguishable on purpose, as for responses).
	ErrConversationNotFound = errors.New("storage: conversation not found")
	// ErrItemNotFound: the conversation exists but has no item with that id.
	ErrItemNotFound = errors.New("storage: conversation item not found")
	// ErrDuplicateItem: an item's id is already an item of the conversation.
	ErrDuplicateItem = errors.New("storage: item id already in the conversation")
)

// DuplicateItemError says which appended item reused an id of the conversation (or of
// an earlier item of the same append). It wraps ErrDuplicateItem.
type DuplicateItemError struct {
	Index int // of the item in the slice appended
	ID    string
}

func (e *DuplicateItemError) Error() string {
	return fmt.Sprintf("item %d (%s): %v", e.Index, e.ID, ErrDuplicateItem)
}

func (e *DuplicateItemError) Unwrap() error { return ErrDuplicateItem }

// Conversation is a stored conversation, without its items.
type Conversation struct {
	ID        string
	Owner     string
	Metadata  json.RawMessage // a JSON object
	CreatedAt time.Time
}

// NewConversation is what CreateConversation stores.
type NewConversation struct {
	ID        string
	Owner     string
	Metadata  json.RawMessage // nil means {}
	Items     []Item
	CreatedAt time.Time // zero means now
}
