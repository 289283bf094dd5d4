package hearth

import (
	"encoding/json"
	"fmt"
)

// Streaming event types: exactly the schema's list. Raw reasoning uses the
// Open Responses names (response.reasoning.*). OpenAI's API and clients call
// it response.reasoning_text.*, and the official openai npm SDK's stream
// helper throws on the spec's names, so the server renames these two events
// for OpenAI clients (see OpenAIEventType). The summary events are known to
// both sides, which is why the builder also streams them when a summary was
// asked for.
const (
	EventResponseCreated            = "response.created"
	EventResponseQueued             = "response.queued"
	EventResponseInProgress         = "response.in_progress"
	EventResponseCompleted          = "response.completed"
	EventResponseIncomplete         = "response.incomplete"
	EventResponseFailed             = "response.failed"
	EventOutputItemAdded            = "response.output_item.added"
	EventOutputItemDone             = "response.output_item.done"
	EventContentPartAdded           = "response.content_part.added"
	EventContentPartDone            = "response.content_part.done"
	EventOutputTextDelta            = "response.output_text.delta"
	EventOutputTextDone             = "response.output_text.done"
	EventOutputTextAnnotationAdded  = "response.output_text.annotation.added"
	EventRefusalDelta               = "response.refusal.delta"
	EventRefusalDone                = "response.refusal.done"
	EventReasoningDelta             = "response.reasoning.delta"
	EventReasoningDone              = "response.reasoning.done"
	EventReasoningSummaryPartAdded  = "response.reasoning_summary_part.added"
	EventReasoningSummaryPartDone   = "response.reasoning_summary_part.done"
	EventReasoningSummaryTextDelta  = "response.reasoning_summary_text.delta"
	EventReasoningSummaryTextDone   = "response.reasoning_summary_text.done"
	EventFunctionCallArgumentsDelta = "response.function_call_arguments.delta"
	EventFunctionCallArgumentsDone  = "response.function_call_arguments.done"
	EventError                      = "error"
)

// Event is one streaming event. Type says which fields mean something;
// MarshalJSON writes exactly the schema's fields for that type, on one line,
// so a server frames it as "event: <Type>\ndata: <json>\n\n" (SSE) or sends
// it as one WebSocket message.
//
// Response and Item are snapshots: the builder never changes them after it
// has emitted the event, so an event may be marshalled later or elsewhere.
type Event struct {
	Type           string
	SequenceNumber int

	Response *Response // response.created ... response.failed

	OutputIndex     int
	Item            *Item // output_item.added/.done
	ItemID          string
	ContentIndex    int
	SummaryIndex    int
	AnnotationIndex int
	Part            *ContentPart // content_part.*, reasoning_summary_part.*
	Annotation      *Annotation

	Delta     string // every *.delta
	Text      string // output_text.done, reasoning.done, reasoning_summary_text.done
	Refusal   string // refusal.done
	Arguments string // function_call_arguments.done, a kind's EventItemArguments events
	Input     string // custom_tool_call_input.done
	Logprobs  []LogProb

	Error *Error // error
}

type eventHead struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
}

type eventItemHead struct {
	Type           string `json:"type"`
	SequenceNumber int    `json:"sequence_number"`
	ItemID         string `json:"item_id"`
	OutputIndex    int    `json:"output_index"`
}

