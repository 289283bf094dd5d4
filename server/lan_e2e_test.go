package server_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/admission"
	"hearth/respond"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// lanHearth serves hearth with cfg (runtime and a fresh database filled in) and returns
// the server, the handler (for HoldSlot) and the database (for keys).
func lanHearth(t *testing.T, cfg wire.Config) (*httptest.Server, *wire.Hearth, *sqlite.DB) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg.Runtime, cfg.Database = testenv.Runtime(t), db
	h := wire.New(cfg)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, h, db
}

// call sends a request with an optional bearer key and returns status, headers, body.
func call(t testing.TB, ctx context.Context, method, url, key, body string) (int, http.Header, []byte) {
	t.Helper()
	if ctx == nil {
		ctx = context.Background()
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func errCode(b []byte) (code, param string) {
	var e struct {
		Error struct {
			Code  *string `json:"code"`
			Param *string `json:"param"`
		} `json:"error"`
	}
	json.Unmarshal(b, &e)
	if e.Error.Code != nil {
		code = *e.Error.Code
	}
	if e.Error.Param != nil {
		param = *e.Error.Param
	}
	return code, param
}

// metric returns the value of the first sample of name whose labels contain every
// label given as `k="v"`, or 0.
func metric(t *testing.T, srv *httptest.Server, key, name string, labels ...string) float64 {
	t.Helper()
	_, _, b := call(t, nil, "GET", srv.URL+"/metrics", key, "")
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		return v
	}
	return 0
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var plain = scriptmodel.PlainModel

// TestKeysE2E: database keys and configured keys both work, a key revoked in the
// database fails at once, and each key sees only its own responses.
func TestKeysE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{})
	ctx := context.Background()
	body := reqBody(plain, false, `"input":"hi"`)

	// No keys anywhere: open, as before.
	if st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", body); st != 200 {
		t.Fatalf("no keys: %d %s", st, b)
	}
	// The first key created (as `hearth keys create` does, on the same file) turns
	// authentication on in the running server.
	_, alice, err := db.CreateKey(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	_, bob, _ := db.CreateKey(ctx, "bob")
	if st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", body); st != 401 {
		t.Fatalf("no key once keys exist: %d %s", st, b)
	}
	if st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "hk-wrong", body); st != 401 {
		t.Fatalf("wrong key: %d %s", st, b)
	}
	st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", alice, body)
	if st != 200 {
		t.Fatalf("alice: %d %s", st, b)
	}
	var r hearth.Response
	json.Unmarshal(b, &r)
	if st, _, _ := call(t, nil, "GET", srv.URL+"/v1/responses/"+r.ID, alice, ""); st != 200 {
		t.Errorf("alice cannot read her response: %d", st)
	}
	if st, _, _ := call(t, nil, "GET", srv.URL+"/v1/responses/"+r.ID, bob, ""); st != 404 {
		t.Errorf("bob reads alice's response: %d", st)
	}
	if _, err := db.RevokeKey(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	st, _, b = call(t, nil, "POST", srv.URL+"/v1/responses", alice, body)
	if code, _ := errCode(b); st != 401 || code != hearth.CodeInvalidAPIKey || !strings.Contains(string(b), "revoked") {
		t.Fatalf("revoked key: %d %s", st, b)
	}
	if st, _, _ := call(t, nil, "GET", srv.URL+"/v1/responses/"+r.ID, bob, ""); st != 404 {
		t.Errorf("bob after revoke: %d", st)
	}
	// Every key revoked: still closed.
	db.RevokeKey(ctx, "bob")
	if st, _, _ := call(t, nil, "POST", srv.URL+"/v1/responses", "", body); st != 401 {
		t.Errorf("all keys revoked, no key: %d", st)
	}

	// Configured and database keys together; metrics and logs name the key.
	srv2, _, db2 := lanHearth(t, wire.Config{APIKeys: []string{"static-secret"}})
	_, carol, _ := db2.CreateKey(ctx, "carol")
	for _, k := range []string{"static-secret", carol} {
		if st, h, b := call(t, nil, "POST", srv2.URL+"/v1/responses", k, body); st != 200 || h.Get("x-request-id") == "" {
			t.Fatalf("key %.6s: %d %s (request id %q)", k, st, b, h.Get("x-request-id"))
		}
	}
	for _, name := range []string{"config-1", "carol"} {
		// Metrics name every key: the configured (admin) key reads them.
		if v := metric(t, srv2, "static-secret", "hearth_responses_total", `key="`+name+`"`, `status="completed"`); v != 1 {
			t.Errorf("hearth_responses_total{key=%q} = %v, want 1", name, v)
		}
	}
	// A client's own request id is echoed.
	req, _ := http.NewRequest("GET", srv2.URL+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+carol)
	req.Header.Set("X-Request-Id", "trace-42")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("x-request-id"); got != "trace-42" {
		t.Errorf("x-request-id = %q, want the client's", got)
	}
}

