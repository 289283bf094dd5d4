package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage/postgres/pgtest"
)

// killRoundsEnv sets how many rounds TestReplicaKillUnderLoad kills a replica (default
// killRoundsDefault); a longer soak sets more.
const (
	killRoundsEnv     = "HEARTH_KILL_ROUNDS"
	killRoundsDefault = 10
)

// TestReplicaKillUnderLoad runs three `hearth serve --database postgres://...` replicas
// on one database under mixed load (JSON turns whose chains go on from replica to
// replica, streams, background responses polled on other replicas), and kills one of
// them with kill -9 in each round, rotating, starting a new one in its place. It checks
// what a client of several hearths relies on when one of them dies:
//   - every response a client saw complete reads back from every live replica with the
//     same output items and usage;
//   - no response of a killed replica stays queued or in_progress past its lease (4/3
//     of --replica-lease after the kill); those that had not finished end failed with
//     the lease error, nothing is left in flight once the load stops, and nothing
//     else failed;
//   - the replicas that were not killed never answer a 5xx, never drop a connection,
//     and their streams end with response.completed or response.incomplete; a stream on
//     the killed replica just ends (the client sees the connection go), which is counted.
//
// A replica is named by its host and listening address (what hearth serve records with
// each response). The replacement listens on a new address, so it is a new replica and
// the killed one's responses are failed by the others' lease sweep, not by a restart
// under the same name.
func TestReplicaKillUnderLoad(t *testing.T) {
	testenv.SkipIfExternal(t, "checks hearth serve with its embedded runtime")
	rounds := killRoundsDefault
	if s := os.Getenv(killRoundsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number of rounds", killRoundsEnv, s)
		}
		rounds = n
	}
	start := time.Now()
	pgURL := pgtest.NewDatabase(t)
	models := t.TempDir() // shared: the models are created once, through the first replica
	lease := "--replica-lease=" + liveLease.String()
	host, _ := os.Hostname()
	l := &killLoad{t: t, host: host}
	for i := range l.slots {
		l.slots[i] = l.target(startReplicaWith(t, pgURL, models, lease))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	l.long = testenv.BenchName(scriptmodel.LongModel)
	// The small bench variant of the long model writes its story in seconds, so that
	// streams and background responses are running when a replica is killed.
	spec, err := scriptmodel.BenchSized(scriptmodel.Catalog()[scriptmodel.LongModel], 4, 1024)
	if err != nil {
		t.Fatal(err)
	}
	createModel(ctx, t, l.slots[0].base, http.DefaultClient, l.long, spec)
	createPlainModel(ctx, t, l.slots[0].base, http.DefaultClient)
	t.Logf("three replicas and the models ready after %v", time.Since(start).Round(time.Millisecond))

	loadCtx, stopLoad := context.WithCancel(ctx)
	var clients sync.WaitGroup
	// A round that stops the test stops the clients first: they report to it.
	defer clients.Wait()
	defer stopLoad()
	for c := range 3 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			l.client(loadCtx, c)
		}()
	}
	// And one client of quick JSON turns only, its chains going from replica to
	// replica at every turn.
	clients.Add(1)
	go func() {
		defer clients.Done()
		l.chainClient(loadCtx)
	}()

	inFlightOf := func(name string) int64 {
		n, err := pgtest.QueryInt(ctx, pgURL, `SELECT count(*) FROM responses WHERE status IN ('queued', 'in_progress') AND replica = `+sqlString(name))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var killedInFlight, generatedAtKill int64
	var killedNames []string
	for round := range rounds {
		slot := round % len(l.slots)
		victim := l.slot(slot)
		// Let the load make progress between kills: a stream or background response
		// completed since the last kill (or a few seconds, on a machine too slow
		// for that), so that the surviving replicas' generations are checked too.
		for wait := time.Now().Add(5 * time.Second); l.generated.Load() == generatedAtKill && time.Now().Before(wait); {
			time.Sleep(50 * time.Millisecond)
		}
		// Kill it while it has something in flight (load is on all replicas, so this
		// rarely waits).
		inFlight := int64(0)
		for wait := time.Now().Add(20 * time.Second); time.Now().Before(wait); time.Sleep(50 * time.Millisecond) {
			if inFlight = inFlightOf(victim.name); inFlight > 0 {
				break
			}
		}
		killedInFlight += inFlight
		l.kill(slot)
		killedNames = append(killedNames, sqlString(victim.name))
		generatedAtKill = l.generated.Load()
		killedAt := time.Now()
		if err := victim.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-victim.exited
		l.up(slot, startReplicaWith(t, pgURL, models, lease))
		// Within the lease window, the others fail what it had in flight.
		n := inFlightOf(victim.name)
		for deadline := killedAt.Add(liveLease*4/3 + time.Second); n != 0 && time.Now().Before(deadline); n = inFlightOf(victim.name) {
			time.Sleep(100 * time.Millisecond)
		}
		if n != 0 {
			t.Errorf("round %d: %d response(s) of the killed replica %s still in flight %v after the kill (lease %v)", round+1, n, victim.name, time.Since(killedAt).Round(time.Millisecond), liveLease)
		}
		t.Logf("round %d: killed %s with %d response(s) in flight; after %v", round+1, victim.base, inFlight, time.Since(start).Round(time.Millisecond))
	}
	stopLoad()
	clients.Wait()
	t.Logf("the clients' last responses ended after %v", time.Since(start).Round(time.Millisecond))

	// Nothing anywhere is left in flight: the clients waited for their responses.
	if n, err := pgtest.QueryInt(ctx, pgURL, `SELECT count(*) FROM responses WHERE status IN ('queued', 'in_progress')`); err != nil || n != 0 {
		t.Errorf("after the load: %d response(s) queued or in_progress (%v)", n, err)
	}
	// What failed is what the killed replicas had in flight, failed by the lease sweep.
	if n, err := pgtest.QueryInt(ctx, pgURL, `SELECT count(*) FROM responses WHERE status = 'failed' AND
		(coalesce(error, '') NOT LIKE '%lease expired%' OR replica NOT IN (`+strings.Join(killedNames, ", ")+`))`); err != nil || n != 0 {
		t.Errorf("after the load: %d failed response(s) not of a killed replica or not failed by its lease (%v)", n, err)
	}
	// Every response a client saw complete reads back the same from every replica.
	live := l.live()
	for _, s := range l.seen {
		for _, r := range live {
			code, raw, err := getRaw(r.base + "/v1/responses/" + s.id)
			if err != nil || code != http.StatusOK {
				t.Errorf("%s %s (made on %s) on %s: %d %v", s.kind, s.id, s.on.base, r.base, code, err)
				continue
			}
			var got killResponse
			json.Unmarshal(raw, &got)
			if got.Status != s.status || canonJSON(got.Output) != canonJSON(s.output) || canonJSON(got.Usage) != canonJSON(s.usage) {
				t.Errorf("%s %s (made on %s) reads on %s as %s %s usage %s; the client saw %s %s usage %s",
					s.kind, s.id, s.on.base, r.base, got.Status, got.Output, got.Usage, s.status, s.output, s.usage)
			}
		}
	}
	failedRows, _ := pgtest.QueryInt(ctx, pgURL, `SELECT count(*) FROM responses WHERE status = 'failed'`)
	allRows, _ := pgtest.QueryInt(ctx, pgURL, `SELECT count(*) FROM responses`)
	t.Logf("%d rounds in %v: %d responses stored (%d failed by lease), %d in flight at the kills; the clients saw %d complete and read them back from %d replicas; %s",
		rounds, time.Since(start).Round(time.Millisecond), allRows, failedRows, killedInFlight, len(l.seen), len(live), l.countsString())
	for _, kind := range []string{"json", "stream", "background"} {
		if l.counts[kind+" complete"] == 0 {
			t.Errorf("no %s response completed in %d rounds: the load did not run", kind, rounds)
		}
	}
}

