package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/gin-gonic/gin"

	"hearth"
	"hearth/respond"
)

// WebSocket mode of /v1/responses (Open Responses 2026-04-24,
// paths./responses.x-openresponses-websocket): a client opens one connection with
// GET /v1/responses and an Upgrade, then sends response.create messages; each runs
// exactly as a streamed POST would (admission, storage, budgets, metrics), and its
// events come back one JSON text message each. Agents that call tools in a loop save
// a connection per turn and, with store: false, resend nothing: the connection keeps
// its latest response.

// DefaultWebSocketLifetime is how long a WebSocket connection may live, as OpenAI's
// API allows; then the server sends websocket_connection_limit_reached and closes.
const DefaultWebSocketLifetime = 60 * time.Minute

// CodeWebSocketConnectionLimitReached is the error code sent when a connection's
// lifetime is over.
const CodeWebSocketConnectionLimitReached = "websocket_connection_limit_reached"

const (
	// maxPendingCreates bounds the response.create messages waiting behind the one in
	// flight, beside the bytes they may hold (socketbudget.go).
	maxPendingCreates = 16
	// socketWriteTimeout bounds one message write: a client that reads nothing for
	// this long is gone, and its response must not wait on it.
	socketWriteTimeout = time.Minute
)

// socket is one WebSocket connection on /v1/responses.
type socket struct {
	s    *Server
	conn *websocket.Conn
	// ctx ends when the client goes away (or the connection is closed): the response
	// in flight then stops, as an HTTP stream does when its client disconnects.
	ctx    context.Context
	base   reqMeta
	owner  string
	caller caller
	openAI bool
	// lanes are the connection's FIFOs of creates by stream_id, "" the default one
	// (socketlanes.go). lanesMu guards the map and the lanes' queues, waiting (the
	// creates queued on all lanes), closing (no more creates run) and laneClock.
	lanesMu   sync.Mutex
	lanes     map[string]*lane
	waiting   int
	closing   bool
	laneClock uint64
	// lanesWG counts the lanes' running goroutines.
	lanesWG sync.WaitGroup
	// budget bounds the bytes of the connection's messages received and not finished
	// (socketbudget.go); chunk is the reader's buffer.
	budget byteBudget
	chunk  []byte
}

// responsesSocket serves GET /v1/responses: the WebSocket mode. Authentication ran
// before (the same bearer header as HTTP); this accepts the upgrade and serves the
// connection until the client closes it, its lifetime ends, or hearth stops.
func (s responsesAPI) responsesSocket(c *gin.Context) {
	if !isWebSocketUpgrade(c.Request) {
		c.Header("Upgrade", "websocket")
		s.writeError(c, &hearth.Error{Status: http.StatusUpgradeRequired, Type: hearth.ErrTypeInvalidRequest,
			Code: "websocket_upgrade_required",
			Message: "GET /v1/responses opens a WebSocket connection (send Upgrade: websocket); " +
				"create a response over HTTP with POST /v1/responses."})
		return
	}
	// Cross-origin upgrades stay refused (the library's default) but for the origins
	// the operator allowed: a web page must not ride on a browser's access to a local
	// hearth. boundary has refused the others already.
	conn, err := websocket.Accept(c.Writer, c.Request, &websocket.AcceptOptions{OriginPatterns: s.originPatterns()})
	if err != nil {
		meta(c).Log.Warn("websocket upgrade refused", "error", err)
		return // Accept answered the request
	}
	defer conn.CloseNow()
	// receive bounds each message (by messageLimit) as it reads it, so that a message
	// over it is answered before the connection is closed.
	conn.SetReadLimit(-1)

	// Not the request's context: after a hijack it no longer follows the connection.
	// (The caller's cache group goes with the connection's meta, base.)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sk := &socket{s: s.Server, conn: conn, ctx: ctx, base: *meta(c), owner: owner(c), caller: callerOf(c), openAI: clientDialect(c) == dialectOpenAI,
		chunk: make([]byte, socketReadChunk), lanes: map[string]*lane{}}
	sk.budget.limit = s.socketConnBytes
	// A key revoked meanwhile closes it (changes.go).
	defer s.changes.addSocket(sk)()
	// Shutdown waits for the response in flight, as it does for background responses.
	defer s.core.Hold()()

	creates := make(chan socketMessage, maxPendingCreates)
	read := make(chan struct{})
	go func() {
		defer close(read)
		sk.read(cancel, creates)
	}()
	go sk.keepAlive()
	sk.serve(creates, s.wsLifetime)
	conn.CloseNow()
	<-read
	// Messages still waiting are not run: let them go, and their bytes with them.
	for {
		select {
		case m := <-creates:
			sk.release(m.held)
		default:
			return
		}
	}
}

