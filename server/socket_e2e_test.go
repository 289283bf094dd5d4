package server_test

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/internal/admission"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage/sqlite"
)

// wsConn is a test client of hearth's WebSocket mode.
type wsConn struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialWS(t *testing.T, srv *httptest.Server, header http.Header) *wsConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/responses",
		&websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (status %d)", err, status)
	}
	conn.SetReadLimit(64 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &wsConn{t: t, conn: conn}
}

// wsCreate is a response.create message for model with the given extra fields.
func wsCreate(model, extra string) string {
	s := `{"type":"response.create","model":"` + model + `"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// send writes a message; a create meant to be valid is first checked against the
// schema's WebSocketResponseCreateEvent, so the test speaks the spec.
func (c *wsConn) send(msg string, valid bool) {
	c.t.Helper()
	if valid {
		if err := schematest.Check("WebSocketResponseCreateEvent", []byte(msg)); err != nil {
			c.t.Fatalf("the test's own create message is not valid: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		c.t.Fatal(err)
	}
}

// next reads one message and validates it against the schema.
func (c *wsConn) next() map[string]any {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	typ, data, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText {
		c.t.Fatalf("message type %v, want text", typ)
	}
	if err := schematest.CheckWebSocketMessage(data); err != nil {
		c.t.Error(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// wsTurn is what one response.create produced: the response's events and final
// response, or an error message.
type wsTurn struct {
	events []map[string]any
	final  *hearth.Response
	err    *wsError
}

type wsError struct {
	Status int
	Error  struct {
		Type, Code, Message string
		Param               *string
		Headers             map[string]string
	}
}

// turn reads the messages of one create: events up to the terminal one (checking the
// lifecycle), or one error message.
func (c *wsConn) turn() wsTurn {
	c.t.Helper()
	var tr wsTurn
	for {
		m := c.next()
		typ, _ := m["type"].(string)
		if _, ok := m["status"]; ok && typ == "error" && len(tr.events) == 0 {
			b, _ := json.Marshal(m)
			tr.err = &wsError{}
			json.Unmarshal(b, tr.err)
			return tr
		}
		tr.events = append(tr.events, m)
		switch typ {
		case "response.completed", "response.incomplete", "response.failed":
			if err := schematest.CheckLifecycle(tr.events); err != nil {
				c.t.Fatalf("lifecycle: %v", err)
			}
			b, _ := json.Marshal(m["response"])
			tr.final = &hearth.Response{}
			if err := json.Unmarshal(b, tr.final); err != nil {
				c.t.Fatal(err)
			}
			return tr
		}
	}
}

// completed sends a create and returns its completed response.
func (c *wsConn) completed(msg string) *hearth.Response {
	c.t.Helper()
	c.send(msg, true)
	tr := c.turn()
	if tr.err != nil {
		c.t.Fatalf("create failed: %+v", *tr.err)
	}
	if tr.final.Status != hearth.StatusCompleted || tr.final.Usage == nil {
		c.t.Fatalf("status %s usage %v error %+v", tr.final.Status, tr.final.Usage, tr.final.Error)
	}
	return tr.final
}

// failsWith sends a message and checks it is answered by one error message.
func (c *wsConn) failsWith(label, msg string, valid bool, status int, code, param string) *wsError {
	c.t.Helper()
	c.send(msg, valid)
	return c.expectError(label, status, code, param)
}

// expectError reads the answer to a create and checks it is one error message.
func (c *wsConn) expectError(label string, status int, code, param string) *wsError {
	c.t.Helper()
	tr := c.turn()
	if tr.err == nil {
		c.t.Fatalf("%s: got a response (%s), want error %s", label, tr.final.Status, code)
	}
	e := tr.err
	if e.Status != status || e.Error.Code != code {
		c.t.Errorf("%s: status %d code %q, want %d %q (%s)", label, e.Status, e.Error.Code, status, code, e.Error.Message)
	}
	got := "<null>"
	if e.Error.Param != nil {
		got = *e.Error.Param
	}
	if want := cmp.Or(param, "<null>"); got != want {
		c.t.Errorf("%s: param %s, want %s", label, got, want)
	}
	return e
}

func userMsg(text string) string {
	return `{"type":"message","role":"user","content":` + jsonString(text) + `}`
}

func assistantMsg(text string) string {
	return `{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + jsonString(text) + `}]}`
}

// TestWebSocketE2E covers the WebSocket mode against the real runtime: sequential
// turns and continuation on one socket, store: false chains kept by the connection
// and lost with it, missing previous responses, eviction after a failed continuation,
// queued creates, and the fields the socket refuses. Every message hearth sends is
// validated against the schema, every response's events against the lifecycle.
func TestWebSocketE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	model := scriptmodel.PlainModel
	plain := testenv.Model(t, model)
	reply := plain.Text(scriptmodel.EntryAssistant)
	outTokens := plain.EvalCount(scriptmodel.EntryAssistant)
	// The input tokens of the conversation "one", reply, "two", sent whole over HTTP:
	// what a continuation of "one" with "two" must amount to.
	whole := `"input":[` + userMsg("one") + "," + assistantMsg(reply) + "," + userMsg("two") + `]`
	wantTwo := createJSON(t, srv, reqBody(model, false, whole)).Usage.InputTokens

	checkReply := func(label string, r *hearth.Response) {
		t.Helper()
		sameItems(t, label, r.Output, []item{{Type: "message", Status: "completed", Text: reply}})
		if r.Usage.OutputTokens != outTokens {
			t.Errorf("%s: output_tokens %d, want %d", label, r.Usage.OutputTokens, outTokens)
		}
	}

	t.Run("sequential turns and continuation", func(t *testing.T) {
		ws := dialWS(t, srv, nil)
		first := ws.completed(wsCreate(model, `"input":"one"`))
		checkReply("first", first)
		second := ws.completed(wsCreate(model, `"input":"two","previous_response_id":"`+first.ID+`"`))
		checkReply("second", second)
		if second.PreviousResponseID == nil || *second.PreviousResponseID != first.ID {
			t.Errorf("previous_response_id echo %v", second.PreviousResponseID)
		}
		if second.Usage.InputTokens != wantTwo {
			t.Errorf("continued turn has %d input tokens, the whole conversation %d", second.Usage.InputTokens, wantTwo)
		}
		// Stored like any response: retrievable over HTTP with what the socket saw.
		code, b := do(t, "GET", srv.URL+"/v1/responses/"+second.ID, "", "")
		var got hearth.Response
		json.Unmarshal(b, &got)
		if code != 200 || got.Status != hearth.StatusCompleted || got.Usage.InputTokens != wantTwo {
			t.Errorf("GET second: %d %s", code, b)
		}
		// A third turn on the same socket, from the stored first response (not the
		// connection's latest): loaded from storage.
		fork := ws.completed(wsCreate(model, `"input":"two","previous_response_id":"`+first.ID+`"`))
		if fork.Usage.InputTokens != wantTwo {
			t.Errorf("turn continued from storage has %d input tokens, want %d", fork.Usage.InputTokens, wantTwo)
		}
	})

	t.Run("store false chain, then reconnect", func(t *testing.T) {
		ws := dialWS(t, srv, nil)
		a := ws.completed(wsCreate(model, `"input":"one","store":false`))
		b := ws.completed(wsCreate(model, `"input":"two","store":false,"previous_response_id":"`+a.ID+`"`))
		checkReply("store false continuation", b)
		if b.Usage.InputTokens != wantTwo {
			t.Errorf("store=false continuation has %d input tokens, the whole conversation %d", b.Usage.InputTokens, wantTwo)
		}
		for _, id := range []string{a.ID, b.ID} {
			if code, body := do(t, "GET", srv.URL+"/v1/responses/"+id, "", ""); code != 404 {
				t.Errorf("store=false response %s is retrievable: %d %s", id, code, body)
			}
		}
		ws.conn.Close(websocket.StatusNormalClosure, "")

		// A new connection has no state: the store=false id is unknown there...
		ws2 := dialWS(t, srv, nil)
		ws2.failsWith("store=false id after reconnect", wsCreate(model, `"input":"three","store":false,"previous_response_id":"`+b.ID+`"`),
			true, 404, "previous_response_not_found", "previous_response_id")
		// ...and the client recovers by sending the whole conversation again.
		again := ws2.completed(wsCreate(model, `"store":false,`+whole))
		checkReply("recovery with full input", again)
		if again.Usage.InputTokens != wantTwo {
			t.Errorf("recovery has %d input tokens, want %d", again.Usage.InputTokens, wantTwo)
		}
		// The recovered response is the new connection's latest: the chain goes on.
		next := ws2.completed(wsCreate(model, `"input":"three","store":false,"previous_response_id":"`+again.ID+`"`))
		if next.Usage.InputTokens <= again.Usage.InputTokens+again.Usage.OutputTokens {
			t.Errorf("continuation after recovery has %d input tokens; the conversation before it had %d",
				next.Usage.InputTokens, again.Usage.InputTokens+again.Usage.OutputTokens)
		}
	})

	t.Run("only the latest store false response", func(t *testing.T) {
		ws := dialWS(t, srv, nil)
		a := ws.completed(wsCreate(model, `"input":"one","store":false`))
		ws.completed(wsCreate(model, `"input":"two","store":false,"previous_response_id":"`+a.ID+`"`))
		// a is neither the connection's latest nor stored.
		ws.failsWith("older store=false id", wsCreate(model, `"input":"x","store":false,"previous_response_id":"`+a.ID+`"`),
			true, 404, "previous_response_not_found", "previous_response_id")
	})

	t.Run("missing previous response", func(t *testing.T) {
		ws := dialWS(t, srv, nil)
		e := ws.failsWith("unknown id", wsCreate(model, `"input":"hi","previous_response_id":"resp_nope"`),
			true, 404, "previous_response_not_found", "previous_response_id")
		if !strings.Contains(e.Error.Message, "resp_nope") {
			t.Errorf("message %q does not name the id", e.Error.Message)
		}
		// The connection goes on serving.
		checkReply("after the error", ws.completed(wsCreate(model, `"input":"one"`)))
	})

	t.Run("eviction after a failed continuation", func(t *testing.T) {
		ws := dialWS(t, srv, nil)
		a := ws.completed(wsCreate(model, `"input":"one","store":false`))
		// A failed create that continues nothing leaves the state alone.
		ws.failsWith("bad create, no continuation", wsCreate(model, `"input":"x","max_output_tokens":3`),
			false, 400, "integer_below_min_value", "max_output_tokens")
		if r := ws.completed(wsCreate(model, `"input":"two","store":false,"previous_response_id":"`+a.ID+`"`)); r.Usage.InputTokens != wantTwo {
			t.Errorf("continuation after an unrelated failure: %d input tokens, want %d", r.Usage.InputTokens, wantTwo)
		}

		b := ws.completed(wsCreate(model, `"input":"one","store":false`))
		// A failed continuation of b evicts it: the retry finds nothing.
		ws.failsWith("failed continuation", wsCreate(model, `"input":"two","store":false,"max_output_tokens":3,"previous_response_id":"`+b.ID+`"`),
			false, 400, "integer_below_min_value", "max_output_tokens")
		ws.failsWith("retry after eviction", wsCreate(model, `"input":"two","store":false,"previous_response_id":"`+b.ID+`"`),
			true, 404, "previous_response_not_found", "previous_response_id")

		// A stored response is evicted too, but storage still has it.
		s := ws.completed(wsCreate(model, `"input":"one"`))
		ws.failsWith("failed stored continuation", wsCreate(model, `"input":"two","max_output_tokens":3,"previous_response_id":"`+s.ID+`"`),
			false, 400, "integer_below_min_value", "max_output_tokens")
		if r := ws.completed(wsCreate(model, `"input":"two","previous_response_id":"`+s.ID+`"`)); r.Usage.InputTokens != wantTwo {
			t.Errorf("stored continuation after eviction: %d input tokens, want %d", r.Usage.InputTokens, wantTwo)
		}
	})

	t.Run("queued creates run in order", func(t *testing.T) {
		ws := dialWS(t, srv, nil)
		think := testenv.Model(t, scriptmodel.ReasoningModel)
		// Sent back to back: the second waits for the first, and so does the third,
		// which the connection refuses (store is off but stream is not allowed).
		ws.send(wsCreate(scriptmodel.ReasoningModel, `"input":"first","store":false`), true)
		ws.send(wsCreate(model, `"input":"second","store":false`), true)
		ws.send(wsCreate(model, `"input":"third","stream":true`), false)
		first, second := ws.turn(), ws.turn()
		if first.err != nil || second.err != nil {
			t.Fatalf("errors: %+v %+v", first.err, second.err)
		}
		if first.final.Model != scriptmodel.ReasoningModel || second.final.Model != model {
			t.Errorf("responses came as %s, %s; want %s then %s", first.final.Model, second.final.Model, scriptmodel.ReasoningModel, model)
		}
		if first.final.ID == second.final.ID {
			t.Error("the two creates gave one response")
		}
		if first.final.Usage.OutputTokens != think.EvalCount(scriptmodel.EntryAssistant) {
			t.Errorf("first: output_tokens %d", first.final.Usage.OutputTokens)
		}
		checkReply("second", second.final)
		// Each response's events are its own, numbered from its own start.
		if seq := second.events[0]["sequence_number"].(float64); seq != 0 {
			t.Errorf("second response's first sequence_number %v", seq)
		}
		ws.expectError("third", 400, "unsupported_parameter", "stream")
	})

	t.Run("refused messages", func(t *testing.T) {
		ws := dialWS(t, srv, nil)
		for _, tc := range []struct {
			name, msg, code, param string
		}{
			{"stream", wsCreate(model, `"input":"hi","stream":true`), "unsupported_parameter", "stream"},
			{"stream false", wsCreate(model, `"input":"hi","stream":false`), "unsupported_parameter", "stream"},
			{"stream_options", wsCreate(model, `"input":"hi","stream_options":{"include_obfuscation":false}`), "unsupported_parameter", "stream_options"},
			{"background", wsCreate(model, `"input":"hi","background":true`), "unsupported_parameter", "background"},
			{"no type", `{"model":"` + model + `","input":"hi"}`, "missing_required_parameter", "type"},
			{"other type", `{"type":"response.cancel","model":"` + model + `"}`, "invalid_value", "type"},
			{"not JSON", `{"type":"response.create",`, "invalid_json", ""},
		} {
			if err := schematest.Check("WebSocketResponseCreateEvent", []byte(tc.msg)); err == nil {
				t.Errorf("%s: the schema accepts the message the test expects refused", tc.name)
			}
			ws.failsWith(tc.name, tc.msg, false, 400, tc.code, tc.param)
		}
		// Validation errors are hearth's HTTP 400s, param paths included.
		for _, extra := range []string{
			`"input":[{"role":"user","content":[{"type":"input_text"}]}]`,
			`"input":"hi","tools":[{"type":"function","name":"a b"}]`,
			`"input":"hi","temperature":"hot"`,
		} {
			resp, b := post(t, srv.URL+"/v1/responses", reqBody(model, false, extra))
			var env struct {
				Error struct {
					Code, Param, Message string
				}
			}
			json.Unmarshal(b, &env)
			if resp.StatusCode != 400 || env.Error.Param == "" {
				t.Fatalf("HTTP %s: %d %s", extra, resp.StatusCode, b)
			}
			e := ws.failsWith(extra, wsCreate(model, extra), false, 400, env.Error.Code, env.Error.Param)
			if e.Error.Message != env.Error.Message {
				t.Errorf("%s: message %q, HTTP says %q", extra, e.Error.Message, env.Error.Message)
			}
		}
		ws.failsWith("unknown model", wsCreate("no-such-model:latest", `"input":"hi"`), true, 404, "model_not_found", "model")
		// A binary message is not a create.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ws.conn.Write(ctx, websocket.MessageBinary, []byte(wsCreate(model, `"input":"hi"`))); err != nil {
			t.Fatal(err)
		}
		if tr := ws.turn(); tr.err == nil || tr.err.Status != 400 {
			t.Errorf("binary message: %+v", tr)
		}
		checkReply("after the refusals", ws.completed(wsCreate(model, `"input":"one"`)))
	})

	t.Run("openai dialect", func(t *testing.T) {
		// Codex CLI's WebSocket client sends "stream": true (and stream_options) in every
		// create, which OpenAI's API accepts: OpenAI's clients may; others may not (above).
		ws := dialWS(t, srv, http.Header{"Originator": {"codex_exec"}})
		ws.send(wsCreate(scriptmodel.ReasoningModel, `"input":"hello","stream":true,"stream_options":{"include_obfuscation":false}`), false)
		// Not schema-valid by design (OpenAI's names), so read without the checks.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		seen := map[string]bool{}
		for {
			_, data, err := ws.conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var m struct{ Type string }
			json.Unmarshal(data, &m)
			seen[m.Type] = true
			if m.Type == "error" || m.Type == "response.failed" {
				t.Fatalf("create with stream true in the OpenAI dialect: %s", data)
			}
			if m.Type == "response.completed" {
				break
			}
		}
		if !seen["response.reasoning_text.delta"] || seen["response.reasoning.delta"] {
			t.Errorf("event types %v: want OpenAI's reasoning_text names", seen)
		}
		ws.failsWith("stream false", wsCreate(model, `"input":"hi","stream":false`), false, 400, "unsupported_parameter", "stream")
		ws.failsWith("background", wsCreate(model, `"input":"hi","background":false`), false, 400, "unsupported_parameter", "background")
	})

	t.Run("plain GET", func(t *testing.T) {
		code, b := do(t, "GET", srv.URL+"/v1/responses", "", "")
		if code != http.StatusUpgradeRequired || errorCode(b) != "websocket_upgrade_required" {
			t.Errorf("GET without upgrade: %d %s", code, b)
		}
	})
}

