package hearth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
)

// The Conversations API (OpenAI's /v1/conversations): a durable list of items that
// responses created with a conversation append their input and output to.

// PrefixConversation starts conversation ids: conv_<32 hex digits>.
const PrefixConversation = "conv"

// Object types of the Conversations API.
const (
	ObjectConversation        = "conversation"
	ObjectConversationDeleted = "conversation.deleted"
)

// Error codes of the Conversations API.
const (
	CodeConversationNotFound = "conversation_not_found"
	CodeItemNotFound         = "item_not_found"
	// CodeConversationLocked: another response (or item change) is being made on the
	// conversation; retrying later works (OpenAI's code for the same refusal).
	CodeConversationLocked = "conversation_locked"
	// CodeDuplicateItemID: an item's id is already an item of the conversation.
	CodeDuplicateItemID = "duplicate_item_id"
)

// MaxConversationItemsPerRequest bounds items in one create or add, as OpenAI does.
const MaxConversationItemsPerRequest = 20

// ConversationRef names the conversation of a response: the request's conversation
// parameter (sent as an id or {"id": ...}) and the response's conversation field.
type ConversationRef struct {
	ID string `json:"id"`
}

// ConversationID is the id of the request's conversation, "" when it has none.
func (r *CreateResponseRequest) ConversationID() string {
	if r.Conversation == nil {
		return ""
	}
	return r.Conversation.ID
}

// Conversation is the conversation object.
type Conversation struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Metadata  map[string]string `json:"metadata"`
}

// MarshalJSON writes metadata as {} when empty, as OpenAI does.
func (c Conversation) MarshalJSON() ([]byte, error) {
	type plain Conversation
	p := plain(c)
	if p.Object == "" {
		p.Object = ObjectConversation
	}
	if p.Metadata == nil {
		p.Metadata = map[string]string{}
	}
	return json.Marshal(p)
}

// ConversationNotFound is the 404 for a conversation that does not exist, was deleted
// or belongs to another key; param names where the id came from.
func ConversationNotFound(param, id string) *Error {
	return NotFound(param, CodeConversationNotFound, fmt.Sprintf("Conversation with id '%s' not found.", id))
}

// ConversationLocked is the 409 for a second response (or an item change) on a
// conversation while a response on it is running. Answering at once rather than
// queueing keeps a stuck client from holding others; OpenAI's SDKs retry 409s.
func ConversationLocked(id string) *Error {
	return &Error{Status: http.StatusConflict, Type: ErrTypeInvalidRequest, Code: CodeConversationLocked, Param: "conversation",
		Message: fmt.Sprintf("Another response is currently running on conversation '%s'. Retry once it has finished.", id)}
}

// decodeConversationParam reads the conversation parameter of a create request: an id,
// or an object {"id": ...}.
func decodeConversationParam(raw json.RawMessage, path string) (*ConversationRef, error) {
	var id string
	switch kindOf(raw) {
	case kindString:
		id, _ = asString(raw, path)
		if id == "" {
			return nil, emptyString(path)
		}
	case kindObject:
		o, _ := asObject(raw, path)
		var err error
		if id, err = o.requiredString("id"); err != nil {
			return nil, err
		}
		if id == "" {
			return nil, emptyString(o.at("id"))
		}
	default:
		return nil, typeError(path, "a string or an object", raw)
	}
	return &ConversationRef{ID: id}, nil
}

// CreateConversationRequest is the body of POST /v1/conversations.
type CreateConversationRequest struct {
	Items    []Item
	Metadata map[string]string
}

// DecodeCreateConversationRequest decodes and validates the body of
// POST /v1/conversations: optional items (at most 20) and metadata. An empty body is
// an empty conversation.
func DecodeCreateConversationRequest(body []byte) (*CreateConversationRequest, []string, error) {
	o, ignored, err := decodeBodyObject(body, "items", "metadata")
	if err != nil {
		return nil, nil, err
	}
	r := &CreateConversationRequest{}
	if raw, ok := o.get("items"); ok {
		if r.Items, err = decodeConversationItems(raw, "items"); err != nil {
			return nil, nil, err
		}
	}
	if raw, ok := o.get("metadata"); ok {
		if r.Metadata, err = decodeMetadata(raw, "metadata"); err != nil {
			return nil, nil, err
		}
	}
	return r, ignored, nil
}

