package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// chainHearth is hearth over a prompt recorder with a database of its own, which the
// test reads too (the chain's checkpoints).
type chainHearth struct {
	srv *httptest.Server
	rec *promptRecorder
	db  *sqlite.DB
}

func newChainHearth(t *testing.T, path string) *chainHearth {
	t.Helper()
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	target, err := ollama.Connect("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	rec := &promptRecorder{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := wire.New(wire.Config{
		Runtime: target, Engine: engine.New(ollama.Seam(rec), engine.DefaultFormats(), log), Database: db, Logger: log})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); db.Close() })
	return &chainHearth{srv: srv, rec: rec, db: db}
}

// checkpoint is the response holding the newest checkpoint of the chain that ends at
// id, as the turn that made it, and whether its prompt was saved with it; "-" when the
// chain has none yet.
func (h *chainHearth) checkpoint(t *testing.T, id string, turns map[string]int) string {
	t.Helper()
	c, err := h.db.LoadChain(context.Background(), storage.OwnerOf(""), id)
	if err != nil {
		t.Fatal(err)
	}
	if c.Base == nil {
		return "-"
	}
	p, err := h.db.CheckpointPrompt(context.Background(), c.Base.ID, c.Base.Stamp)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("turn %d, prompt saved: %v", turns[c.Base.ID], p != nil)
}

// chainCounters are what /metrics says of hearth's chain caches.
func chainCounters(t *testing.T, h *chainHearth) string {
	t.Helper()
	var b strings.Builder
	for _, name := range []string{"hearth_hot_chain_cache_hits_total", "hearth_hot_chain_cache_misses_total",
		"hearth_checkpoint_cache_hits_total", "hearth_checkpoint_cache_misses_total",
		"hearth_input_tokens_total", "hearth_cached_input_tokens_total", "hearth_output_tokens_total"} {
		fmt.Fprintf(&b, "%s=%v ", name, metric(t, h.srv, "", name))
	}
	return b.String()
}

