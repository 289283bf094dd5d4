package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"hearth"
)

// What WebSocket connections may hold in memory. A connection's response.create
// messages wait for its worker and run one at a time; each may be as large as a
// request body (Config.MaxBodyBytes). Counting them alone let two connections queue 16
// messages of 16 MiB each and hold a gigabyte. So the bytes of the messages a
// connection has received and not finished (those waiting and the one running) are
// bounded per connection, and over all connections together. A message is held
// against both budgets as its bytes arrive: one that does not fit is read to its end
// and dropped, never kept whole, and a connection's messages are let go when it
// closes.

// Defaults of Config.WebSocketQueueBytes and Config.WebSocketQueueBytesTotal.
const (
	// DefaultWebSocketQueueBytes is two bodies of DefaultMaxBodyBytes: one running and
	// one waiting behind it, at the largest.
	DefaultWebSocketQueueBytes = 2 * DefaultMaxBodyBytes
	// DefaultWebSocketQueueBytesTotal bounds all connections' messages together.
	DefaultWebSocketQueueBytesTotal = 256 << 20
)

// CodeWebSocketQueueFull is the error code of a message refused because what it
// would add to the messages held (by its connection, or by all connections) is over
// its budget. The connection stays open; the client sends the message again once its
// earlier ones finished.
const CodeWebSocketQueueFull = "websocket_queue_full"

// socketReadChunk is how much of a message is read, and held, at a time.
const socketReadChunk = 32 << 10

// byteBudget counts bytes held against a limit.
type byteBudget struct {
	limit int64
	used  atomic.Int64
}

// take holds n bytes when they fit.
func (b *byteBudget) take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

func (b *byteBudget) give(n int64) { b.used.Add(-n) }

// socketMessage is a message received whole and held against the budgets until
// release.
type socketMessage struct {
	data []byte
	held int64
}

// messageLimit is the largest message a connection takes: the body limit of HTTP,
// or less where a budget is smaller (a message that can never fit is too large, not
// merely early).
func (s *Server) messageLimit() int64 {
	return min(s.maxBody, s.socketConnBytes, s.socketBytes.limit)
}

// hold takes n bytes of a message arriving on the connection, or says why not.
func (sk *socket) hold(n int64) error {
	if !sk.budget.take(n) {
		return queueFull(fmt.Sprintf("This message does not fit in what one connection may hold: the messages waiting on it and the one running may take %d bytes together. "+
			"Send it again once the earlier ones have finished.", sk.budget.limit))
	}
	if !sk.s.socketBytes.take(n) {
		sk.budget.give(n)
		return queueFull(fmt.Sprintf("This message does not fit in what hearth holds for all WebSocket connections together (%d bytes of waiting and running messages). "+
			"Send it again shortly.", sk.s.socketBytes.limit))
	}
	return nil
}

// release lets go of n bytes held for the connection.
func (sk *socket) release(n int64) {
	if n > 0 {
		sk.budget.give(n)
		sk.s.socketBytes.give(n)
	}
}

func queueFull(msg string) error {
	return &hearth.Error{Status: http.StatusTooManyRequests, Type: hearth.ErrTypeTooManyRequests, Code: CodeWebSocketQueueFull, Message: msg}
}

// errMessageTooLarge: the message is over messageLimit; the connection ends.
var errMessageTooLarge = errors.New("websocket message too large")

// receive reads the rest of a message from r, holding its bytes as they arrive. It
// returns the message, held (release it when done); or refused, the reason a message
// that did not fit was dropped (read to its end, so the connection goes on); or
// errMessageTooLarge, with nothing held; or the error that ended the connection.
func (sk *socket) receive(r io.Reader) (msg socketMessage, refused error, err error) {
	limit := sk.s.messageLimit()
	var size int64
	for {
		n, rerr := r.Read(sk.chunk)
		size += int64(n)
		if size > limit {
			sk.release(msg.held)
			return socketMessage{}, nil, errMessageTooLarge
		}
		if n > 0 && refused == nil {
			if refused = sk.hold(int64(n)); refused == nil {
				msg.data = append(msg.data, sk.chunk[:n]...)
				msg.held += int64(n)
			} else {
				sk.release(msg.held)
				msg = socketMessage{}
			}
		}
		switch {
		case rerr == io.EOF && refused != nil:
			return socketMessage{}, refused, nil
		case rerr == io.EOF:
			return msg, nil, nil
		case rerr != nil:
			sk.release(msg.held)
			return socketMessage{}, nil, rerr
		}
	}
}

// tooLarge is the error message of a message over messageLimit.
func tooLarge(limit int64) error {
	return &hearth.Error{Status: http.StatusRequestEntityTooLarge, Type: hearth.ErrTypeInvalidRequest, Code: "request_too_large",
		Message: fmt.Sprintf("The message exceeds %d bytes, the most one response.create may hold. The connection is closed (1009).", limit)}
}