// sseReader reads a stream event by event.
type sseReader struct{ sc *bufio.Scanner }

func (r *sseReader) next(t *testing.T) (typ string, data map[string]any) {
	t.Helper()
	for r.sc.Scan() {
		line := r.sc.Text()
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			if d == "[DONE]" {
				return "[DONE]", nil
			}
			json.Unmarshal([]byte(d), &data)
			typ, _ = data["type"].(string)
			return typ, data
		}
	}
	t.Fatalf("stream ended: %v", r.sc.Err())
	return "", nil
}

func openStream(t *testing.T, ctx context.Context, url, key, body string) (*http.Response, *sseReader) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/responses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return resp, &sseReader{sc}
}

// TestQueuedStreamE2E: a streamed response that must wait says response.queued (and is
// stored as queued) before response.in_progress, and generates only once admitted; the
// queue depth shows in /metrics meanwhile.
func TestQueuedStreamE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{Admission: admission.Config{Slots: 1}})
	release := server.HoldSlot(h.Server, plain)
	resp, events := openStream(t, context.Background(), srv.URL, "", reqBody(plain, true, `"input":"hi"`))
	defer resp.Body.Close()

	typ, created := events.next(t)
	if typ != "response.created" {
		t.Fatalf("first event %s", typ)
	}
	id := created["response"].(map[string]any)["id"].(string)
	if typ, e := events.next(t); typ != "response.queued" || e["response"].(map[string]any)["status"] != "queued" {
		t.Fatalf("second event %s %v, want response.queued", typ, e)
	}
	st, _, b := call(t, nil, "GET", srv.URL+"/v1/responses/"+id, "", "")
	var stored hearth.Response
	json.Unmarshal(b, &stored)
	if st != 200 || stored.Status != hearth.StatusQueued {
		t.Errorf("stored while queued: %d %s", st, stored.Status)
	}
	if d := metric(t, srv, "", "hearth_queue_depth", `model="`+plain+`"`); d != 1 {
		t.Errorf("hearth_queue_depth = %v while one waits", d)
	}
	release()
	var types []string
	for {
		typ, _ := events.next(t)
		if typ == "[DONE]" {
			break
		}
		types = append(types, typ)
	}
	if types[0] != "response.in_progress" || types[len(types)-1] != "response.completed" {
		t.Errorf("after release: %v", types)
	}
	final := pollUntilDone(t, srv, id)
	if final.Status != hearth.StatusCompleted {
		t.Errorf("stored final %s", final.Status)
	}
	if d := metric(t, srv, "", "hearth_queue_depth", `model="`+plain+`"`); d != 0 {
		t.Errorf("hearth_queue_depth = %v after", d)
	}
	if n := metric(t, srv, "", "hearth_queue_wait_seconds_count", `model="`+plain+`"`); n != 1 {
		t.Errorf("hearth_queue_wait_seconds_count = %v", n)
	}
}

// TestQueueBoundE2E: beyond the queue bound hearth answers 429 with Retry-After; a
// client that leaves the queue frees its place at once and its response is stored as
// incomplete.
func TestQueueBoundE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{Admission: admission.Config{Slots: 1, MaxQueue: 1}})
	release := server.HoldSlot(h.Server, plain)
	defer release()
	ctx, leave := context.WithCancel(context.Background())
	resp, events := openStream(t, ctx, srv.URL, "", reqBody(plain, true, `"input":"hi"`))
	_, created := events.next(t)
	id := created["response"].(map[string]any)["id"].(string)
	events.next(t) // queued

	st, hdr, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":"hi"`))
	if code, _ := errCode(b); st != 429 || code != hearth.CodeTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Fatalf("beyond the bound: %d %s Retry-After %q", st, b, hdr.Get("Retry-After"))
	}
	if v := metric(t, srv, "", "hearth_admission_rejected_total", `reason="queue_full"`); v != 1 {
		t.Errorf("hearth_admission_rejected_total = %v", v)
	}
	leave()
	resp.Body.Close()
	waitFor(t, "the queue to empty", func() bool {
		return metric(t, srv, "", "hearth_queue_depth", `model="`+plain+`"`) == 0
	})
	final := pollUntilDone(t, srv, id)
	if final.Status != hearth.StatusIncomplete {
		t.Errorf("left the queue: stored %s", final.Status)
	}
	// The freed place takes the next request.
	done := make(chan int, 1)
	go func() {
		st, _, _ := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":"hi"`))
		done <- st
	}()
	waitFor(t, "the next request to queue", func() bool {
		return metric(t, srv, "", "hearth_queue_depth", `model="`+plain+`"`) == 1
	})
	release()
	if st := <-done; st != 200 {
		t.Errorf("next request: %d", st)
	}
}