// MarshalJSON writes the event in its schema's shape.
func (e Event) MarshalJSON() ([]byte, error) {
	h := eventHead{e.Type, e.SequenceNumber}
	ih := eventItemHead{e.Type, e.SequenceNumber, e.ItemID, e.OutputIndex}
	logprobs := e.Logprobs
	if logprobs == nil {
		logprobs = []LogProb{}
	}
	switch e.Type {
	case EventResponseCreated, EventResponseQueued, EventResponseInProgress,
		EventResponseCompleted, EventResponseIncomplete, EventResponseFailed:
		if e.Response == nil {
			return nil, fmt.Errorf("hearth: %s event without a response", e.Type)
		}
		return json.Marshal(struct {
			eventHead
			Response *Response `json:"response"`
		}{h, e.Response})

	case EventOutputItemAdded, EventOutputItemDone:
		return json.Marshal(struct {
			eventHead
			OutputIndex int   `json:"output_index"`
			Item        *Item `json:"item"`
		}{h, e.OutputIndex, e.Item})

	case EventContentPartAdded, EventContentPartDone:
		return json.Marshal(struct {
			eventItemHead
			ContentIndex int          `json:"content_index"`
			Part         *ContentPart `json:"part"`
		}{ih, e.ContentIndex, e.Part})

	case EventReasoningSummaryPartAdded, EventReasoningSummaryPartDone:
		return json.Marshal(struct {
			eventItemHead
			SummaryIndex int          `json:"summary_index"`
			Part         *ContentPart `json:"part"`
		}{ih, e.SummaryIndex, e.Part})

	case EventOutputTextDelta:
		return json.Marshal(struct {
			eventItemHead
			ContentIndex int       `json:"content_index"`
			Delta        string    `json:"delta"`
			Logprobs     []LogProb `json:"logprobs"`
		}{ih, e.ContentIndex, e.Delta, logprobs})

	case EventOutputTextDone:
		return json.Marshal(struct {
			eventItemHead
			ContentIndex int       `json:"content_index"`
			Text         string    `json:"text"`
			Logprobs     []LogProb `json:"logprobs"`
		}{ih, e.ContentIndex, e.Text, logprobs})

	case EventOutputTextAnnotationAdded:
		return json.Marshal(struct {
			eventItemHead
			ContentIndex    int         `json:"content_index"`
			AnnotationIndex int         `json:"annotation_index"`
			Annotation      *Annotation `json:"annotation"`
		}{ih, e.ContentIndex, e.AnnotationIndex, e.Annotation})

	case EventRefusalDelta, EventReasoningDelta:
		return json.Marshal(struct {
			eventItemHead
			ContentIndex int    `json:"content_index"`
			Delta        string `json:"delta"`
		}{ih, e.ContentIndex, e.Delta})

	case EventRefusalDone:
		return json.Marshal(struct {
			eventItemHead
			ContentIndex int    `json:"content_index"`
			Refusal      string `json:"refusal"`
		}{ih, e.ContentIndex, e.Refusal})

	case EventReasoningDone:
		return json.Marshal(struct {
			eventItemHead
			ContentIndex int    `json:"content_index"`
			Text         string `json:"text"`
		}{ih, e.ContentIndex, e.Text})

	case EventReasoningSummaryTextDelta:
		return json.Marshal(struct {
			eventItemHead
			SummaryIndex int    `json:"summary_index"`
			Delta        string `json:"delta"`
		}{ih, e.SummaryIndex, e.Delta})

	case EventReasoningSummaryTextDone:
		return json.Marshal(struct {
			eventItemHead
			SummaryIndex int    `json:"summary_index"`
			Text         string `json:"text"`
		}{ih, e.SummaryIndex, e.Text})

	case EventFunctionCallArgumentsDelta:
		return json.Marshal(struct {
			eventItemHead
			Delta string `json:"delta"`
		}{ih, e.Delta})

	case EventFunctionCallArgumentsDone:
		return json.Marshal(struct {
			eventItemHead
			Arguments string `json:"arguments"`
		}{ih, e.Arguments})

	case EventCustomToolCallInputDelta:
		return json.Marshal(struct {
			eventItemHead
			Delta string `json:"delta"`
		}{ih, e.Delta})

	case EventCustomToolCallInputDone:
		return json.Marshal(struct {
			eventItemHead
			Input string `json:"input"`
		}{ih, e.Input})

	case EventError:
		if e.Error == nil {
			return nil, fmt.Errorf("hearth: error event without an error")
		}
		return json.Marshal(struct {
			eventHead
			Error errorBody `json:"error"`
		}{h, e.Error.body()})
	}
	if shape, ok := eventShapes[e.Type]; ok {
		switch shape {
		case EventItemDelta:
			return json.Marshal(struct {
				eventItemHead
				Delta string `json:"delta"`
			}{ih, e.Delta})
		case EventItemArguments:
			return json.Marshal(struct {
				eventItemHead
				Arguments string `json:"arguments"`
			}{ih, e.Arguments})
		}
		return json.Marshal(ih)
	}
	return nil, fmt.Errorf("hearth: cannot marshal event of type %q", e.Type)
}

// OpenAI's events of a custom tool call's input, streamed like a function call's
// arguments. The Open Responses schema has no custom tools; hearth sends these (to
// every client) only for requests that have custom tools.
const (
	EventCustomToolCallInputDelta = "response.custom_tool_call_input.delta"
	EventCustomToolCallInputDone  = "response.custom_tool_call_input.done"
)

// OpenAI's names of the raw reasoning events; not in the Open Responses schema.
const (
	EventReasoningTextDelta = "response.reasoning_text.delta"
	EventReasoningTextDone  = "response.reasoning_text.done"
)

// OpenAIEventType returns the name OpenAI's API gives an event type: the same name,
// except for raw reasoning, which OpenAI calls response.reasoning_text.*.
func OpenAIEventType(typ string) string {
	switch typ {
	case EventReasoningDelta:
		return EventReasoningTextDelta
	case EventReasoningDone:
		return EventReasoningTextDone
	}
	return typ
}
