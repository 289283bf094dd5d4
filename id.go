package hearth

import (
	"crypto/rand"
	"encoding/hex"
)

// ID prefixes, as OpenAI uses them, so that a client (or a person reading a
// log) can tell what an id names.
const (
	PrefixResponse       = "resp"
	PrefixMessage        = "msg"
	PrefixReasoning      = "rs"
	PrefixFunctionCall   = "fc"
	PrefixCallID         = "call"
	PrefixCustomToolCall = "ctc"
	PrefixCompaction     = "cmp"
	PrefixFunctionOutput = "fco"
)

// InputIDPrefix is the id prefix of an input item of type itemType that came
// without an id (a message's for types without one of their own).
func InputIDPrefix(itemType string) string {
	switch itemType {
	case ItemFunctionCall:
		return PrefixFunctionCall
	case ItemFunctionCallOutput, ItemCustomToolCallOutput:
		return PrefixFunctionOutput
	case ItemReasoning:
		return PrefixReasoning
	case ItemCustomToolCall:
		return PrefixCustomToolCall
	case ItemMessage:
		return PrefixMessage
	}
	if t := itemTypes[itemType]; t != nil && t.InputIDPrefix != "" {
		return t.InputIDPrefix
	}
	return PrefixMessage
}

// NewID returns prefix + "_" + 32 hex digits from crypto/rand. Ids are
// unguessable because a response id is also the capability to read it when
// auth is off.
func NewID(prefix string) string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand doc, Go 1.24+)
	return prefix + "_" + hex.EncodeToString(b[:])
}