// TestWebSocketLimitE2E: the socket authenticates like HTTP, and a connection older
// than its lifetime gets websocket_connection_limit_reached and is closed.
func TestWebSocketLimitE2E(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const lifetime = 3 * time.Second
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db,
		APIKeys: []string{"k1"}, WebSocketLifetime: lifetime, MaxBodyBytes: 64 << 10}))
	defer srv.Close()
	model := scriptmodel.PlainModel
	// Load the model first, so the create below finishes well inside the lifetime.
	if code, b := do(t, "POST", srv.URL+"/v1/responses", "k1", reqBody(model, false, `"input":"warm up"`)); code != 200 {
		t.Fatalf("warm up: %d %s", code, b)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/responses"
	for _, h := range []http.Header{nil, {"Authorization": {"Bearer wrong"}}} {
		_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("dial with %v: err %v resp %v, want 401", h, err, resp)
		}
	}

	// A message over the body limit is answered 413 request_too_large, then the
	// connection is closed (1009, message too big), as HTTP closes a connection whose
	// body was over the limit.
	big := dialWS(t, srv, http.Header{"Authorization": {"Bearer k1"}})
	big.failsWith("message over the limit", wsCreate(model, `"input":"`+strings.Repeat("x", 65<<10)+`"`), true,
		413, "request_too_large", "")
	if _, _, err := big.conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("after a message over the limit: %v, want close 1009", err)
	}

	opened := time.Now()
	ws := dialWS(t, srv, http.Header{"Authorization": {"Bearer k1"}})
	r := ws.completed(wsCreate(model, `"input":"hi"`))
	// The key owns what the socket stored.
	if code, b := do(t, "GET", srv.URL+"/v1/responses/"+r.ID, "k1", ""); code != 200 {
		t.Errorf("GET with the socket's key: %d %s", code, b)
	}
	tr := ws.turn()
	if tr.err == nil || tr.err.Status != 400 || tr.err.Error.Code != "websocket_connection_limit_reached" {
		t.Fatalf("after the lifetime: %+v", tr)
	}
	if waited := time.Since(opened); waited < lifetime {
		t.Errorf("limit reached after %s, before the lifetime %s", waited, lifetime)
	}
	_, _, err = ws.conn.Read(ctx)
	if status := websocket.CloseStatus(err); status != websocket.StatusNormalClosure {
		t.Errorf("after the limit message: %v (close status %d), want a normal closure", err, status)
	}
}

