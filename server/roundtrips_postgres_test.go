package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"hearth/storage/postgres/pgtest"
)

// TestRoundTripsPostgres counts the round trips to PostgreSQL that hearth makes for
// each kind of response (over the fake runtime, without keys), which on a database
// across a network are most of what a response costs there: a first turn stored
// whole, a streamed one (created, then completed with its journal), and a
// continuation whose chain the server holds from the turn before. The counts are
// exact, so a change that adds a statement to a hot path fails here, with the
// statements each response sent in the log.
func TestRoundTripsPostgres(t *testing.T) {
	t.Setenv("HEARTH_CONTEXT_LENGTH", "1048576")
	trips := &pgtest.RoundTrips{}
	var mu sync.Mutex
	var sent []string
	trips.SQL = func(sql string) {
		mu.Lock()
		sent = append(sent, strings.Join(strings.Fields(sql), " "))
		mu.Unlock()
	}
	h, _ := newPostgresFakeServer(t, pgtest.Own(t), trips)
	srv := httptest.NewServer(h)
	defer srv.Close()
	const model = `"model":"hearth-fake-128k","input":"What route would you suggest through the south of France?"`
	post := func(body string) string {
		t.Helper()
		resp, err := http.Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", resp.Status, raw)
		}
		if i := strings.Index(string(raw), `"id":"resp_`); i >= 0 {
			return string(raw[i+6 : i+6+len("resp_")+32])
		}
		t.Fatalf("no id in %s", raw)
		return ""
	}
	// count runs a response and returns the round trips it made.
	count := func(body string) (string, int64) {
		t.Helper()
		mu.Lock()
		sent = nil
		mu.Unlock()
		n0 := trips.Total()
		id := post(body)
		n := trips.Total() - n0
		mu.Lock()
		t.Logf("%d round trips:\n  %s", n, strings.Join(sent, "\n  "))
		mu.Unlock()
		return id, n
	}
	// Every statement is used once first, so that preparing them (once per
	// connection) stays out of the counts.
	first := post(`{` + model + `}`)
	post(`{` + model + `,"stream":true}`)
	second := post(`{` + model + `,"previous_response_id":"` + first + `"}`)
	post(`{` + model + `,"previous_response_id":"` + second + `"}`)

	for _, c := range []struct {
		name string
		body string
		want int64
	}{
		{"json", `{` + model + `}`, wantJSON},
		{"stream", `{` + model + `,"stream":true}`, wantStream},
		{"continuation", `{` + model + `,"previous_response_id":"` + second + `"}`, wantContinuation},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, n := count(c.body); n != c.want {
				t.Errorf("%s: %d round trips, want %d", c.name, n, c.want)
			}
		})
	}
}

const wantJSON, wantStream, wantContinuation = 4, 6, 4