// TestSocketAndHTTPSameChainE2E: a chain continued turn by turn over WebSocket
// connections and the same chain continued over HTTP go through the same request
// path: turn by turn the runtime is sent the same prompts, the responses report the
// same usage (cached tokens included), storage keeps the same checkpoints with their
// saved prompts, and hearth's chain caches (hot chains, decoded checkpoints) serve the
// same lookups, also for the first continuation after a restart. A path that skipped a
// step of the prologue (the hot chain, the checkpoint depth, the saved prompt) would
// show here.
func TestSocketAndHTTPSameChainE2E(t *testing.T) {
	httpPath := filepath.Join(t.TempDir(), "http.db")
	socketPath := filepath.Join(t.TempDir(), "socket.db")
	viaHTTP, viaSocket := newChainHearth(t, httpPath), newChainHearth(t, socketPath)
	const tools = `"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"n":{"type":"integer"}}}}]`
	input := func(i int) string {
		switch i % 4 {
		case 1:
			return fmt.Sprintf(`"input":[{"type":"function_call","call_id":"call_%d","name":"lookup","arguments":"{\"n\":%d}"},`+
				`{"type":"function_call_output","call_id":"call_%d","output":"result %d"},{"type":"message","role":"user","content":"And so?"}]`, i, i, i, i)
		case 2:
			return fmt.Sprintf(`"input":[{"type":"message","role":"user","content":"Note %d."},{"type":"message","role":"user","content":"Go on."}]`, i)
		case 3:
			return fmt.Sprintf(`"input":"Question %d?","reasoning":{"effort":"low"}`, i)
		}
		return fmt.Sprintf(`"input":"Question %d?"`, i)
	}
	body := func(i int, prev string) string {
		b := `"model":"hearth-fake-128k",` + input(i) + `,` + tools
		if prev != "" {
			b += `,"previous_response_id":"` + prev + `"`
		}
		return b
	}
	// Over HTTP: JSON replies, every third one streamed.
	post := func(i int, prev string) *hearth.Response {
		t.Helper()
		b := `{` + body(i, prev)
		if i%3 == 2 {
			b += `,"stream":true`
		}
		status, _, out := call(t, nil, "POST", viaHTTP.srv.URL+"/v1/responses", "", b+`}`)
		if status != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i, status, out)
		}
		if i%3 == 2 {
			s := string(out)
			end := strings.LastIndex(s, `"type":"response.completed"`)
			if end < 0 {
				t.Fatalf("turn %d: the stream did not complete: %s", i, s)
			}
			s = s[strings.LastIndex(s[:end], "data: ")+len("data: "):]
			var e struct{ Response json.RawMessage }
			if err := json.Unmarshal([]byte(s[:strings.Index(s, "\n")]), &e); err != nil {
				t.Fatal(err)
			}
			out = e.Response
		}
		var r hearth.Response
		if err := json.Unmarshal(out, &r); err != nil || r.Status != hearth.StatusCompleted || r.Usage == nil {
			t.Fatalf("turn %d: %s (%v)", i, out, err)
		}
		return &r
	}
	// Over WebSocket: a connection for each ten turns, so that a connection also
	// continues a chain it did not make.
	var ws *wsConn
	create := func(i int, prev string) *hearth.Response {
		t.Helper()
		if i%10 == 0 {
			ws = dialWS(t, viaSocket.srv, nil)
		}
		return ws.completed(wsCreate("hearth-fake-128k", body(i, prev)[len(`"model":"hearth-fake-128k",`):]))
	}
	usage := func(r *hearth.Response) string {
		u := r.Usage
		return fmt.Sprintf("input %d (cached %d) output %d", u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens)
	}
	samePrompt := func(label string) {
		t.Helper()
		if got, want := viaSocket.rec.last(), viaHTTP.rec.last(); got != want {
			n := 0
			for n < len(got) && n < len(want) && got[n] == want[n] {
				n++
			}
			t.Fatalf("%s: the WebSocket prompt differs from the HTTP one after %q\n--- socket\n%.300s\n--- http\n%.300s",
				label, got[max(0, n-80):n], got[n:], want[n:])
		}
	}
	httpTurns, socketTurns := map[string]int{}, map[string]int{}
	var httpID, socketID string
	const turns = 40
	for i := range turns {
		hr, sr := post(i, httpID), create(i, socketID)
		httpID, socketID = hr.ID, sr.ID
		httpTurns[httpID], socketTurns[socketID] = i, i
		samePrompt(fmt.Sprintf("turn %d", i))
		if h, s := usage(hr), usage(sr); h != s {
			t.Errorf("turn %d: usage over HTTP %s, over WebSocket %s", i, h, s)
		}
		if h, s := viaHTTP.checkpoint(t, httpID, httpTurns), viaSocket.checkpoint(t, socketID, socketTurns); h != s {
			t.Errorf("turn %d: checkpoint over HTTP %s, over WebSocket %s", i, h, s)
		}
	}
	if h, s := chainCounters(t, viaHTTP), chainCounters(t, viaSocket); h != s {
		t.Errorf("after %d turns, the chain caches over HTTP:\n%s\nover WebSocket:\n%s", turns, h, s)
	}
	if got := metric(t, viaSocket.srv, "", "hearth_hot_chain_cache_hits_total"); got != turns-1 {
		t.Errorf("hearth_hot_chain_cache_hits_total over WebSocket is %v after %d continuations", got, turns-1)
	}

	// A restart: nothing kept in memory, the chain read from its checkpoint with the
	// prompt saved there.
	viaHTTP.srv.Close()
	viaHTTP.db.Close()
	viaSocket.srv.Close()
	viaSocket.db.Close()
	viaHTTP, viaSocket = newChainHearth(t, httpPath), newChainHearth(t, socketPath)
	ws = nil
	// Each continuation renders only what follows the prompt saved with the
	// checkpoint (the renderer's cache is the process's: emptied before each).
	resumed := func(label string) {
		t.Helper()
		if st := ollama.ReadPromptCacheStats(); st.Resumed != 1 || st.Full != 0 {
			t.Errorf("after a restart, over %s, the prompt cache says %+v; want the saved prompt taken up and nothing rendered whole", label, st)
		}
	}
	ollama.ResetPromptCache()
	hr := post(turns, httpID)
	resumed("HTTP")
	ollama.ResetPromptCache()
	sr := create(turns, socketID)
	resumed("WebSocket")
	samePrompt("after a restart")
	if h, s := usage(hr), usage(sr); h != s {
		t.Errorf("after a restart: usage over HTTP %s, over WebSocket %s", h, s)
	}
	if h, s := chainCounters(t, viaHTTP), chainCounters(t, viaSocket); h != s {
		t.Errorf("after a restart, the chain caches over HTTP:\n%s\nover WebSocket:\n%s", h, s)
	}
}
