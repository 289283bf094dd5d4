package toolgrammar

import (
	"encoding/json"
	"fmt"
)

// EventKind tells what an Event carries.
type EventKind uint8

const (
	// TextDelta is message text.
	TextDelta EventKind = iota + 1
	// ReasoningDelta is reasoning text.
	ReasoningDelta
	// ReasoningEnd closes a reasoning block. Decision point: the engine may
	// stop here and continue constrained (e.g. tool_choice "required").
	ReasoningEnd
	// CallOpen: a tool-call opener was seen. Decision point: output[:Offset]
	// ends with the opener, so the engine can stop and continue with
	// CallSchema.
	CallOpen
	// CallBegin: the call's name is complete (Name, Index). Decision point:
	// for formats with the name outside the JSON, output[:Offset] ends right
	// before the arguments.
	CallBegin
	// ArgumentsDelta is a fragment of the call's arguments as compact JSON;
	// the fragments of a call concatenate to CallEnd's Text.
	ArgumentsDelta
	// CallEnd: the call is complete; Text holds the canonical JSON arguments
	// (compact, keys in generated order). Decision point.
	CallEnd
	// Malformed: a span that looked like a call but is not one. Text is the
	// raw span, Reason says why. When Index >= 0 it withdraws the call begun
	// with that index. With MalformedAsText a TextDelta of the span follows.
	Malformed
)

var kindNames = [...]string{
	TextDelta:      "text",
	ReasoningDelta: "reasoning",
	ReasoningEnd:   "reasoning_end",
	CallOpen:       "call_open",
	CallBegin:      "call_begin",
	ArgumentsDelta: "arguments",
	CallEnd:        "call_end",
	Malformed:      "malformed",
}

func (k EventKind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", k)
}

// MarshalText lets golden files spell kinds by name.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText is the inverse of MarshalText.
func (k *EventKind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n != "" && n == string(b) {
			*k = EventKind(i)
			return nil
		}
	}
	return fmt.Errorf("toolgrammar: unknown event kind %q", b)
}

// IsDecisionPoint reports whether the engine may stop generation at this
// event and continue with a constrained request.
func (k EventKind) IsDecisionPoint() bool {
	return k == ReasoningEnd || k == CallOpen || k == CallBegin || k == CallEnd
}

// IsDelta reports whether the event carries a piece of a longer stream
// (text, reasoning, arguments); how such pieces are cut depends on chunking.
func (k EventKind) IsDelta() bool {
	return k == TextDelta || k == ReasoningDelta || k == ArgumentsDelta
}

// Event is one thing the parser recognised. Text fields are always valid
// UTF-8.
type Event struct {
	Kind EventKind `json:"kind"`
	// Text: the delta for *Delta kinds, the canonical arguments for CallEnd,
	// the raw span for Malformed, the opener for CallOpen.
	Text string `json:"text,omitempty"`
	// Name is set on CallBegin and CallEnd.
	Name string `json:"name,omitempty"`
	// Index numbers calls from 0 in output order; -1 when not about a call.
	Index int `json:"index"`
	// Reason explains Malformed, and an unterminated ReasoningEnd.
	Reason string `json:"reason,omitempty"`
	// Offset is the number of output bytes consumed when the event was
	// produced; for decision points, output[:Offset] ends exactly at the
	// delimiter or byte that triggered it.
	Offset int64 `json:"offset"`
}

func (e Event) String() string {
	b, _ := json.Marshal(e)
	return string(b)
}

// MalformedPolicy says what becomes of a span that is not a valid call.
type MalformedPolicy uint8

const (
	// MalformedAsText reports the span and then emits it as message text, so
	// nothing the model wrote is lost.
	MalformedAsText MalformedPolicy = iota
	// MalformedAsError only reports the span; the engine turns it into an
	// error or retries.
	MalformedAsError
)

// Tool is the part of a function tool the parser and schema builder need.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments, as the client sent it
	// (its key order is kept).
	Parameters json.RawMessage
}

// Options configure a Parser.
type Options struct {
	// Tools type XML parameter values; the parser accepts calls of any name.
	Tools []Tool
	// StartInReasoning: the prompt ended inside reasoning (see
	// Format.PromptOpensReasoning), or the model omits the opener and
	// thinking was requested. An opener written anyway is swallowed.
	StartInReasoning bool
	// Malformed chooses what happens to spans that are not valid calls.
	Malformed MalformedPolicy
	// BareCallTools are the tools a bare call may name, in a format whose calls may
	// come without their markers (Envelope.Bare on a python_call envelope): an answer
	// that is nothing but Python calls, each naming one of these, is those calls;
	// otherwise it is text. nil means the names of Tools; an empty list allows no
	// bare call (the engine passes the tools tool_choice lets the model call).
	BareCallTools []string
	// PauseAtDecisions makes Feed return right after a decision point,
	// keeping the rest of the chunk unparsed (Parser.Pending). The engine
	// then either resumes with Feed("") (or the next chunk), or drops the
	// rest with Parser.Discard and feeds a constrained continuation instead.
	PauseAtDecisions bool
}
