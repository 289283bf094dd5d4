package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"hearth/cmd/hearth/wire"
	"hearth/internal/admission"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
	"hearth/server"
)

// laneMessage reads one message of a multiplexed socket: its stream_id ("" for none)
// and the message without it, validated against the schema (stream_id is OpenAI's
// addition to every WebSocket message).
func (c *wsConn) laneMessage() (string, map[string]any) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, data, err := c.conn.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatal(err)
	}
	id, _ := m["stream_id"].(string)
	if _, ok := m["stream_id"]; ok && id == "" {
		c.t.Errorf("stream_id %v is not a non-empty string", m["stream_id"])
	}
	delete(m, "stream_id")
	stripped, _ := json.Marshal(m)
	if err := schematest.CheckWebSocketMessage(stripped); err != nil {
		c.t.Error(err)
	}
	return id, m
}

// laneLog is what a multiplexed socket sent, by stream_id: the messages of each
// lane, the order they came in over the whole socket, and the creates finished.
type laneLog struct {
	byLane map[string][]map[string]any
	at     map[string][]int // the index of each lane message in the socket's order
	ended  map[string]int   // creates finished per lane
	open   map[string]bool  // the lane has a response whose terminal event is still to come
	n      int
}

// readLanes reads until the lanes have finished as many creates as want says.
func (c *wsConn) readLanes(want map[string]int) *laneLog {
	c.t.Helper()
	l := &laneLog{byLane: map[string][]map[string]any{}, at: map[string][]int{}, ended: map[string]int{}, open: map[string]bool{}}
	done := func() bool {
		for id, n := range want {
			if l.ended[id] < n {
				return false
			}
		}
		return true
	}
	for !done() {
		id, m := c.laneMessage()
		if _, ok := want[id]; !ok {
			c.t.Fatalf("a message of lane %q, which no create named: %v", id, m)
		}
		l.byLane[id] = append(l.byLane[id], m)
		l.at[id] = append(l.at[id], l.n)
		l.n++
		switch m["type"] {
		case "response.created":
			l.open[id] = true
		case "response.completed", "response.incomplete", "response.failed":
			l.open[id] = false
			l.ended[id]++
		case "error":
			if !l.open[id] {
				l.ended[id]++ // refused before its response existed
			}
		}
	}
	return l
}

// digest is a response's events as comparable lines: type, output index and text
// (deltas and done texts); response.queued, which depends on timing, is left out.
func digest(events []map[string]any) []string {
	var out []string
	for _, e := range events {
		if e["type"] == "response.queued" {
			continue
		}
		out = append(out, fmt.Sprintf("%v %v %v %v", e["type"], e["output_index"], e["delta"], e["text"]))
	}
	return out
}

func laneCreate(stream, model, extra string) string {
	return strings.TrimSuffix(wsCreate(model, extra), "}") + `,"stream_id":"` + stream + `"}`
}

