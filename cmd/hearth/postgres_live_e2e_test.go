package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage/postgres/pgtest"
)

// liveLease is the replicas' --replica-lease in these tests: a replica killed is
// noticed between 2/3 of it and 4/3 of it later (its last renewal was up to a third
// of it before the kill). A replica renews every third of it, so a survivor starved
// of the CPU for 2/3 of it (2 s: a loaded CI machine) has its own responses failed by
// the others; the tests' waits for a kill to be noticed poll, so a longer lease costs
// them little.
const liveLease = 3 * time.Second

// TestServePostgresLive runs replicas of `hearth serve --database postgres://...` on
// one database, with a model slow enough that its responses are still running while
// another replica acts on them:
//   - a background response running on a, streamed from b with starting_after while
//     it runs (b hears of each journal batch through LISTEN/NOTIFY), gives b the same
//     events that a replays once it has ended;
//   - a cancel on b stops the generation on a, which stores the text it had made;
//   - a replica killed with kill -9 mid-response has that response failed by the
//     others once its lease runs out, and a stream of it on another replica ends;
//   - a key revoked by `hearth keys revoke` (another process) closes a WebSocket open
//     on b with that key within about a second.
func TestServePostgresLive(t *testing.T) {
	testenv.SkipIfExternal(t, "checks hearth serve with its embedded runtime")
	pgURL := pgtest.NewDatabase(t)
	models := t.TempDir() // shared: the model is created once, through a
	lease := "--replica-lease=" + liveLease.String()
	// One generation at a time and no queue: AdmissionIsPerReplica fills a replica.
	a := startReplicaWith(t, pgURL, models, lease, "--max-concurrent=1", "--max-queue=-1")
	b := startReplicaWith(t, pgURL, models, lease, "--max-concurrent=1", "--max-queue=-1")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	long := testenv.BenchName(scriptmodel.LongModel)
	// A small bench variant: it loads in a moment and writes its story in seconds.
	spec, err := scriptmodel.BenchSized(scriptmodel.Catalog()[scriptmodel.LongModel], 4, 1024)
	if err != nil {
		t.Fatal(err)
	}
	m := createModel(ctx, t, a.base, http.DefaultClient, long, spec)
	story := m.Text(scriptmodel.EntryAssistant)

	t.Run("ResumeLiveOnAnotherReplica", func(t *testing.T) {
		start := time.Now()
		// Cut short by max_output_tokens: a few seconds of generation.
		id := a.background(t, long, `,"max_output_tokens":40`)
		b.waitStatus(t, id, "in_progress", time.Minute)
		live := b.stream(t, id, 1)
		first := <-live
		t.Logf("in progress and followed on b after %v", time.Since(start).Round(time.Millisecond))
		if first.Seq != 2 {
			t.Errorf("the first event after starting_after=1 has sequence number %d", first.Seq)
		}
		// The first text reached b while the response still ran on a.
		seen := []sseEvent{first}
		statusAtFirstText := ""
		for e := range live {
			if statusAtFirstText == "" && e.Type == "response.output_text.delta" {
				t.Logf("first text on b after %v", time.Since(start).Round(time.Millisecond))
				statusAtFirstText = a.get(t, id).Status
			}
			seen = append(seen, e)
		}
		t.Logf("the stream on b ended after %v", time.Since(start).Round(time.Millisecond))
		stored := a.get(t, id)
		if statusAtFirstText != "in_progress" {
			// a writes its journal every half second: a generation over in less
			// than that cannot show whether b follows it live.
			if stored.CompletedAt-stored.CreatedAt >= 2 {
				t.Errorf("b's first text arrived when the response was %s on a: not live", statusAtFirstText)
			} else {
				t.Logf("the generation took under 2 s: too short to tell a live stream on b from a replay")
			}
		}
		checkStream(t, seen, 2, "response."+stored.Status)
		if text, stored := deltas(seen), stored.text(); text == "" || text != stored || !strings.HasPrefix(story, text) {
			t.Errorf("the text streamed on b = %q, stored %q; want the same beginning of %q", text, stored, story)
		}
		// Once it has ended, a replays exactly what b streamed live.
		var replayed []sseEvent
		for e := range a.stream(t, id, 1) {
			replayed = append(replayed, e)
		}
		if len(replayed) != len(seen) {
			t.Fatalf("a replays %d events, b streamed %d", len(replayed), len(seen))
		}
		for i := range seen {
			if seen[i].Data != replayed[i].Data {
				t.Fatalf("event %d: b streamed %s, a replays %s", i, seen[i].Data, replayed[i].Data)
			}
		}
	})

	t.Run("CancelOnAnotherReplica", func(t *testing.T) {
		// The cancel must come while a still generates: b sees a's first text only with
		// a's next journal batch (half a second), by which time the small variant may
		// have written its whole story on a quiet machine. The benchmark size (about
		// 0.4 billion parameters) writes the same story some eight times more slowly.
		slowSpec := scriptmodel.Bench(scriptmodel.Catalog()[scriptmodel.LongModel])
		slow := "hearth-script-long-slow:latest"
		createModel(ctx, t, a.base, http.DefaultClient, slow, slowSpec)
		id := a.background(t, slow, "")
		b.waitStatus(t, id, "in_progress", time.Minute)
		follow := b.stream(t, id, 0)
		var events []sseEvent
		for e := range follow { // a has made some text
			events = append(events, e)
			if e.Type == "response.output_text.delta" {
				break
			}
		}
		code, out := b.do(t, "POST", "/v1/responses/"+id+"/cancel", "")
		if code != http.StatusOK || out.Status != "cancelled" {
			t.Fatalf("cancel on b: %d %+v", code, out)
		}
		for e := range follow {
			events = append(events, e)
		}
		if len(events) == 0 || events[len(events)-1].Type != "[DONE]" {
			t.Fatalf("b's stream of the cancelled response did not end: %v", events)
		}
		// a heard of it and stored what it had made: a beginning of the story.
		got := a.get(t, id)
		text := got.text()
		if got.Status != "cancelled" || text == "" || len(text) >= len(story) || !strings.HasPrefix(story, text) {
			t.Errorf("after the cancel on b, a stored status %s with text %q; want cancelled with a beginning of the story", got.Status, text)
		}
		if strings.Contains(a.logs.String(), "store finished response") {
			t.Error("a generated on after the cancel and failed to store the end")
		}
	})

	t.Run("KilledReplicaFailsByLease", func(t *testing.T) {
		c := startReplicaWith(t, pgURL, models, lease)
		id := c.background(t, long, "")
		a.waitStatus(t, id, "in_progress", time.Minute)
		follow := b.stream(t, id, 0)
		<-follow // response.created: b follows it
		// A streamed response waiting behind it for c's one slot: queued, its client
		// on c.
		resp, err := http.Post(c.base+"/v1/responses", "application/json",
			strings.NewReader(`{"model":"`+long+`","input":"tell me a story","stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var queued struct {
			Response struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"response"`
		}
		for queued.Response.ID == "" && sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				json.Unmarshal([]byte(data), &queued)
			}
		}
		if queued.Response.Status != "queued" {
			t.Fatalf("the streamed response behind it is %q, want queued", queued.Response.Status)
		}
		if err := c.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		got := a.waitStatus(t, id, "failed", 30*time.Second)
		took := time.Since(killed)
		t.Logf("a replica killed with kill -9: its response failed %v later (lease %v)", took.Round(10*time.Millisecond), liveLease)
		if took > liveLease*4/3+3*time.Second {
			t.Errorf("the response failed %v after its replica was killed; the bound is %v", took, liveLease*4/3)
		}
		if got.Error == nil || !strings.Contains(got.Error.Message, "lease expired") {
			t.Errorf("error of the response = %+v, want one that says the replica's lease expired", got.Error)
		}
		if st := a.get(t, queued.Response.ID).Status; st != "failed" {
			t.Errorf("the streamed response queued on c is %s, want failed with the other", st)
		}
		var last []string
		for e := range follow {
			last = append(last, e.Type)
			if len(last) > 2 {
				last = last[1:]
			}
		}
		if fmt.Sprint(last) != "[response.failed [DONE]]" {
			t.Errorf("b's stream of it ended with %v, want response.failed and [DONE]", last)
		}
	})

	t.Run("AdmissionIsPerReplica", func(t *testing.T) {
		busy := a.background(t, long, "")
		a.waitStatus(t, busy, "in_progress", time.Minute)
		body := `{"model":"` + long + `","input":"tell me a story","max_output_tokens":16}`
		resp, err := http.Post(a.base+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a second response on a full replica: %s, Retry-After %q; want 429 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
		}
		// b's slots are its own: it admits the same request (in the background, so
		// that the test need not wait for it), whatever a holds.
		other := b.background(t, long, "")
		for _, id := range []string{busy, other} {
			if code, _ := b.do(t, "POST", "/v1/responses/"+id+"/cancel", ""); code != http.StatusOK {
				t.Errorf("cancel %s on b: %d", id, code)
			}
		}
	})

	t.Run("RevokedKeyClosesSocketOnAnotherReplica", func(t *testing.T) {
		out, _, err := runCLI(t, "keys", "create", "--name", "socket", "--database", pgURL)
		if err != nil {
			t.Fatal(err)
		}
		key := strings.TrimSpace(out)
		dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
		defer dcancel()
		conn, _, err := websocket.Dial(dctx, "ws"+strings.TrimPrefix(b.base, "http")+"/v1/responses",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseNow()
		time.Sleep(200 * time.Millisecond) // the upgrade has been served
		if _, _, err := runCLI(t, "keys", "revoke", "socket", "--database", pgURL); err != nil {
			t.Fatal(err)
		}
		revoked := time.Now()
		_, msg, err := conn.Read(dctx)
		if err != nil {
			t.Fatalf("no message on the socket after the revocation: %v", err)
		}
		var ev struct {
			Type  string `json:"type"`
			Error struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		json.Unmarshal(msg, &ev)
		if ev.Type != "error" || ev.Error.Code != "invalid_api_key" {
			t.Errorf("message after the revocation: %s", msg)
		}
		_, _, err = conn.Read(dctx)
		took := time.Since(revoked)
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Errorf("socket after the revocation: %v, want a close with 1008", err)
		}
		t.Logf("a key revoked by another process: the socket on b closed %v later", took.Round(time.Millisecond))
		if took > 2*time.Second {
			t.Errorf("the socket closed %v after the revocation, want about a second", took)
		}
	})
	a.stop(t)
	b.stop(t)
}