// TestWebSocketAdmissionE2E: a socket's create goes through the same admission as a
// POST: it waits for a slot (response.queued, stored as queued), and beyond the queue
// bound it is refused with a 429 that carries Retry-After, the connection serving on.
func TestWebSocketAdmissionE2E(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db,
		Admission: admission.Config{Slots: 1, MaxQueue: 1}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	model := scriptmodel.PlainModel
	plain := testenv.Model(t, model)

	release := server.HoldSlot(h.Server, model)
	waiting := dialWS(t, srv, nil)
	waiting.send(wsCreate(model, `"input":"hi"`), true)
	var events []map[string]any
	for len(events) < 2 {
		events = append(events, waiting.next())
	}
	if events[0]["type"] != "response.created" || events[1]["type"] != "response.queued" {
		t.Fatalf("first events %v, %v; want response.created, response.queued", events[0]["type"], events[1]["type"])
	}
	id := events[0]["response"].(map[string]any)["id"].(string)
	if code, b := do(t, "GET", srv.URL+"/v1/responses/"+id, "", ""); code != 200 || !strings.Contains(string(b), `"status":"queued"`) {
		t.Errorf("GET while queued: %d %s", code, b)
	}

	// The one queue place is taken: another connection's create is refused.
	other := dialWS(t, srv, nil)
	e := other.failsWith("beyond the queue", wsCreate(model, `"input":"hi"`), true, 429, "too_many_requests", "")
	if n, err := strconv.Atoi(e.Error.Headers["retry-after"]); err != nil || n < 1 {
		t.Errorf("429 headers %v: want a retry-after in whole seconds", e.Error.Headers)
	}

	release()
	for {
		ev := waiting.next()
		events = append(events, ev)
		if ev["type"] == "response.completed" {
			break
		}
	}
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Fatalf("lifecycle: %v", err)
	}
	checkText := func(label string, r *hearth.Response) {
		t.Helper()
		sameItems(t, label, r.Output, []item{{Type: "message", Status: "completed", Text: plain.Text(scriptmodel.EntryAssistant)}})
	}
	b, _ := json.Marshal(events[len(events)-1]["response"])
	var r hearth.Response
	json.Unmarshal(b, &r)
	checkText("queued response", &r)
	checkText("after the 429", other.completed(wsCreate(model, `"input":"hi"`)))

	// Stopping hearth closes idle sockets with 1001 (going away). The clients read, as
	// clients do, so the closing handshake completes at once.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	closed := make(chan error, 2)
	for _, c := range []*wsConn{waiting, other} {
		go func() {
			_, _, err := c.conn.Read(ctx)
			closed <- err
		}()
	}
	if err := h.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	for range 2 {
		if err := <-closed; websocket.CloseStatus(err) != websocket.StatusGoingAway {
			t.Errorf("after shutdown: %v, want close 1001", err)
		}
	}
}

