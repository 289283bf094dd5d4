package server

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/respond"
)

// sseWriter frames events as server-sent events: `event: <type>` and `data: <one-line
// JSON>`, each frame written and flushed in one write so a client never sees half a
// frame. While nothing else is written it sends comment heartbeats, because clients
// give up on a silent stream (long prompt processing can take minutes).
type sseWriter struct {
	// openAI renames events to OpenAI's names for clients that expect them.
	openAI bool
	// started: the headers are written and the heartbeats run (start).
	started bool
	// heartbeat is the silence after which a comment is sent; writeTimeout the
	// deadline Open and Begin give frames.
	heartbeat, writeTimeout time.Duration
	mu                      sync.Mutex
	w                       http.ResponseWriter
	rc                      *http.ResponseController
	last                    time.Time
	err                     error
	stop                    chan struct{}
	done                    chan struct{}
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
	s := &sseWriter{w: w, openAI: d == dialectOpenAI, heartbeat: heartbeat}
	s.start()
	return s
}

// newSSEStream is an SSE stream for c that starts when the core opens it
// (respond.Opener, respond.Replayer): an error before that is answered as JSON.
func (s responsesAPI) newSSEStream(c *gin.Context) *sseWriter {
	return &sseWriter{w: c.Writer, openAI: clientDialect(c) == dialectOpenAI, heartbeat: s.heartbeat, writeTimeout: s.writeTimeout}
}

// start writes the stream's headers and starts its heartbeats, once.
func (s *sseWriter) start() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	// Reverse proxies such as nginx buffer responses unless told not to.
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.rc, s.last, s.stop, s.done = http.NewResponseController(s.w), time.Now(), make(chan struct{}), make(chan struct{})
	s.rc.Flush()
	go s.heartbeats(s.heartbeat)
}

// Open starts the stream of a response that has started on runtime (named in the
// headers); its frames get the write deadline, and unless it runs in the background
// the response stops when a write fails (respond.Opener).
func (s *sseWriter) Open(ctx context.Context, runtime string, background bool) context.Context {
	s.w.Header().Set(HeaderRuntime, runtime)
	s.start()
	return s.bound(ctx, s.writeTimeout, !background)
}

// Begin starts a replayed stream; follow: it may last, so its frames get the write
// deadline (respond.Replayer).
func (s *sseWriter) Begin(follow bool) {
	s.start()
	if follow {
		s.bound(context.Background(), s.writeTimeout, false)
	}
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
	if !s.started {
		return
	}
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
	typ, data := respond.EventJSON(e)
	return dialectJSON(typ, data, openAI)
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
