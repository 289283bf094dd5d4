package storage

import (
	"encoding/json"
	"time"
)

// Status is the lifecycle status of a response, spelled as in the API.
type Status string

// The statuses a stored response can have. queued and in_progress are "in flight";
// the others are terminal.
const (
	StatusQueued     Status = "queued"
	StatusInProgress Status = "in_progress"
	StatusCompleted  Status = "completed"
	StatusIncomplete Status = "incomplete"
	StatusFailed     Status = "failed"
	StatusCancelled  Status = "cancelled"
)

// InFlight reports whether a response with this status may still change.
func (s Status) InFlight() bool { return s == StatusQueued || s == StatusInProgress }

// Terminal reports whether s is a final status (completed, incomplete, failed,
// cancelled).
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusIncomplete, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// Settled reports whether a response of status s is stored for good: completed,
// incomplete or failed. A cancelled response may still get the output its run made
// before it noticed (CompleteResponse), and one in flight will end.
func (s Status) Settled() bool {
	return s == StatusCompleted || s == StatusIncomplete || s == StatusFailed
}

func (s Status) valid() bool { return s.InFlight() || s.Terminal() }

// Item is one input or output item of a response.
type Item struct {
	// ID is the item's id ("msg_...", "fc_..."). ListInputItems pages by it, so the
	// caller should give every stored item one; storage does not invent ids.
	ID string
	// Type is the item's "type" ("message", "function_call", ...), kept beside the JSON
	// so that callers can route items without decoding them.
	Type string
	// JSON is the item exactly as the API presents it.
	JSON json.RawMessage
}

// Usage is the token accounting of a response.
type Usage struct {
	InputTokens     int64
	OutputTokens    int64
	CachedTokens    int64 // of InputTokens, served from the runtime's prompt cache
	ReasoningTokens int64 // of OutputTokens, spent on reasoning
}

// Response is a stored response, without its items.
type Response struct {
	ID                 string
	Owner              string // OwnerOf(api key)
	Model              string
	Status             Status
	Background         bool
	PreviousResponseID string // "" when the response starts a conversation
	// Request holds the request parameters (model, instructions, tools, ...) without the
	// input items, which are stored as items.
	Request json.RawMessage
	// Body is the full response object as the API returns it. Status changes made by
	// storage itself (Cancel, UpdateStatus, RecoverInFlight) patch its "status" (and
	// "error") fields so that it agrees with Status.
	Body        json.RawMessage
	Error       json.RawMessage // nil unless the response failed
	Usage       Usage
	CreatedAt   time.Time
	CompletedAt time.Time // zero while in flight
}

// NewResponse is what CreateResponse stores when a response is created.
type NewResponse struct {
	ID                 string
	Owner              string
	Model              string
	Status             Status // StatusQueued or StatusInProgress
	Background         bool
	PreviousResponseID string
	Request            json.RawMessage
	Body               json.RawMessage // the response object as first returned; may be nil
	Input              []Item
	CreatedAt          time.Time // zero means now
}

// Final is what CompleteResponse stores when a response reaches a terminal status.
type Final struct {
	Status      Status // completed, incomplete, failed or cancelled
	Body        json.RawMessage
	Usage       Usage
	Error       json.RawMessage // the error object of a failed response
	Output      []Item
	CompletedAt time.Time // zero means now
	// Events are the response's last journal events (those not yet appended, the
	// terminal ones included), written in the same transaction as the final state, so
	// a journal is complete exactly when its response is finished. EndJournal marks
	// the journal ended (prunable), with or without Events.
	Events     []Event
	EndJournal bool
	// Runtime labels the runtime that served the response (engine/pool), so that a
	// continuation can go back to the KV cache holding its prefix; "" leaves it unset.
	Runtime string
	// SavedPrompt returns the response's prompt as a record the caller reads back
	// (CheckpointPrompt); it is called only when the response becomes its chain's
	// checkpoint, inside the transaction. nil: nothing to save.
	SavedPrompt func() []byte
	// Distance, when not 0, is what the caller knows of the links from the response
	// up to its chain's nearest checkpoint or root (the chain it read, plus one).
	// Below CheckpointInterval it spares the walk that decides whether the response
	// becomes a checkpoint: a hint that is too low (a checkpoint above was dropped)
	// only makes a later one come later. Depth, when not 0, is the response's links
	// from its chain's root, for CheckpointInterval.
	Distance, Depth int
}

// Order is the sort order of a list.
type Order string

// List orders. The zero value means Desc, the API's default.
const (
	Desc Order = "desc"
	Asc  Order = "asc"
)

// Chain is the stored conversation behind a previous_response_id: every response from
// the root of the chain down to the one asked for.
type Chain struct {
	// Items is the context in order: for each link, its input items then its output
	// items. Links' Input and Output are sub-slices of it, so do not append to either.
	Items []Item
	// Links runs from the root (Links[0]) to the response asked for (the last one).
	Links []Link
	// Request holds the request parameters of the last link. Earlier links' parameters
	// are not loaded: nothing in them is inherited (instructions, tools and the rest
	// apply to one request only), and tool lists make them large.
	Request json.RawMessage
	// Base is the checkpoint the load started from; nil when it walked to the root.
	Base *Checkpoint
}

// Checkpoint describes the materialised context a chain was loaded from.
type Checkpoint struct {
	// ID is the response whose context it is: the last link it holds.
	ID string
	// Stamp names its contents: every checkpoint written gets a new
	// one, and a checkpoint is never changed, only dropped. "" for checkpoints written
	// before stamps, which are always read.
	Stamp string
	// Items is how many of the chain's first items it gave.
	Items int
	// Omitted: it was not read (LoadChainTail, a stamp the caller holds), and the
	// chain's Items and Links are those after it.
	Omitted bool
}

// Link is one response of a Chain.
type Link struct {
	ID     string
	Model  string
	Status Status
	Input  []Item
	Output []Item
}

// Last returns the response the chain was loaded for.
func (c *Chain) Last() *Link { return &c.Links[len(c.Links)-1] }