// isWebSocketUpgrade reports whether r asks for a WebSocket (RFC 6455 section 4.1).
func isWebSocketUpgrade(r *http.Request) bool {
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		return false
	}
	for _, v := range r.Header.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

// read takes the client's messages until the connection ends, then cancels the
// connection's context. Messages queue for the worker in order, held against the
// connection's and the server's byte budgets; one that does not fit them, or comes
// beyond maxPendingCreates, is refused with a 429 error message and the connection
// goes on. A message over messageLimit is answered with a 413 request_too_large error
// message, and the connection is closed with 1009 (message too big), as HTTP closes a
// connection whose body was over the limit.
func (sk *socket) read(cancel context.CancelFunc, creates chan<- socketMessage) {
	defer cancel()
	for {
		typ, r, err := sk.conn.Reader(sk.ctx)
		if err != nil {
			return
		}
		msg, refused, err := sk.receive(r)
		switch {
		case errors.Is(err, errMessageTooLarge):
			sk.sendError(tooLarge(sk.s.messageLimit()), "", "")
			sk.conn.Close(websocket.StatusMessageTooBig, "message too big")
			return
		case err != nil:
			return
		case refused != nil:
			sk.sendError(refused, "1", "")
			continue
		}
		if typ != websocket.MessageText {
			sk.release(msg.held)
			sk.sendError(hearth.InvalidRequest("", hearth.CodeInvalidJSON, "Send each response.create as one JSON text message, not a binary message."), "", "")
			continue
		}
		select {
		case creates <- msg:
		default:
			sk.release(msg.held)
			sk.sendError(hearth.TooManyRequests(fmt.Sprintf(
				"%d response.create messages already wait on this connection behind the response in flight; send more once they finish.",
				maxPendingCreates)), "", "")
		}
	}
}

// keepAlive pings the client while the connection lives, as SSE sends comment
// heartbeats: proxies close connections that stay silent through a long prompt.
func (sk *socket) keepAlive() {
	every := sk.s.heartbeat
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-sk.ctx.Done():
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(sk.ctx, every)
			sk.conn.Ping(ctx) // a client that does not answer is found out by reads and writes
			cancel()
		}
	}
}

// serve hands the connection's creates to their lanes (socketlanes.go), in the order
// they came: each lane runs its creates one at a time, and a connection whose creates
// name no stream_id runs them one at a time, in order. When the lifetime is over it
// sends websocket_connection_limit_reached and closes; responses in flight then finish
// first, creates still waiting are not run. When hearth stops, it closes the same way
// (1001 going away) once the responses in flight are done.
func (sk *socket) serve(creates <-chan socketMessage, lifetime time.Duration) {
	end := time.Now().Add(lifetime)
	limit := time.NewTimer(lifetime)
	defer limit.Stop()
	stopping := sk.s.core.Stopping()
	defer sk.closeLanes()
	for {
		switch {
		case sk.ctx.Err() != nil:
			return
		case stopping.Err() != nil:
			sk.closeLanes()
			sk.conn.Close(websocket.StatusGoingAway, "hearth is stopping")
			return
		case !time.Now().Before(end):
			sk.closeLanes()
			sk.sendError(&hearth.Error{Status: http.StatusBadRequest, Type: hearth.ErrTypeInvalidRequest,
				Code: CodeWebSocketConnectionLimitReached,
				Message: fmt.Sprintf("Responses websocket connection limit reached (%s). Create a new websocket connection to continue.",
					lifetimeText(lifetime))}, "", "")
			sk.conn.Close(websocket.StatusNormalClosure, CodeWebSocketConnectionLimitReached)
			return
		}
		select {
		case <-sk.ctx.Done():
		case <-stopping.Done():
		case <-limit.C:
		case m := <-creates:
			if stopping.Err() != nil || !time.Now().Before(end) {
				sk.release(m.held)
				continue
			}
			sk.dispatch(m)
		}
	}
}

