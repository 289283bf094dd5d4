package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
)

// readFrames reads SSE events from a stream until n have arrived (n < 0: until
// [DONE]); it reports whether [DONE] was seen.
func readFrames(t *testing.T, sc *bufio.Scanner, n int) ([]map[string]any, bool) {
	t.Helper()
	var out []map[string]any
	for (n < 0 || len(out) < n) && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return out, true
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("frame %q: %v", data, err)
		}
		out = append(out, ev)
	}
	return out, false
}

// streamGET opens GET /v1/responses/{id}?stream=true with query and reads the whole
// stream, which must end with [DONE].
func streamGET(t *testing.T, srv *httptest.Server, id, query string) []map[string]any {
	t.Helper()
	resp, err := http.Get(srv.URL + "/v1/responses/" + id + "?stream=true" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream %s: %s", query, resp.Status)
	}
	events, err := schematest.ReadSSE(resp.Body)
	if err != nil {
		t.Fatalf("GET stream %s: %v", query, err)
	}
	return events
}

func seqOf(e map[string]any) int { n, _ := e["sequence_number"].(float64); return int(n) }

// checkNumbering fails unless events are numbered from, from+1, ... without a gap.
func checkNumbering(t *testing.T, what string, events []map[string]any, from int) {
	t.Helper()
	for i, e := range events {
		if seqOf(e) != from+i {
			t.Fatalf("%s: event %d (%v) has sequence_number %d, want %d", what, i, e["type"], seqOf(e), from+i)
		}
	}
}

func deltaText(events []map[string]any) string {
	var b strings.Builder
	for _, e := range events {
		if e["type"] == "response.output_text.delta" {
			b.WriteString(e["delta"].(string))
		}
	}
	return b.String()
}

// TestResumeStreamE2E: a client streams a background response, leaves after a few
// text deltas, and resumes with starting_after while the response still runs: it gets
// every later event live with its original sequence number, nothing lost or repeated,
// and the text continues where it left off. Once finished the journal replays the
// same events, from any point; beyond the end is an empty stream; bad values are 400.
func TestResumeStreamE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	// The bench variant: the same script at a real model's speed, so the response
	// still runs when the client comes back.
	m, long := testenv.BenchModel(t, scriptmodel.PlainModel)
	full := m.Text(scriptmodel.EntryAssistant)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/responses",
		strings.NewReader(reqBody(long, true, `"input":"a long story","background":true`)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var first []map[string]any
	deltas := 0
	for deltas < 2 {
		evs, _ := readFrames(t, sc, 1)
		if len(evs) == 0 {
			t.Fatalf("stream ended after %d events", len(first))
		}
		first = append(first, evs[0])
		if evs[0]["type"] == "response.output_text.delta" {
			deltas++
		}
	}
	cancel() // the client leaves; a background response goes on
	resp.Body.Close()
	checkNumbering(t, "first connection", first, 0)
	for i, typ := range []string{"response.created", "response.queued", "response.in_progress"} {
		if first[i]["type"] != typ {
			t.Errorf("event %d is %v, want %s", i, first[i]["type"], typ)
		}
	}
	id := first[0]["response"].(map[string]any)["id"].(string)
	n := seqOf(first[len(first)-1])

	code, b := do(t, "GET", srv.URL+"/v1/responses/"+id, "", "")
	var mid hearth.Response
	json.Unmarshal(b, &mid)
	if code != 200 || mid.Status != hearth.StatusInProgress {
		t.Fatalf("after the client left the response is %d %s, want in_progress (too fast to resume live)", code, mid.Status)
	}
	rest := streamGET(t, srv, id, fmt.Sprintf("&starting_after=%d", n))
	checkNumbering(t, "resumed", rest, n+1)
	if last := rest[len(rest)-1]; last["type"] != "response.completed" {
		t.Fatalf("resumed stream ends with %v", last["type"])
	}
	all := append(append([]map[string]any{}, first...), rest...)
	schematest.ValidateEvents(t, all)
	if err := schematest.CheckLifecycle(all); err != nil {
		t.Errorf("first connection + resumed stream: %v", err)
	}
	if got := deltaText(all); got != full {
		t.Errorf("text of both connections:\n got %q\nwant %q", got, full)
	}
	if deltaText(first) == "" || deltaText(rest) == "" || !strings.HasPrefix(full, deltaText(first)) {
		t.Errorf("split %q | %q", deltaText(first), deltaText(rest))
	}
	final := pollUntilDone(t, srv, id)
	if final.Status != hearth.StatusCompleted || final.Output[0].Text(hearth.PartOutputText) != full ||
		final.Usage.OutputTokens != m.EvalCount(scriptmodel.EntryAssistant) {
		t.Errorf("stored response: %s %q usage %+v", final.Status, final.Output[0].Text(hearth.PartOutputText), final.Usage)
	}

	// Finished: the journal replays exactly what was sent, whole or from any event.
	if whole := streamGET(t, srv, id, ""); mustJSON(t, whole) != mustJSON(t, all) {
		t.Errorf("replay differs from what the client was sent:\n got %s\nwant %s", mustJSON(t, whole), mustJSON(t, all))
	}
	for _, k := range []int{0, 2, n, len(all) - 2} {
		if got := streamGET(t, srv, id, fmt.Sprintf("&starting_after=%d", k)); mustJSON(t, got) != mustJSON(t, all[k+1:]) {
			t.Errorf("replay after %d: %d events, want %d", k, len(got), len(all)-k-1)
		}
	}
	for _, k := range []int{len(all) - 1, len(all) + 5} {
		if got := streamGET(t, srv, id, fmt.Sprintf("&starting_after=%d", k)); len(got) != 0 {
			t.Errorf("starting_after=%d beyond the end: %d events", k, len(got))
		}
	}
	for _, bad := range []string{"-1", "abc", "1.5", ""} {
		code, b := do(t, "GET", srv.URL+"/v1/responses/"+id+"?stream=true&starting_after="+bad, "", "")
		var env struct{ Error struct{ Param, Code string } }
		json.Unmarshal(b, &env)
		if code != 400 || env.Error.Param != "starting_after" {
			t.Errorf("starting_after=%q: %d %s", bad, code, b)
		}
	}
}

