package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/internal/seal"
	"hearth/scriptmodel"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// sealedHearth serves hearth as `hearth serve --data dir` sets it up: the database and
// the key of encrypted content both in dir. stop closes the server and the database,
// as a restart would.
func sealedHearth(t *testing.T, dir string) (srv *httptest.Server, db *sqlite.DB, key *seal.Key, stop func()) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(dir, "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	key, _, err = seal.LoadOrCreate(filepath.Join(dir, seal.FileName))
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db, Seal: key}))
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			srv.Close()
			db.Close()
		}
	}
	t.Cleanup(stop)
	return srv, db, key, stop
}

// sealingEngine is an engine over the test runtime with key, to render the prompts
// hearth renders for a request.
func sealingEngine(t *testing.T, key *seal.Key) *engine.Engine {
	eng := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	eng.Seal = key
	return eng
}

// renderedPrompt is the prompt hearth sends the runtime for body on top of history.
func renderedPrompt(t *testing.T, eng *engine.Engine, body string, history []hearth.Item) string {
	t.Helper()
	req, _, err := hearth.DecodeCreateRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	j, err := eng.Prepare(context.Background(), req, history, engine.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	return j.Prompt
}

// storedHistory is the history hearth loads for previous_response_id = id.
func storedHistory(t *testing.T, db *sqlite.DB, id string) []hearth.Item {
	t.Helper()
	chain, err := db.LoadChain(context.Background(), storage.OwnerOf(""), id)
	if err != nil {
		t.Fatal(err)
	}
	var items []hearth.Item
	for _, it := range chain.Items {
		var item hearth.Item
		if err := json.Unmarshal(it.JSON, &item); err != nil {
			t.Fatal(err)
		}
		items = append(items, item)
	}
	return items
}

// thinkingOf splits a script text "<think>R</think>T" into R.
func thinkingOf(t *testing.T, text string) string {
	t.Helper()
	_, rest, ok := strings.Cut(text, "<think>")
	r, _, ok2 := strings.Cut(rest, "</think>")
	if !ok || !ok2 {
		t.Fatalf("no <think> block in %q", text)
	}
	return r
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// statelessTurn2 is the second turn of a store:false client (Codex) after turn 1
// answered with out: the whole history, the reasoning item reduced to what such a
// client keeps (id, an empty summary, encrypted_content).
func statelessTurn2(t *testing.T, model string, out []hearth.Item, withBlob bool) string {
	t.Helper()
	rs, msg := out[0], out[1]
	rs.Content, rs.Summary, rs.Status = nil, nil, ""
	if !withBlob {
		rs.EncryptedContent = ""
	}
	return reqBody(model, false, `"store":false,"include":["reasoning.encrypted_content"],"instructions":"Be brief.",`+
		`"input":[{"role":"user","content":"hello"},`+mustJSON(t, rs)+`,`+mustJSON(t, msg)+`,{"role":"user","content":"again"}]`)
}

// TestEncryptedReasoningE2E: with include reasoning.encrypted_content, reasoning items
// carry their reasoning sealed under the data directory's key; sent back by a
// stateless client with nothing else (no content, empty summary), the item renders as
// the model's earlier thinking, and the prompt is exactly the stored chain's.
func TestEncryptedReasoningE2E(t *testing.T) {
	srv, db, key, _ := sealedHearth(t, t.TempDir())
	model := scriptmodel.ReasoningModel
	think := testenv.Model(t, model)
	reasoning := thinkingOf(t, think.Text(scriptmodel.EntryAssistant))

	// Turn 1, stateless and streamed: the reasoning item is sealed by the time its
	// output_item.done is sent, and the final response says the same.
	events, r1 := createSSE(t, srv, reqBody(model, true,
		`"store":false,"include":["reasoning.encrypted_content"],"instructions":"Be brief.","input":"hello"`))
	if r1.Status != hearth.StatusCompleted || len(r1.Output) != 2 || r1.Output[0].Type != hearth.ItemReasoning {
		t.Fatalf("turn 1: %s %+v", r1.Status, summarize(r1.Output))
	}
	blob := r1.Output[0].EncryptedContent
	if blob == "" || r1.Output[0].Text(hearth.PartReasoningText) != reasoning {
		t.Fatalf("reasoning item: content %q, encrypted_content %q", r1.Output[0].Text(), blob)
	}
	if strings.Contains(blob, "greeting") {
		t.Error("the reasoning shows through encrypted_content")
	}
	var doneBlob, addedBlob any = nil, nil
	for _, e := range events {
		it, _ := e["item"].(map[string]any)
		if it == nil || it["type"] != hearth.ItemReasoning {
			continue
		}
		switch e["type"] {
		case "response.output_item.added":
			addedBlob = it["encrypted_content"]
		case "response.output_item.done":
			doneBlob = it["encrypted_content"]
		}
	}
	if doneBlob != blob || addedBlob != nil {
		t.Errorf("encrypted_content in output_item.added %v, in output_item.done %v; want none, then the final item's", addedBlob, doneBlob)
	}
	// Sealed under the key in the data directory, holding the reasoning text.
	plain, err := key.Open(seal.Reasoning, blob)
	if err != nil || string(plain) != mustJSON(t, map[string]string{"text": reasoning}) {
		t.Fatalf("the data directory's key opens %s, %v", plain, err)
	}

	// Not asked for, not sent.
	if r := createJSON(t, srv, reqBody(model, false, `"store":false,"input":"hello"`)); r.Output[0].EncryptedContent != "" {
		t.Errorf("encrypted_content without the include: %q", r.Output[0].EncryptedContent)
	}

	// Turn 2, stateless: the client sends the whole history back.
	r2 := createJSON(t, srv, statelessTurn2(t, model, r1.Output, true))
	if r2.Status != hearth.StatusCompleted || r2.Output[0].EncryptedContent == "" || r2.Output[0].EncryptedContent == blob {
		t.Fatalf("turn 2: %s, reasoning sealed afresh: %q", r2.Status, r2.Output[0].EncryptedContent)
	}
	// The same conversation kept on the server.
	s1 := createJSON(t, srv, reqBody(model, false, `"instructions":"Be brief.","input":"hello"`))
	s2 := createJSON(t, srv, reqBody(model, false, `"instructions":"Be brief.","input":"again","previous_response_id":"`+s1.ID+`"`))
	if r2.Usage.InputTokens != s2.Usage.InputTokens {
		t.Errorf("stateless turn 2 has %d input tokens, the stored chain's %d", r2.Usage.InputTokens, s2.Usage.InputTokens)
	}
	// Without the blob the reasoning is gone from the prompt: the blob is what carried it.
	bare := createJSON(t, srv, statelessTurn2(t, model, r1.Output, false))
	if bare.Usage.InputTokens >= r2.Usage.InputTokens {
		t.Errorf("without encrypted_content turn 2 has %d input tokens, with it %d: the blob added nothing", bare.Usage.InputTokens, r2.Usage.InputTokens)
	}

	// The prompts themselves: the stateless turn renders exactly as the stored chain.
	eng := sealingEngine(t, key)
	stateless := renderedPrompt(t, eng, statelessTurn2(t, model, r1.Output, true), nil)
	stored := renderedPrompt(t, eng, reqBody(model, false, `"instructions":"Be brief.","input":"again"`), storedHistory(t, db, s1.ID))
	if stateless != stored {
		t.Errorf("stateless prompt differs from the stored chain's:\n%q\n%q", stateless, stored)
	}
	if !strings.Contains(stateless, "<think>"+reasoning+"</think>") {
		t.Errorf("the prompt lacks the earlier thinking: %q", stateless)
	}
	if n := think.CountTokens(stateless); n != r2.Usage.InputTokens {
		t.Errorf("the rendered prompt is %d tokens, turn 2 reported %d", n, r2.Usage.InputTokens)
	}
}

// TestEncryptedContentRefusedE2E: encrypted_content hearth cannot open is a 400 naming
// the item, before anything streams; a stored chain does not depend on the key.
func TestEncryptedContentRefusedE2E(t *testing.T) {
	srv, db, key, _ := sealedHearth(t, t.TempDir())
	model := scriptmodel.ReasoningModel
	r1 := createJSON(t, srv, reqBody(model, false, `"store":false,"include":["reasoning.encrypted_content"],"instructions":"Be brief.","input":"hello"`))
	blob := r1.Output[0].EncryptedContent
	mid := len(blob) / 2
	swap := "A"
	if blob[mid] == 'A' {
		swap = "B"
	}
	withBlob := func(b string) []hearth.Item {
		out := append([]hearth.Item(nil), r1.Output...)
		out[0].EncryptedContent = b
		return out
	}
	cases := []struct {
		name, blob, inMessage string
	}{
		{"altered", blob[:mid] + swap + blob[mid+1:], "altered or truncated"},
		{"truncated", blob[:len(blob)-8], "altered or truncated"},
		{"not hearth's", "gAAAAABpM0Yj-ZXhhbXBsZQ==", "not a whole hearth blob"},
		{"a compaction blob", key.Seal(seal.Compaction, []byte(`{"summary":"x"}`)), "holds compaction content"},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			body := statelessTurn2(t, model, withBlob(tc.blob), true)
			if stream {
				body = strings.Replace(body, `"stream":false`, `"stream":true`, 1)
			}
			resp, b := post(t, srv.URL+"/v1/responses", body)
			code, param := errCode(b)
			if resp.StatusCode != http.StatusBadRequest || code != engine.CodeInvalidEncryptedContent || param != "input[1].encrypted_content" ||
				!strings.Contains(string(b), tc.inMessage) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Errorf("%s (stream %v): %d %s %s", tc.name, stream, resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			var env struct{ Error json.RawMessage }
			json.Unmarshal(b, &env)
			schematest.Validate(t, "Error", env.Error)
		}
	}

	// A compaction item that is not hearth's, anywhere in the input.
	body := reqBody(model, false, `"input":[{"role":"user","content":"hi"},{"type":"compaction","encrypted_content":"`+blob+`"}]`)
	resp, b := post(t, srv.URL+"/v1/responses", body)
	if code, param := errCode(b); resp.StatusCode != 400 || code != engine.CodeInvalidEncryptedContent || param != "input[1].encrypted_content" ||
		!strings.Contains(string(b), "holds reasoning content") {
		t.Errorf("reasoning blob as a compaction item: %d %s", resp.StatusCode, b)
	}

	// A stored chain keeps its reasoning in the database: a server with another key
	// continues it (the blob in the stored output is not needed, so not opened).
	s1 := createJSON(t, srv, reqBody(model, false, `"include":["reasoning.encrypted_content"],"input":"hello"`))
	other := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db, Seal: seal.NewKey()}))
	defer other.Close()
	s2 := createJSON(t, other, reqBody(model, false, `"input":"again","previous_response_id":"`+s1.ID+`"`))
	if s2.Status != hearth.StatusCompleted {
		t.Errorf("stored chain under another key: %s", s2.Status)
	}
}