// TestFairShareE2E: with one slot busy, alice queues ten requests and then bob one;
// bob's runs after at most one of alice's.
func TestFairShareE2E(t *testing.T) {
	srv, h, db := lanHearth(t, wire.Config{Admission: admission.Config{Slots: 1}})
	ctx := context.Background()
	_, alice, _ := db.CreateKey(ctx, "alice")
	_, bob, _ := db.CreateKey(ctx, "bob")
	_, ops, _ := db.CreateKeyAs(ctx, "ops", storage.RoleAdmin) // reads /metrics
	release := server.HoldSlot(h.Server, plain)
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
	)
	send := func(who, key string) {
		defer wg.Done()
		st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", key, reqBody(plain, false, `"input":"hi"`))
		if st != 200 {
			t.Errorf("%s: %d %s", who, st, b)
		}
		mu.Lock()
		order = append(order, who)
		mu.Unlock()
	}
	for i := range 10 {
		wg.Add(1)
		go send("alice", alice)
		waitFor(t, "alice's request to queue", func() bool {
			return metric(t, srv, ops, "hearth_queue_depth", `model="`+plain+`"`) == float64(i+1)
		})
	}
	wg.Add(1)
	go send("bob", bob)
	waitFor(t, "bob's request to queue", func() bool {
		return metric(t, srv, ops, "hearth_queue_depth", `model="`+plain+`"`) == 11
	})
	release()
	wg.Wait()
	pos := -1
	for i, who := range order {
		if who == "bob" {
			pos = i
		}
	}
	if pos < 0 || pos > 1 {
		t.Errorf("bob finished at position %d of %v", pos, order)
	}
}

// TestLimitsE2E: each limit answers with a clear error naming what was exceeded.
func TestLimitsE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{
		MaxBodyBytes: 64 << 10,
		Limits:       respond.Limits{MaxInputItems: 3, MaxTools: 1, MaxImageBytes: 1000, RequestTimeout: 500 * time.Millisecond},
		Admission:    admission.Config{Slots: 1, RatePerMinute: 60},
	})
	msg := `{"type":"message","role":"user","content":"hi"}`
	img := "data:image/png;base64," + base64.StdEncoding.EncodeToString(make([]byte, 2000))
	for _, tc := range []struct {
		name, body  string
		status      int
		code, param string
	}{
		{"input items", reqBody(plain, false, `"input":[`+strings.Repeat(msg+",", 3)+msg+`]`), 400, "array_above_max_length", "input"},
		{"tools", reqBody(plain, false, `"input":"hi",`+toolsJSON), 400, "array_above_max_length", "tools"},
		{"image", reqBody(plain, false, `"input":[{"type":"message","role":"user","content":[{"type":"input_image","image_url":"`+img+`"}]}]`), 413, "image_too_large", "input[0].content[0].image_url"},
		{"body", reqBody(plain, false, `"input":"`+strings.Repeat("x", 70<<10)+`"`), 413, "request_too_large", ""},
	} {
		st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", tc.body)
		code, param := errCode(b)
		if st != tc.status || code != tc.code || param != tc.param {
			t.Errorf("%s: %d code %q param %q, want %d %q %q: %.300s", tc.name, st, code, param, tc.status, tc.code, tc.param, b)
		}
	}

	// The request timeout covers the wait for a slot: a request that waits longer ends
	// incomplete, and says why.
	release := server.HoldSlot(h.Server, plain)
	st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":"hi"`))
	release()
	var r hearth.Response
	json.Unmarshal(b, &r)
	if st != 200 || r.Status != hearth.StatusIncomplete || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != server.IncompleteRequestTimeout {
		t.Errorf("timed out: %d %s", st, b)
	} else if stored := pollUntilDone(t, srv, r.ID); stored.IncompleteDetails == nil || stored.IncompleteDetails.Reason != server.IncompleteRequestTimeout {
		t.Errorf("stored timed-out response: %+v", stored.IncompleteDetails)
	}
}

