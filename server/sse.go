package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"hearth"
)

// sseWriter frames events as server-sent events: `event: <type>` and `data: <one-line
// JSON>`, each frame written and flushed in one write so a client never sees half a
// frame. While nothing else is written it sends comment heartbeats, because clients
// give up on a silent stream (long prompt processing can take minutes).
type sseWriter struct {
	// openAI renames events to OpenAI's names for clients that expect them.
	openAI bool
	mu     sync.Mutex
	w      http.ResponseWriter
	rc     *http.ResponseController
	last   time.Time
	err    error
	stop   chan struct{}
	done   chan struct{}
	// stopped stops the heartbeats once; closed ends the writer once.
	stopped, closed sync.Once
	// timeout bounds each frame's write and flush (0: none); fail, when set, is called
	// once the first write fails, to stop the response whose client stopped reading.
	timeout time.Duration
	fail    context.CancelCauseFunc
	// frameBuf is reused for every frame (under mu).
	frameBuf []byte
}

// DefaultWriteTimeout bounds one SSE frame's write: a client that reads nothing for a
// minute is gone as far as hearth is concerned (the WebSocket mode uses the same).
const DefaultWriteTimeout = time.Minute

// errClientStalled is the cause of a response stopped because its client stopped
// reading the stream; it is stored incomplete like any other disconnect.
var errClientStalled = errors.New("the client stopped reading the stream")

func newSSEWriter(w http.ResponseWriter, heartbeat time.Duration, d dialect) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	// Reverse proxies such as nginx buffer responses unless told not to.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w), last: time.Now(), stop: make(chan struct{}), done: make(chan struct{}), openAI: d == dialectOpenAI}
	s.rc.Flush()
	go s.heartbeats(heartbeat)
	return s
}

// bound gives every later frame a write deadline of timeout. Without it a client that
// stops reading blocks the writer (and the response, and its model's slot) for ever
// once the socket buffers fill. With stopRun the returned context ends when a write
// fails, so the response stops, frees its slot and is stored incomplete; a background
// response keeps running without its stream.
func (s *sseWriter) bound(ctx context.Context, timeout time.Duration, stopRun bool) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timeout = timeout
	if !stopRun {
		return ctx
	}
	ctx, s.fail = context.WithCancelCause(ctx)
	return ctx
}

// Close stops the heartbeats and lifts the write deadline, so the connection's next
// request starts without it. Done calls it; handlers defer it too, so an early return
// or a panic does not leave a heartbeat goroutine writing to a finished response.
func (s *sseWriter) Close() {
	s.stopHeartbeats()
	s.closed.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.timeout > 0 {
			s.rc.SetWriteDeadline(time.Time{})
		}
		if s.fail != nil {
			s.fail(context.Canceled) // releases the context; the run is over
		}
	})
}

func (s *sseWriter) heartbeats(every time.Duration) {
	defer close(s.done)
	if every <= 0 {
		return
	}
	t := time.NewTicker(every / 2)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			if time.Since(s.last) >= every {
				s.writeLocked([]byte(": keep-alive\n\n"))
			}
			s.mu.Unlock()
		}
	}
}

// Event writes one event frame.
func (s *sseWriter) Event(e hearth.Event) {
	typ, data := eventJSON(e, s.openAI)
	s.frame(typ, data)
}

// Stored writes one frame of an event read back from a journal (JSON in hearth's
// names), in the client's dialect.
func (s *sseWriter) Stored(typ string, data []byte) {
	s.frame(dialectJSON(typ, data, s.openAI))
}

func (s *sseWriter) frame(typ string, data []byte) {
	s.mu.Lock()
	// One buffer for every frame of the stream: the write is done with it before the
	// next frame is built (writeLocked returns once the bytes are written).
	f := append(s.frameBuf[:0], "event: "...)
	f = append(f, typ...)
	f = append(f, "\ndata: "...)
	f = append(f, data...)
	f = append(f, "\n\n"...)
	s.frameBuf = f
	s.writeLocked(f)
	s.mu.Unlock()
}

// Done ends the stream with `data: [DONE]`, as OpenAI's clients expect.
func (s *sseWriter) Done() {
	s.stopHeartbeats()
	s.mu.Lock()
	s.writeLocked([]byte("data: [DONE]\n\n"))
	s.mu.Unlock()
	s.Close()
}

func (s *sseWriter) stopHeartbeats() {
	s.stopped.Do(func() {
		close(s.stop)
		<-s.done
	})
}

func (s *sseWriter) writeLocked(b []byte) {
	if s.err != nil {
		return
	}
	if s.timeout > 0 {
		s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	}
	_, err := s.w.Write(b)
	if err == nil {
		if err = s.rc.Flush(); errors.Is(err, http.ErrNotSupported) {
			err = nil
		}
	}
	if err != nil {
		s.err = err
		if s.fail != nil {
			s.fail(errClientStalled)
		}
		return
	}
	s.last = time.Now()
}

// eventJSON is an event's type and JSON as sent on the wire (an SSE frame's data, a
// WebSocket message), named in OpenAI's dialect when openAI is set.
func eventJSON(e hearth.Event, openAI bool) (string, []byte) {
	// Sized for a delta event, the one sent per token, so that it takes one allocation.
	typ, data := appendEventJSON(make([]byte, 0, 192+len(e.Delta)), e)
	return dialectJSON(typ, data, openAI)
}

// appendEventJSON appends the event's JSON in hearth's names to dst and returns its
// type with it.
func appendEventJSON(dst []byte, e hearth.Event) (string, []byte) {
	data, err := e.AppendJSON(dst)
	if err != nil {
		// An event that cannot be marshalled is a bug; losing it would break the
		// client's state machine silently, so say so in the stream.
		data, _ = hearth.Event{Type: hearth.EventError, SequenceNumber: e.SequenceNumber,
			Error: hearth.ServerError("internal error encoding an event")}.AppendJSON(dst[:0])
		return hearth.EventError, data
	}
	return e.Type, data
}

// dialectJSON renames an event of type typ (JSON data) to OpenAI's name for clients
// that expect it.
func dialectJSON(typ string, data []byte, openAI bool) (string, []byte) {
	if openAI {
		if name := hearth.OpenAIEventType(typ); name != typ {
			// "type" is the first key the event marshals, so this renames only it.
			data = bytes.Replace(data, []byte(`"type":"`+typ+`"`), []byte(`"type":"`+name+`"`), 1)
			typ = name
		}
	}
	return typ, data
}