// liveResponse is what these tests read of a response.
type liveResponse struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	CreatedAt   int64  `json:"created_at"`
	CompletedAt int64  `json:"completed_at"`
	Output      []struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (r liveResponse) text() string {
	var b strings.Builder
	for _, it := range r.Output {
		for _, c := range it.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

// do sends a request to the replica and decodes the response it answers.
func (r *replica) do(t *testing.T, method, path, body string) (int, liveResponse) {
	t.Helper()
	req, _ := http.NewRequest(method, r.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out liveResponse
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// background starts a background response of model on the replica.
func (r *replica) background(t *testing.T, model, extra string) string {
	t.Helper()
	code, out := r.do(t, "POST", "/v1/responses", `{"model":"`+model+`","input":"tell me a story","background":true`+extra+`}`)
	if code != http.StatusOK || out.ID == "" {
		t.Fatalf("background response on %s: %d %+v", r.base, code, out)
	}
	return out.ID
}

func (r *replica) get(t *testing.T, id string) liveResponse {
	t.Helper()
	code, out := r.do(t, "GET", "/v1/responses/"+id, "")
	if code != http.StatusOK {
		t.Fatalf("GET %s on %s: %d", id, r.base, code)
	}
	return out
}

// waitStatus polls the response on the replica until it has status want.
func (r *replica) waitStatus(t *testing.T, id, want string, within time.Duration) liveResponse {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := r.get(t, id)
		if got.Status == want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on %s is %s after %v, want %s", id, r.base, got.Status, within, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sseEvent is one frame of a stream; [DONE] ends it.
type sseEvent struct {
	Type  string
	Seq   int
	Delta string
	Data  string
}

// stream follows GET /v1/responses/{id}?stream=true&starting_after=after on the
// replica; the channel closes when the stream ends.
func (r *replica) stream(t *testing.T, id string, after int) <-chan sseEvent {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/v1/responses/%s?stream=true&starting_after=%d", r.base, id, after))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stream %s on %s: %s", id, r.base, resp.Status)
	}
	out := make(chan sseEvent, 1024)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				out <- sseEvent{Type: "[DONE]"}
				return
			}
			var e struct {
				Type  string `json:"type"`
				Seq   int    `json:"sequence_number"`
				Delta string `json:"delta"`
			}
			json.Unmarshal([]byte(data), &e)
			out <- sseEvent{Type: e.Type, Seq: e.Seq, Delta: e.Delta, Data: data}
		}
	}()
	return out
}

// checkStream checks that events are numbered on from first without a gap and end
// with terminal, then [DONE].
func checkStream(t *testing.T, events []sseEvent, first int, terminal string) {
	t.Helper()
	n := len(events)
	if n < 2 || events[n-1].Type != "[DONE]" || events[n-2].Type != terminal {
		t.Fatalf("the stream does not end with %s and [DONE]: %d events, the last %v", terminal, n, events[max(0, n-2):])
	}
	for i, e := range events[:n-1] {
		if e.Seq != first+i {
			t.Fatalf("event %d (%s) has sequence number %d, want %d", i, e.Type, e.Seq, first+i)
		}
	}
}

// deltas is the text of a stream's output_text deltas.
func deltas(events []sseEvent) string {
	var b strings.Builder
	for _, e := range events {
		if e.Type == "response.output_text.delta" {
			b.WriteString(e.Delta)
		}
	}
	return b.String()
}