// TestSealKeyPersistsE2E: blobs stay valid across a restart on the same data
// directory, and are refused by a server with another directory.
func TestSealKeyPersistsE2E(t *testing.T) {
	dir := t.TempDir()
	model := scriptmodel.ReasoningModel
	srv, _, _, stop := sealedHearth(t, dir)
	r1 := createJSON(t, srv, reqBody(model, false, `"store":false,"include":["reasoning.encrypted_content"],"instructions":"Be brief.","input":"hello"`))
	before := createJSON(t, srv, statelessTurn2(t, model, r1.Output, true))
	stop()

	again, _, _, _ := sealedHearth(t, dir)
	after := createJSON(t, again, statelessTurn2(t, model, r1.Output, true))
	if after.Usage.InputTokens != before.Usage.InputTokens {
		t.Errorf("after the restart turn 2 has %d input tokens, before %d", after.Usage.InputTokens, before.Usage.InputTokens)
	}

	elsewhere, _, _, _ := sealedHearth(t, t.TempDir())
	resp, b := post(t, elsewhere.URL+"/v1/responses", statelessTurn2(t, model, r1.Output, true))
	if code, param := errCode(b); resp.StatusCode != 400 || code != engine.CodeInvalidEncryptedContent ||
		param != "input[1].encrypted_content" || !strings.Contains(string(b), "another hearth server") {
		t.Errorf("another data directory's server: %d %s", resp.StatusCode, b)
	}
}
