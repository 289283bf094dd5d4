package storage

import (
	"errors"
	"iter"
	"slices"
)

// CopyTable is one table of records as `hearth db copy` moves it from one store to
// another: its name and the columns both stores' schemas have. The source hands over
// rows of these columns as Go values (string, int64, []byte, nil for NULL), and the
// target converts what its own types want; what its schema adds of its own
// (PostgreSQL's replica and sequence columns, its chain epoch) it fills in itself.
type CopyTable struct {
	Name    string
	Columns []string
}

// CopyTables lists the tables a copy moves, parents before children. Usage is not a
// table (it is read from the responses), nor are saved prompts (the contexts' prompt),
// nor MCP approvals (items of the responses). Rows go in the order the source stored
// them, so that "the latest copy of an item" and the keys' order stay as they were.
var CopyTables = []CopyTable{
	{"responses", []string{"id", "owner", "model", "status", "background", "previous_response_id", "request", "response",
		"error", "input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens", "created_at", "completed_at",
		"input_pack", "output_pack", "runtime"}},
	{"items", []string{"response_id", "kind", "position", "item_id", "type", "body"}},
	{"contexts", []string{"response_id", "context", "stamp", "prompt"}},
	{"events", []string{"response_id", "first_seq", "last_seq", "last_type", "data"}},
	{"journals", []string{"response_id", "ended_at"}},
	{"conversations", []string{"id", "owner", "metadata", "created_at"}},
	{"conversation_items", []string{"conversation_id", "position", "item_id", "type", "body", "response_id"}},
	{"api_keys", []string{"id", "name", "hash", "prefix", "role", "cache_group", "created_at", "revoked_at"}},
}

// IsCopyTable reports whether name is one of CopyTables.
func IsCopyTable(name string) bool {
	return slices.ContainsFunc(CopyTables, func(t CopyTable) bool { return t.Name == name })
}

// CopySource is a store a copy reads from: each table's rows in the order it stored
// them, and its count of a table's rows, which the copy checks the target against.
type CopySource interface {
	CopyRows(t CopyTable) iter.Seq2[[]any, error]
	CountRows(table string) (int64, error)
}

// ErrNotEmpty: a copy's target already holds records and the copy was not told to add
// to them.
var ErrNotEmpty = errors.New("storage: the target database already holds records")
