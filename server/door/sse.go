package door

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// ErrClientStalled is the cause of a response stopped because its client stopped
// reading the stream; it is stored incomplete like any other disconnect.
var ErrClientStalled = errors.New("the client stopped reading the stream")

// SSE writes a server-sent event stream, for every API's streams alike: each frame
// written and flushed in one write, so a client never sees half a frame; a keep-alive
// frame while nothing else is written, because clients give up on a silent stream
// (long prompt processing can take minutes); a write deadline, because a client that
// stops reading would otherwise block the writer (and the response, and its model's
// slot) for ever once the socket buffers fill. What differs per API is the frames and
// the keep-alive (an SSE comment, Anthropic's ping event).
type SSE struct {
	w            http.ResponseWriter
	heartbeat    time.Duration
	writeTimeout time.Duration
	keepAlive    []byte

	// started: the headers are written (Start); beating: the keep-alives run (Beat).
	started, beating bool
	mu               sync.Mutex
	rc               *http.ResponseController
	last             time.Time
	err              error
	stop             chan struct{}
	done             chan struct{}
	// stopped stops the keep-alives once; closed ends the stream once.
	stopped, closed sync.Once
	// timeout bounds each frame's write and flush (0: none, until Bound); fail, when
	// set, is called once the first write fails, to stop the response whose client
	// stopped reading.
	timeout time.Duration
	fail    context.CancelCauseFunc
	// buf is reused for every frame (under mu): a write is done with it before the
	// next frame is built.
	buf []byte
}

// NewSSE is a stream on w that is silent for at most heartbeat once it beats (0: no
// keep-alives), writing keepAlive then; Bound gives its frames writeTimeout.
func NewSSE(w http.ResponseWriter, heartbeat, writeTimeout time.Duration, keepAlive []byte) *SSE {
	return &SSE{w: w, heartbeat: heartbeat, writeTimeout: writeTimeout, keepAlive: keepAlive}
}

// Start writes the stream's headers, once; extra headers must be set before.
func (s *SSE) Start() {
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
}

// Header is the stream's response headers, to set before Start.
func (s *SSE) Header() http.Header { return s.w.Header() }

// Started reports whether the headers are written: an error after that is a frame of
// the stream, before it an ordinary error answer.
func (s *SSE) Started() bool { return s.started }

// Beat starts the keep-alives, once, on a started stream (an API whose first frame
// must come first starts them after it).
func (s *SSE) Beat() {
	if !s.started || s.beating {
		return
	}
	s.beating = true
	go s.beats()
}

func (s *SSE) beats() {
	defer close(s.done)
	if s.heartbeat <= 0 {
		return
	}
	t := time.NewTicker(s.heartbeat / 2)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.mu.Lock()
			if time.Since(s.last) >= s.heartbeat {
				s.writeLocked(s.keepAlive)
			}
			s.mu.Unlock()
		}
	}
}

// Bound gives every later frame the write deadline. With stopRun the returned context
// ends (cause ErrClientStalled) when a write fails, so the response stops, frees its
// slot and is stored incomplete; a background response keeps running without its
// stream.
func (s *SSE) Bound(ctx context.Context, stopRun bool) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timeout = s.writeTimeout
	if !stopRun {
		return ctx
	}
	ctx, s.fail = context.WithCancelCause(ctx)
	return ctx
}

// Frame writes one frame: `event: <event>` (none when event is empty) and `data:
// <data>` (one line of JSON).
func (s *SSE) Frame(event string, data []byte) {
	s.mu.Lock()
	f := s.buf[:0]
	if event != "" {
		f = append(f, "event: "...)
		f = append(f, event...)
		f = append(f, '\n')
	}
	f = append(f, "data: "...)
	f = append(f, data...)
	f = append(f, "\n\n"...)
	s.buf = f
	s.writeLocked(f)
	s.mu.Unlock()
}

// Write writes b as it is (a whole frame, such as OpenAI's `data: [DONE]`).
func (s *SSE) Write(b []byte) {
	s.mu.Lock()
	s.writeLocked(b)
	s.mu.Unlock()
}

// StopBeats stops the keep-alives and waits until none is being written.
func (s *SSE) StopBeats() {
	s.stopped.Do(func() {
		if s.started {
			close(s.stop)
			if s.beating {
				<-s.done
			}
		}
	})
}

// Close stops the keep-alives and lifts the write deadline, so the connection's next
// request starts without it. Handlers defer it, so an early return or a panic does
// not leave a keep-alive writing to a finished response.
func (s *SSE) Close() {
	if !s.started {
		return
	}
	s.StopBeats()
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

func (s *SSE) writeLocked(b []byte) {
	if s.err != nil || !s.started {
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
			s.fail(ErrClientStalled)
		}
		return
	}
	s.last = time.Now()
}