func lifetimeText(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%d minutes", int(d/time.Minute))
	}
	return d.String()
}

// revoked closes the connection whose key was revoked (the error message was sent):
// no lane runs another create.
func (sk *socket) revoked() {
	sk.lanesMu.Lock()
	sk.closing = true
	sk.lanesMu.Unlock()
	sk.conn.Close(websocket.StatusPolicyViolation, "API key no longer valid")
}

// create serves one response.create message of the lane. Failing (an error message,
// or a response that ends failed) a create that names a previous_response_id evicts
// the lane's state: a client retrying that continuation then gets it from storage, or
// previous_response_not_found for a store: false response, rather than a state hearth
// can no longer vouch for.
func (l *lane) create(data []byte) {
	final, retry, err := l.respond(data)
	if err != nil {
		l.sk.sendError(err, retry, l.id)
	}
	if (err != nil || final.Status == hearth.StatusFailed) && continuation(data) {
		l.latest = nil
	}
}

// continuation reports whether a create message names a previous_response_id, read
// leniently: the message may not even have decoded.
func continuation(data []byte) bool {
	var probe struct {
		PreviousResponseID any `json:"previous_response_id"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	id, ok := probe.PreviousResponseID.(string)
	return ok && id != ""
}

// respond runs what createResponse runs for a streamed POST. An error before the
// response exists is returned (with a Retry-After value for a 429), for an error
// message; once the response exists, its events tell the client how it ended, a
// response.failed included.
func (l *lane) respond(data []byte) (*hearth.Response, string, error) {
	sk := l.sk
	s := sk.s
	body, dropped, err := createBody(data, sk.openAI)
	if err != nil {
		return nil, "", err
	}
	// Each create is a request of its own in the log and metrics.
	m := sk.base
	m.Start = time.Now()
	// The connection's request line is written when it ends; each create's
	// response logs a line of its own.
	m.Line = nil
	req, _, err := s.decodeRequest(&m, body, hearth.DecodeCreateRequest, dropped)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := s.timed(sk.ctx)
	defer cancel()
	// The lane's next create goes where its latest response ran, whose KV cache
	// holds the conversation so far.
	out, err := s.core.Create(ctx, &respond.Request{Body: req, Meta: &m, Owner: sk.owner, Local: l.latest, Runtime: l.runtime,
		KeepChain: true}, l)
	if err != nil {
		return nil, out.Retry, err
	}
	if out.Response.Status != hearth.StatusFailed {
		l.latest, l.runtime = out.Chain, out.Runtime
	}
	return out.Response, "", nil
}

// socketOnlyFields are create-body fields a WebSocket create must not send (the
// schema's x-openresponses-disallowed): every response streams over the socket, and
// none outlives it.
var socketOnlyFields = []string{"stream", "stream_options", "background"}

// createBody checks a client message is a response.create without the fields the
// socket disallows, and returns the create body inside it (the message minus type).
//
// OpenAI's clients get one exception: Codex CLI's WebSocket client always sends
// "stream": true, and stream_options when it has them, which OpenAI's API accepts. For
// clients of the OpenAI dialect (dialect.go) those two are dropped and returned as
// ignored; "stream": false and background are refused all the same.
func createBody(data []byte, openAI bool) (body []byte, ignored []string, err error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil || fields == nil {
		msg := "We could not parse the JSON of your message: expected a JSON object."
		if err != nil {
			msg = "We could not parse the JSON of your message: " + err.Error() + "."
		}
		return nil, nil, hearth.InvalidRequest("", hearth.CodeInvalidJSON, msg)
	}
	raw, ok := fields["type"]
	if !ok {
		return nil, nil, hearth.InvalidRequest("type", hearth.CodeMissingRequiredParameter,
			"Missing required parameter: 'type'. Send {\"type\": \"response.create\", ...}.")
	}
	var typ string
	if json.Unmarshal(raw, &typ) != nil || typ != "response.create" {
		return nil, nil, hearth.InvalidRequest("type", hearth.CodeInvalidValue,
			fmt.Sprintf("Invalid value: %s. The only client event on this connection is 'response.create'.", raw))
	}
	delete(fields, "type")
	// The lane was read before (streamIDOf); it is no field of the create body.
	delete(fields, "stream_id")
	if openAI {
		if v, ok := fields["stream"]; ok && string(v) == "true" {
			delete(fields, "stream")
			ignored = append(ignored, "stream")
		}
		if _, ok := fields["stream_options"]; ok {
			delete(fields, "stream_options")
			ignored = append(ignored, "stream_options")
		}
	}
	// Unknown fields stay ignored (and logged) here, where an HTTP create refuses them:
	// WebSocket clients (Codex's) send per-connection fields hearth does not model.
	for k := range fields {
		if !hearth.KnownRequestField(k) {
			delete(fields, k)
			ignored = append(ignored, k)
		}
	}
	sort.Strings(ignored)
	for _, f := range socketOnlyFields {
		if _, ok := fields[f]; ok {
			return nil, nil, hearth.InvalidRequest(f, "unsupported_parameter",
				fmt.Sprintf("'%s' is not allowed in WebSocket mode: every response streams over the connection and ends with it. Remove it.", f))
		}
	}
	body, err = json.Marshal(fields)
	return body, ignored, err
}

// eventData is one event as a text message, in the client's dialect. An error event
// (a failure mid-response) also carries the status a WebSocket error has, so a client
// that reads errors by the WebSocket schema understands it too.
func (sk *socket) eventData(e hearth.Event) []byte {
	_, data := eventJSON(e, sk.openAI)
	if e.Type == hearth.EventError && e.Error != nil {
		var fields map[string]json.RawMessage
		if json.Unmarshal(data, &fields) == nil {
			fields["status"], _ = json.Marshal(errorStatus(e.Error))
			data, _ = json.Marshal(fields)
		}
	}
	return data
}

func (sk *socket) write(data []byte) {
	ctx, cancel := context.WithTimeout(sk.ctx, socketWriteTimeout)
	defer cancel()
	// A failed write ends the connection; the reader then sees it and cancels the
	// response in flight.
	sk.conn.Write(ctx, websocket.MessageText, data)
}

// socketError is the WebSocket error message:
// {"type":"error","status":N,"error":{"type","code","message","param"}}.
type socketError struct {
	Type   string           `json:"type"`
	Status int              `json:"status"`
	Error  socketErrorValue `json:"error"`
}

type socketErrorValue struct {
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	// Headers carries what HTTP would send as headers: Retry-After of a 429.
	Headers map[string]string `json:"headers,omitempty"`
}

// sendError sends err as a WebSocket error message, encoded by apiError as HTTP
// errors are, with the stream_id of the lane it concerns (none for "").
func (sk *socket) sendError(err error, retryAfter, streamID string) {
	he := apiError(sk.base.Log, err, "path", "websocket")
	v := socketErrorValue{Type: he.Type, Code: he.Code, Message: he.Message}
	if v.Code == "" {
		// The WebSocket schema requires a code; the type is the closest one.
		v.Code = he.Type
	}
	if he.Param != "" {
		v.Param = &he.Param
	}
	if retryAfter == "" {
		retryAfter = errorRetryAfter(he)
	}
	if retryAfter != "" {
		v.Headers = map[string]string{"retry-after": retryAfter}
	}
	data, _ := json.Marshal(socketError{Type: hearth.EventError, Status: errorStatus(he), Error: v})
	sk.write(withStreamID(data, streamID))
}
