package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama"
	"hearth/storage/sqlite"
)

// fakeHearth is hearth over a prompt recorder, with its own database.
func fakeHearth(t *testing.T) (*httptest.Server, *wire.Hearth, *promptRecorder) {
	t.Helper()
	rec := &promptRecorder{}
	srv, h := fakeHearthOn(t, filepath.Join(t.TempDir(), "hearth.db"), rec)
	return srv, h, rec
}

// fakeHearthOn serves hearth over rt with the database at path, until t ends.
func fakeHearthOn(t *testing.T, path string, rt ollama.Client) (*httptest.Server, *wire.Hearth) {
	t.Helper()
	db, err := sqlite.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h := hearthOverFake(t, rt, wire.Config{Database: db})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); db.Close() })
	return srv, h
}

// TestHotChainsSamePrompts: a chain served turn by turn from what its previous turn
// left (hot chains: no load, the build going on from the kept one, the renderer's
// kept keys) sends the runtime, turn by turn, the very prompts and token counts that
// the same chain does when every turn loads its chain from the database and builds it
// whole, through every path that ends a turn (JSON, streamed, background, a WebSocket
// would be the streamed path) and through every item shape a chain carries (calls and
// their outputs, reasoning-effort switches, developer messages, assistant messages
// sent back, instructions changing, tools changing).
func TestHotChainsSamePrompts(t *testing.T) {
	hot, _, hotRec := fakeHearth(t)
	cold, coldServer, coldRec := fakeHearth(t)
	const tools = `"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"n":{"type":"integer"}}}}]`
	input := func(i int) string {
		switch i % 5 {
		case 1:
			return fmt.Sprintf(`"input":[{"type":"function_call","call_id":"call_%d","name":"lookup","arguments":"{\"n\":%d}"},`+
				`{"type":"function_call_output","call_id":"call_%d","output":"result %d"},{"role":"user","content":"And so?"}]`, i, i, i, i)
		case 2:
			return fmt.Sprintf(`"input":[{"role":"developer","content":"Be brief %d."},{"role":"user","content":"Note %d."}],"instructions":"Answer well."`, i, i)
		case 3:
			return fmt.Sprintf(`"input":[{"role":"assistant","content":"As I said, %d."},{"role":"user","content":"Go on."}],"reasoning":{"effort":"low"}`, i)
		case 4:
			return fmt.Sprintf(`"input":"Question %d?","stream":true`, i)
		}
		return fmt.Sprintf(`"input":"Question %d?"`, i)
	}
	post := func(srv *httptest.Server, body string) (string, string) {
		t.Helper()
		status, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", body)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, b)
		}
		if strings.HasPrefix(string(b), "event:") {
			i := strings.LastIndex(string(b), `"type":"response.completed"`)
			if i < 0 {
				t.Fatalf("stream did not complete: %s", b)
			}
			b = []byte(string(b)[strings.LastIndex(string(b[:i]), "data: ")+len("data: "):])
			b = b[:strings.Index(string(b), "\n")]
			var e struct{ Response json.RawMessage }
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			b = e.Response
		}
		var r struct {
			ID     string
			Status string
			Usage  struct{ InputTokens, OutputTokens int } `json:"usage"`
		}
		if err := json.Unmarshal(b, &r); err != nil || r.Status != "completed" {
			t.Fatalf("%s (%v)", b, err)
		}
		return r.ID, fmt.Sprint(r.Usage)
	}
	var hotID, coldID string
	hotHits := metric(t, hot, "", "hearth_hot_chain_cache_hits_total")
	for i := range 40 {
		body := func(prev string) string {
			b := `{"model":"hearth-fake-128k",` + input(i)
			if i%7 != 6 {
				b += `,` + tools
			}
			if prev != "" {
				b += `,"previous_response_id":"` + prev + `"`
			}
			return b + `}`
		}
		var hotUsage, coldUsage string
		hotID, hotUsage = post(hot, body(hotID))
		coldServer.Core.ForgetHotChains()
		coldID, coldUsage = post(cold, body(coldID))
		if got, want := hotRec.last(), coldRec.last(); got != want {
			n := 0
			for n < len(got) && n < len(want) && got[n] == want[n] {
				n++
			}
			t.Fatalf("turn %d: the kept chain's prompt differs from the loaded one's after %q\n--- kept\n%.300s\n--- loaded\n%.300s", i, got[max(0, n-80):n], got[n:], want[n:])
		}
		if hotUsage != coldUsage {
			t.Errorf("turn %d: usage %s from the kept chain, %s loaded", i, hotUsage, coldUsage)
		}
	}
	if n := metric(t, hot, "", "hearth_hot_chain_cache_hits_total"); n != hotHits+39 {
		t.Errorf("hearth_hot_chain_cache_hits_total went from %v to %v over 39 continuations", hotHits, n)
	}
}

