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
	"sync"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/engine/pool"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// poolHearth is hearth over two real runtimes on the same script models: the tests'
// shared runtime (embedded, or external by HEARTH_TEST_RUNTIME) and an `ollama serve`
// process the test can kill, one slot each.
type poolHearth struct {
	srv          *httptest.Server
	db           *sqlite.DB
	a, b         string // the runtimes' labels
	second       *testenv.Server
	owner        string
	ctx          context.Context
	model, slowM string
}

func newPoolHearth(t *testing.T) *poolHearth {
	t.Helper()
	first := testenv.Runtime(t)
	second := testenv.StartServer(t)
	srv, db := servePool(t, wire.Config{}, first, second.Runtime)
	_, slow := testenv.BenchModel(t, scriptmodel.LongModel)
	return &poolHearth{srv: srv, db: db, a: first.Label(), b: second.Runtime.Label(), second: second,
		owner: storage.OwnerOf(""), ctx: context.Background(), model: scriptmodel.PlainModel, slowM: slow}
}

// servePool serves hearth with cfg over a pool of rts, with a database of its own; both
// close when the test ends.
func servePool(t *testing.T, cfg wire.Config, rts ...pool.Runtime) (*httptest.Server, *sqlite.DB) {
	t.Helper()
	p, err := pool.New(rts, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg.Runtime, cfg.Database = p, db
	srv := httptest.NewServer(wire.New(cfg))
	t.Cleanup(srv.Close)
	return srv, db
}

// create posts a JSON create and returns the response and the runtime its header names.
func (h *poolHearth) create(t *testing.T, body string) (*hearth.Response, string) {
	t.Helper()
	resp, b := post(t, h.srv.URL+"/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r, resp.Header.Get(server.HeaderRuntime)
}

// stored is the runtime storage recorded for response id.
func (h *poolHearth) stored(t *testing.T, id string) string {
	t.Helper()
	l, err := h.db.ResponseRuntime(h.ctx, h.owner, id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// together runs fn(i) for i in [0, n) at once and waits for all.
func together(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i)
		}()
	}
	close(start)
	wg.Wait()
}

// TestPoolE2E: hearth over two real runtimes. Two conversations started together go to
// different runtimes, and each stays on its runtime for every turn (its KV cache holds
// the prefix: cached_tokens covers the previous turn); /v1/models and /healthz show
// both. Then with four long streams spread over both, the second runtime is killed
// mid-stream: only its in-flight response fails, the rest complete on the first;
// /healthz reports it down (200: one still serves), and a conversation that lived on it
// continues on the first, re-evaluating its prefix there (cached_tokens says so).
func TestPoolE2E(t *testing.T) {
	h := newPoolHearth(t)
	if h.a == h.b {
		t.Fatalf("both runtimes have the label %q", h.a)
	}
	// Load the models in both runtimes first: a load is not what is measured.
	together(2, func(int) {
		h.create(t, reqBody(h.model, false, `"input":"warm up"`))
	})

	// Two conversations, started together: one on each runtime.
	const turns = 3
	labels := make([]string, 2)
	chains := make([][]*hearth.Response, 2)
	for turn := range turns {
		together(2, func(c int) {
			// Each conversation's inputs differ from their first character, so the
			// two share no prefix but the template's.
			extra := fmt.Sprintf(`"input":"%c%d: conversation %d, turn %d"`, 'p'+c, turn, c, turn)
			if turn > 0 {
				extra += `,"previous_response_id":"` + chains[c][turn-1].ID + `"`
			} else {
				extra += fmt.Sprintf(`,"prompt_cache_key":"conversation-%d"`, c)
			}
			r, label := h.create(t, reqBody(h.model, false, extra))
			if turn == 0 {
				labels[c] = label
			} else if label != labels[c] {
				t.Errorf("conversation %d turn %d ran on %q, its earlier turns on %q", c, turn, label, labels[c])
			}
			if r.Status != hearth.StatusCompleted {
				t.Errorf("conversation %d turn %d: %s", c, turn, r.Status)
			}
			if got := h.stored(t, r.ID); got != label {
				t.Errorf("stored runtime %q, header %q", got, label)
			}
			chains[c] = append(chains[c], r)
		})
	}
	if slices.Sort(labels); !slices.Equal(labels, sorted(h.a, h.b)) {
		t.Fatalf("two conversations started together ran on %v; want one on each of %s and %s", labels, h.a, h.b)
	}
	for c, chain := range chains {
		for turn := 1; turn < turns; turn++ {
			prev, r := chain[turn-1].Usage, chain[turn].Usage
			// The previous turn's whole prompt was still in its runtime's cache.
			if r.InputTokensDetails.CachedTokens < prev.InputTokens {
				t.Errorf("conversation %d turn %d: cached_tokens %d < the previous prompt's %d tokens", c, turn, r.InputTokensDetails.CachedTokens, prev.InputTokens)
			}
		}
	}
	onB := 0
	if h.stored(t, chains[1][0].ID) == h.b {
		onB = 1
	}

	// With both runtimes idle, a new request goes to the first, unless it continues
	// something: the same prompt_cache_key, or the connection's latest response on a
	// WebSocket, goes where that ran.
	if _, label := h.create(t, reqBody(h.model, false, `"input":"a new conversation"`)); label != h.a {
		t.Errorf("a new request on an idle pool ran on %q, want the first runtime %s", label, h.a)
	}
	pck := fmt.Sprintf(`"input":"the same cache key","prompt_cache_key":"conversation-%d"`, onB)
	if _, label := h.create(t, reqBody(h.model, false, pck)); label != h.b {
		t.Errorf("a request with the prompt_cache_key of a conversation on %s ran on %q", h.b, label)
	}
	ws := dialWS(t, h.srv, nil)
	first := ws.completed(wsCreate(h.model, `"input":"on the socket","previous_response_id":"`+chains[onB][turns-1].ID+`"`))
	second := ws.completed(wsCreate(h.model, `"input":"next on the socket"`))
	if got1, got2 := h.stored(t, first.ID), h.stored(t, second.ID); got1 != h.b || got2 != h.b {
		t.Errorf("on a WebSocket: a continuation of a conversation on %s ran on %q, the next create on %q", h.b, got1, got2)
	}

	// Where the model lives, and both runtimes serving.
	var models struct {
		Data []struct {
			ID       string   `json:"id"`
			Runtimes []string `json:"runtimes"`
		} `json:"data"`
	}
	getJSON(t, h.srv.URL+"/v1/models", http.StatusOK, &models)
	i := slices.IndexFunc(models.Data, func(m struct {
		ID       string   `json:"id"`
		Runtimes []string `json:"runtimes"`
	}) bool {
		return m.ID == h.model
	})
	if i < 0 || !slices.Equal(models.Data[i].Runtimes, []string{h.a, h.b}) {
		t.Errorf("/v1/models entry of %s: %+v; want runtimes [%s %s]", h.model, models.Data, h.a, h.b)
	}
	health := healthOf(t, h.srv.URL, http.StatusOK)
	if len(health.Runtimes) != 2 || !health.Runtimes[0].OK || !health.Runtimes[1].OK {
		t.Errorf("/healthz runtimes %+v, want both ok", health.Runtimes)
	}

	// Four long streams, two per runtime (one running, one queued, each); the second
	// runtime dies while its first streams.
	together(2, func(int) {
		h.create(t, reqBody(h.slowM, false, `"input":"warm up","max_output_tokens":16`))
	})
	streams := make([]*poolStream, 4)
	var started sync.WaitGroup
	started.Add(4)
	for i := range streams {
		streams[i] = h.stream(t, reqBody(h.slowM, true, fmt.Sprintf(`"input":"story %d"`, i)), &started)
	}
	started.Wait()
	var placed [2]int
	var victim *poolStream
	for _, s := range streams {
		switch s.label {
		case h.a:
			placed[0]++
		case h.b:
			placed[1]++
			if !s.queued && victim == nil {
				victim = s
			}
		default:
			t.Fatalf("stream placed on %q", s.label)
		}
	}
	if placed != [2]int{2, 2} {
		t.Fatalf("four streams placed %v on %s and %s; want two on each", placed, h.a, h.b)
	}
	if victim == nil {
		t.Fatalf("no stream runs on %s", h.b)
	}
	select {
	case <-victim.delta:
	case <-time.After(5 * time.Minute):
		t.Fatal("the stream on the second runtime wrote nothing")
	}
	h.second.Kill()
	for _, s := range streams {
		<-s.done
	}
	failed := 0
	for _, s := range streams {
		if s.err != nil {
			t.Fatalf("stream %s: %v", s.id, s.err)
		}
		ran := h.stored(t, s.id)
		switch {
		case s == victim:
			if s.final.Status != hearth.StatusFailed || ran != h.b {
				t.Errorf("the stream in flight on the killed runtime: %s on %q; want failed on %s", s.final.Status, ran, h.b)
			}
			failed++
		case s.final.Status != hearth.StatusCompleted:
			t.Errorf("stream %s (placed on %s): %s %+v; only the one in flight on the killed runtime may fail", s.id, s.label, s.final.Status, s.final.Error)
		case ran != h.a:
			t.Errorf("stream %s completed on %q; the killed runtime cannot have served it", s.id, ran)
		}
	}
	if failed != 1 {
		t.Errorf("%d streams failed, want 1", failed)
	}

	// The second runtime is down; hearth still serves.
	deadline := time.Now().Add(30 * time.Second)
	for {
		health = healthOf(t, h.srv.URL, http.StatusOK)
		if len(health.Runtimes) == 2 && !health.Runtimes[1].OK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz runtimes %+v; want %s down", health.Runtimes, h.b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if health.Runtimes[1].Runtime != h.b || !health.Runtimes[0].OK || health.Runtimes[1].Error == "" {
		t.Errorf("/healthz runtimes %+v", health.Runtimes)
	}

	// The conversation that lived there continues on the first runtime, whose cache
	// does not hold its prefix.
	last := chains[onB][turns-1]
	r, label := h.create(t, reqBody(h.model, false, `"input":"after the loss","previous_response_id":"`+last.ID+`"`))
	if r.Status != hearth.StatusCompleted || label != h.a {
		t.Fatalf("continuation after its runtime died: %s on %q; want completed on %s", r.Status, label, h.a)
	}
	if c := r.Usage.InputTokensDetails.CachedTokens; c >= last.Usage.InputTokens {
		t.Errorf("continuation moved to %s reports %d cached tokens; its prefix (%d tokens) was never there", h.a, c, last.Usage.InputTokens)
	}
}

func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// poolStream is one streamed create read in the background.
type poolStream struct {
	label, id string
	queued    bool
	// delta is closed at the first text delta, done when the stream ended.
	delta, done chan struct{}
	final       *hearth.Response
	err         error
}

// stream starts a streamed create; started is done once its first event arrived (its
// runtime and whether it is queued are known).
func (h *poolHearth) stream(t *testing.T, body string, started *sync.WaitGroup) *poolStream {
	t.Helper()
	s := &poolStream{delta: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		var once sync.Once
		begin := func() { once.Do(started.Done) }
		defer begin()
		resp, err := http.Post(h.srv.URL+"/v1/responses", "application/json", strings.NewReader(body))
		if err != nil {
			s.err = err
			return
		}
		defer resp.Body.Close()
		s.label = resp.Header.Get(server.HeaderRuntime)
		var raw strings.Builder
		r := bufio.NewReader(resp.Body)
		sawDelta := false
		for {
			line, err := r.ReadString('\n')
			raw.WriteString(line)
			if s.id == "" {
				if s.id = responseIDOf(strings.TrimRight(line, "\n")); s.id != "" {
					s.queued = strings.Contains(line, `"status":"queued"`)
					begin()
				}
			}
			if !sawDelta && strings.Contains(line, `"type":"response.output_text.delta"`) {
				sawDelta = true
				close(s.delta)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				s.err = err
				return
			}
		}
		events, err := schematest.ReadSSE(strings.NewReader(raw.String()))
		if err != nil {
			s.err = err
			return
		}
		if err := schematest.CheckLifecycle(events); err != nil {
			s.err = fmt.Errorf("lifecycle: %w", err)
			return
		}
		last, _ := json.Marshal(events[len(events)-1]["response"])
		s.final = &hearth.Response{}
		s.err = json.Unmarshal(last, s.final)
	}()
	return s
}

type healthBody struct {
	Status   string `json:"status"`
	Runtimes []struct {
		Runtime string `json:"runtime"`
		OK      bool   `json:"ok"`
		Error   string `json:"error"`
	} `json:"runtimes"`
}

func healthOf(t *testing.T, base string, want int) healthBody {
	t.Helper()
	var h healthBody
	getJSON(t, base+"/healthz", want, &h)
	return h
}

func getJSON(t *testing.T, url string, want int, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %d, want %d: %s", url, resp.StatusCode, want, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}

// TestRandomPlacementE2E: RandomPlacement (hearth bench pool's baseline, no serving
// setup sets it) ignores where a chain lives: a 20-turn chain over two real runtimes
// runs on both and moves between them, where hearth's own placement keeps it on one.
func TestRandomPlacementE2E(t *testing.T) {
	first := testenv.Runtime(t)
	second := testenv.StartServer(t)
	for _, random := range []bool{false, true} {
		srv, db := servePool(t, wire.Config{RandomPlacement: random}, first, second.Runtime)
		h := &poolHearth{srv: srv, db: db}
		served, moves, prev, where := map[string]int{}, 0, "", ""
		for turn := range 20 {
			extra := `"input":"turn ` + fmt.Sprint(turn) + `"`
			if prev != "" {
				extra += `,"previous_response_id":"` + prev + `"`
			}
			r, label := h.create(t, reqBody(scriptmodel.PlainModel, false, extra))
			served[label]++
			if where != "" && label != where {
				moves++
			}
			prev, where = r.ID, label
		}
		switch {
		case random && (len(served) != 2 || moves == 0):
			t.Errorf("random placement: served %v with %d moves, want both runtimes and moves", served, moves)
		case !random && (len(served) != 1 || moves != 0):
			t.Errorf("hearth's placement: served %v with %d moves, want the chain kept on one runtime", served, moves)
		}
	}
}
