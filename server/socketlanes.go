package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"

	"hearth"
	"hearth/respond"
)

// Lanes of a WebSocket connection (OpenAI's stream_id): a response.create may name a
// lane with "stream_id"; creates of one lane run one at a time in the order they came,
// creates of different lanes run at the same time, and every message a create causes
// (its events, or its error message) carries its lane's stream_id. A create without
// stream_id runs on the connection's default lane, exactly as a connection without
// lanes runs its creates: one at a time, messages without stream_id. Lanes share
// nothing but the connection: each keeps its own latest response (the chain a
// store: false continuation needs) and runtime, and a lane's failure (an error message,
// a failed response) is that lane's alone.

const (
	// MaxSocketStreams is how many named lanes of one connection may have creates in
	// flight or waiting at once; a create for another lane beyond it is refused with
	// websocket_stream_limit_reached, and the connection goes on.
	MaxSocketStreams = 8
	// maxIdleLanes bounds the idle lanes whose latest response a connection keeps:
	// beyond it the least recently used is forgotten (its stored responses still
	// continue from storage).
	maxIdleLanes = 64
)

// CodeWebSocketStreamLimitReached is the error code of a create refused because its
// connection has MaxSocketStreams lanes busy.
const CodeWebSocketStreamLimitReached = "websocket_stream_limit_reached"

// streamIDPattern is the schema's pattern of stream_id (1 to 256 characters).
var streamIDPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)

// lane is one FIFO of a connection's creates and the state they continue.
type lane struct {
	sk *socket
	id string // the stream_id; "" for the default lane
	// queue, running and used are guarded by sk.lanesMu.
	queue   []socketMessage
	running bool
	used    uint64 // when it last took a create, in sk.laneClock ticks
	// latest is the connection-local state of the lane: the last response it created
	// that did not fail, stored or not, with the whole conversation it ends (its
	// history, its input, its output). A create whose previous_response_id names it
	// continues from here without storage; any other id is loaded from storage. Only
	// the lane's running goroutine touches it.
	latest *respond.LocalChain
	// runtime is where latest ran: the lane's next create goes there.
	runtime string
}

// streamIDOf reads a create message's stream_id, leniently (the message is decoded
// whole later): "" when it has none; an error naming stream_id when it is not a
// string of the schema's pattern.
func streamIDOf(data []byte) (string, error) {
	if !bytes.Contains(data, []byte(`"stream_id"`)) {
		return "", nil
	}
	var probe struct {
		StreamID *json.RawMessage `json:"stream_id"`
	}
	if json.Unmarshal(data, &probe) != nil || probe.StreamID == nil || string(*probe.StreamID) == "null" {
		return "", nil // not JSON (createBody says so), or no stream_id
	}
	var id string
	if json.Unmarshal(*probe.StreamID, &id) != nil || !streamIDPattern.MatchString(id) {
		return "", hearth.InvalidRequest("stream_id", hearth.CodeInvalidValue,
			"Invalid 'stream_id': expected a string of 1 to 256 letters, digits, '_', '.' or '-'.")
	}
	return id, nil
}

