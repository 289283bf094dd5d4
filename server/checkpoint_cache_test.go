package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama"
)

// promptRecorder is fakeRuntime remembering the prompts it is sent.
type promptRecorder struct {
	fakeRuntime
	mu      sync.Mutex
	prompts []string
}

func (r *promptRecorder) Generate(ctx context.Context, req *api.GenerateRequest, fn api.GenerateResponseFunc) error {
	r.mu.Lock()
	r.prompts = append(r.prompts, req.Prompt)
	r.mu.Unlock()
	return r.fakeRuntime.Generate(ctx, req, fn)
}

func (r *promptRecorder) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prompts[len(r.prompts)-1]
}

// TestCheckpointCacheSamePrompts: a continuation of a chain long enough to have
// checkpoints is served from the decoded checkpoint (hearth_checkpoint_cache_hits_total)
// plus the links after it, and sends the runtime the very prompt, with the same token
// counts, as the first continuation (which reads the checkpoint whole) and as a server
// started afresh on the same database (a restart: nothing kept in memory), which
// splices the prompt onto the one saved with the checkpoint instead of rendering the
// whole chain.
func TestCheckpointCacheSamePrompts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hearth.db")
	start := func() (*httptest.Server, *wire.Hearth, *promptRecorder) {
		rec := &promptRecorder{}
		srv, h := fakeHearthOn(t, path, rec)
		return srv, h, rec
	}
	post := func(srv *httptest.Server, body string) map[string]any {
		t.Helper()
		status, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", body)
		var r map[string]any
		if err := json.Unmarshal(b, &r); err != nil || status != http.StatusOK || r["status"] != "completed" {
			t.Fatalf("%d %s (%v)", status, b, err)
		}
		return r
	}
	const model = `"model":"hearth-fake-128k"`
	// Turns of several shapes: plain questions, a call with its output sent back, two
	// user messages. (Not a developer message: templates gather system messages, so a
	// chain with one in its middle is always rendered whole.)
	input := func(i int) string {
		switch i % 3 {
		case 0:
			return fmt.Sprintf(`"input":"Question %d?"`, i)
		case 1:
			return fmt.Sprintf(`"input":[{"type":"function_call","call_id":"call_%d","name":"lookup","arguments":"{\"n\":%d}"},`+
				`{"type":"function_call_output","call_id":"call_%d","output":"result %d"},{"role":"user","content":"And so?"}],`+
				`"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"n":{"type":"integer"}}}}]`, i, i, i, i)
		}
		return fmt.Sprintf(`"input":[{"role":"user","content":"Note %d."},{"role":"user","content":"Go on."}]`, i)
	}
	srv, h, rec := start()
	id := ""
	for i := range 70 { // checkpoints at turns 32 and 64
		prev := ""
		if id != "" {
			prev = `,"previous_response_id":"` + id + `"`
		}
		id = post(srv, `{`+model+`,`+input(i)+prev+`}`)["id"].(string)
	}
	// The tools of turn 64, the last checkpoint, whose prompt is saved with it.
	next := `{` + model + `,"input":"Last question?","previous_response_id":"` + id + `",` +
		`"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"n":{"type":"integer"}}}}]}`
	// Cached tokens depend on what the runtime was sent just before; the counts of
	// the prompt and the output do not.
	usage := func(r map[string]any) string {
		u := r["usage"].(map[string]any)
		return fmt.Sprint(u["input_tokens"], " in, ", u["output_tokens"], " out")
	}

	// The chain as this process kept it (hotchains.go): no load, the build going on
	// from the previous turn's.
	hot := metric(t, srv, "", "hearth_hot_chain_cache_hits_total")
	first := post(srv, next)
	want, wantUsage := rec.last(), usage(first)
	if !strings.Contains(want, "Question 0?") || !strings.Contains(want, "result 67") || !strings.Contains(want, "Last question?") {
		t.Fatalf("prompt lacks the chain's turns:\n%.3000s", want)
	}
	if n := metric(t, srv, "", "hearth_hot_chain_cache_hits_total"); n != hot+1 {
		t.Errorf("hearth_hot_chain_cache_hits_total went from %v to %v over one continuation", hot, n)
	}
	same := func(what string, r map[string]any, got string) {
		t.Helper()
		if got != want {
			t.Fatalf("prompt %s differs from the one of the kept chain:\n%s\n----\n%s", what, got, want)
		}
		if got := usage(r); got != wantUsage {
			t.Errorf("usage %s %s, of the kept chain %s", what, got, wantUsage)
		}
	}

	// Loaded: the checkpoint read whole, and kept decoded.
	h.Core.ForgetHotChains()
	second := post(srv, next)
	same("loaded whole", second, rec.last())

	hits := metric(t, srv, "", "hearth_checkpoint_cache_hits_total")
	h.Core.ForgetHotChains()
	third := post(srv, next) // from the kept checkpoint and the links after it
	same("through the kept checkpoint", third, rec.last())
	if n := metric(t, srv, "", "hearth_checkpoint_cache_hits_total"); n != hits+1 {
		t.Errorf("hearth_checkpoint_cache_hits_total went from %v to %v over one continuation", hits, n)
	}

	// A restart: a new server on the same database keeps nothing yet, nor does the
	// renderer; the prompt saved with the checkpoint is spliced onto.
	srv2, _, rec2 := start()
	ollama.ResetPromptCache()
	fourth := post(srv2, next)
	same("after a restart", fourth, rec2.last())
	if st := ollama.ReadPromptCacheStats(); st.Resumed != 1 || st.Full != 0 {
		t.Errorf("after a restart the prompt cache says %+v; want the saved prompt taken up and nothing rendered whole", st)
	}
}
