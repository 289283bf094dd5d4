package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"hearth"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// compactAt is the context_management of a request that compacts above n tokens.
func compactAt(n int) string {
	return `"context_management":[{"type":"compaction","compact_threshold":` + jsonNumber(n) + `}]`
}

func jsonNumber(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestServerCompactionE2E: a chain whose next turn would render more tokens than
// compact_threshold is compacted first: the response's first output item is the
// compaction item (announced by output_item.added and .done, over JSON, SSE and
// WebSocket alike), the model answers from the compacted window (the last user
// message, then the summary), usage adds the summarising generation's tokens, and
// the next turn goes on from the compaction item whether it continues the chain or a
// conversation, resends the items, or sends only those from the compaction item on; a
// turn under the threshold is not compacted.
func TestServerCompactionE2E(t *testing.T) {
	srv, db, key, _ := sealedHearth(t, t.TempDir())
	model := scriptmodel.PlainModel
	m := testenv.Model(t, model)
	reply := m.Text(scriptmodel.EntryAssistant)
	filler := strings.Repeat("lorem ", 100) // a script model's token is about a byte
	one, two := "one "+filler, "two "+filler
	cm := compactAt(1000)

	// Under the threshold: no compaction, the usual response.
	r1 := createJSON(t, srv, reqBody(model, false, `"input":`+jsonString(one)+`,`+cm))
	sameItems(t, "under the threshold", r1.Output, []item{{Type: "message", Status: "completed", Text: reply}})
	if r1.Usage.InputTokens >= 1000 {
		t.Fatalf("the first turn has %d input tokens; the test needs it under the threshold", r1.Usage.InputTokens)
	}

	// Over it: compaction, then the answer.
	body2 := reqBody(model, false, `"input":`+jsonString(two)+`,"previous_response_id":"`+r1.ID+`",`+cm)
	eng := sealingEngine(t, key)
	history := storedHistory(t, db, r1.ID)
	if p := renderedPromptWithout(t, eng, body2, history); m.CountTokens(p) <= 1000 {
		t.Fatalf("the second turn renders %d tokens; the test needs it over the threshold", m.CountTokens(p))
	}
	summaryPrompt := compactionPrompt(t, eng, body2, history)
	r2 := createJSON(t, srv, body2)
	sameItems(t, "over the threshold", r2.Output, []item{{Type: "compaction"}, {Type: "message", Status: "completed", Text: reply}})
	if s := summaryOf(t, key, r2.Output[0]); s != reply {
		t.Errorf("summary %q, want the model's answer to the summary request %q", s, reply)
	}
	// The model answered from the compacted window: the kept user message, then the
	// summary as a user message.
	window := reqBody(model, false, `"input":[{"role":"user","content":`+jsonString(two)+`},{"role":"user","content":`+jsonString(engine.CompactionPreamble+reply)+`}]`)
	answerPrompt := renderedPrompt(t, eng, window, nil)
	wantIn := m.CountTokens(summaryPrompt) + m.CountTokens(answerPrompt)
	wantOut := 2 * m.EvalCount(scriptmodel.EntryAssistant)
	if u := r2.Usage; u.InputTokens != wantIn || u.OutputTokens != wantOut || u.TotalTokens != wantIn+wantOut {
		t.Errorf("usage %+v; want %d input tokens (summary prompt %d + answer prompt %d), %d output", u, wantIn,
			m.CountTokens(summaryPrompt), m.CountTokens(answerPrompt), wantOut)
	}
	if got := getStored(t, srv, r2.ID); len(got.Output) != 2 || got.Output[0].Type != hearth.ItemCompaction ||
		got.Output[0].EncryptedContent != r2.Output[0].EncryptedContent {
		t.Errorf("stored response's output: %+v", got.Output)
	}

	// The next turn goes on from the compaction item, under the threshold again.
	r3 := createJSON(t, srv, reqBody(model, false, `"input":"three","previous_response_id":"`+r2.ID+`",`+cm))
	sameItems(t, "after the compaction", r3.Output, []item{{Type: "message", Status: "completed", Text: reply}})
	assistant := `{"type":"message","role":"assistant","content":[{"type":"output_text","text":` + jsonString(reply) + `}]}`
	spelled := reqBody(model, false, `"input":[{"role":"user","content":`+jsonString(two)+`},{"role":"user","content":`+
		jsonString(engine.CompactionPreamble+reply)+`},`+assistant+`,{"role":"user","content":"three"}]`)
	if want := m.CountTokens(renderedPrompt(t, eng, spelled, nil)); r3.Usage.InputTokens != want {
		t.Errorf("turn after the compaction: %d input tokens, want %d (the compacted window, its answer, the new message)", r3.Usage.InputTokens, want)
	}
	// A client that resends every item (stateless chaining) gets the same prompt.
	items := append(append(append([]hearth.Item{}, history...), hearth.Item{Type: hearth.ItemMessage, Role: hearth.RoleUser,
		Content: []hearth.ContentPart{{Type: hearth.PartInputText, Text: two}}}), r2.Output...)
	resent := reqBody(model, false, `"input":`+strings.TrimSuffix(mustJSON(t, items), "]")+`,{"role":"user","content":"three"}],`+cm)
	if r := createJSON(t, srv, resent); r.Usage.InputTokens != r3.Usage.InputTokens || len(r.Output) != 1 {
		t.Errorf("resent items: %d input tokens, %d items; continued chain: %d", r.Usage.InputTokens, len(r.Output), r3.Usage.InputTokens)
	}

	// So does one that drops every item before the compaction item (OpenAI's latency
	// tip): the item carries what compaction kept.
	pruned := reqBody(model, false, `"input":`+strings.TrimSuffix(mustJSON(t, r2.Output), "]")+`,{"role":"user","content":"three"}],`+cm)
	if r := createJSON(t, srv, pruned); r.Usage.InputTokens != r3.Usage.InputTokens || len(r.Output) != 1 {
		t.Errorf("items from the compaction item on: %d input tokens, %d items; continued chain: %d", r.Usage.InputTokens, len(r.Output), r3.Usage.InputTokens)
	}

	// A conversation compacts and goes on the same way.
	var conv struct{ ID string }
	convDo(t, srv, "", "POST", "/v1/conversations", `{}`, &conv)
	inConv := func(input string) *hearth.Response {
		return createJSON(t, srv, reqBody(model, false, `"input":`+jsonString(input)+`,"conversation":"`+conv.ID+`",`+cm))
	}
	inConv(one)
	if c2 := inConv(two); len(c2.Output) != 2 || c2.Output[0].Type != hearth.ItemCompaction || c2.Usage.InputTokens != wantIn {
		t.Errorf("conversation turn over the threshold: %d items, %d input tokens", len(c2.Output), c2.Usage.InputTokens)
	}
	if c3 := inConv("three"); len(c3.Output) != 1 || c3.Usage.InputTokens != r3.Usage.InputTokens {
		t.Errorf("conversation turn after the compaction: %d items, %d input tokens; the chain's: %d", len(c3.Output), c3.Usage.InputTokens, r3.Usage.InputTokens)
	}

	// SSE and WebSocket announce the compaction item as OpenAI does, first.
	events, final := createSSE(t, srv, reqBody(model, true, `"input":`+jsonString(two)+`,"previous_response_id":"`+r1.ID+`",`+cm))
	checkCompactionEvents(t, "SSE", events, final, wantIn, wantOut)
	ws := dialWS(t, srv, nil)
	ws.send(wsCreate(model, `"input":`+jsonString(two)+`,"previous_response_id":"`+r1.ID+`",`+cm), true)
	tr := ws.turn()
	if tr.err != nil {
		t.Fatalf("WebSocket: %+v", tr.err)
	}
	checkCompactionEvents(t, "WebSocket", tr.events, tr.final, wantIn, wantOut)
}

// checkCompactionEvents checks a compacted response's stream: created, in_progress,
// the compaction item added and done at output index 0, then the answer at index 1.
func checkCompactionEvents(t *testing.T, label string, events []map[string]any, final *hearth.Response, wantIn, wantOut int) {
	t.Helper()
	var types []string
	for _, e := range events[:4] {
		typ := e["type"].(string)
		if it, ok := e["item"].(map[string]any); ok {
			typ += " " + it["type"].(string)
			if enc, _ := it["encrypted_content"].(string); enc == "" || it["id"] == "" || e["output_index"] != 0.0 {
				t.Errorf("%s: %s without its content at index 0: %v", label, typ, e)
			}
		}
		types = append(types, typ)
	}
	want := "response.created|response.in_progress|response.output_item.added compaction|response.output_item.done compaction"
	if strings.Join(types, "|") != want {
		t.Errorf("%s: events %q, want %q", label, types, want)
	}
	for _, e := range events[4:] {
		if i, ok := e["output_index"]; ok && i != 1.0 {
			t.Errorf("%s: %s at output index %v after the compaction", label, e["type"], i)
		}
	}
	if len(final.Output) != 2 || final.Output[0].Type != hearth.ItemCompaction || final.Usage.InputTokens != wantIn || final.Usage.OutputTokens != wantOut {
		t.Errorf("%s: final %d items, usage %+v", label, len(final.Output), final.Usage)
	}
}

// TestServerCompactionWindowE2E: without a threshold, compaction happens where the
// input would not fit the model's window (a 400 context_length_exceeded without
// context_management); the summarising prompt drops the oldest turns to fit, as
// /v1/responses/compact does.
func TestServerCompactionWindowE2E(t *testing.T) {
	srv, db, key, _ := sealedHearth(t, t.TempDir())
	model := scriptmodel.PlainModel // a 4096-token window
	m := testenv.Model(t, model)
	reply := m.Text(scriptmodel.EntryAssistant)
	two := "two " + strings.Repeat("lorem ", 420)
	r1 := createJSON(t, srv, reqBody(model, false, `"input":`+jsonString("one "+strings.Repeat("lorem ", 330))))
	body := func(cm string) string {
		return reqBody(model, false, `"input":`+jsonString(two)+`,"previous_response_id":"`+r1.ID+`"`+cm)
	}
	resp, b := post(t, srv.URL+"/v1/responses", body(""))
	if code, _ := errCode(b); resp.StatusCode != 400 || code != hearth.CodeContextLengthExceeded {
		t.Fatalf("without context_management: %d %s", resp.StatusCode, b)
	}
	withCM := body(`,"context_management":[{"type":"compaction"}]`)
	eng := sealingEngine(t, key)
	summaryPrompt := compactionPrompt(t, eng, withCM, storedHistory(t, db, r1.ID))
	r2 := createJSON(t, srv, withCM)
	sameItems(t, "over the window", r2.Output, []item{{Type: "compaction"}, {Type: "message", Status: "completed", Text: reply}})
	answerPrompt := renderedPrompt(t, eng, reqBody(model, false, `"input":[{"role":"user","content":`+jsonString(two)+
		`},{"role":"user","content":`+jsonString(engine.CompactionPreamble+reply)+`}]`), nil)
	if want := m.CountTokens(summaryPrompt) + m.CountTokens(answerPrompt); r2.Usage.InputTokens != want ||
		r2.Usage.OutputTokens != 2*m.EvalCount(scriptmodel.EntryAssistant) {
		t.Errorf("usage %+v; want %d input tokens", r2.Usage, want)
	}
}

// renderedPromptWithout is the prompt body renders to without its context_management.
func renderedPromptWithout(t *testing.T, eng *engine.Engine, body string, history []hearth.Item) string {
	t.Helper()
	req, _, err := hearth.DecodeCreateRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	req.ContextManagement = nil
	j, err := eng.Prepare(context.Background(), req, history, engine.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	return j.Prompt
}

// TestServerCompactionRefusedE2E: context_management that hearth cannot honour is a
// 400 naming the field.
func TestServerCompactionRefusedE2E(t *testing.T) {
	srv, _, _, _ := sealedHearth(t, t.TempDir())
	for _, tc := range []struct{ cm, code, param string }{
		{`{"type":"compaction"}`, "invalid_type", "context_management"},
		{`["compaction"]`, "invalid_type", "context_management[0]"},
		{`[{"compact_threshold":2000}]`, hearth.CodeMissingRequiredParameter, "context_management[0].type"},
		{`[{"type":"truncation"}]`, "invalid_value", "context_management[0].type"},
		{`[{"type":"compaction","compact_threshold":999}]`, hearth.CodeIntegerBelowMinValue, "context_management[0].compact_threshold"},
		{`[{"type":"compaction","compact_threshold":"2000"}]`, "invalid_type", "context_management[0].compact_threshold"},
		{`[{"type":"compaction","compact_threshold":1500.5}]`, "invalid_type", "context_management[0].compact_threshold"},
		{`[{"type":"compaction"},{"type":"compaction","compact_threshold":2000}]`, "invalid_value", "context_management[1]"},
	} {
		resp, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, false, `"input":"hi","context_management":`+tc.cm))
		code, param := errCode(b)
		if resp.StatusCode != 400 || code != tc.code || param != tc.param {
			t.Errorf("%s: %d %s; want 400 %s at %s", tc.cm, resp.StatusCode, b, tc.code, tc.param)
		}
	}
	// Accepted and honoured, so not named as ignored; null is no compaction.
	for _, cm := range []string{`[{"type":"compaction","compact_threshold":1000}]`, `[{"type":"compaction","compact_threshold":null}]`, `[]`, `null`} {
		resp, b := post(t, srv.URL+"/v1/responses", reqBody(scriptmodel.PlainModel, false, `"input":"hi","context_management":`+cm))
		if resp.StatusCode != 200 || resp.Header.Get("x-hearth-ignored") != "" {
			t.Errorf("%s: %d, x-hearth-ignored %q: %s", cm, resp.StatusCode, resp.Header.Get("x-hearth-ignored"), b)
		}
	}
}