// dispatch queues a create on its lane, starting the lane when it is idle. It refuses
// (with an error message on the lane) a create beyond maxPendingCreates waiting on the
// connection, or for a lane beyond MaxSocketStreams busy ones.
func (sk *socket) dispatch(m socketMessage) {
	id, err := streamIDOf(m.data)
	if err != nil {
		sk.release(m.held)
		sk.sendError(err, "", "")
		return
	}
	sk.lanesMu.Lock()
	if sk.closing {
		sk.lanesMu.Unlock()
		sk.release(m.held)
		return
	}
	l := sk.lanes[id]
	var refused error
	switch {
	case sk.waiting >= maxPendingCreates:
		refused = hearth.TooManyRequests(fmt.Sprintf(
			"%d response.create messages already wait on this connection behind the responses in flight; send more once they finish.",
			maxPendingCreates))
	case id != "" && (l == nil || !l.running) && sk.busyStreams() >= MaxSocketStreams:
		refused = &hearth.Error{Status: http.StatusBadRequest, Type: hearth.ErrTypeInvalidRequest,
			Code: CodeWebSocketStreamLimitReached, Param: "stream_id",
			Message: fmt.Sprintf("This WebSocket connection has reached its stream limit: %d streams with responses in flight or waiting. "+
				"Send this create once one of them finishes, or on a stream already in use.", MaxSocketStreams)}
	}
	if refused != nil {
		sk.lanesMu.Unlock()
		sk.release(m.held)
		sk.sendError(refused, "", id)
		return
	}
	if l == nil {
		l = &lane{sk: sk, id: id}
		sk.lanes[id] = l
		sk.forgetIdleLanes()
	}
	sk.laneClock++
	l.used = sk.laneClock
	l.queue = append(l.queue, m)
	sk.waiting++
	if !l.running {
		l.running = true
		sk.lanesWG.Add(1)
		go l.run()
	}
	sk.lanesMu.Unlock()
}

// busyStreams counts the named lanes with creates in flight or waiting; the caller
// holds lanesMu.
func (sk *socket) busyStreams() int {
	n := 0
	for id, l := range sk.lanes {
		if id != "" && l.running {
			n++
		}
	}
	return n
}

// forgetIdleLanes drops the least recently used idle named lanes beyond maxIdleLanes;
// the caller holds lanesMu.
func (sk *socket) forgetIdleLanes() {
	for len(sk.lanes) > maxIdleLanes+MaxSocketStreams+1 {
		var oldest *lane
		for id, l := range sk.lanes {
			if id != "" && !l.running && (oldest == nil || l.used < oldest.used) {
				oldest = l
			}
		}
		if oldest == nil {
			return
		}
		delete(sk.lanes, oldest.id)
	}
}

// run serves the lane's creates in order until its queue is empty, or the connection
// is closing (what still waits then is let go).
func (l *lane) run() {
	sk := l.sk
	defer sk.lanesWG.Done()
	for {
		sk.lanesMu.Lock()
		if len(l.queue) == 0 || sk.closing {
			for _, m := range l.queue {
				sk.release(m.held)
			}
			sk.waiting -= len(l.queue)
			l.queue = nil
			l.running = false
			sk.lanesMu.Unlock()
			return
		}
		m := l.queue[0]
		l.queue = l.queue[1:]
		sk.waiting--
		sk.lanesMu.Unlock()
		// The key was checked at the upgrade; the connection may live an hour, and a
		// key revoked meanwhile must stop working here as it does over HTTP.
		if err := sk.s.stillValid(sk.ctx, sk.caller); err != nil {
			sk.release(m.held)
			sk.sendError(err, "", l.id)
			sk.revoked()
			continue
		}
		func() {
			defer sk.release(m.held)
			l.create(m.data)
		}()
	}
}

// Event sends one event of the lane's response, with its stream_id.
func (l *lane) Event(e hearth.Event) {
	l.sk.write(withStreamID(l.sk.eventData(e), l.id))
}

// Done ends a response's events; the connection stays open for the next.
func (l *lane) Done() {}

// withStreamID adds "stream_id" to a message's JSON object: ids match
// streamIDPattern, so they need no escaping.
func withStreamID(data []byte, id string) []byte {
	if id == "" || len(data) < 2 || data[len(data)-1] != '}' {
		return data
	}
	out := make([]byte, 0, len(data)+len(id)+16)
	out = append(out, data[:len(data)-1]...)
	if len(data) > 2 {
		out = append(out, ',')
	}
	out = append(out, `"stream_id":"`...)
	out = append(out, id...)
	return append(out, `"}`...)
}

// closeLanes stops the lanes from taking more creates (those waiting are let go)
// and waits for the responses in flight to finish.
func (sk *socket) closeLanes() {
	sk.lanesMu.Lock()
	sk.closing = true
	sk.lanesMu.Unlock()
	sk.lanesWG.Wait()
}