// TestResumeFromStartE2E: a second client that streams a running response without
// starting_after gets the whole stream from response.created, live, the same as the
// client that created it; a JSON (non-stream) response's journal replays as the
// stream it would have been.
func TestResumeFromStartE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	_, long := testenv.BenchModel(t, scriptmodel.PlainModel)
	code, b := do(t, "POST", srv.URL+"/v1/responses", "", reqBody(long, false, `"input":"a long story","background":true`))
	if code != 200 {
		t.Fatalf("create: %d %s", code, b)
	}
	var queued hearth.Response
	json.Unmarshal(b, &queued)
	if queued.Status != hearth.StatusQueued {
		t.Fatalf("background create answered %s", queued.Status)
	}
	got := make(chan []map[string]any, 2)
	for range 2 {
		go func() { got <- streamGET(t, srv, queued.ID, "") }()
	}
	a, c := <-got, <-got
	checkNumbering(t, "live from the start", a, 0)
	if mustJSON(t, a) != mustJSON(t, c) {
		t.Error("two live readers got different streams")
	}
	if err := schematest.CheckLifecycle(a); err != nil {
		t.Errorf("live from the start: %v", err)
	}
	if a[1]["type"] != "response.queued" || a[len(a)-1]["type"] != "response.completed" {
		t.Errorf("stream of a background response: %v ... %v", a[1]["type"], a[len(a)-1]["type"])
	}
	if again := streamGET(t, srv, queued.ID, ""); mustJSON(t, again) != mustJSON(t, a) {
		t.Error("the stored journal differs from the live stream")
	}
}

