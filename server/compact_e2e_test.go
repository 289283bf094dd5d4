package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/internal/admission"
	"hearth/internal/schematest"
	"hearth/internal/seal"
	"hearth/scriptmodel"
	"hearth/server"
)

// compact posts body to /v1/responses/compact and returns the validated result.
func compact(t *testing.T, srv *httptest.Server, body string) *hearth.CompactResponse {
	t.Helper()
	resp, b := post(t, srv.URL+"/v1/responses/compact", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("compact: status %d: %s", resp.StatusCode, b)
	}
	var raw any
	json.Unmarshal(b, &raw)
	schematest.Validate(t, "CompactResource", raw)
	var r hearth.CompactResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// compactionPrompt is the summarising prompt hearth renders for a compact body.
func compactionPrompt(t *testing.T, eng *engine.Engine, body string, history []hearth.Item) string {
	t.Helper()
	req, _, err := hearth.DecodeCompactRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c, err := eng.PrepareCompaction(context.Background(), req, history, engine.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	return c.Prompt()
}

// summaryOf opens a compaction item with key.
func summaryOf(t *testing.T, key *seal.Key, it hearth.Item) string {
	t.Helper()
	if it.Type != hearth.ItemCompaction || !strings.HasPrefix(it.ID, hearth.PrefixCompaction+"_") {
		t.Fatalf("not a compaction item: %+v", it)
	}
	b, err := key.Open(seal.Compaction, it.EncryptedContent)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Summary string }
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p.Summary
}

// messageText is a message item's role and text, for comparing kept items.
func messageText(it hearth.Item) string {
	if it.Type != hearth.ItemMessage {
		return it.Type
	}
	return it.Role + ": " + it.Text()
}

// TestCompactE2E: /v1/responses/compact has the model summarise the conversation and
// answers with the compacted window (instructions and the last user message verbatim,
// then the sealed summary); the window sent as a later request's input renders the
// summary as a user message, exactly as if it had been sent as text.
func TestCompactE2E(t *testing.T) {
	srv, _, key, _ := sealedHearth(t, t.TempDir())
	model := scriptmodel.PlainModel
	m := testenv.Model(t, model)
	reply := m.Text(scriptmodel.EntryAssistant)
	assistant := `{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + jsonString(reply) + `}]}`
	window := `"instructions":"Be brief.","input":[{"type":"message","role":"developer","content":"Follow the house rules."},` +
		`{"role":"user","content":"one"},` + assistant + `,{"role":"user","content":"two"},` + assistant + `]`
	body := `{"model":"` + model + `",` + window + `}`

	before := time.Now().Unix()
	r := compact(t, srv, body)
	if r.Object != "response.compaction" || !strings.HasPrefix(r.ID, "resp_") || r.CreatedAt < before || r.CreatedAt > time.Now().Unix() {
		t.Errorf("compaction %s %s created_at %d", r.Object, r.ID, r.CreatedAt)
	}
	var kept []string
	for _, it := range r.Output[:len(r.Output)-1] {
		kept = append(kept, messageText(it))
		if it.ID == "" || it.Status != hearth.StatusCompleted {
			t.Errorf("kept item without id or status: %+v", it)
		}
	}
	if want := []string{"developer: Follow the house rules.", "user: two"}; strings.Join(kept, "|") != strings.Join(want, "|") {
		t.Errorf("kept items %q, want %q", kept, want)
	}
	summary := summaryOf(t, key, r.Output[len(r.Output)-1])
	if summary != reply {
		t.Errorf("summary %q, want the model's answer to the summary request %q", summary, reply)
	}
	if strings.Contains(r.Output[len(r.Output)-1].EncryptedContent, "hearth") {
		t.Error("the summary shows through encrypted_content")
	}

	// Usage comes from the runtime: the summarising prompt (the conversation as the
	// model sees it, then the request for a summary) and the summary's tokens.
	eng := sealingEngine(t, key)
	prompt := compactionPrompt(t, eng, body, nil)
	wantPrompt := renderedPrompt(t, eng, `{"model":"`+model+`",`+strings.TrimSuffix(window, "]")+
		`,{"role":"user","content":`+jsonString(engine.CompactionPrompt)+`}]}`, nil)
	if prompt != wantPrompt {
		t.Errorf("summarising prompt\n%q\nwant the conversation plus the summary request\n%q", prompt, wantPrompt)
	}
	if r.Usage.InputTokens != m.CountTokens(prompt) || r.Usage.OutputTokens != m.EvalCount(scriptmodel.EntryAssistant) ||
		r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
		t.Errorf("usage %+v; want %d input tokens, %d output", r.Usage, m.CountTokens(prompt), m.EvalCount(scriptmodel.EntryAssistant))
	}

	// The compacted window goes on as a later request's input.
	next := reqBody(model, false, `"instructions":"Be brief.","input":`+strings.TrimSuffix(mustJSON(t, r.Output), "]")+`,{"role":"user","content":"three"}]`)
	later := createJSON(t, srv, next)
	explicit := reqBody(model, false, `"instructions":"Be brief.","input":[{"type":"message","role":"developer","content":"Follow the house rules."},`+
		`{"role":"user","content":"two"},{"role":"user","content":`+jsonString(engine.CompactionPreamble+reply)+`},{"role":"user","content":"three"}]`)
	spelled := createJSON(t, srv, explicit)
	if later.Status != hearth.StatusCompleted || later.Usage.InputTokens != spelled.Usage.InputTokens {
		t.Errorf("later turn: %s with %d input tokens; the same with the summary as text: %d", later.Status, later.Usage.InputTokens, spelled.Usage.InputTokens)
	}
	rendered := renderedPrompt(t, eng, next, nil)
	if rendered != renderedPrompt(t, eng, explicit, nil) {
		t.Errorf("a compaction item renders unlike its summary as a user message:\n%q", rendered)
	}
	// (The template layer joins consecutive user messages, so the summary shares a
	// user turn with the messages around it.)
	if !strings.Contains(rendered, engine.CompactionPreamble+reply) || strings.Contains(rendered, "<|user|>one") {
		t.Errorf("later prompt: %q", rendered)
	}

	// Compacting a window that holds a compaction item summarises the summary too.
	again := `{"model":"` + model + `","input":` + strings.TrimSuffix(mustJSON(t, r.Output), "]") + `,` + assistant + `,{"role":"user","content":"three"},` + assistant + `]}`
	r2 := compact(t, srv, again)
	kept = kept[:0]
	for _, it := range r2.Output[:len(r2.Output)-1] {
		kept = append(kept, messageText(it))
	}
	if strings.Join(kept, "|") != "developer: Follow the house rules.|user: three" {
		t.Errorf("second compaction kept %q", kept)
	}
	if p := compactionPrompt(t, eng, again, nil); !strings.Contains(p, engine.CompactionPreamble+reply) {
		t.Errorf("second summarising prompt lacks the first summary: %q", p)
	}
}

// TestCompactChainE2E: previous_response_id compacts a stored chain; a reasoning model's
// reasoning is not part of the summary but counts in usage.
func TestCompactChainE2E(t *testing.T) {
	srv, _, key, _ := sealedHearth(t, t.TempDir())
	model := scriptmodel.ReasoningModel
	m := testenv.Model(t, model)
	full := m.Text(scriptmodel.EntryAssistant)
	_, answer, _ := strings.Cut(full, "</think>")

	s1 := createJSON(t, srv, reqBody(model, false, `"input":"one"`))
	s2 := createJSON(t, srv, reqBody(model, false, `"input":"two","previous_response_id":"`+s1.ID+`"`))
	r := compact(t, srv, `{"model":"`+model+`","previous_response_id":"`+s2.ID+`"}`)
	if len(r.Output) != 2 || messageText(r.Output[0]) != "user: two" || !strings.HasPrefix(r.Output[0].ID, "msg_") {
		t.Fatalf("compacted chain: %+v", r.Output)
	}
	if s := summaryOf(t, key, r.Output[1]); s != answer {
		t.Errorf("summary %q, want the text after the reasoning %q", s, answer)
	}
	if r.Usage.OutputTokens != m.EvalCount(scriptmodel.EntryAssistant) || r.Usage.OutputTokensDetails.ReasoningTokens != s1.Usage.OutputTokensDetails.ReasoningTokens ||
		r.Usage.OutputTokensDetails.ReasoningTokens == 0 {
		t.Errorf("usage %+v; want %d output tokens, %d of them reasoning", r.Usage, m.EvalCount(scriptmodel.EntryAssistant), s1.Usage.OutputTokensDetails.ReasoningTokens)
	}

	resp, b := post(t, srv.URL+"/v1/responses/compact", `{"model":"`+model+`","previous_response_id":"resp_missing"}`)
	if code, param := errCode(b); resp.StatusCode != 404 || code != hearth.CodePreviousResponseNotFound || param != "previous_response_id" {
		t.Errorf("unknown previous_response_id: %d %s", resp.StatusCode, b)
	}
}

// TestCompactRefusedE2E: what a compaction cannot serve is a 4xx naming the field.
func TestCompactRefusedE2E(t *testing.T) {
	srv, _, key, _ := sealedHearth(t, t.TempDir())
	model := scriptmodel.PlainModel
	tampered := key.Seal(seal.Compaction, []byte(`{"summary":"earlier"}`))
	tampered = tampered[:len(tampered)-8]
	foreign := seal.NewKey().Seal(seal.Compaction, []byte(`{"summary":"earlier"}`))
	cases := []struct {
		name, path, body    string
		status              int
		code, param, inBody string
	}{
		{"missing model", "compact", `{"input":"hi"}`, 400, hearth.CodeMissingRequiredParameter, "model", ""},
		{"unknown model", "compact", `{"model":"no-such-model","input":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`, 404, hearth.CodeModelNotFound, "model", ""},
		{"bad input", "compact", `{"model":"` + model + `","input":[{"role":"robot","content":"hi"}]}`, 400, "invalid_value", "input[0].role", ""},
		{"nothing to compact", "compact", `{"model":"` + model + `","input":[{"role":"developer","content":"rules"},{"role":"user","content":"hi"}]}`, 400, engine.CodeNothingToCompact, "input", ""},
		{"tampered compaction item", "compact", `{"model":"` + model + `","input":[{"type":"compaction","encrypted_content":"` + tampered + `"},{"role":"user","content":"hi"}]}`,
			400, engine.CodeInvalidEncryptedContent, "input[0].encrypted_content", "altered or truncated"},
		{"foreign compaction item", "compact", `{"model":"` + model + `","input":[{"role":"user","content":"hi"},{"type":"compaction","encrypted_content":"` + foreign + `"}]}`,
			400, engine.CodeInvalidEncryptedContent, "input[1].encrypted_content", "another hearth server"},
		{"tampered compaction item in a create", "", `{"model":"` + model + `","input":[{"type":"compaction","encrypted_content":"` + tampered + `"},{"role":"user","content":"hi"}]}`,
			400, engine.CodeInvalidEncryptedContent, "input[0].encrypted_content", "altered or truncated"},
	}
	for _, tc := range cases {
		url := srv.URL + "/v1/responses"
		if tc.path != "" {
			url += "/" + tc.path
		}
		resp, b := post(t, url, tc.body)
		code, param := errCode(b)
		if resp.StatusCode != tc.status || code != tc.code || param != tc.param || !strings.Contains(string(b), tc.inBody) {
			t.Errorf("%s: %d %s; want %d %s %s", tc.name, resp.StatusCode, b, tc.status, tc.code, tc.param)
		}
	}

	// Create fields a compaction has no use for are accepted and named, not obeyed:
	// stream:true still answers JSON.
	req, _ := http.NewRequest("POST", srv.URL+"/v1/responses/compact", strings.NewReader(`{"model":"`+model+`","stream":true,"store":true,`+toolsJSON+
		`,"input":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("x-hearth-ignored") != "store, stream, tools" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Errorf("create-only fields: %d %s, x-hearth-ignored %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("x-hearth-ignored"))
	}
}

// TestCompactAdmissionE2E: a compaction needs the keys like every route, waits for a
// generation slot of its model like a response, and counts in the metrics like one.
func TestCompactAdmissionE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{APIKeys: []string{"k1"}, Admission: admission.Config{Slots: 1}})
	body := `{"model":"` + plain + `","input":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`
	if st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses/compact", "", body); st != 401 {
		t.Errorf("without a key: %d %s", st, b)
	}
	release := server.HoldSlot(h.Server, plain)
	done := make(chan int, 1)
	go func() {
		st, _, _ := call(t, nil, "POST", srv.URL+"/v1/responses/compact", "k1", body)
		done <- st
	}()
	waitFor(t, "the compaction to queue", func() bool {
		return metric(t, srv, "k1", "hearth_queue_depth", `model="`+plain+`"`) == 1
	})
	select {
	case st := <-done:
		t.Fatalf("the compaction finished (%d) while the only slot was held", st)
	case <-time.After(200 * time.Millisecond):
	}
	release()
	if st := <-done; st != 200 {
		t.Errorf("after the slot was freed: %d", st)
	}
	if n := metric(t, srv, "k1", "hearth_output_tokens_total", `model="`+plain+`"`, `key="config-1"`); n != float64(testenv.Model(t, plain).EvalCount(scriptmodel.EntryAssistant)) {
		t.Errorf("hearth_output_tokens_total = %v after one compaction", n)
	}
	// A compaction counts as a response, waits and first output timed.
	if n := metric(t, srv, "k1", "hearth_responses_total", `model="`+plain+`"`, `status="completed"`, `key="config-1"`); n != 1 {
		t.Errorf("hearth_responses_total = %v after one compaction", n)
	}
	if n := metric(t, srv, "k1", "hearth_time_to_first_token_seconds_count", `model="`+plain+`"`); n != 1 {
		t.Errorf("hearth_time_to_first_token_seconds_count = %v after one compaction", n)
	}
}
