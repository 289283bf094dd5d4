package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/admission"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage"
)

// TestEveryDoorCountsOnceE2E: a request on any of the three APIs is one response of
// the same core: each JSON or streamed request adds exactly one finished response, its
// tokens and one HTTP request of its route to the metrics, under the key that made it;
// and a response a user key stored through another door (Chat Completions with store:
// true) is that key's alone, as on /v1/responses.
func TestEveryDoorCountsOnceE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{})
	ctx := context.Background()
	_, admin, err := db.CreateKeyAs(ctx, "ops", storage.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	_, dev, err := db.CreateKeyAs(ctx, "dev", storage.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	_, eve, err := db.CreateKeyAs(ctx, "eve", storage.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	m := testenv.Model(t, plain)
	tokens := float64(m.EvalCount(scriptmodel.EntryAssistant))
	responses := func() float64 {
		return metric(t, srv, admin, "hearth_responses_total", `model="`+plain+`"`, `status="completed"`, `key="dev"`)
	}
	output := func() float64 {
		return metric(t, srv, admin, "hearth_output_tokens_total", `model="`+plain+`"`, `key="dev"`)
	}
	routeCount := func(route string) float64 {
		return metric(t, srv, admin, "hearth_http_requests_total", `route="`+route+`"`, `code="200"`, `key="dev"`)
	}
	for _, tc := range []struct {
		name, route, body string
	}{
		{"responses", "/v1/responses", `{"model":"` + plain + `","input":"hi"}`},
		{"responses stream", "/v1/responses", `{"model":"` + plain + `","input":"hi","stream":true}`},
		{"chat", "/v1/chat/completions", `{"model":"` + plain + `","messages":[{"role":"user","content":"hi"}]}`},
		{"chat stream", "/v1/chat/completions", `{"model":"` + plain + `","messages":[{"role":"user","content":"hi"}],"stream":true}`},
		{"messages", "/v1/messages", `{"model":"` + plain + `","max_tokens":256,"messages":[{"role":"user","content":"hi"}]}`},
		{"messages stream", "/v1/messages", `{"model":"` + plain + `","max_tokens":256,"messages":[{"role":"user","content":"hi"}],"stream":true}`},
	} {
		beforeResponses, beforeOutput, beforeRoute := responses(), output(), routeCount(tc.route)
		st, _, b := call(t, nil, "POST", srv.URL+tc.route, dev, tc.body)
		if st != 200 || !strings.Contains(string(b), "Hello") {
			t.Errorf("%s: %d %.300s", tc.name, st, b)
			continue
		}
		if n := responses() - beforeResponses; n != 1 {
			t.Errorf("%s: hearth_responses_total grew by %v, want 1", tc.name, n)
		}
		if n := output() - beforeOutput; n != tokens {
			t.Errorf("%s: hearth_output_tokens_total grew by %v, want %v", tc.name, n, tokens)
		}
		if n := routeCount(tc.route) - beforeRoute; n != 1 {
			t.Errorf("%s: hearth_http_requests_total{route=%q} grew by %v, want 1", tc.name, tc.route, n)
		}
	}

	// Stored through Chat Completions: the response is dev's, not eve's.
	st, h, b := call(t, nil, "POST", srv.URL+"/v1/chat/completions", dev,
		`{"model":"`+plain+`","store":true,"messages":[{"role":"user","content":"hi"}]}`)
	id := h.Get("x-hearth-response-id")
	if st != 200 || id == "" {
		t.Fatalf("stored chat completion: %d, x-hearth-response-id %q: %.300s", st, id, b)
	}
	if st, _, b := call(t, nil, "GET", srv.URL+"/v1/responses/"+id, dev, ""); st != 200 {
		t.Errorf("its key reads the stored response: %d %.300s", st, b)
	}
	if st, _, b := call(t, nil, "GET", srv.URL+"/v1/responses/"+id, eve, ""); st != http.StatusNotFound {
		t.Errorf("another user key reads it: %d %.300s", st, b)
	}
}

// TestMessagesPingWhileQueuedE2E: a Messages stream waiting for its model's only slot
// is not silent: message_start, then Anthropic's ping events, come while it waits (a
// client that hears nothing gives up, or looks hung), and the message follows once
// the slot is free.
func TestMessagesPingWhileQueuedE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{APIKeys: []string{"k1"}, Admission: admission.Config{Slots: 1}, Heartbeat: 20 * time.Millisecond})
	m := testenv.Model(t, plain)
	release := sync.OnceFunc(server.HoldSlot(h.Server, plain))
	defer release()
	// A bound against a hang only: a stream that sent nothing while queued would
	// never release the slot.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/messages", strings.NewReader(
		`{"model":"`+plain+`","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", "k1")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []string
	var text strings.Builder
	pingsWhileQueued := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, ev)
			if ev == "ping" && pingsWhileQueued >= 0 {
				if pingsWhileQueued++; pingsWhileQueued == 2 {
					// Two pings, and the request still waits: the slot is held.
					if depth := metric(t, srv, "k1", "hearth_queue_depth", `model="`+plain+`"`); depth != 1 {
						t.Errorf("queue depth %v while pinging, want 1", depth)
					}
					release()
					pingsWhileQueued = -1
				}
			}
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"text_delta"`) {
			var d struct{ Delta struct{ Text string } }
			json.Unmarshal([]byte(data), &d)
			text.WriteString(d.Delta.Text)
		}
	}
	if len(events) == 0 || events[0] != "message_start" || pingsWhileQueued != -1 {
		t.Fatalf("events %v: want message_start, then pings while queued", events)
	}
	if events[len(events)-1] != "message_stop" || text.String() != m.Text(scriptmodel.EntryAssistant) {
		t.Errorf("after the wait: events %v, text %q", events, text.String())
	}
}