// TestWebSocketDisconnectE2E: a client that closes its socket mid-response stops the
// generation, and the stored response says where it stopped, as for HTTP.
func TestWebSocketDisconnectE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m, long := testenv.BenchModel(t, scriptmodel.LongModel)
	ws := dialWS(t, srv, nil)
	ws.send(wsCreate(long, `"input":"a long story"`), true)
	var id string
	for {
		e := ws.next()
		if e["type"] == "response.created" {
			id = e["response"].(map[string]any)["id"].(string)
		}
		if e["type"] == "response.output_text.delta" {
			break
		}
	}
	ws.conn.CloseNow()
	final := pollUntilDone(t, srv, id)
	if final.Status != hearth.StatusIncomplete || final.IncompleteDetails == nil ||
		final.IncompleteDetails.Reason != engine.IncompleteClientDisconnected {
		t.Fatalf("stored response after disconnect: status %s details %+v error %+v", final.Status, final.IncompleteDetails, final.Error)
	}
	full := m.Text(scriptmodel.EntryAssistant)
	if got := final.Output[0].Text(hearth.PartOutputText); got == full || !strings.HasPrefix(full, got) {
		t.Errorf("stored text %q should be a strict prefix of the script", got)
	}
}

// TestWebSocketCompactE2E: a store=false chain on a socket is compacted over HTTP, and
// a new chain starts on the same socket from the compacted window and goes on there.
// Each turn's input tokens equal those of the same conversation sent whole over HTTP.
func TestWebSocketCompactE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	model := scriptmodel.PlainModel
	reply := testenv.Model(t, model).Text(scriptmodel.EntryAssistant)
	ws := dialWS(t, srv, nil)
	a := ws.completed(wsCreate(model, `"input":"one","store":false`))
	ws.completed(wsCreate(model, `"input":"two","store":false,"previous_response_id":"`+a.ID+`"`))

	// The window the client holds, compacted.
	window := `[` + userMsg("one") + "," + assistantMsg(reply) + "," + userMsg("two") + "," + assistantMsg(reply) + `]`
	r := compact(t, srv, `{"model":"`+model+`","input":`+window+`}`)
	if last := r.Output[len(r.Output)-1]; last.Type != hearth.ItemCompaction || last.EncryptedContent == "" {
		t.Fatalf("compacted window ends with %+v", last)
	}
	compacted := strings.TrimSuffix(mustJSON(t, r.Output), "]")

	// A new chain on the socket from the compacted window...
	fresh := ws.completed(wsCreate(model, `"store":false,"input":`+compacted+`,`+userMsg("three")+`]`))
	overHTTP := createJSON(t, srv, reqBody(model, false, `"store":false,"input":`+compacted+`,`+userMsg("three")+`]`))
	if fresh.Status != hearth.StatusCompleted || fresh.Usage.InputTokens != overHTTP.Usage.InputTokens {
		t.Errorf("new chain from the compacted window: %s, %d input tokens; over HTTP %d",
			fresh.Status, fresh.Usage.InputTokens, overHTTP.Usage.InputTokens)
	}
	// ...continues there through the connection's state.
	next := ws.completed(wsCreate(model, `"store":false,"input":"four","previous_response_id":"`+fresh.ID+`"`))
	whole := createJSON(t, srv, reqBody(model, false, `"store":false,"input":`+compacted+`,`+userMsg("three")+`,`+
		assistantMsg(reply)+`,`+userMsg("four")+`]`))
	if next.Status != hearth.StatusCompleted || next.Usage.InputTokens != whole.Usage.InputTokens {
		t.Errorf("continuation of the compacted chain: %s, %d input tokens; the whole conversation %d",
			next.Status, next.Usage.InputTokens, whole.Usage.InputTokens)
	}
}

