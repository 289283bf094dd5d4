package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// secretPrompt is what the first key sends and the second key guesses.
const secretPrompt = "Customer 88123 password is hunter2-lilac-7741. Store it for the billing migration."

// scopedServer is a hearth with a database holding two user keys of their own (alice,
// bob) and two of the cache group team1 (carol, dave), on the shared test runtime.
func scopedServer(t *testing.T) (srv *httptest.Server, keys map[string]string) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	keys = map[string]string{}
	for name, group := range map[string]string{"alice": "", "bob": "", "carol": "team1", "dave": "team1"} {
		_, secret, err := db.CreateKeyWith(context.Background(), name, storage.KeyOptions{CacheGroup: group})
		if err != nil {
			t.Fatal(err)
		}
		keys[name] = secret
	}
	srv = httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db}))
	t.Cleanup(srv.Close)
	return srv, keys
}

// finishedAs creates a response with key and returns it finished (polling a background
// one until it ends).
func finishedAs(t *testing.T, srv *httptest.Server, key, body string) *hearth.Response {
	t.Helper()
	st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", key, body)
	if st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); r.Status == hearth.StatusQueued || r.Status == hearth.StatusInProgress; {
		if time.Now().After(deadline) {
			t.Fatalf("background response still %s", r.Status)
		}
		time.Sleep(50 * time.Millisecond)
		st, _, b = call(t, nil, "GET", srv.URL+"/v1/responses/"+r.ID, key, "")
		if st != 200 {
			t.Fatalf("poll: %d %s", st, b)
		}
		r = hearth.Response{}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
	}
	if r.Status != hearth.StatusCompleted || r.Usage == nil {
		t.Fatalf("response %s: %s", r.ID, b)
	}
	return &r
}

func cached(r *hearth.Response) int { return int(r.Usage.InputTokensDetails.CachedTokens) }

// TestCacheScopeE2E: the runtime's KV cache is shared by every key, but cached_tokens
// is not a window into it. After alice's prompt, bob's exact guess of it reports
// nothing cached (hearth before reported all of it but the last token: the guess
// confirmed), while alice's own continuation reports her whole previous turn, and two
// keys of one cache group see each other's prompts cached (dave's request runs in the
// background, whose context is not the request's).
func TestCacheScopeE2E(t *testing.T) {
	srv, keys := scopedServer(t)
	model := scriptmodel.PlainModel
	input := func(text string) string {
		b, _ := json.Marshal(text)
		return `"temperature":0,"input":` + string(b)
	}

	a1 := finishedAs(t, srv, keys["alice"], reqBody(model, false, input(secretPrompt)))
	a2 := finishedAs(t, srv, keys["alice"], reqBody(model, false, input("Go on.")+`,"previous_response_id":"`+a1.ID+`"`))
	if want := int(a1.Usage.InputTokens+a1.Usage.OutputTokens) - 1; cached(a2) != want {
		t.Errorf("alice's continuation: cached_tokens %d, want her whole first turn (%d)", cached(a2), want)
	}
	// bob guesses alice's prompt, exactly and by its first words, each time right after
	// alice sent it (her sequence is in the runtime's slot).
	for i, guess := range []string{secretPrompt, "Customer 88123 password is hunter2"} {
		if i > 0 {
			finishedAs(t, srv, keys["alice"], reqBody(model, false, input(secretPrompt)))
		}
		b := finishedAs(t, srv, keys["bob"], reqBody(model, false, input(guess)))
		if cached(b) != 0 {
			t.Errorf("bob's guess %q: cached_tokens %d of %d, want 0 (it tells bob what alice sent)", guess, cached(b), b.Usage.InputTokens)
		}
	}
	// The slot holds bob's sequence now: alice's next turn counts none of it (the
	// runtime still reuses what bob's prompt shares with hers).
	a3 := finishedAs(t, srv, keys["alice"], reqBody(model, false, input("And then?")+`,"previous_response_id":"`+a2.ID+`"`))
	t.Logf("alice's turn after bob's guess: cached_tokens %d of %d", cached(a3), a3.Usage.InputTokens)

	// One cache group: dave sees carol's prompt cached, as the same key would.
	c := finishedAs(t, srv, keys["carol"], reqBody(model, false, input(secretPrompt)))
	if cached(c) != 0 {
		t.Errorf("carol's first prompt: cached_tokens %d, want 0 (bob's sequence was in the slot)", cached(c))
	}
	d := finishedAs(t, srv, keys["dave"], reqBody(model, false, input(secretPrompt)+`,"background":true`))
	if want := int(d.Usage.InputTokens) - 1; cached(d) != want {
		t.Errorf("dave after carol (team1): cached_tokens %d, want %d (the whole prompt but its last token)", cached(d), want)
	}

	// Over WebSocket (a connection's context is not its upgrade request's): carol again
	// after dave sees it cached, bob after carol does not.
	ws := func(name string) *hearth.Response {
		c := dialWS(t, srv, http.Header{"Authorization": {"Bearer " + keys[name]}})
		return c.completed(wsCreate(model, input(secretPrompt)))
	}
	if c2 := ws("carol"); cached(c2) != int(c2.Usage.InputTokens)-1 {
		t.Errorf("carol over WebSocket after dave: cached_tokens %d of %d, want all but the last", cached(c2), c2.Usage.InputTokens)
	}
	if b := ws("bob"); cached(b) != 0 {
		t.Errorf("bob over WebSocket after carol: cached_tokens %d of %d, want 0", cached(b), b.Usage.InputTokens)
	}
}