// TestRateLimitE2E: a key over its rate gets 429 with Retry-After; another key does not.
func TestRateLimitE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{Admission: admission.Config{RatePerMinute: 2}})
	_, alice, _ := db.CreateKey(context.Background(), "alice")
	_, bob, _ := db.CreateKey(context.Background(), "bob")
	body := reqBody(plain, false, `"input":"hi"`)
	for range 2 {
		if st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", alice, body); st != 200 {
			t.Fatalf("within the rate: %d %s", st, b)
		}
	}
	st, hdr, b := call(t, nil, "POST", srv.URL+"/v1/responses", alice, body)
	if ra, _ := strconv.Atoi(hdr.Get("Retry-After")); st != 429 || ra < 1 || ra > 30 || !strings.Contains(string(b), "per minute") {
		t.Errorf("over the rate: %d Retry-After %q %s", st, hdr.Get("Retry-After"), b)
	}
	if st, _, _ := call(t, nil, "POST", srv.URL+"/v1/responses", bob, body); st != 200 {
		t.Errorf("another key: %d", st)
	}
}

// TestRateLimitForwardedE2E: without keys the rate limit is kept per client address.
// By default that is the connection's peer: X-Forwarded-For and X-Real-IP, which any
// client can send, do not make a new client of each request. With the peer named in
// TrustedProxies (--trusted-proxies), its headers name the client.
func TestRateLimitForwardedE2E(t *testing.T) {
	body := reqBody(plain, false, `"input":"hi"`)
	send := func(srv *httptest.Server, header, addr string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(header, addr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}

	srv, _, _ := lanHearth(t, wire.Config{Admission: admission.Config{RatePerMinute: 2}})
	var got []int
	for i, header := range []string{"X-Forwarded-For", "X-Real-IP", "X-Forwarded-For", "X-Real-IP"} {
		st, _ := send(srv, header, fmt.Sprintf("203.0.113.%d", i+1))
		got = append(got, st)
	}
	if want := []int{200, 200, 429, 429}; !slices.Equal(got, want) {
		t.Errorf("forwarding headers from an untrusted peer: statuses %v, want %v", got, want)
	}

	srv, _, _ = lanHearth(t, wire.Config{Admission: admission.Config{RatePerMinute: 2}, TrustedProxies: []string{"127.0.0.1"}})
	got = nil
	for i := range 3 {
		// The rightmost address not of a trusted proxy is the client's.
		st, _ := send(srv, "X-Forwarded-For", fmt.Sprintf("198.51.100.7, 203.0.113.%d, 127.0.0.1", i+1))
		got = append(got, st)
	}
	for range 3 {
		st, _ := send(srv, "X-Real-IP", "203.0.113.200")
		got = append(got, st)
	}
	if want := []int{200, 200, 200, 200, 200, 429}; !slices.Equal(got, want) {
		t.Errorf("forwarding headers from a trusted proxy: statuses %v, want %v", got, want)
	}
}

// TestMetricsE2E: the series move as requests run.
func TestMetricsE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	m := testenv.Model(t, plain)
	_ = m
	before := metric(t, srv, "", "hearth_http_requests_total", `route="/v1/responses"`, `code="200"`)
	createJSON(t, srv, reqBody(plain, false, `"input":"hi"`))
	createSSE(t, srv, reqBody(plain, true, `"input":"hi"`))
	call(t, nil, "POST", srv.URL+"/v1/responses", "", `{"model":1}`)
	checks := []struct {
		name   string
		labels []string
		want   func(float64) bool
	}{
		{"hearth_http_requests_total", []string{`route="/v1/responses"`, `code="200"`, `model="` + plain + `"`}, func(v float64) bool { return v == before+2 }},
		{"hearth_http_requests_total", []string{`route="/v1/responses"`, `code="400"`}, func(v float64) bool { return v == 1 }},
		{"hearth_responses_total", []string{`status="completed"`, `key="anonymous"`}, func(v float64) bool { return v == 2 }},
		{"hearth_output_tokens_total", []string{`model="` + plain + `"`}, func(v float64) bool { return v > 0 }},
		{"hearth_input_tokens_total", []string{`model="` + plain + `"`}, func(v float64) bool { return v > 0 }},
		{"hearth_cached_input_tokens_total", []string{`model="` + plain + `"`}, func(v float64) bool { return v >= 0 }},
		{"hearth_time_to_first_token_seconds_count", []string{`model="` + plain + `"`}, func(v float64) bool { return v == 2 }},
		{"hearth_queue_wait_seconds_count", []string{`model="` + plain + `"`}, func(v float64) bool { return v == 2 }},
		{"hearth_generation_slots", nil, func(v float64) bool { return v >= 1 }},
		{"hearth_runtime_up", nil, func(v float64) bool { return v == 1 }},
		{"hearth_runtime_restarts_total", nil, func(v float64) bool { return v == 0 }},
	}
	for _, c := range checks {
		if v := metric(t, srv, "", c.name, c.labels...); !c.want(v) {
			t.Errorf("%s%v = %v", c.name, c.labels, v)
		}
	}
	_, _, b := call(t, nil, "GET", srv.URL+"/metrics", "", "")
	if !regexp.MustCompile(`(?m)^hearth_output_tokens_per_second_count\{model="` + regexp.QuoteMeta(plain) + `",runtime="[^"]+"\} [1-9]`).Match(b) {
		t.Errorf("no tokens/s observed:\n%s", grep(string(b), "tokens_per_second"))
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return fmt.Sprint(out)
}

// TestPassthroughAdmissionE2E: Ollama's own generate and chat routes wait for a slot
// with /v1/responses, and answer 429 beyond the bound.
func TestPassthroughAdmissionE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{Admission: admission.Config{Slots: 1, MaxQueue: 1}})
	release := server.HoldSlot(h.Server, plain)
	done := make(chan int, 1)
	go func() {
		st, _, _ := call(t, nil, "POST", srv.URL+"/api/generate", "", `{"model":"`+plain+`","prompt":"hi","stream":false}`)
		done <- st
	}()
	waitFor(t, "the passthrough request to queue", func() bool {
		return metric(t, srv, "", "hearth_queue_depth", `model="`+plain+`"`) == 1
	})
	st, hdr, _ := call(t, nil, "POST", srv.URL+"/api/chat", "", `{"model":"`+plain+`","messages":[{"role":"user","content":"hi"}],"stream":false}`)
	if st != 429 || hdr.Get("Retry-After") == "" {
		t.Errorf("/api/chat beyond the bound: %d", st)
	}
	release()
	if st := <-done; st != 200 {
		t.Errorf("/api/generate after release: %d", st)
	}
	// Routes that generate nothing are not held.
	if st, _, _ := call(t, nil, "GET", srv.URL+"/api/tags", "", ""); st != 200 {
		t.Errorf("/api/tags: %d", st)
	}
}

