package storage

import (
	"encoding/json"
)

// Event is one journaled event of a response: its sequence number, its type and its
// JSON as sent.
type Event struct {
	Seq  int
	Type string
	Data json.RawMessage
}
