package hearth

import (
	"strconv"
	"unicode/utf8"
)

// AppendJSON appends the event's JSON, the same bytes MarshalJSON gives, to dst.
//
// The delta events (one per generated token: text, refusal, reasoning, summary,
// arguments and custom tool input) are written directly, without reflection and
// without allocating beyond dst's growth: a streamed response sends one for every
// token, and encoding them with encoding/json cost four allocations and about a
// kilobyte a token. The events that carry the whole response are written around
// Response.MarshalJSON (AppendResponseEvent), without encoding/json's second pass
// over the response. Every other event goes through MarshalJSON.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	var index, key string
	switch e.Type {
	case EventOutputTextDelta:
		if e.Logprobs != nil {
			return e.appendMarshalled(dst)
		}
		index, key = "content_index", "logprobs"
	case EventRefusalDelta, EventReasoningDelta:
		index = "content_index"
	case EventReasoningSummaryTextDelta:
		index = "summary_index"
	case EventFunctionCallArgumentsDelta, EventCustomToolCallInputDelta:
	case EventResponseCreated, EventResponseQueued, EventResponseInProgress,
		EventResponseCompleted, EventResponseIncomplete, EventResponseFailed:
		if e.Response == nil || !plainJSONString(e.Type) {
			return e.appendMarshalled(dst)
		}
		r, err := e.Response.MarshalJSON()
		if err != nil {
			return dst, err
		}
		return AppendResponseEvent(dst, e.Type, e.SequenceNumber, r), nil
	default:
		return e.appendMarshalled(dst)
	}
	if !plainJSONString(e.Type) || !plainJSONString(e.ItemID) || !plainJSONString(e.Delta) {
		return e.appendMarshalled(dst)
	}
	dst = append(dst, `{"type":"`...)
	dst = append(dst, e.Type...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(e.SequenceNumber), 10)
	dst = append(dst, `,"item_id":"`...)
	dst = append(dst, e.ItemID...)
	dst = append(dst, `","output_index":`...)
	dst = strconv.AppendInt(dst, int64(e.OutputIndex), 10)
	switch index {
	case "content_index":
		dst = append(dst, `,"content_index":`...)
		dst = strconv.AppendInt(dst, int64(e.ContentIndex), 10)
	case "summary_index":
		dst = append(dst, `,"summary_index":`...)
		dst = strconv.AppendInt(dst, int64(e.SummaryIndex), 10)
	}
	dst = append(dst, `,"delta":"`...)
	dst = append(dst, e.Delta...)
	dst = append(dst, '"')
	if key == "logprobs" {
		dst = append(dst, `,"logprobs":[]`...)
	}
	return append(dst, '}'), nil
}

// appendMarshalled calls MarshalJSON itself: json.Marshal(e) would scan its whole
// output once more to compact and check it, which MarshalJSON's own json.Marshal
// calls have done (a response.completed event carries the whole response).
// AppendResponseEvent appends the JSON of an event of type typ (one that carries the
// whole response: response.created, .completed and the like) whose response
// encodes as response (Response.MarshalJSON's bytes), as json.Marshal of the Event
// writes it: Response.MarshalJSON's bytes are compact and HTML-escaped already, so
// json.Marshal's second pass over them changes nothing (TestEventAppendJSONWholeResponse).
// A caller that has the response encoded (a final response is also stored and
// replied) saves encoding it again.
func AppendResponseEvent(dst []byte, typ string, seq int, response []byte) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","sequence_number":`...)
	dst = strconv.AppendInt(dst, int64(seq), 10)
	dst = append(dst, `,"response":`...)
	dst = append(dst, response...)
	return append(dst, '}')
}

func (e Event) appendMarshalled(dst []byte) ([]byte, error) {
	b, err := e.MarshalJSON()
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// plainJSONString reports whether encoding/json writes s between quotes unchanged:
// valid UTF-8 with no control character, no quote or backslash, none of the
// characters it escapes for HTML (<, >, &) and no U+2028 or U+2029.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return false
		}
		i += size
	}
	return true
}
