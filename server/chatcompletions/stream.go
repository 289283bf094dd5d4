package chatcompletions

import (
	"context"
	"encoding/json"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/server/door"
)

// chunk is a chat.completion.chunk object.
type chunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint"`
	ServiceTier       string        `json:"service_tier"`
	Choices           []chunkChoice `json:"choices"`
	// Usage is null on every chunk but the last when the client asked for it
	// (stream_options.include_usage), absent otherwise.
	Usage *json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *logprobs `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role             string     `json:"role,omitempty"`
	Content          *string    `json:"content,omitempty"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	Refusal          string     `json:"refusal,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
}

var nullUsage = json.RawMessage("null")

// chunkStream frames a response's events as Chat Completions chunks over SSE
// (`data: {chunk}`, then `data: [DONE]`; door.SSE: keep-alive comments, a write
// deadline). It opens when the core starts the response (respond.Opener), so a request
// error before that is an ordinary JSON error.
type chunkStream struct {
	*door.SSE
	cr *chatRequest
	// The chunks' common fields, from the response once it is created.
	id, model string
	created   int64
	// calls are the tool calls' indexes in the choice, by item id.
	calls map[string]int
	// ended: the finish chunk or an error was sent; failed: an error, after which
	// no [DONE] follows.
	ended, failed bool
}

func newChunkStream(c *gin.Context, host door.Host, cr *chatRequest) *chunkStream {
	return &chunkStream{SSE: door.NewSSE(c.Writer, host.Heartbeat, host.WriteTimeout, []byte(": keep-alive\n\n")),
		cr: cr, calls: map[string]int{}}
}

// Open starts the stream of a response that has started on runtime; it returns the
// context the response runs under, which ends when a write fails (respond.Opener).
func (s *chunkStream) Open(ctx context.Context, runtime string, background bool) context.Context {
	s.Header().Set("x-hearth-runtime", runtime)
	s.Start()
	s.Beat()
	return s.Bound(ctx, !background)
}

// Event encodes one of the core's events as the chunk it makes, if any.
func (s *chunkStream) Event(e hearth.Event) {
	if s.ended {
		return
	}
	switch e.Type {
	case hearth.EventResponseCreated, hearth.EventResponseQueued:
		if s.id == "" && e.Response != nil {
			s.id, s.model, s.created = completionID(e.Response.ID), e.Response.Model, e.Response.CreatedAt
			empty := ""
			s.send(delta{Role: "assistant", Content: &empty}, nil, nil)
		}
	case hearth.EventOutputTextDelta:
		text := e.Delta
		var lp *logprobs
		if s.cr.logprobs {
			lp = &logprobs{Content: chatLogprobs(e.Logprobs)}
		}
		s.send(delta{Content: &text}, lp, nil)
	case hearth.EventReasoningDelta, hearth.EventReasoningSummaryTextDelta:
		s.send(delta{ReasoningContent: e.Delta}, nil, nil)
	case hearth.EventRefusalDelta:
		s.send(delta{Refusal: e.Delta}, nil, nil)
	case hearth.EventOutputItemAdded:
		if e.Item == nil {
			return
		}
		i := len(s.calls)
		switch e.Item.Type {
		case hearth.ItemFunctionCall:
			s.calls[e.Item.ID] = i
			s.send(delta{ToolCalls: []toolCall{{Index: &i, ID: e.Item.CallID, Type: "function",
				Function: &functionCall{Name: e.Item.Name}}}}, nil, nil)
		case hearth.ItemCustomToolCall:
			s.calls[e.Item.ID] = i
			s.send(delta{ToolCalls: []toolCall{{Index: &i, ID: e.Item.CallID, Type: "custom",
				Custom: &customCall{Name: e.Item.Name}}}}, nil, nil)
		}
	case hearth.EventFunctionCallArgumentsDelta:
		if i, ok := s.calls[e.ItemID]; ok && e.Delta != "" {
			s.send(delta{ToolCalls: []toolCall{{Index: &i, Function: &functionCall{Arguments: e.Delta}}}}, nil, nil)
		}
	case hearth.EventCustomToolCallInputDelta:
		if i, ok := s.calls[e.ItemID]; ok && e.Delta != "" {
			s.send(delta{ToolCalls: []toolCall{{Index: &i, Custom: &customCall{Input: e.Delta}}}}, nil, nil)
		}
	case hearth.EventResponseCompleted, hearth.EventResponseIncomplete:
		if e.Response == nil {
			return
		}
		calls := false
		for _, it := range e.Response.Output {
			calls = calls || it.Type == hearth.ItemFunctionCall || it.Type == hearth.ItemCustomToolCall
		}
		reason := finishReason(e.Response, calls)
		s.send(delta{}, nil, &reason)
		if s.cr.includeUsage {
			u, _ := json.Marshal(chatUsage(e.Response.Usage))
			raw := json.RawMessage(u)
			s.frame(chunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
				SystemFingerprint: SystemFingerprint, ServiceTier: "default", Choices: []chunkChoice{}, Usage: &raw})
		}
		s.ended = true
	case hearth.EventError:
		if e.Error != nil {
			s.fail(openAIError(e.Error))
		}
	case hearth.EventResponseFailed:
		msg, code := "The response failed.", hearth.CodeServerError
		if e.Response != nil && e.Response.Error != nil {
			msg, code = e.Response.Error.Message, e.Response.Error.Code
		}
		s.fail(&hearth.Error{Type: hearth.ErrTypeServer, Code: code, Message: msg})
	}
}

// send writes one chunk of one choice.
func (s *chunkStream) send(d delta, lp *logprobs, finish *string) {
	c := chunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		SystemFingerprint: SystemFingerprint, ServiceTier: "default",
		Choices: []chunkChoice{{Delta: d, Logprobs: lp, FinishReason: finish}}}
	if s.cr.includeUsage {
		c.Usage = &nullUsage
	}
	s.frame(c)
}

func (s *chunkStream) frame(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	s.Frame("", b)
}

// fail ends the stream with an error in OpenAI's shape, the frame OpenAI's clients
// raise as an error; no [DONE] follows.
func (s *chunkStream) fail(he *hearth.Error) {
	if s.ended {
		return
	}
	s.ended, s.failed = true, true
	s.frame(he)
}

// Done ends the stream with `data: [DONE]` (respond.Sink).
func (s *chunkStream) Done() {
	s.StopBeats()
	if !s.failed {
		s.Write([]byte("data: [DONE]\n\n"))
	}
	s.Close()
}