// TestHotChainsFollowStorage: a kept chain is not used once storage changed it: a
// response deleted from the middle of a chain breaks the chain for its continuations
// (404, as a load says) although its last response was kept; and a chain of another
// owner is not served from it.
func TestHotChainsFollowStorage(t *testing.T) {
	srv, _, _ := fakeHearth(t)
	var ids []string
	for i := range 4 {
		body := fmt.Sprintf(`{"model":"hearth-fake-128k","input":"Question %d?"`, i)
		if len(ids) > 0 {
			body += `,"previous_response_id":"` + ids[len(ids)-1] + `"`
		}
		status, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", body+`}`)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, b)
		}
		var r struct{ ID string }
		json.Unmarshal(b, &r)
		ids = append(ids, r.ID)
	}
	if status, _, b := call(t, nil, "DELETE", srv.URL+"/v1/responses/"+ids[1], "", ""); status != http.StatusOK {
		t.Fatalf("delete: %d %s", status, b)
	}
	body := `{"model":"hearth-fake-128k","input":"Next?","previous_response_id":"` + ids[3] + `"}`
	status, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", body)
	if status != http.StatusNotFound || !strings.Contains(string(b), "previous_response_id") {
		t.Errorf("continuing a chain with a deleted link: %d %s, want 404 naming previous_response_id", status, b)
	}
}

// TestHotChainsConversation: a response in a conversation saw the conversation's items
// before its input; its chain (what previous_response_id continues) does not hold them,
// so the continuation's prompt must not either, kept or loaded.
func TestHotChainsConversation(t *testing.T) {
	var prompts [2]string
	for i, forget := range []bool{false, true} {
		srv, h, rec := fakeHearth(t)
		status, _, b := call(t, nil, "POST", srv.URL+"/v1/conversations", "",
			`{"items":[{"role":"user","content":"Earlier question?"}]}`)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, b)
		}
		var conv struct{ ID string }
		json.Unmarshal(b, &conv)
		status, _, b = call(t, nil, "POST", srv.URL+"/v1/responses", "",
			`{"model":"hearth-fake-128k","input":"In the conversation?","conversation":"`+conv.ID+`"}`)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, b)
		}
		var r struct{ ID string }
		json.Unmarshal(b, &r)
		if forget {
			h.Core.ForgetHotChains()
		}
		status, _, b = call(t, nil, "POST", srv.URL+"/v1/responses", "",
			`{"model":"hearth-fake-128k","input":"After it?","previous_response_id":"`+r.ID+`"}`)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, b)
		}
		prompts[i] = rec.last()
	}
	if prompts[0] != prompts[1] || strings.Contains(prompts[0], "Earlier question?") || !strings.Contains(prompts[0], "In the conversation?") {
		t.Errorf("continuation of a conversation's response:\n--- kept\n%s\n--- loaded\n%s", prompts[0], prompts[1])
	}
}

// heldRuntime is fakeRuntime whose generations for a model ending in "-held" wait
// until release is closed, and then answer "A slow answer.".
type heldRuntime struct {
	promptRecorder
	release chan struct{}
}