// DecodeConversationItemsRequest decodes the body of POST /v1/conversations/{id}/items:
// items, required, 1 to 20 of them.
func DecodeConversationItemsRequest(body []byte) ([]Item, []string, error) {
	o, ignored, err := decodeBodyObject(body, "items")
	if err != nil {
		return nil, nil, err
	}
	raw, ok := o.get("items")
	if !ok {
		return nil, nil, missing("items")
	}
	items, err := decodeConversationItems(raw, "items")
	if err != nil {
		return nil, nil, err
	}
	if len(items) == 0 {
		return nil, nil, InvalidRequest("items", CodeEmptyArray,
			"Invalid 'items': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	return items, ignored, nil
}

// DecodeConversationUpdateRequest decodes the body of POST /v1/conversations/{id}:
// metadata, required (null clears it), which replaces the conversation's metadata.
func DecodeConversationUpdateRequest(body []byte) (map[string]string, []string, error) {
	o, ignored, err := decodeBodyObject(body, "metadata")
	if err != nil {
		return nil, nil, err
	}
	raw, present := o.fields["metadata"]
	if !present {
		return nil, nil, missing("metadata")
	}
	if kindOf(raw) == kindNull {
		return map[string]string{}, ignored, nil
	}
	m, err := decodeMetadata(raw, "metadata")
	return m, ignored, err
}

// decodeBodyObject reads a request body that must be a JSON object (an empty body
// counts as {}), and lists its fields other than known, sorted.
func decodeBodyObject(body []byte, known ...string) (object, []string, error) {
	if len(body) == 0 {
		return object{fields: map[string]json.RawMessage{}}, nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		msg := "We could not parse the JSON body of your request: expected a JSON object."
		if err != nil {
			msg = "We could not parse the JSON body of your request: " + err.Error() + "."
		}
		return object{}, nil, InvalidRequest("", CodeInvalidJSON, msg)
	}
	var ignored []string
	for k := range fields {
		if !slices.Contains(known, k) {
			ignored = append(ignored, k)
		}
	}
	sort.Strings(ignored)
	return object{"", fields}, ignored, nil
}

// decodeConversationItems reads items to add to a conversation: input items as a
// response's input takes them, at most 20, each with a unique id if it has one. An
// item_reference is refused: a conversation keeps items, not pointers to them.
func decodeConversationItems(raw json.RawMessage, path string) ([]Item, error) {
	elems, err := asArray(raw, path)
	if err != nil {
		return nil, err
	}
	if len(elems) > MaxConversationItemsPerRequest {
		return nil, InvalidRequest(path, CodeArrayAboveMaxLength,
			fmt.Sprintf("Invalid '%s': array too long. Expected an array with maximum length %d, but got an array with length %d instead.",
				path, MaxConversationItemsPerRequest, len(elems)))
	}
	items, err := decodeInput(raw, path)
	if err != nil {
		return nil, err
	}
	for i, it := range items {
		if it.Type == ItemReference {
			return nil, InvalidRequest(indexPath(path, i)+".type", CodeInvalidValue,
				fmt.Sprintf("Invalid value for '%s.type': 'item_reference'. Add the item itself to a conversation.", indexPath(path, i)))
		}
	}
	if err := UniqueItemIDs(items, path, nil); err != nil {
		return nil, err
	}
	return items, nil
}

// UniqueItemIDs checks that no item of items has the id of an earlier one, or an id in
// taken; the error (a 400 duplicate_item_id) names path[i].id. Items without an id
// are fine: the server gives them one.
func UniqueItemIDs(items []Item, path string, taken map[string]bool) error {
	seen := make(map[string]bool, len(items))
	for i, it := range items {
		if it.ID == "" {
			continue
		}
		if seen[it.ID] || taken[it.ID] {
			p := indexPath(path, i) + ".id"
			return InvalidRequest(p, CodeDuplicateItemID,
				fmt.Sprintf("Invalid '%s': an item with id '%s' is already in the conversation.", p, it.ID))
		}
		seen[it.ID] = true
	}
	return nil
}

// ConversationItemStatus gives items that carry a status and have none the status
// "completed", which OpenAI reports for every finished conversation item; clients
// (the SDKs' types) read it as required.
func ConversationItemStatus(it *Item) {
	if it.Status != "" {
		return
	}
	switch it.Type {
	case ItemMessage, ItemFunctionCall, ItemFunctionCallOutput, ItemCustomToolCall, ItemCustomToolCallOutput:
		it.Status = StatusCompleted
	}
}