// killLoad is the load of TestReplicaKillUnderLoad: the replicas in their slots and
// what the clients saw.
type killLoad struct {
	t    *testing.T
	host string
	long string // the long script model's bench name

	mu     sync.Mutex
	slots  [3]*killTarget // nil while the slot's replica is down
	seen   []seenResponse
	counts map[string]int
	// generated counts the streams and background responses that completed.
	generated atomic.Int64
}

// killTarget is one replica process, which may be killed.
type killTarget struct {
	*replica
	name   string // the replica's name in the database: host and listening address
	killed atomic.Bool
}

// seenResponse is a response a client saw complete, as it saw it.
type seenResponse struct {
	kind, id, status string
	on               *killTarget
	output, usage    json.RawMessage
}

// killResponse is what the test reads of a response.
type killResponse struct {
	ID     string          `json:"id"`
	Status string          `json:"status"`
	Output json.RawMessage `json:"output"`
	Usage  json.RawMessage `json:"usage"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (l *killLoad) target(r *replica) *killTarget {
	return &killTarget{replica: r, name: l.host + " " + strings.TrimPrefix(r.base, "http://")}
}

func (l *killLoad) slot(i int) *killTarget {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slots[i]
}

// pick is the replica of slot n (mod 3), or the next one up while it is down.
func (l *killLoad) pick(n int) *killTarget {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range len(l.slots) {
		if r := l.slots[(n+i)%len(l.slots)]; r != nil {
			return r
		}
	}
	return nil
}

// kill takes slot i's replica out of the load and marks it killed, before the test
// kills it: a client that loses its connection to it from then on expected to.
func (l *killLoad) kill(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slots[i].killed.Store(true)
	l.slots[i] = nil
}

func (l *killLoad) up(i int, r *replica) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slots[i] = l.target(r)
}

func (l *killLoad) live() []*killTarget {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*killTarget
	for _, r := range l.slots {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

func (l *killLoad) count(what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[what]++
}

func (l *killLoad) countsString() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.counts)
}

func (l *killLoad) saw(kind string, on *killTarget, r killResponse) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[kind+" complete"]++
	if kind != "json" {
		l.generated.Add(1)
	}
	l.seen = append(l.seen, seenResponse{kind: kind, id: r.ID, status: r.Status, on: on, output: r.Output, usage: r.Usage})
}

// failure reports what a replica did to a client: expected (and counted) when the
// replica was killed, an error of the test otherwise.
func (l *killLoad) failure(on *killTarget, what string, err error) {
	if on.killed.Load() {
		l.count(what + " cut by the kill")
		return
	}
	l.t.Errorf("%s on %s, which was not killed: %v", what, on.base, err)
}

// client runs requests until ctx ends: in turn a JSON turn of the plain model (going
// on with the chain of its last one, on another replica), a stream and a background
// response of the long model, each on the next replica.
func (l *killLoad) client(ctx context.Context, c int) {
	prev, turns := "", 0
	for n := 0; ctx.Err() == nil; n++ {
		on := l.pick(c + n + n/3)
		switch n % 3 {
		case 0:
			prev, turns = l.turn(on, prev, turns)
		case 1:
			l.streamOn(on)
		case 2:
			r, ok := l.post(on, "background", `{"model":"`+l.long+`","input":"tell me a story","max_output_tokens":16,"background":true}`)
			if ok {
				l.await(on, r.ID, c+n+1)
			}
		}
	}
}

// chainClient runs JSON turns until ctx ends, each on the next replica.
func (l *killLoad) chainClient(ctx context.Context) {
	prev, turns := "", 0
	for n := 0; ctx.Err() == nil; n++ {
		prev, turns = l.turn(l.pick(n), prev, turns)
	}
}

// turn sends a JSON turn of the plain model to the replica, going on from prev (the
// chain's turns so far) if there is one, and returns the chain to go on from.
func (l *killLoad) turn(on *killTarget, prev string, turns int) (string, int) {
	body := `{"model":"` + scriptmodel.PlainModel + `","input":"turn ` + strconv.Itoa(turns) + `"`
	if prev != "" {
		body += `,"previous_response_id":"` + prev + `"`
	}
	r, ok := l.post(on, "json", body+"}")
	if !ok {
		return prev, turns // the chain goes on on another replica
	}
	if r.Status != "completed" {
		l.t.Errorf("JSON turn on %s: status %s", on.base, r.Status)
		return prev, turns
	}
	l.saw("json", on, r)
	if turns == 5 { // a new chain now and then: the plain model's context is small
		return "", 0
	}
	return r.ID, turns + 1
}

var killClient = &http.Client{Timeout: time.Minute}

// post sends a request to /v1/responses on the replica and decodes a 200's body.
func (l *killLoad) post(on *killTarget, kind, body string) (killResponse, bool) {
	resp, err := killClient.Post(on.base+"/v1/responses", "application/json", strings.NewReader(body))
	var raw []byte
	if err == nil {
		raw, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err != nil {
		l.failure(on, kind+" request", err)
		return killResponse{}, false
	}
	if resp.StatusCode != http.StatusOK {
		l.t.Errorf("%s request on %s: %s %s", kind, on.base, resp.Status, raw)
		return killResponse{}, false
	}
	var r killResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		l.t.Errorf("%s request on %s: %v in %s", kind, on.base, err, raw)
		return killResponse{}, false
	}
	return r, true
}

// streamOn streams a response of the long model on the replica: it must end with its
// terminal event and [DONE], its deltas the stored text, unless the replica was killed.
func (l *killLoad) streamOn(on *killTarget) {
	resp, err := killClient.Post(on.base+"/v1/responses", "application/json",
		strings.NewReader(`{"model":"`+l.long+`","input":"tell me a story","max_output_tokens":16,"stream":true}`))
	if err != nil {
		l.failure(on, "stream request", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		l.t.Errorf("stream request on %s: %s %s", on.base, resp.Status, raw)
		return
	}
	var (
		text     strings.Builder
		terminal struct {
			Type     string       `json:"type"`
			Response killResponse `json:"response"`
		}
		done bool
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var e struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}
		json.Unmarshal([]byte(data), &e)
		switch e.Type {
		case "response.output_text.delta":
			text.WriteString(e.Delta)
		case "response.completed", "response.incomplete", "response.failed", "error":
			json.Unmarshal([]byte(data), &terminal)
		}
	}
	if !done {
		err := sc.Err()
		if err == nil {
			err = errors.New("the stream ended without [DONE]")
		}
		l.failure(on, "stream", err)
		return
	}
	r := terminal.Response
	if terminal.Type != "response.completed" && terminal.Type != "response.incomplete" {
		l.t.Errorf("stream %s on %s ended with %s: %+v", r.ID, on.base, terminal.Type, r.Error)
		return
	}
	if got := outputText(r.Output); got == "" || got != text.String() {
		l.t.Errorf("stream %s on %s: deltas %q, output %q", r.ID, on.base, text.String(), got)
	}
	l.saw("stream", on, r)
}

// await polls a background response made on one replica through the others until it
// ends: completed or incomplete, or failed with the lease error if its replica was
// killed.
func (l *killLoad) await(made *killTarget, id string, n int) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		on := l.pick(n)
		n++
		code, raw, err := getRaw(on.base + "/v1/responses/" + id)
		if err != nil {
			l.failure(on, "background poll", err)
			continue
		}
		if code != http.StatusOK {
			l.t.Errorf("GET background %s on %s: %d %s", id, on.base, code, raw)
			return
		}
		var r killResponse
		json.Unmarshal(raw, &r)
		switch r.Status {
		case "queued", "in_progress":
			if time.Now().After(deadline) {
				l.t.Errorf("background %s made on %s still %s after a minute", id, made.base, r.Status)
				return
			}
			continue
		case "completed", "incomplete":
			l.saw("background", made, r)
		case "failed":
			if !made.killed.Load() || r.Error == nil || !strings.Contains(r.Error.Message, "lease expired") {
				l.t.Errorf("background %s made on %s (killed: %v) failed: %+v", id, made.base, made.killed.Load(), r.Error)
			} else {
				l.count("background failed by lease")
			}
		default:
			l.t.Errorf("background %s made on %s ended %s", id, made.base, r.Status)
		}
		return
	}
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func getRaw(u string) (int, []byte, error) {
	resp, err := killClient.Get(u)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// outputText is the text of the output_text parts of a response's output.
func outputText(output json.RawMessage) string {
	var items []struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(output, &items)
	var b strings.Builder
	for _, it := range items {
		for _, c := range it.Content {
			if c.Type == "output_text" {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// canonJSON rewrites JSON with its object keys in order, so that two encodings of the
// same value compare equal.
func canonJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