// TestResumeAfterRestartE2E: the journal of a finished response is still there after
// hearth restarts on the same database, with the original numbering.
func TestResumeAfterRestartE2E(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hearth.db")
	start := func() (*httptest.Server, func()) {
		db, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.RecoverInFlight(context.Background()); err != nil {
			t.Fatal(err)
		}
		h := wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db})
		srv := httptest.NewServer(h)
		return srv, func() {
			srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			h.Shutdown(ctx)
			db.Close()
		}
	}
	srv, stop := start()
	plain := testenv.Model(t, scriptmodel.PlainModel)
	code, b := do(t, "POST", srv.URL+"/v1/responses", "", reqBody(scriptmodel.PlainModel, false, `"input":"hi","background":true`))
	if code != 200 {
		t.Fatalf("create: %d %s", code, b)
	}
	var queued hearth.Response
	json.Unmarshal(b, &queued)
	pollUntilDone(t, srv, queued.ID)
	before := streamGET(t, srv, queued.ID, "")
	stop()

	srv, stop = start()
	defer stop()
	after := streamGET(t, srv, queued.ID, "&starting_after=2")
	checkNumbering(t, "after the restart", after, 3)
	if mustJSON(t, after) != mustJSON(t, before[3:]) {
		t.Errorf("after the restart:\n got %s\nwant %s", mustJSON(t, after), mustJSON(t, before[3:]))
	}
	if deltaText(before) != plain.Text(scriptmodel.EntryAssistant) {
		t.Errorf("journaled text %q", deltaText(before))
	}
}

// TestJournalPrunedOrCutE2E: a response whose journal was pruned (as one stored before
// journals existed) replays from its stored state as before, with starting_after
// applied to the regenerated numbering; a journal cut short (hearth stopped between
// two batch writes) replays what it has and ends as the stored response ended.
func TestJournalPrunedOrCutE2E(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hearth.db")
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db})
	srv := httptest.NewServer(h)
	defer srv.Close()
	plain := testenv.Model(t, scriptmodel.PlainModel)
	pruned := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"hi"`))
	cut := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"hi"`))
	journaled := streamGET(t, srv, cut.ID, "")

	// Cut the second journal after its last delta, as a crash between two batch
	// writes would.
	keep := 0
	for i, e := range journaled {
		if e["type"] == "response.output_text.delta" {
			keep = i
		}
	}
	stored, _, err := db.Journal(context.Background(), cut.ID, -1)
	if err != nil || len(stored) != len(journaled) {
		t.Fatalf("stored journal: %d events, %v", len(stored), err)
	}
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`DELETE FROM events WHERE response_id = ?`, cut.ID); err != nil {
		t.Fatal(err)
	}
	if err := db.AppendEvents(context.Background(), cut.ID, stored[:keep+1], false); err != nil {
		t.Fatal(err)
	}
	got := streamGET(t, srv, cut.ID, "")
	checkNumbering(t, "cut journal", got, 0)
	if mustJSON(t, got[:keep+1]) != mustJSON(t, journaled[:keep+1]) {
		t.Error("a cut journal does not replay what it has")
	}
	if last := got[len(got)-1]; len(got) != keep+2 || last["type"] != "response.completed" ||
		mustJSON(t, last["response"].(map[string]any)["output"]) != mustJSON(t, asJSONValue(t, cut.Output)) {
		t.Errorf("cut journal ends with %d events, last %s", len(got), mustJSON(t, last))
	}
	if tail := streamGET(t, srv, cut.ID, fmt.Sprintf("&starting_after=%d", keep)); len(tail) != 1 || seqOf(tail[0]) != keep+1 {
		t.Errorf("cut journal after its last stored event: %s", mustJSON(t, tail))
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Core.PruneJournals(ctx, time.Nanosecond) // the first pass runs at once
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := raw.QueryRow(`SELECT count(*) FROM events WHERE response_id = ?`, pruned.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the journal was not pruned: %d events", n)
		}
	}
	replayed := streamGET(t, srv, pruned.ID, "")
	checkNumbering(t, "pruned", replayed, 0)
	if err := schematest.CheckLifecycle(replayed); err != nil {
		t.Errorf("replay without a journal: %v", err)
	}
	if deltaText(replayed) != plain.Text(scriptmodel.EntryAssistant) {
		t.Errorf("replay without a journal has text %q", deltaText(replayed))
	}
	if tail := streamGET(t, srv, pruned.ID, "&starting_after=2"); mustJSON(t, tail) != mustJSON(t, replayed[3:]) {
		t.Errorf("replay without a journal after 2:\n got %s\nwant %s", mustJSON(t, tail), mustJSON(t, replayed[3:]))
	}
}

