package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hearth"
	"hearth/respond"
)

// wsFuzzEnd is written on the connection by the test itself (not by hearth) after a
// response's events, so the reader knows every message of that response is in: what
// comes before it is exactly what hearth sent. No event can be this message: every
// event carries a sequence_number.
const wsFuzzEnd = `{"type":"hearth.fuzz.end"}`

// wsLoop is one loopback WebSocket connection: the server's end, accepted as
// responsesSocket accepts it and written by hearth's socket sink, and a coder/websocket
// client reading it as an SDK would. One connection serves many fuzz inputs, as one
// serves many responses in production.
type wsLoop struct {
	ctx    context.Context
	cancel context.CancelFunc
	server *websocket.Conn
	client *websocket.Conn
}

// wsListener accepts WebSocket connections on a loopback httptest server and hands
// each server end to the test.
type wsListener struct {
	srv      *httptest.Server
	accepted chan *websocket.Conn
}

func newWSListener(tb testing.TB) *wsListener {
	l := &wsListener{accepted: make(chan *websocket.Conn, 1)}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The options responsesSocket uses (none): the same negotiation, so the
		// same framing (no permessage-deflate).
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		l.accepted <- conn // the connection is hijacked: it outlives this handler
	}))
	tb.Cleanup(l.srv.Close)
	return l
}

func (l *wsListener) dial(tb testing.TB) *wsLoop {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(l.srv.URL, "http"), nil)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	// The fuzzer's strings can be large; a client that reads responses sets a large
	// limit too (the default is 32 KiB).
	client.SetReadLimit(-1)
	var server *websocket.Conn
	select {
	case server = <-l.accepted:
	case <-ctx.Done():
		client.CloseNow()
		tb.Fatalf("the server did not accept the connection")
	}
	lctx, lcancel := context.WithCancel(context.Background())
	return &wsLoop{ctx: lctx, cancel: lcancel, server: server, client: client}
}

func (w *wsLoop) close() {
	w.cancel()
	w.client.CloseNow()
	w.server.CloseNow()
}

type wsMessage struct {
	typ  websocket.MessageType
	data []byte
}

// readResponse reads messages until wsFuzzEnd and returns those before it.
func (w *wsLoop) readResponse() ([]wsMessage, error) {
	var msgs []wsMessage
	for {
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		typ, data, err := w.client.Read(ctx)
		cancel()
		if err != nil {
			return msgs, err
		}
		if typ == websocket.MessageText && string(data) == wsFuzzEnd {
			return msgs, nil
		}
		msgs = append(msgs, wsMessage{typ, data})
	}
}