// TestWebSocketStreamsE2E: creates on two lanes of one socket run at the same time,
// their events interleaved, each event carrying its lane's stream_id, each lane's
// events exactly those of the same create alone on a socket; creates of one lane run
// in order; a create without stream_id has no stream_id in its messages.
func TestWebSocketStreamsE2E(t *testing.T) {
	srv, _, _, _ := sealedHearth(t, t.TempDir())
	long, plainM := scriptmodel.LongModel, scriptmodel.PlainModel
	// Alone, without lanes: the events each create gives.
	solo := dialWS(t, srv, nil)
	solo.send(wsCreate(long, `"input":"tell a story"`), true)
	wantLong := digest(solo.turn().events)
	solo.send(wsCreate(plainM, `"input":"hi"`), true)
	wantPlain := digest(solo.turn().events)

	ws := dialWS(t, srv, nil)
	ws.send(laneCreate("story", long, `"input":"tell a story"`), false)
	ws.send(laneCreate("greet", plainM, `"input":"hi"`), false)
	ws.send(laneCreate("story", plainM, `"input":"hi"`), false)
	log := ws.readLanes(map[string]int{"story": 2, "greet": 1})

	greet := log.byLane["greet"]
	if got := digest(greet); strings.Join(got, "\n") != strings.Join(wantPlain, "\n") {
		t.Errorf("lane greet:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantPlain, "\n"))
	}
	story := log.byLane["story"]
	first := 0
	for first < len(story) && story[first]["type"] != "response.completed" {
		first++
	}
	if first == len(story) {
		t.Fatalf("lane story: no response completed")
	}
	if got := digest(story[:first+1]); strings.Join(got, "\n") != strings.Join(wantLong, "\n") {
		t.Errorf("lane story, first create:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantLong, "\n"))
	}
	// One lane runs its creates in order: the second starts after the first ended.
	if got := digest(story[first+1:]); strings.Join(got, "\n") != strings.Join(wantPlain, "\n") {
		t.Errorf("lane story, second create:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantPlain, "\n"))
	}
	// Lanes run at the same time: greet began before story's first response ended.
	if log.at["greet"][0] > log.at["story"][first] {
		t.Errorf("lane greet's first message came at %d, after lane story's first response ended (%d)", log.at["greet"][0], log.at["story"][first])
	}
	for i, events := range [][]map[string]any{greet, story[:first+1], story[first+1:]} {
		if err := schematest.CheckLifecycle(events); err != nil {
			t.Errorf("response %d lifecycle: %v", i, err)
		}
	}

	// Without stream_id, as before: no stream_id in any message.
	ws.send(wsCreate(plainM, `"input":"hi"`), true)
	if l := ws.readLanes(map[string]int{"": 1}); len(l.byLane[""]) == 0 {
		t.Error("no messages for a create without stream_id")
	}
}

// TestWebSocketStreamFailuresE2E: a lane's failure (a bad request, an unknown model,
// a model error mid-response, a bad stream_id) is that lane's alone; the other lane's
// response completes, and a failed lane serves its next create.
func TestWebSocketStreamFailuresE2E(t *testing.T) {
	srv, _, _, _ := sealedHearth(t, t.TempDir())
	long, plainM := scriptmodel.LongModel, scriptmodel.PlainModel
	ws := dialWS(t, srv, nil)
	ws.send(laneCreate("ok", long, `"input":"tell a story"`), false)
	ws.send(laneCreate("bad", plainM, `"input":[{"role":"robot","content":"hi"}]`), false)
	ws.send(laneCreate("gone", "no-such-model", `"input":"hi"`), false)
	// A model error mid-response: the custom tool's input cannot match its grammar.
	parens := "start: \"(\" start \")\" | \"x\"\n"
	ws.send(laneCreate("model", scriptmodel.CustomToolModel, `"input":"Add a file.","tools":[`+customTool(grammarFormat("lark", parens))+`]`), false)
	ws.send(laneCreate("bad", plainM, `"input":"hi"`), false)
	log := ws.readLanes(map[string]int{"ok": 1, "bad": 2, "gone": 1, "model": 1})
	model := log.byLane["model"]
	if n := len(model); n < 2 || model[n-2]["type"] != "error" || model[n-1]["type"] != "response.failed" {
		t.Errorf("lane model: %d messages, ending %v", n, model[n-1]["type"])
	} else if e, _ := model[n-2]["error"].(map[string]any); e["code"] != "model_error" {
		t.Errorf("lane model's error: %v", model[n-2])
	}

	wantErr := func(lane string, m map[string]any, status float64, code, param string) {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		if m["type"] != "error" || m["status"] != status || e["code"] != code || e["param"] != param {
			t.Errorf("lane %s: %v; want error %v %s at %s", lane, m, status, code, param)
		}
	}
	wantErr("bad", log.byLane["bad"][0], 400, "invalid_value", "input[0].role")
	wantErr("gone", log.byLane["gone"][0], 404, "model_not_found", "model")
	if last := log.byLane["bad"][len(log.byLane["bad"])-1]; last["type"] != "response.completed" {
		t.Errorf("lane bad after its error: %v", last["type"])
	}
	if ok := log.byLane["ok"]; ok[len(ok)-1]["type"] != "response.completed" {
		t.Errorf("lane ok: %v", ok[len(ok)-1]["type"])
	}
	if err := schematest.CheckLifecycle(log.byLane["ok"]); err != nil {
		t.Errorf("lane ok lifecycle: %v", err)
	}

	// A stream_id off the schema's pattern is refused, naming it.
	for _, bad := range []string{`""`, `"a b"`, `7`, `"` + strings.Repeat("x", 257) + `"`} {
		ws.send(strings.TrimSuffix(wsCreate(plainM, `"input":"hi"`), "}")+`,"stream_id":`+bad+`}`, false)
		if _, m := ws.laneMessage(); m["type"] != "error" || m["error"].(map[string]any)["param"] != "stream_id" {
			t.Errorf("stream_id %s: %v", bad, m)
		}
	}
}

// TestWebSocketStreamLimitE2E: at most server.MaxSocketStreams lanes of a socket
// have creates in flight or waiting; a create for one more lane is refused with
// websocket_stream_limit_reached (naming stream_id, on that lane), while a busy lane
// still takes creates, and every lane's responses complete once the model is free.
func TestWebSocketStreamLimitE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{Admission: admission.Config{Slots: 1}})
	model := scriptmodel.PlainModel
	createJSON(t, srv, reqBody(model, false, `"input":"warm up"`))
	release := server.HoldSlot(h.Server, model)
	ws := dialWS(t, srv, nil)
	want := map[string]int{}
	for i := 0; i < server.MaxSocketStreams; i++ {
		id := fmt.Sprintf("s%d", i)
		ws.send(laneCreate(id, model, `"input":"hi"`), false)
		want[id] = 1
		// Queued behind the held slot: created, then queued.
		if got, m := ws.laneMessage(); got != id || m["type"] != "response.created" {
			t.Fatalf("lane %s: %s %v", id, got, m["type"])
		}
		if got, m := ws.laneMessage(); got != id || m["type"] != "response.queued" {
			t.Fatalf("lane %s: %s %v", id, got, m["type"])
		}
	}
	ws.send(laneCreate("one-more", model, `"input":"hi"`), false)
	got, m := ws.laneMessage()
	e, _ := m["error"].(map[string]any)
	if got != "one-more" || m["type"] != "error" || m["status"] != 400.0 || e["code"] != server.CodeWebSocketStreamLimitReached || e["param"] != "stream_id" {
		t.Errorf("a lane beyond the limit: %s %v", got, m)
	}
	ws.send(laneCreate("s0", model, `"input":"again"`), false) // a busy lane takes more
	want["s0"] = 2
	release()
	log := ws.readLanes(want)
	for id, msgs := range log.byLane {
		if last := msgs[len(msgs)-1]; last["type"] != "response.completed" {
			t.Errorf("lane %s ended with %v", id, last["type"])
		}
	}
	// Idle again: a new lane is taken.
	ws.send(laneCreate("one-more", model, `"input":"hi"`), false)
	if l := ws.readLanes(map[string]int{"one-more": 1}); l.byLane["one-more"][len(l.byLane["one-more"])-1]["type"] != "response.completed" {
		t.Error("a new lane once the others are idle did not complete")
	}
}