// TestCacheMetricsE2E: /metrics reports the caches a chain goes through: each turn of
// a chain continues from the chain its previous turn left (hot chains: a hit per
// continuation, an entry per finished turn); a continuation whose chain is not kept
// (a restart, or one evicted) loads it and decodes its items through the stored-item
// cache. What each holds stays within its budget.
func TestCacheMetricsE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{})
	id := ""
	next := func() {
		t.Helper()
		body := `{"model":"` + plain + `","input":"hi"` + map[bool]string{true: `,"previous_response_id":"` + id + `"`}[id != ""] + `}`
		st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", body)
		if st != 200 {
			t.Fatalf("%d %s", st, b)
		}
		var r struct{ ID string }
		json.Unmarshal(b, &r)
		id = r.ID
	}
	for range 3 {
		next()
	}
	if n := metric(t, srv, "", "hearth_hot_chain_cache_hits_total"); n != 2 {
		t.Errorf("hearth_hot_chain_cache_hits_total = %v after a 3-turn chain, want 2", n)
	}
	if n := metric(t, srv, "", "hearth_hot_chain_cache_entries"); n != 3 {
		t.Errorf("hearth_hot_chain_cache_entries = %v after a 3-turn chain, want 3", n)
	}
	h.Core.ForgetHotChains()
	hits := metric(t, srv, "", "hearth_item_cache_hits_total")
	next()
	if n := metric(t, srv, "", "hearth_item_cache_hits_total"); n <= hits {
		t.Errorf("hearth_item_cache_hits_total went from %v to %v over a continuation that loaded its chain", hits, n)
	}
	for _, c := range []string{"item", "hot_chain"} {
		entries, bytes, budget := metric(t, srv, "", "hearth_"+c+"_cache_entries"), metric(t, srv, "", "hearth_"+c+"_cache_bytes"), metric(t, srv, "", "hearth_"+c+"_cache_budget_bytes")
		if entries < 1 || bytes < 1 || budget < bytes {
			t.Errorf("%s cache: %v entries, %v bytes, budget %v", c, entries, bytes, budget)
		}
	}
}