// TestJournalOfEveryPathE2E: a response created over WebSocket or as a plain SSE
// stream is journaled as sent: GET ?stream=true replays exactly the events its client
// got, and resumes from any of them.
func TestJournalOfEveryPathE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	ws := dialWS(t, srv, nil)
	ws.send(wsCreate(scriptmodel.ToolsModel, `"input":"weather in Paris?",`+toolsJSON), true)
	tr := ws.turn()
	if tr.err != nil || tr.final.Status != hearth.StatusCompleted {
		t.Fatalf("websocket create: %+v %+v", tr.err, tr.final)
	}
	if got := streamGET(t, srv, tr.final.ID, ""); mustJSON(t, got) != mustJSON(t, tr.events) {
		t.Errorf("journal of a WebSocket response:\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, tr.events))
	}
	if got := streamGET(t, srv, tr.final.ID, "&starting_after=3"); mustJSON(t, got) != mustJSON(t, tr.events[4:]) {
		t.Errorf("journal of a WebSocket response after 3:\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, tr.events[4:]))
	}

	resp, err := http.Post(srv.URL+"/v1/responses", "application/json",
		strings.NewReader(reqBody(scriptmodel.ReasoningModel, true, `"input":"hello"`)))
	if err != nil {
		t.Fatal(err)
	}
	sent, err := schematest.ReadSSE(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	id := sent[0]["response"].(map[string]any)["id"].(string)
	if got := streamGET(t, srv, id, ""); mustJSON(t, got) != mustJSON(t, sent) {
		t.Errorf("journal of a streamed response:\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, sent))
	}

	// The journal keeps the spec's names; an OpenAI client's replay gets OpenAI's.
	req, _ := http.NewRequest("GET", srv.URL+"/v1/responses/"+id+"?stream=true", nil)
	req.Header.Set("x-hearth-event-names", "openai")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	renamed, err := schematest.ReadSSE(resp.Body)
	resp.Body.Close()
	if err != nil || len(renamed) != len(sent) {
		t.Fatalf("OpenAI-named replay: %d events, %v", len(renamed), err)
	}
	saw := false
	for i, e := range renamed {
		want := hearth.OpenAIEventType(sent[i]["type"].(string))
		saw = saw || want != sent[i]["type"]
		if e["type"] != want {
			t.Errorf("OpenAI-named replay: event %d is %v, want %s", i, e["type"], want)
		}
	}
	if !saw {
		t.Error("the reasoning response has no event OpenAI names otherwise")
	}
}

// BenchmarkJournalDisk measures what the event journal costs on disk: it creates
// stored responses of the long script model (one message of 330 characters, its
// deltas one token each), then compares the database's size with and without the
// journal rows. The numbers in docs/api.md come from:
//
//	go test ./server -run '^$' -bench JournalDisk -benchtime 50x
func BenchmarkJournalDisk(b *testing.B) {
	path := filepath.Join(b.TempDir(), "hearth.db")
	db, err := sqlite.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(b), Database: db}))
	defer srv.Close()
	testenv.Model(b, scriptmodel.LongModel)
	for b.Loop() {
		resp, err := http.Post(srv.URL+"/v1/responses", "application/json",
			strings.NewReader(reqBody(scriptmodel.LongModel, false, `"input":"a long story"`)))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatal(resp.Status)
		}
	}
	b.StopTimer()
	raw, err := sqlite.OpenRaw(path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	size := func() float64 {
		var pages, pageSize float64
		if _, err := raw.Exec(`VACUUM`); err != nil {
			b.Fatal(err)
		}
		raw.QueryRow(`PRAGMA page_count`).Scan(&pages)
		raw.QueryRow(`PRAGMA page_size`).Scan(&pageSize)
		return pages * pageSize
	}
	var responses, events, data float64
	raw.QueryRow(`SELECT count(DISTINCT response_id), sum(last_seq - first_seq + 1), sum(length(data)) FROM events`).Scan(&responses, &events, &data)
	with := size()
	if _, err := raw.Exec(`DELETE FROM events; DELETE FROM journals`); err != nil {
		b.Fatal(err)
	}
	cost := with - size()
	b.ReportMetric(events/responses, "events/response")
	b.ReportMetric(data/events, "data-B/event")
	b.ReportMetric(cost/events, "disk-B/event")
	b.ReportMetric(cost/responses, "disk-B/response")
}