// TestWebSocketQueueBytesE2E: what WebSocket messages hold is bounded in bytes, per
// connection and over all connections. A message that does not fit is refused with
// websocket_queue_full (429) and the connection serves on; one over the body limit is
// request_too_large and ends its connection; a closed connection's messages, waiting
// or running, let their bytes go.
func TestWebSocketQueueBytesE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{MaxBodyBytes: 64 << 10, WebSocketQueueBytes: 128 << 10, WebSocketQueueBytesTotal: 192 << 10})
	// A create of n bytes; the padding is a field hearth ignores, so the model's
	// prompt stays short.
	create := func(input string, n int) string {
		m := wsCreate(plain, `"input":"`+input+`","pad":"`)
		return m + strings.Repeat("x", n-len(m)-2) + `"}`
	}
	const size = 50 << 10
	held := func() float64 { return metric(t, srv, "", "hearth_websocket_held_bytes") }
	// errorOf reads messages until an error message, skipping the events of responses
	// the connection runs meanwhile.
	errorOf := func(ws *wsConn) *wsError {
		t.Helper()
		for {
			m := ws.next()
			if m["type"] == "error" {
				b, _ := json.Marshal(m)
				var e wsError
				json.Unmarshal(b, &e)
				return &e
			}
		}
	}
	expect := func(label string, e *wsError, status int, code, says string) {
		t.Helper()
		if e.Status != status || e.Error.Code != code || !strings.Contains(e.Error.Message, says) {
			t.Errorf("%s: %d %s %q, want %d %s saying %q", label, e.Status, e.Error.Code, e.Error.Message, status, code, says)
		}
	}

	release := server.HoldSlot(h.Server, plain)
	defer func() { release() }()
	a := dialWS(t, srv, nil)
	a.send(create("a1", size), false) // runs: waits for the slot
	a.send(create("a2", size), false) // waits behind it
	waitFor(t, "a's two messages held", func() bool { return held() == 2*size })
	a.send(create("a3", size), false)
	expect("third message on a", errorOf(a), 429, server.CodeWebSocketQueueFull, "one connection")
	if got := held(); got != 2*size {
		t.Errorf("held after a refused message: %v bytes, want %d", got, 2*size)
	}

	b := dialWS(t, srv, nil)
	b.send(create("b1", size), false)
	waitFor(t, "b's message held", func() bool { return held() == 3*size })
	b.send(create("b2", size), false)
	expect("second message on b", errorOf(b), 429, server.CodeWebSocketQueueFull, "all WebSocket connections")
	// Over the body limit: 413, then the connection is closed, and b's message lets go.
	b.send(create("b3", 65<<10), false)
	expect("message over the body limit", errorOf(b), 413, "request_too_large", "65536 bytes")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := b.conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("after a message over the limit: %v, want close 1009", err)
	}
	waitFor(t, "b's bytes let go once it closed", func() bool { return held() == 2*size })

	// a goes away with one message running and one waiting: both let go.
	a.conn.CloseNow()
	waitFor(t, "a's bytes let go once it closed", func() bool { return held() == 0 })

	// A connection's messages fit again, run, and let go as they finish.
	c := dialWS(t, srv, nil)
	c.send(create("c1", size), false)
	c.send(create("c2", size), false)
	waitFor(t, "c's messages held", func() bool { return held() == 2*size })
	release()
	release = func() {}
	for range 2 {
		if tr := c.turn(); tr.err != nil || tr.final == nil || tr.final.Status != hearth.StatusCompleted {
			t.Fatalf("c's create: %+v", tr)
		}
	}
	waitFor(t, "c's bytes let go as its responses finished", func() bool { return held() == 0 })
}
