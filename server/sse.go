package server

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/respond"
	"hearth/server/door"
)

// sseWriter frames events as server-sent events (door.SSE: one write per frame,
// keep-alive comments while nothing else is written, a write deadline): `event:
// <type>` and `data: <one-line JSON>`, in the client's dialect.
type sseWriter struct {
	*door.SSE
	// openAI renames events to OpenAI's names for clients that expect them.
	openAI bool
}

// DefaultWriteTimeout bounds one SSE frame's write: a client that reads nothing for a
// minute is gone as far as hearth is concerned (the WebSocket mode uses the same).
const DefaultWriteTimeout = time.Minute

// keepAliveComment is what a silent stream sends: a comment, which clients skip.
var keepAliveComment = []byte(": keep-alive\n\n")

func newSSEWriter(w http.ResponseWriter, heartbeat time.Duration, d dialect) *sseWriter {
	s := &sseWriter{SSE: door.NewSSE(w, heartbeat, 0, keepAliveComment), openAI: d == dialectOpenAI}
	s.Start()
	s.Beat()
	return s
}

// newSSEStream is an SSE stream for c that starts when the core opens it
// (respond.Opener, respond.Replayer): an error before that is answered as JSON.
func (s responsesAPI) newSSEStream(c *gin.Context) *sseWriter {
	return &sseWriter{SSE: door.NewSSE(c.Writer, s.heartbeat, s.writeTimeout, keepAliveComment),
		openAI: clientDialect(c) == dialectOpenAI}
}

// Open starts the stream of a response that has started on runtime (named in the
// headers); its frames get the write deadline, and unless it runs in the background
// the response stops when a write fails (respond.Opener).
func (s *sseWriter) Open(ctx context.Context, runtime string, background bool) context.Context {
	s.SSE.Header().Set(HeaderRuntime, runtime)
	s.Start()
	s.Beat()
	return s.Bound(ctx, !background)
}

// Begin starts a replayed stream; follow: it may last, so its frames get the write
// deadline (respond.Replayer).
func (s *sseWriter) Begin(follow bool) {
	s.Start()
	s.Beat()
	if follow {
		s.Bound(context.Background(), false)
	}
}

// Event writes one event frame.
func (s *sseWriter) Event(e hearth.Event) {
	s.Frame(eventJSON(e, s.openAI))
}

// Stored writes one frame of an event read back from a journal (JSON in hearth's
// names), in the client's dialect.
func (s *sseWriter) Stored(typ string, data []byte) {
	s.Frame(dialectJSON(typ, data, s.openAI))
}

// Done ends the stream with `data: [DONE]`, as OpenAI's clients expect.
func (s *sseWriter) Done() {
	s.StopBeats()
	s.Write([]byte("data: [DONE]\n\n"))
	s.Close()
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