// jsonText is s as a client reads it back from JSON: invalid UTF-8 becomes U+FFFD, as
// encoding/json writes it.
func jsonText(t *testing.T, s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back string
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// fuzzTerminal is a response's terminal event whose response carries text1 as its
// message's text (and text2 as a failed response's error message).
func fuzzTerminal(kind uint8, seq int, text1, text2 string) hearth.Event {
	resp := hearth.NewResponse("resp_fuzz", nil, time.Unix(1700000000, 0))
	resp.Output = []hearth.Item{{Type: hearth.ItemMessage, ID: "msg_fuzz", Status: hearth.StatusCompleted,
		Role: hearth.RoleAssistant, Content: []hearth.ContentPart{{Type: hearth.PartOutputText, Text: text1}}}}
	e := hearth.Event{SequenceNumber: seq, Response: resp}
	switch kind % 3 {
	case 0:
		e.Type, resp.Status = hearth.EventResponseCompleted, hearth.StatusCompleted
	case 1:
		e.Type, resp.Status = hearth.EventResponseIncomplete, hearth.StatusIncomplete
		resp.IncompleteDetails = &hearth.IncompleteDetails{Reason: hearth.IncompleteMaxOutputTokens}
	default:
		e.Type, resp.Status = hearth.EventResponseFailed, hearth.StatusFailed
		resp.Error = &hearth.ResponseError{Code: hearth.CodeServerError, Message: text2}
	}
	return e
}

// FuzzWebSocketFrame is FuzzSSEFrame's twin for the WebSocket mode: whatever text a
// model or client puts into an event, each event of a response reaches a coder/websocket
// client as exactly one text message whose JSON parses back to the same type, sequence
// number and text, in both dialects; the terminal event comes last and nothing follows
// it. The events take the path every socket response takes (observe, emitTo, then
// finish into the socket sink) over a real loopback connection; no runtime is needed.
func FuzzWebSocketFrame(f *testing.F) {
	addFrameSeeds(f)
	f.Add(uint8(9), 5, "fc_2", wsFuzzEnd, `{"type":"response.completed"}`, true)
	f.Add(uint8(3), 1<<62, "msg_\xc3", "\xed\xa0\x80 surrogate", strings.Repeat("ü", 40000), false)

	l := newWSListener(f)
	var loop *wsLoop
	f.Cleanup(func() {
		if loop != nil {
			loop.close()
		}
	})
	f.Fuzz(func(t *testing.T, kind uint8, seq int, itemID, text1, text2 string, openAI bool) {
		if loop == nil {
			loop = l.dial(t)
		}
		passed := false
		defer func() {
			// A failed input may leave messages or a write in flight: the next input
			// gets a fresh connection.
			if !passed {
				loop.close()
				loop = nil
			}
		}()
		w := loop

		in := []hearth.Event{
			fuzzEvent(kind, seq, itemID, text1),
			fuzzEvent(kind+1, seq+1, text2, text2),
			fuzzTerminal(kind, seq+2, text1, text2),
		}
		texts := []string{jsonText(t, text1), jsonText(t, text2), jsonText(t, text1)}
		// Errors and terminal events wait until the response is stored (emitTo); the
		// rest go out as they come.
		var order, held []int
		for i, e := range in {
			switch e.Type {
			case hearth.EventError, hearth.EventResponseCompleted, hearth.EventResponseIncomplete, hearth.EventResponseFailed:
				held = append(held, i)
			default:
				order = append(order, i)
			}
		}
		order = append(order, held...)

		read := make(chan struct {
			msgs []wsMessage
			err  error
		}, 1)
		go func() {
			msgs, err := w.readResponse()
			read <- struct {
				msgs []wsMessage
				err  error
			}{msgs, err}
		}()
		sk := &lane{sk: &socket{conn: w.server, ctx: w.ctx, openAI: openAI}}
		emit, finish := respond.EventPath(sk)
		for _, e := range in {
			emit(e)
		}
		finish()
		ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
		err := w.server.Write(ctx, websocket.MessageText, []byte(wsFuzzEnd))
		cancel()
		if err != nil {
			t.Fatalf("write end marker: %v", err)
		}
		res := <-read
		if res.err != nil {
			t.Fatalf("read after %d messages: %v", len(res.msgs), res.err)
		}
		if len(res.msgs) != len(in) {
			t.Fatalf("%d messages, want %d (one per event)", len(res.msgs), len(in))
		}

		for i, m := range res.msgs {
			src := in[order[i]]
			text := texts[order[i]]
			if m.typ != websocket.MessageText {
				t.Fatalf("message %d is %v, want a text message", i, m.typ)
			}
			var got map[string]any
			dec := json.NewDecoder(strings.NewReader(string(m.data)))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("message %d is not JSON: %v: %q", i, err, m.data)
			}
			if _, err := dec.Token(); err != io.EOF {
				t.Fatalf("message %d holds more than one JSON value: %q", i, m.data)
			}
			want := src.Type
			if openAI {
				want = hearth.OpenAIEventType(want)
			}
			if got["type"] != want {
				t.Fatalf("message %d: type %v, want %q", i, got["type"], want)
			}
			if n, _ := got["sequence_number"].(json.Number); n.String() != strconv.Itoa(src.SequenceNumber) {
				t.Fatalf("message %d: sequence_number %v, want %d", i, got["sequence_number"], src.SequenceNumber)
			}
			var payload any
			switch src.Type {
			case hearth.EventError:
				// The WebSocket error message also carries the status (socket.Event).
				if st, _ := got["status"].(json.Number); st.String() != "500" {
					t.Fatalf("message %d: error status %v, want 500", i, got["status"])
				}
				e, _ := got["error"].(map[string]any)
				payload = e["message"]
			case hearth.EventResponseCompleted, hearth.EventResponseIncomplete, hearth.EventResponseFailed:
				if i != len(res.msgs)-1 {
					t.Fatalf("message %d: %s is followed by %d messages", i, src.Type, len(res.msgs)-1-i)
				}
				resp, _ := got["response"].(map[string]any)
				if resp["status"] != src.Response.Status {
					t.Fatalf("message %d: response status %v, want %q", i, resp["status"], src.Response.Status)
				}
				if src.Response.Error != nil {
					e, _ := resp["error"].(map[string]any)
					if want := jsonText(t, src.Response.Error.Message); e["message"] != want {
						t.Fatalf("message %d: response error %q, want %q", i, e["message"], want)
					}
				}
				out, _ := resp["output"].([]any)
				if len(out) != 1 {
					t.Fatalf("message %d: response output %v, want one message", i, resp["output"])
				}
				item, _ := out[0].(map[string]any)
				parts, _ := item["content"].([]any)
				if len(parts) != 1 {
					t.Fatalf("message %d: message content %v, want one part", i, item["content"])
				}
				part, _ := parts[0].(map[string]any)
				payload = part["text"]
			default:
				for _, k := range []string{"delta", "text", "refusal", "arguments", "input"} {
					if v, ok := got[k]; ok {
						payload = v
					}
				}
				if id := jsonText(t, src.ItemID); got["item_id"] != id {
					t.Fatalf("message %d: item_id %q, want %q", i, got["item_id"], id)
				}
			}
			if payload != text {
				t.Fatalf("message %d carries %q, want %q", i, payload, text)
			}
		}
		passed = true
	})
}
