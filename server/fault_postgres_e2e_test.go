package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage/postgres"
	"hearth/storage/postgres/pgtest"
)

// storeHealth is /healthz's status and its database part.
type storeHealth struct {
	OK    bool   `json:"ok"`
	State string `json:"state"`
	Error string `json:"error"`
}

func storeHealthOf(t *testing.T, srv *httptest.Server) (int, storeHealth) {
	t.Helper()
	r, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var h struct {
		Database storeHealth `json:"database"`
	}
	if err := json.NewDecoder(r.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return r.StatusCode, h.Database
}

// wantUnavailable checks that a request answered while the database was down is a 503
// storage_unavailable error envelope with Retry-After.
func wantUnavailable(t *testing.T, what string, resp *http.Response, b []byte) {
	t.Helper()
	code, _ := errCode(b)
	if resp.StatusCode != http.StatusServiceUnavailable || code != server.CodeStorageUnavailable {
		t.Errorf("%s while the database is down: %d %s; want 503 %s", what, resp.StatusCode, b, server.CodeStorageUnavailable)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("%s while the database is down: no Retry-After", what)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("%s while the database is down: an event stream, want a JSON error", what)
	}
}

// TestDatabaseDownE2E takes hearth's PostgreSQL down while a response streams and
// brings it back, with a real hearth (embedded runtime, script models) serving
// throughout. The stream in flight ends with error + response.failed, not
// response.completed; while the database is down every request that needs it is a 503
// storage_unavailable with Retry-After and /healthz says the database is unavailable;
// once it is back, the same hearth serves again without a restart, what was stored
// before is intact, the response that failed is stored as failed (what its client was
// told), and a chain goes on, over HTTP and over a WebSocket opened before it all.
func TestDatabaseDownE2E(t *testing.T) {
	c := pgtest.Own(t) // taking the database down must disturb no other test
	if !c.Owned() {
		t.Skip("the server HEARTH_TEST_POSTGRES names is not this test's to stop")
	}
	u, err := c.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db}))
	t.Cleanup(srv.Close)

	plain := testenv.Model(t, scriptmodel.PlainModel)
	want := plain.Text(scriptmodel.EntryAssistant)
	_, long := testenv.BenchModel(t, scriptmodel.LongModel)
	createJSON(t, srv, reqBody(long, false, `"input":"warm up","max_output_tokens":16`))
	before := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"before the database goes"`))
	if st, h := storeHealthOf(t, srv); st != http.StatusOK || !h.OK || h.State != "ok" {
		t.Fatalf("health with the database up: %d %+v", st, h)
	}

	// A WebSocket open before the database stops stays open through it.
	ws := dialWS(t, srv, nil)

	// A stream is under way when the database stops. The bench model generates at the
	// pace of a small real model: its 24 tokens take seconds, the stop a fraction of one.
	resp, err := http.Post(srv.URL+"/v1/responses", "application/json",
		strings.NewReader(reqBody(long, true, `"input":"a story while the database stops","max_output_tokens":24`)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw strings.Builder
	var id string
	var up func() error
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		raw.Write(buf[:n])
		if id == "" {
			for _, line := range strings.Split(raw.String(), "\n") {
				if id = responseIDOf(line); id != "" {
					break
				}
			}
		}
		if up == nil && strings.Contains(raw.String(), "response.output_text.delta") {
			if up, err = c.Down(); err != nil {
				t.Fatal(err)
			}
		}
		if err != nil {
			break
		}
	}
	body := raw.String()
	if up == nil {
		t.Fatalf("the stream ended before any text: %s", body)
	}
	if !strings.HasSuffix(body, "event: response.failed\n"+lastData(body)+"\n\ndata: [DONE]\n\n") || !strings.Contains(body, "event: error\n") {
		t.Errorf("stream whose database stopped does not end with error, response.failed, [DONE]:\n%s", tailOf(body, 1500))
	}
	if strings.Contains(body, "event: response.completed") {
		t.Errorf("the client was told the response completed although it was not stored")
	}
	if !strings.Contains(lastData(body), "cannot be reached") {
		t.Errorf("response.failed does not say the database cannot be reached: %s", tailOf(lastData(body), 600))
	}

	// While it is down: clear 503s, and /healthz says why.
	r, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, false, `"input":"database is down"`))
	wantUnavailable(t, "a JSON request", r, b)
	r, b = post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, true, `"input":"database is down"`))
	wantUnavailable(t, "a stream request", r, b)
	r, b = post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, false,
		`"input":"database is down","previous_response_id":"`+before.ID+`"`))
	wantUnavailable(t, "a continuation", r, b)
	g, err := http.Get(srv.URL + "/v1/responses/" + before.ID)
	if err != nil {
		t.Fatal(err)
	}
	gb := make([]byte, 4096)
	n, _ := g.Body.Read(gb)
	g.Body.Close()
	wantUnavailable(t, "a GET", g, gb[:n])
	ws.send(wsCreate(scriptmodel.PlainModel, `"input":"database is down"`), true)
	if tr := ws.turn(); tr.err == nil || tr.err.Status != http.StatusServiceUnavailable ||
		tr.err.Error.Code != server.CodeStorageUnavailable || tr.err.Error.Headers["retry-after"] == "" {
		t.Errorf("WebSocket create while the database is down: %+v; want a 503 %s error with retry-after", tr.err, server.CodeStorageUnavailable)
	}
	if st, h := storeHealthOf(t, srv); st != http.StatusServiceUnavailable || h.OK || h.State != "unavailable" {
		t.Errorf("health with the database down: %d %+v; want 503, database not ok, state unavailable", st, h)
	}

	// Back: the same hearth serves again.
	if err := up(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, h := storeHealthOf(t, srv)
		if st == http.StatusOK && h.OK && h.State == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health after the database came back: %d %+v", st, h)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := getStored(t, srv, before.ID); got.Status != hearth.StatusCompleted || got.Output[0].Text(hearth.PartOutputText) != want {
		t.Errorf("response stored before the database went: %s %+v", got.Status, got.Output)
	}
	// The row of the response that failed says what its client was told.
	stored := getStored(t, srv, id)
	for stored.Status != hearth.StatusFailed && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		stored = getStored(t, srv, id)
	}
	if stored.Status != hearth.StatusFailed {
		t.Errorf("stored status %s after the database came back, want failed (as the client was told)", stored.Status)
	}
	after := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false,
		`"input":"the database is back","previous_response_id":"`+before.ID+`"`))
	if after.Status != hearth.StatusCompleted || after.Output[0].Text(hearth.PartOutputText) != want {
		t.Errorf("continuation after the database came back: %s %+v", after.Status, after.Output)
	}
	if got := getStored(t, srv, after.ID); got.Status != hearth.StatusCompleted {
		t.Errorf("continuation stored as %s", got.Status)
	}
	ws.send(wsCreate(scriptmodel.PlainModel, `"input":"the database is back","previous_response_id":"`+before.ID+`"`), true)
	if tr := ws.turn(); tr.err != nil || tr.final == nil || tr.final.Status != hearth.StatusCompleted {
		t.Errorf("the WebSocket opened before the database stopped, after it is back: %+v", tr.err)
	}
}
