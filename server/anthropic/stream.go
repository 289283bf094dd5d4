package anthropic

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/server/door"
)

// streamSink encodes the core's events as Anthropic's stream: message_start, then per
// content block content_block_start, its deltas (text_delta, thinking_delta,
// signature_delta, input_json_delta) and content_block_stop, then message_delta (the
// stop reason and usage) and message_stop; ping while nothing else is written (the
// model loading or reading a long prompt), and an error event when the response fails.
type streamSink struct {
	*door.SSE
	model string
	d     *decoded
	// ended: message_stop or an error was written; nothing follows.
	ended bool
	// blocks are the open blocks by item id; next is the next block's index.
	blocks map[string]*openBlock
	next   int
}

type openBlock struct {
	index int
	// sent: the block's deltas so far carried something (a call's arguments).
	sent bool
}

// pingFrame is Anthropic's keep-alive, sent while nothing else is written (the
// model loading or reading a long prompt, a request waiting for its slot).
var pingFrame = []byte("event: ping\ndata: {\"type\":\"ping\"}\n\n")

func newStreamSink(c *gin.Context, model string, d *decoded, host door.Host) *streamSink {
	return &streamSink{SSE: door.NewSSE(c.Writer, host.Heartbeat, host.WriteTimeout, pingFrame),
		model: model, d: d, blocks: map[string]*openBlock{}}
}

// Open starts the stream once the response has started (respond.Opener): an error
// before that is answered as a JSON error. Its frames get the write deadline, and
// unless it runs in the background the response stops when a write fails.
func (s *streamSink) Open(ctx context.Context, runtime string, background bool) context.Context {
	s.Start()
	return s.Bound(ctx, !background)
}

func (s *streamSink) write(event string, data any) {
	if s.ended {
		return
	}
	b, _ := json.Marshal(data)
	s.Frame(event, b)
}

// end writes nothing more: no ping may follow message_stop or an error.
func (s *streamSink) end() {
	s.ended = true
	s.StopBeats()
}

// Done: message_stop was written with the terminal event.
func (s *streamSink) Done() {}

// fail ends the stream with an error event.
func (s *streamSink) fail(he *hearth.Error) {
	s.write("error", errorBody(he))
	s.end()
}

func (s *streamSink) startBlock(id string, b block) {
	i := s.next
	s.next++
	s.blocks[id] = &openBlock{index: i}
	s.write("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": b})
}

func (s *streamSink) delta(id string, d map[string]any) {
	ob := s.blocks[id]
	if ob == nil {
		return
	}
	ob.sent = true
	s.write("content_block_delta", map[string]any{"type": "content_block_delta", "index": ob.index, "delta": d})
}

func (s *streamSink) stopBlock(id string) {
	ob := s.blocks[id]
	if ob == nil {
		return
	}
	delete(s.blocks, id)
	s.write("content_block_stop", map[string]any{"type": "content_block_stop", "index": ob.index})
}

// Event encodes one core event (the core calls it from one goroutine).
func (s *streamSink) Event(e hearth.Event) {
	switch e.Type {
	case hearth.EventResponseCreated:
		s.Start()
		msg := messageJSON{ID: messageID(e.Response.ID), Type: "message", Role: "assistant", Model: cmp.Or(e.Response.Model, s.model), Content: []block{}}
		// The prompt's count is known when its evaluation ends: message_start says 0,
		// message_delta carries the response's input tokens (clients take them from
		// there, as they do Anthropic's own updated counts).
		s.write("message_start", map[string]any{"type": "message_start", "message": msg})
		// Pings come after message_start, as Anthropic's do.
		s.Beat()
	case hearth.EventOutputItemAdded:
		it := e.Item
		switch it.Type {
		case hearth.ItemReasoning:
			s.startBlock(it.ID, block{Type: "thinking", Thinking: ptr(""), Signature: ptr("")})
		case hearth.ItemFunctionCall:
			s.startBlock(it.ID, block{Type: "tool_use", ID: it.CallID, Name: it.Name, Input: json.RawMessage(`{}`)})
		}
	case hearth.EventContentPartAdded:
		if e.Part != nil && (e.Part.Type == hearth.PartOutputText || e.Part.Type == hearth.PartRefusal) {
			s.startBlock(partKey(e), block{Type: "text", Text: ptr("")})
		}
	case hearth.EventOutputTextDelta, hearth.EventRefusalDelta:
		s.delta(partKey(e), map[string]any{"type": "text_delta", "text": e.Delta})
	case hearth.EventContentPartDone:
		s.stopBlock(partKey(e))
	case hearth.EventReasoningDelta, hearth.EventReasoningTextDelta:
		if !s.d.omitThinking {
			s.delta(e.ItemID, map[string]any{"type": "thinking_delta", "thinking": e.Delta})
		}
	case hearth.EventFunctionCallArgumentsDelta:
		s.delta(e.ItemID, map[string]any{"type": "input_json_delta", "partial_json": e.Delta})
	case hearth.EventOutputItemDone:
		it := e.Item
		switch it.Type {
		case hearth.ItemReasoning:
			if it.EncryptedContent != "" {
				s.delta(it.ID, map[string]any{"type": "signature_delta", "signature": it.EncryptedContent})
			}
		case hearth.ItemFunctionCall:
			if ob := s.blocks[it.ID]; ob != nil && !ob.sent && it.Arguments != "" {
				s.delta(it.ID, map[string]any{"type": "input_json_delta", "partial_json": it.Arguments})
			}
		}
		s.stopBlock(it.ID)
	case hearth.EventResponseCompleted, hearth.EventResponseIncomplete:
		r := e.Response
		u := usageOf(r.Usage)
		s.write("message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": stopReason(r), "stop_sequence": stopSequence(r)},
			"usage": u})
		s.write("message_stop", map[string]string{"type": "message_stop"})
		s.end()
	case hearth.EventResponseFailed:
		he := &hearth.Error{Status: http.StatusInternalServerError, Message: "The response failed."}
		if e.Response != nil && e.Response.Error != nil {
			he.Message = e.Response.Error.Message
		}
		s.fail(he)
	case hearth.EventError:
		he := e.Error
		if he == nil {
			he = &hearth.Error{Status: http.StatusInternalServerError, Message: "The response failed."}
		}
		s.fail(he)
	}
}

// partKey names a message's content part as a block.
func partKey(e hearth.Event) string {
	return e.ItemID + "#" + strconv.Itoa(e.ContentIndex)
}
