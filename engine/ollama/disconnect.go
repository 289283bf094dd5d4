package ollama

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// disconnectSafeListener serves the embedded runtime's HTTP connections so that a client
// leaving in the middle of a stream cannot wedge a model.
//
// The runtime's streaming handlers (/api/generate, /api/chat, ...) run the generation in
// a goroutine that sends each chunk on an unbuffered channel, which gin's Context.Stream
// drains; Stream stops draining as soon as the connection reports the client gone
// (CloseNotify). A chunk sent in that instant blocks its sender for ever, inside the
// model server's Completion call, which then never releases the model's slot: every
// later request to that model waits until the runtime restarts (ollama/ollama#17131,
// open in v0.17.4, and v0.24.0's streamResponse is the same). hearth leaves streams on purpose (it stops the runtime at each
// decision point of an enforced tool choice), so it met this in about one test run in
// seven.
//
// CloseNotify and the request's cancellation both come from the connection's
// background read reaching the end of the stream. A connection from this listener holds
// that end back while a response is being written, so Stream keeps draining; the request
// is still cancelled, by the failed write of the next chunk (net/http cancels a request
// whose connection write fails, without CloseNotify), and generation stops a chunk or two
// later, as the runtime only notices a departed client when it writes anyway. The end
// is let through once the response has been quiet for heldEOFQuiet (Stream is then
// surely waiting on the channel, where a chunk is received and not lost), or when the
// server ends the request or closes the connection.
type disconnectSafeListener struct{ net.Listener }

// heldEOFQuiet is how long a response must have written nothing before a departed
// client is reported by the read side: far longer than a chunk takes from the channel
// to the socket.
const heldEOFQuiet = 500 * time.Millisecond

func (l disconnectSafeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &heldEOFConn{Conn: c, release: make(chan struct{})}, nil
}

// heldEOFConn is one connection of disconnectSafeListener.
type heldEOFConn struct {
	net.Conn

	mu sync.Mutex
	// serving: request bytes have arrived and the server has not yet ended the request
	// (it aborts its pending read when it does).
	serving bool
	// active is the last time the request was read or its response written.
	active time.Time
	// release is closed to end a held read: the server aborting its pending read at
	// the end of a request, or closing the connection.
	release chan struct{}
	closed  bool
}

func (c *heldEOFConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	if n > 0 {
		c.serving, c.active = true, time.Now()
	}
	if err == nil || !c.serving || isTimeout(err) {
		c.mu.Unlock()
		return n, err
	}
	release := c.release
	c.mu.Unlock()
	// The client is gone while a response is being served: hold that back until the
	// response has been quiet for heldEOFQuiet, or the server is done with it.
	for {
		c.mu.Lock()
		quiet := time.Since(c.active)
		c.mu.Unlock()
		if quiet >= heldEOFQuiet {
			break
		}
		select {
		case <-release:
			return n, os.ErrDeadlineExceeded
		case <-time.After(heldEOFQuiet - quiet):
		}
	}
	c.mu.Lock()
	c.serving = false
	c.mu.Unlock()
	return n, err
}

func (c *heldEOFConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.active = time.Now()
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// SetReadDeadline passes the deadline on; a deadline already past is net/http aborting
// the background read at the end of a request, which also ends a held read.
func (c *heldEOFConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() && !t.After(time.Now()) {
		c.mu.Lock()
		c.serving = false
		if !c.closed {
			close(c.release)
			c.release = make(chan struct{})
		}
		c.mu.Unlock()
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *heldEOFConn) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.release)
	}
	c.mu.Unlock()
	return c.Conn.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