func (r *heldRuntime) Generate(ctx context.Context, req *api.GenerateRequest, fn api.GenerateResponseFunc) error {
	if !strings.HasSuffix(req.Model, "-held") {
		return r.promptRecorder.Generate(ctx, req, fn)
	}
	select {
	case <-r.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := fn(api.GenerateResponse{Model: req.Model, Response: "A slow answer."}); err != nil {
		return err
	}
	return fn(api.GenerateResponse{Model: req.Model, Done: true, DoneReason: "stop",
		Metrics: api.Metrics{PromptEvalCount: len(req.Prompt), EvalCount: 3}})
}

// TestHotChainsUnsettled: a turn that continued a response still running read a chain
// that changes when that response ends; it is not kept, so the next turn loads the
// chain with the finished response's output.
func TestHotChainsUnsettled(t *testing.T) {
	rt := &heldRuntime{release: make(chan struct{})}
	srv, _ := fakeHearthOn(t, filepath.Join(t.TempDir(), "hearth.db"), rt)
	create := func(body string) string {
		t.Helper()
		status, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", body)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, b)
		}
		var r struct{ ID string }
		json.Unmarshal(b, &r)
		return r.ID
	}
	running := create(`{"model":"hearth-fake-held","input":"Slow question?","background":true}`)
	child := create(`{"model":"hearth-fake-128k","input":"Meanwhile?","previous_response_id":"` + running + `"}`)
	close(rt.release)
	for {
		_, _, b := call(t, nil, "GET", srv.URL+"/v1/responses/"+running, "", "")
		if strings.Contains(string(b), `"status":"completed"`) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	create(`{"model":"hearth-fake-128k","input":"And now?","previous_response_id":"` + child + `"}`)
	if p := rt.last(); !strings.Contains(p, "Slow question?") || !strings.Contains(p, "A slow answer.") || !strings.Contains(p, "Meanwhile?") {
		t.Errorf("the continuation's prompt lacks the answer the running response gave after its child read the chain:\n%s", p)
	}
}

// TestSocketKeptBuildSamePrompts: a WebSocket connection's chain (store false,
// continued from the connection's own state, each create going on from the previous
// one's build) sends the runtime the very prompts that the same turns send as HTTP
// requests carrying their whole history (store false, built whole every time).
func TestSocketKeptBuildSamePrompts(t *testing.T) {
	srv, _, rec := fakeHearth(t)
	ws := dialWS(t, srv, nil)
	const tools = `"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"n":{"type":"integer"}}}}]`
	var history []string // the items so far, as JSON, for the HTTP requests
	prev := ""
	for i := range 20 {
		in := []string{fmt.Sprintf(`{"type":"message","role":"user","content":"Question %d?"}`, i)}
		if i%3 == 1 {
			in = []string{fmt.Sprintf(`{"type":"function_call","call_id":"call_%d","name":"lookup","arguments":"{\"n\":%d}"}`, i, i),
				fmt.Sprintf(`{"type":"function_call_output","call_id":"call_%d","output":"result %d"}`, i, i),
				`{"type":"message","role":"user","content":"And so?"}`}
		}
		extra := `"store":false,` + tools + `,"input":[` + strings.Join(in, ",") + `]`
		if prev != "" {
			extra += `,"previous_response_id":"` + prev + `"`
		}
		final := ws.completed(wsCreate("hearth-fake-128k", extra))
		prev = final.ID
		viaSocket := rec.last()

		history = append(history, in...)
		status, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "",
			`{"model":"hearth-fake-128k","store":false,`+tools+`,"input":[`+strings.Join(history, ",")+`]}`)
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, b)
		}
		if whole := rec.last(); viaSocket != whole {
			t.Fatalf("turn %d: the connection's prompt differs from the whole history's:\n--- socket\n%s\n--- whole\n%s", i, viaSocket, whole)
		}
		for _, it := range final.Output {
			b, _ := json.Marshal(it)
			history = append(history, string(b))
		}
	}
}
