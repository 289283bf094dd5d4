package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
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