// BenchmarkCacheProbeE2E measures what remains of the side channel once cached_tokens
// is scoped: the runtime still reuses another key's prefix, so a guess that matches
// what alice sent starts answering sooner. Each iteration alice sends her prompt (not
// timed), then bob streams a guess, timed to its first output_text delta. Sub-benchmarks:
// exact (bob guesses the whole prompt), first-words (he guesses its first words, as
// "Customer 88123 password is"), wrong (a prompt sharing only the chat template's start).
// ttft-ms is the median of bob's time to first token, cached-tokens the largest
// cached_tokens bob was told (0: the report says nothing). A measurement, not a test:
//
//	go test -run '^$' -bench CacheProbe -benchtime 5x ./server
func BenchmarkCacheProbeE2E(b *testing.B) {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "hearth.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	keys := map[string]string{}
	for _, name := range []string{"alice", "bob"} {
		_, secret, err := db.CreateKey(context.Background(), name)
		if err != nil {
			b.Fatal(err)
		}
		keys[name] = secret
	}
	_, model := testenv.BenchModel(b, scriptmodel.PlainModel)
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(b), Database: db}))
	defer srv.Close()

	// About 300 tokens: the script models' tokenizer spends about a token per byte.
	var filler strings.Builder
	for i := 0; filler.Len() < 220; i++ {
		fmt.Fprintf(&filler, " Ledger line %d: invoice %d settled by wire.", i, 7000+i*37)
	}
	secret := "Customer 88123 password is hunter2-lilac-7741." + filler.String()
	guesses := []struct{ name, prompt string }{
		{"exact", secret},
		{"first-words", "Customer 88123 password is swordfish-0000." + filler.String()},
		{"wrong", "Vendor 55120 passphrase was rosebud-cobalt-1209." + filler.String()},
	}
	body := func(prompt string, stream bool) string {
		p, _ := json.Marshal(prompt)
		return reqBody(model, stream, `"temperature":0,"max_output_tokens":16,"store":false,"input":`+string(p))
	}
	// Load the model once, untimed.
	if st, _, out := call(b, nil, "POST", srv.URL+"/v1/responses", keys["alice"], body("warm up", false)); st != 200 {
		b.Fatalf("warm up: %d %s", st, out)
	}
	for _, g := range guesses {
		b.Run(g.name, func(b *testing.B) {
			var ttfts []time.Duration
			maxCached := 0
			for range b.N {
				b.StopTimer()
				if st, _, out := call(b, nil, "POST", srv.URL+"/v1/responses", keys["alice"], body(secret, false)); st != 200 {
					b.Fatalf("alice: %d %s", st, out)
				}
				b.StartTimer()
				ttft, usage := streamTTFT(b, srv.URL, keys["bob"], body(g.prompt, true))
				ttfts = append(ttfts, ttft)
				maxCached = max(maxCached, usage.InputTokensDetails.CachedTokens)
			}
			slices.Sort(ttfts)
			b.ReportMetric(float64(ttfts[len(ttfts)/2].Microseconds())/1000, "ttft-ms")
			b.ReportMetric(float64(maxCached), "cached-tokens")
			b.Logf("%s: bob's time to first token over %d runs: %v", g.name, len(ttfts), ttfts)
		})
	}
}

// streamTTFT streams a response and returns the time from sending it to its first
// output_text delta, and its final usage.
func streamTTFT(b *testing.B, base, key, body string) (time.Duration, hearth.Usage) {
	b.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/responses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		out, _ := io.ReadAll(resp.Body)
		b.Fatalf("stream: %d %s", resp.StatusCode, out)
	}
	var ttft time.Duration
	var usage hearth.Usage
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if ttft == 0 && line == "event: response.output_text.delta" {
			ttft = time.Since(start)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"type":"response.completed"`) {
			var ev struct{ Response hearth.Response }
			if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Response.Usage == nil {
				b.Fatalf("completed event: %v %s", err, data)
			}
			usage = *ev.Response.Usage
		}
	}
	if ttft == 0 || usage.InputTokens == 0 {
		b.Fatalf("stream without a text delta or a completed response (ttft %v, usage %+v)", ttft, usage)
	}
	return ttft, usage
}
