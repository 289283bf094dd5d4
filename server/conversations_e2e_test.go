package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/admission"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage/sqlite"
)

// conversation is the conversation object as a client reads it.
type conversation struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	CreatedAt int64             `json:"created_at"`
	Metadata  map[string]string `json:"metadata"`
}

// itemPage is a list of items as a client reads it.
type itemPage struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	FirstID *string           `json:"first_id"`
	LastID  *string           `json:"last_id"`
	HasMore bool              `json:"has_more"`
}

// convDo sends a request and decodes a 200 answer into out (when not nil); it fails
// the test on any other status.
func convDo(t *testing.T, srv *httptest.Server, key, method, path, body string, out any) {
	t.Helper()
	code, _, b := call(t, nil, method, srv.URL+path, key, body)
	if code != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, code, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// convRefused checks a request is answered with status and the error code and param.
func convRefused(t *testing.T, srv *httptest.Server, key, method, path, body string, status int, code, param string) {
	t.Helper()
	got, _, b := call(t, nil, method, srv.URL+path, key, body)
	gotCode, gotParam := errCode(b)
	if got != status || gotCode != code || gotParam != param {
		t.Errorf("%s %s: %d %s, want %d %s on %q", method, path, got, b, status, code, param)
	}
}

// pageItems decodes a page's items.
func (p itemPage) items(t *testing.T) []hearth.Item {
	t.Helper()
	out := make([]hearth.Item, len(p.Data))
	for i, raw := range p.Data {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatalf("item %s: %v", raw, err)
		}
	}
	return out
}

func ids(items []hearth.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}

// allItems lists a conversation oldest first.
func allItems(t *testing.T, srv *httptest.Server, key, id string) []hearth.Item {
	t.Helper()
	var p itemPage
	convDo(t, srv, key, "GET", "/v1/conversations/"+id+"/items?order=asc&limit=100", "", &p)
	return p.items(t)
}

// TestConversationsAPIE2E covers the Conversations API's routes without a model:
// shapes, item ids and statuses, paging, metadata, validation errors naming the field,
// and 404s.
func TestConversationsAPIE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{})
	var c conversation
	convDo(t, srv, "", "POST", "/v1/conversations", `{"metadata":{"topic":"demo"},"items":[
		{"type":"message","role":"developer","content":"Be brief."},
		{"role":"user","content":[{"type":"input_text","text":"one"}]},
		{"id":"msg_mine","role":"assistant","content":"two"}]}`, &c)
	if !strings.HasPrefix(c.ID, "conv_") || c.Object != "conversation" || c.CreatedAt == 0 || c.Metadata["topic"] != "demo" {
		t.Fatalf("created %+v", c)
	}
	var got conversation
	convDo(t, srv, "", "GET", "/v1/conversations/"+c.ID, "", &got)
	if mustJSON(t, got) != mustJSON(t, c) {
		t.Errorf("GET %+v, want %+v", got, c)
	}
	// Unknown fields are named, as for responses.
	if code, hdr, b := call(t, nil, "POST", srv.URL+"/v1/conversations", "", `{"zeta":1,"alpha":2}`); code != 200 ||
		hdr.Get("x-hearth-ignored") != "alpha, zeta" {
		t.Errorf("unknown fields: %d %q %s", code, hdr.Get("x-hearth-ignored"), b)
	}
	// An empty body is an empty conversation.
	var empty conversation
	convDo(t, srv, "", "POST", "/v1/conversations", "", &empty)
	if len(allItems(t, srv, "", empty.ID)) != 0 || empty.Metadata == nil {
		t.Errorf("empty conversation %+v", empty)
	}

	items := allItems(t, srv, "", c.ID)
	if len(items) != 3 || items[2].ID != "msg_mine" || !strings.HasPrefix(items[0].ID, "msg_") || items[0].ID == items[1].ID {
		t.Fatalf("items %v", ids(items))
	}
	for i, it := range items {
		if it.Status != "completed" || it.Type != "message" {
			t.Errorf("item %d: type %s status %q", i, it.Type, it.Status)
		}
	}
	if items[0].Role != "developer" || items[1].Text() != "one" || items[2].Text() != "two" {
		t.Errorf("items %+v", items)
	}

	// Adding items answers with them as stored.
	var added itemPage
	convDo(t, srv, "", "POST", "/v1/conversations/"+c.ID+"/items?include[]=reasoning.encrypted_content", `{"items":[
		{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`, &added)
	if a := added.items(t); added.Object != "list" || len(a) != 2 || a[0].Type != "function_call" || a[1].Output.Text != "sunny" ||
		*added.FirstID != a[0].ID || *added.LastID != a[1].ID || added.HasMore || a[1].Status != "completed" {
		t.Errorf("added %+v", added)
	}
	all := ids(allItems(t, srv, "", c.ID))
	if len(all) != 5 || all[3] != *added.FirstID {
		t.Fatalf("after adding: %v", all)
	}

	// Paging: newest first by default; after continues in either order.
	for _, tc := range []struct {
		query string
		want  []string
		more  bool
	}{
		{"", []string{all[4], all[3], all[2], all[1], all[0]}, false},
		{"?limit=2", []string{all[4], all[3]}, true},
		{"?limit=2&after=" + all[3], []string{all[2], all[1]}, true},
		{"?order=asc&limit=3&after=" + all[0], []string{all[1], all[2], all[3]}, true},
		{"?order=asc&after=" + all[3], []string{all[4]}, false},
		{"?include=message.output_text.logprobs", []string{all[4], all[3], all[2], all[1], all[0]}, false},
	} {
		var p itemPage
		convDo(t, srv, "", "GET", "/v1/conversations/"+c.ID+"/items"+tc.query, "", &p)
		got := ids(p.items(t))
		if !slices.Equal(got, tc.want) || p.HasMore != tc.more || *p.FirstID != tc.want[0] || *p.LastID != tc.want[len(tc.want)-1] {
			t.Errorf("items%s: %v more %v (first %v last %v), want %v more %v", tc.query, got, p.HasMore, *p.FirstID, *p.LastID, tc.want, tc.more)
		}
	}

	// One item, deleting it (the answer is the conversation), and it is gone.
	var one hearth.Item
	convDo(t, srv, "", "GET", "/v1/conversations/"+c.ID+"/items/msg_mine", "", &one)
	if one.ID != "msg_mine" || one.Text() != "two" {
		t.Errorf("item %+v", one)
	}
	var after conversation
	convDo(t, srv, "", "DELETE", "/v1/conversations/"+c.ID+"/items/msg_mine", "", &after)
	if after.ID != c.ID || after.Object != "conversation" {
		t.Errorf("delete item answered %+v", after)
	}
	convRefused(t, srv, "", "GET", "/v1/conversations/"+c.ID+"/items/msg_mine", "", 404, "item_not_found", "item_id")
	convRefused(t, srv, "", "DELETE", "/v1/conversations/"+c.ID+"/items/msg_mine", "", 404, "item_not_found", "item_id")
	if got := ids(allItems(t, srv, "", c.ID)); len(got) != 4 || slices.Contains(got, "msg_mine") {
		t.Errorf("after deleting an item: %v", got)
	}

	// Metadata is replaced whole; null clears it.
	var updated, cleared conversation
	convDo(t, srv, "", "POST", "/v1/conversations/"+c.ID, `{"metadata":{"k":"v"}}`, &updated)
	if len(updated.Metadata) != 1 || updated.Metadata["k"] != "v" || updated.ID != c.ID {
		t.Errorf("updated %+v", updated)
	}
	convDo(t, srv, "", "POST", "/v1/conversations/"+c.ID, `{"metadata":null}`, &cleared)
	if cleared.Metadata == nil || len(cleared.Metadata) != 0 {
		t.Errorf("cleared metadata %v", cleared.Metadata)
	}

	// Bad input is a 400 naming the field.
	item := `{"role":"user","content":"x"}`
	many := `{"items":[` + strings.Repeat(item+",", 20) + item + `]}`
	base := "/v1/conversations/" + c.ID
	for _, tc := range []struct{ method, path, body, code, param string }{
		{"POST", "/v1/conversations", `{"items":[{"role":"robot","content":"x"}]}`, "invalid_value", "items[0].role"},
		{"POST", "/v1/conversations", many, "array_above_max_length", "items"},
		{"POST", "/v1/conversations", `{"metadata":{"k":1}}`, "invalid_type", "metadata.k"},
		{"POST", "/v1/conversations", `{"items":`, "invalid_json", ""},
		{"POST", base + "/items", many, "array_above_max_length", "items"},
		{"POST", base + "/items", `{"items":[]}`, "empty_array", "items"},
		{"POST", base + "/items", `{}`, "missing_required_parameter", "items"},
		{"POST", base + "/items", `{"items":[{"id":"` + all[0] + `","role":"user","content":"again"}]}`, "duplicate_item_id", "items[0].id"},
		{"POST", base + "/items", `{"items":[` + item + `,{"type":"item_reference","id":"x"}]}`, "invalid_value", "items[1].type"},
		{"POST", base, `{}`, "missing_required_parameter", "metadata"},
		{"GET", base + "/items?limit=0", "", "invalid_value", "limit"},
		{"GET", base + "/items?limit=101", "", "invalid_value", "limit"},
		{"GET", base + "/items?order=up", "", "invalid_value", "order"},
		{"GET", base + "/items?after=msg_nope", "", "invalid_value", "after"},
		{"GET", base + "/items?include=everything", "", "invalid_value", "include[0]"},
	} {
		convRefused(t, srv, "", tc.method, tc.path, tc.body, 400, tc.code, tc.param)
	}
	if got := ids(allItems(t, srv, "", c.ID)); len(got) != 4 {
		t.Errorf("refused requests changed the items: %v", got)
	}

	// Deleting the conversation; then every route is a 404.
	var deleted map[string]any
	convDo(t, srv, "", "DELETE", base, "", &deleted)
	if mustJSON(t, deleted) != mustJSON(t, map[string]any{"id": c.ID, "object": "conversation.deleted", "deleted": true}) {
		t.Errorf("delete answered %v", deleted)
	}
	for _, r := range []struct{ method, path, body string }{
		{"GET", base, ""}, {"POST", base, `{"metadata":{}}`}, {"DELETE", base, ""},
		{"GET", base + "/items", ""}, {"POST", base + "/items", `{"items":[` + item + `]}`},
		{"GET", base + "/items/" + all[0], ""}, {"DELETE", base + "/items/" + all[0], ""},
	} {
		convRefused(t, srv, "", r.method, r.path, r.body, 404, "conversation_not_found", "conversation_id")
	}
}

// TestConversationResponsesE2E: responses on a conversation see its items, are
// appended to it (input then output, with their ids), and reuse the runtime's KV cache
// as a chain does: a turn's prompt is the previous turn's prompt plus the new items.
// Also: the response object names its conversation; streamed, background, store:false
// and WebSocket responses append the same way; an incomplete response is appended, a
// cancelled one is not; and the conversation's errors.
func TestConversationResponsesE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{Admission: admission.Config{Slots: 1}})
	m := testenv.Model(t, plain)
	reply := m.Text(scriptmodel.EntryAssistant)

	// The same two turns as a chain, for the token counts a conversation must match.
	c1 := createJSON(t, srv, reqBody(plain, false, `"input":"one"`))
	c2 := createJSON(t, srv, reqBody(plain, false, `"input":"two","previous_response_id":"`+c1.ID+`"`))

	var c conversation
	convDo(t, srv, "", "POST", "/v1/conversations", `{}`, &c)
	first := createJSON(t, srv, reqBody(plain, false, `"input":"one","conversation":"`+c.ID+`"`))
	if first.Conversation == nil || first.Conversation.ID != c.ID || first.Status != "completed" {
		t.Fatalf("first turn: status %s conversation %+v", first.Status, first.Conversation)
	}
	_, second := createSSE(t, srv, reqBody(plain, true, `"input":"two","conversation":{"id":"`+c.ID+`"}`))
	if second.Conversation == nil || second.Conversation.ID != c.ID {
		t.Errorf("second turn: conversation %+v", second.Conversation)
	}
	sameItems(t, "second turn", second.Output, []item{{Type: "message", Status: "completed", Text: reply}})
	u1, u2 := first.Usage, second.Usage
	if u1.InputTokens != c1.Usage.InputTokens || u2.InputTokens != c2.Usage.InputTokens {
		t.Errorf("input tokens %d, %d; the same turns chained: %d, %d", u1.InputTokens, u2.InputTokens, c1.Usage.InputTokens, c2.Usage.InputTokens)
	}
	t.Logf("turn 1: %d input, %d output tokens; turn 2: %d input, %d cached", u1.InputTokens, u1.OutputTokens,
		u2.InputTokens, u2.InputTokensDetails.CachedTokens)
	// The second prompt extends the first turn's whole sequence, prompt and output,
	// less the last token sampled, which the runtime never evaluates.
	if got, want := u2.InputTokensDetails.CachedTokens, u1.InputTokens+u1.OutputTokens-1; got != want {
		t.Errorf("second turn: cached_tokens %d, want %d (the first turn's %d input + %d output tokens - 1)",
			got, want, u1.InputTokens, u1.OutputTokens)
	}
	stored := getStored(t, srv, second.ID)
	if stored.Conversation == nil || stored.Conversation.ID != c.ID {
		t.Errorf("stored response: conversation %+v", stored.Conversation)
	}

	items := allItems(t, srv, "", c.ID)
	wantIDs := []string{"", first.Output[0].ID, "", second.Output[0].ID}
	if len(items) != 4 {
		t.Fatalf("items after two turns: %v", ids(items))
	}
	for i, it := range items {
		role := []string{"user", "assistant", "user", "assistant"}[i]
		text := []string{"one", reply, "two", reply}[i]
		if it.Role != role || it.Text() != text || it.Status != "completed" || (wantIDs[i] != "" && it.ID != wantIDs[i]) {
			t.Errorf("item %d: %s %s %q %s, want %s %q", i, it.ID, it.Role, it.Text(), it.Status, role, text)
		}
	}
	// The input items are the responses' own, ids included.
	var in itemPage
	convDo(t, srv, "", "GET", "/v1/responses/"+second.ID+"/input_items", "", &in)
	if got := ids(in.items(t)); len(got) != 1 || got[0] != items[2].ID {
		t.Errorf("input items of the second turn %v, conversation item %s", got, items[2].ID)
	}

	// previous_response_id naming a turn of the conversation continues from that
	// response's own input and output, as its stored chain holds them.
	cont := createJSON(t, srv, reqBody(plain, false, `"input":"three","previous_response_id":"`+second.ID+`"`))
	whole := createJSON(t, srv, reqBody(plain, false, `"input":[`+userMsg("two")+`,`+assistantMsg(reply)+`,`+userMsg("three")+`]`))
	if cont.Conversation != nil || cont.Usage.InputTokens != whole.Usage.InputTokens {
		t.Errorf("continuing a conversation's turn by id: %d input tokens (conversation %+v), the turn alone %d",
			cont.Usage.InputTokens, cont.Conversation, whole.Usage.InputTokens)
	}

	// An incomplete response is appended with its incomplete item.
	long := testenv.Model(t, scriptmodel.LongModel)
	var lc conversation
	convDo(t, srv, "", "POST", "/v1/conversations", `{"items":[{"role":"user","content":"earlier"}]}`, &lc)
	inc := createJSON(t, srv, reqBody(scriptmodel.LongModel, false, `"input":"tell me a story","max_output_tokens":16,"conversation":"`+lc.ID+`"`))
	if inc.Status != "incomplete" {
		t.Fatalf("long turn: %s", inc.Status)
	}
	li := allItems(t, srv, "", lc.ID)
	if len(li) != 3 || li[2].ID != inc.Output[0].ID || li[2].Status != "incomplete" ||
		li[2].Text() != strings.Join(long.Pieces(scriptmodel.EntryAssistant)[:16], "") {
		t.Errorf("after an incomplete turn: %+v", li)
	}

	// store:false: the response is not kept, the conversation still gets the turn.
	unstored := createJSON(t, srv, reqBody(plain, false, `"input":"three","store":false,"conversation":"`+c.ID+`"`))
	if code, _ := do(t, "GET", srv.URL+"/v1/responses/"+unstored.ID, "", ""); code != 404 {
		t.Errorf("GET of a store:false response: %d", code)
	}
	if got := allItems(t, srv, "", c.ID); len(got) != 6 || got[5].ID != unstored.Output[0].ID || got[4].Text() != "three" {
		t.Errorf("after a store:false turn: %v", ids(got))
	}

	// While a response runs on the conversation (here: waits for the model), a second
	// one, and direct item changes, are refused; the first then appends as usual.
	release := server.HoldSlot(h.Server, plain)
	resp, events := openStream(t, context.Background(), srv.URL, "", reqBody(plain, true, `"input":"four","conversation":"`+c.ID+`"`))
	defer resp.Body.Close()
	if typ, _ := events.next(t); typ != "response.created" {
		t.Fatalf("first event %s", typ)
	}
	if typ, _ := events.next(t); typ != "response.queued" {
		t.Fatalf("second event %s", typ)
	}
	convRefused(t, srv, "", "POST", "/v1/responses", reqBody(plain, false, `"input":"five","conversation":"`+c.ID+`"`),
		409, "conversation_locked", "conversation")
	convRefused(t, srv, "", "POST", "/v1/conversations/"+c.ID+"/items", `{"items":[{"role":"user","content":"x"}]}`,
		409, "conversation_locked", "conversation")
	convRefused(t, srv, "", "DELETE", "/v1/conversations/"+c.ID+"/items/"+items[0].ID, "", 409, "conversation_locked", "conversation")
	var page itemPage // reading is fine
	convDo(t, srv, "", "GET", "/v1/conversations/"+c.ID+"/items", "", &page)
	release()
	for typ := ""; typ != "[DONE]"; typ, _ = events.next(t) {
	}
	if got := allItems(t, srv, "", c.ID); len(got) != 8 || got[6].Text() != "four" {
		t.Errorf("after the queued turn: %v", ids(got))
	}

	// A background response is appended when it finishes; a cancelled one is not.
	var bg hearth.Response
	convDo(t, srv, "", "POST", "/v1/responses", reqBody(plain, false, `"input":"five","background":true,"conversation":"`+c.ID+`"`), &bg)
	if done := pollUntilDone(t, srv, bg.ID); done.Status != "completed" || done.Conversation == nil {
		t.Fatalf("background turn: %s %+v", done.Status, done.Conversation)
	}
	if got := allItems(t, srv, "", c.ID); len(got) != 10 || got[9].ID != getStored(t, srv, bg.ID).Output[0].ID {
		t.Errorf("after the background turn: %v", ids(got))
	}
	release = server.HoldSlot(h.Server, plain)
	convDo(t, srv, "", "POST", "/v1/responses", reqBody(plain, false, `"input":"never","background":true,"conversation":"`+c.ID+`"`), &bg)
	convDo(t, srv, "", "POST", "/v1/responses/"+bg.ID+"/cancel", "", nil)
	release()
	if done := pollUntilDone(t, srv, bg.ID); done.Status != "cancelled" {
		t.Fatalf("cancelled turn: %s", done.Status)
	}
	waitFor(t, "the cancelled turn to let the conversation go", func() bool {
		code, _, _ := call(t, nil, "POST", srv.URL+"/v1/conversations/"+c.ID+"/items", "", `{"items":[{"role":"user","content":"six"}]}`)
		return code == 200
	})
	if got := allItems(t, srv, "", c.ID); len(got) != 11 || got[10].Text() != "six" {
		t.Errorf("after the cancelled turn: %v", ids(got))
	}

	// WebSocket mode: the same conversation, the same append.
	ws := dialWS(t, srv, nil)
	wsResp := ws.completed(wsCreate(plain, `"input":"seven","conversation":"`+c.ID+`"`))
	if wsResp.Conversation == nil || wsResp.Conversation.ID != c.ID {
		t.Errorf("websocket turn: conversation %+v", wsResp.Conversation)
	}
	if got := allItems(t, srv, "", c.ID); len(got) != 13 || got[12].ID != wsResp.Output[0].ID {
		t.Errorf("after the websocket turn: %v", ids(got))
	}
	// The connection continues that response as storage would: without the
	// conversation's earlier items.
	wsCont := ws.completed(wsCreate(plain, `"input":"eight","previous_response_id":"`+wsResp.ID+`"`))
	httpCont := createJSON(t, srv, reqBody(plain, false, `"input":"eight","previous_response_id":"`+wsResp.ID+`"`))
	if wsCont.Usage.InputTokens != httpCont.Usage.InputTokens {
		t.Errorf("continuing the websocket turn: %d input tokens on the socket, %d over HTTP", wsCont.Usage.InputTokens, httpCont.Usage.InputTokens)
	}
	ws.failsWith("unknown conversation", wsCreate(plain, `"input":"x","conversation":"conv_nope"`), false,
		404, "conversation_not_found", "conversation")

	// Errors of the conversation parameter.
	for _, tc := range []struct {
		extra, code, param string
		status             int
	}{
		{`"conversation":"conv_nope"`, "conversation_not_found", "conversation", 404},
		{`"conversation":"` + c.ID + `","previous_response_id":"` + first.ID + `"`, "mutually_exclusive_parameters", "conversation", 400},
		{`"conversation":{"id":""}`, "empty_string", "conversation.id", 400},
		{`"input":[{"id":"` + items[0].ID + `","role":"user","content":"again"}],"conversation":"` + c.ID + `"`, "duplicate_item_id", "input[0].id", 400},
	} {
		body := reqBody(plain, false, tc.extra)
		if !strings.Contains(tc.extra, `"input"`) {
			body = reqBody(plain, false, `"input":"x",`+tc.extra)
		}
		convRefused(t, srv, "", "POST", "/v1/responses", body, tc.status, tc.code, tc.param)
	}
	if got := allItems(t, srv, "", c.ID); len(got) != 13 {
		t.Errorf("refused requests changed the conversation: %d items", len(got))
	}

	// Deleting the conversation leaves its responses.
	convDo(t, srv, "", "DELETE", "/v1/conversations/"+c.ID, "", nil)
	for _, id := range []string{first.ID, second.ID} {
		if r := getStored(t, srv, id); r.Status != "completed" {
			t.Errorf("response %s after deleting its conversation: %s", id, r.Status)
		}
	}
}

// TestConversationOwnershipE2E: a conversation is its key's; another key gets 404s
// everywhere, a response on it included, and changes nothing.
func TestConversationOwnershipE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, wire.Config{APIKeys: []string{"key-alice", "key-bob"}})
	var c conversation
	convDo(t, srv, "key-alice", "POST", "/v1/conversations", `{"items":[{"role":"user","content":"mine"}]}`, &c)
	item := allItems(t, srv, "key-alice", c.ID)[0].ID
	base := "/v1/conversations/" + c.ID
	convRefused(t, srv, "", "GET", base, "", 401, "invalid_api_key", "")
	for _, r := range []struct{ method, path, body, param string }{
		{"GET", base, "", "conversation_id"},
		{"POST", base, `{"metadata":{"k":"v"}}`, "conversation_id"},
		{"GET", base + "/items", "", "conversation_id"},
		{"POST", base + "/items", `{"items":[{"role":"user","content":"theirs"}]}`, "conversation_id"},
		{"GET", base + "/items/" + item, "", "conversation_id"},
		{"DELETE", base + "/items/" + item, "", "conversation_id"},
		{"DELETE", base, "", "conversation_id"},
		{"POST", "/v1/responses", reqBody(plain, false, `"input":"x","conversation":"`+c.ID+`"`), "conversation"},
	} {
		convRefused(t, srv, "key-bob", r.method, r.path, r.body, 404, "conversation_not_found", r.param)
	}
	if got := allItems(t, srv, "key-alice", c.ID); len(got) != 1 || got[0].ID != item {
		t.Errorf("bob changed alice's conversation: %v", ids(got))
	}
	r := createJSONAs(t, srv, "key-alice", reqBody(plain, false, `"input":"go on","conversation":"`+c.ID+`"`))
	if got := allItems(t, srv, "key-alice", c.ID); len(got) != 3 || got[2].ID != r.Output[0].ID {
		t.Errorf("alice's turn: %v", ids(got))
	}
}

// TestConversationOwnerBeforeLockE2E: while a response runs on alice's conversation,
// bob's requests on it are answered as for an unknown conversation (404), not with the
// 409 that would tell him it exists and is busy; alice still gets her 409.
func TestConversationOwnerBeforeLockE2E(t *testing.T) {
	srv, h, _ := lanHearth(t, wire.Config{APIKeys: []string{"key-alice", "key-bob"}})
	var c conversation
	convDo(t, srv, "key-alice", "POST", "/v1/conversations", `{"items":[{"role":"user","content":"mine"}]}`, &c)
	item := allItems(t, srv, "key-alice", c.ID)[0].ID
	base := "/v1/conversations/" + c.ID

	release := server.HoldSlot(h.Server, plain)
	resp, events := openStream(t, context.Background(), srv.URL, "key-alice", reqBody(plain, true, `"input":"busy","conversation":"`+c.ID+`"`))
	defer resp.Body.Close()
	for _, want := range []string{"response.created", "response.queued"} {
		if typ, _ := events.next(t); typ != want {
			t.Fatalf("event %s, want %s", typ, want)
		}
	}
	for _, r := range []struct{ method, path, body, param string }{
		{"POST", "/v1/responses", reqBody(plain, false, `"input":"x","conversation":"`+c.ID+`"`), "conversation"},
		{"POST", base + "/items", `{"items":[{"role":"user","content":"theirs"}]}`, "conversation_id"},
		{"DELETE", base + "/items/" + item, "", "conversation_id"},
	} {
		convRefused(t, srv, "key-bob", r.method, r.path, r.body, 404, "conversation_not_found", r.param)
		convRefused(t, srv, "key-alice", r.method, r.path, r.body, 409, "conversation_locked", "conversation")
	}
	ws := dialWS(t, srv, http.Header{"Authorization": {"Bearer key-bob"}})
	ws.failsWith("bob over a websocket", wsCreate(plain, `"input":"x","conversation":"`+c.ID+`"`), false,
		404, "conversation_not_found", "conversation")
	release()
	for typ := ""; typ != "[DONE]"; typ, _ = events.next(t) {
	}
	if got := allItems(t, srv, "key-alice", c.ID); len(got) != 3 || got[1].Text() != "busy" {
		t.Errorf("alice's conversation after bob's tries: %v", ids(got))
	}
}

func createJSONAs(t *testing.T, srv *httptest.Server, key, body string) *hearth.Response {
	t.Helper()
	var r hearth.Response
	convDo(t, srv, key, "POST", "/v1/responses", body, &r)
	return &r
}

// TestConversationRestartE2E: a conversation, its items and its responses survive a
// restart of hearth, and the next turn continues it with the same prompt: its input
// tokens are those of the same turns chained.
func TestConversationRestartE2E(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hearth.db")
	rt := testenv.Runtime(t)
	serve := func() (*httptest.Server, *sqlite.DB) {
		db, err := sqlite.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		return httptest.NewServer(wire.New(wire.Config{Runtime: rt, Database: db})), db
	}
	srv, db := serve()
	var c conversation
	convDo(t, srv, "", "POST", "/v1/conversations", `{"metadata":{"n":"1"}}`, &c)
	first := createJSON(t, srv, reqBody(plain, false, `"input":"one","conversation":"`+c.ID+`"`))
	before := allItems(t, srv, "", c.ID)
	c1 := createJSON(t, srv, reqBody(plain, false, `"input":"one"`))
	c2 := createJSON(t, srv, reqBody(plain, false, `"input":"two","previous_response_id":"`+c1.ID+`"`))
	srv.Close()
	db.Close()

	srv, db = serve()
	defer db.Close()
	defer srv.Close()
	var got conversation
	convDo(t, srv, "", "GET", "/v1/conversations/"+c.ID, "", &got)
	if mustJSON(t, got) != mustJSON(t, c) {
		t.Errorf("after restart: %+v, want %+v", got, c)
	}
	after := allItems(t, srv, "", c.ID)
	if mustJSON(t, after) != mustJSON(t, before) {
		t.Errorf("items after restart:\n%s\nwant\n%s", mustJSON(t, after), mustJSON(t, before))
	}
	if r := getStored(t, srv, first.ID); r.Conversation == nil || r.Conversation.ID != c.ID {
		t.Errorf("stored response after restart: %+v", r.Conversation)
	}
	second := createJSON(t, srv, reqBody(plain, false, `"input":"two","conversation":"`+c.ID+`"`))
	if second.Usage.InputTokens != c2.Usage.InputTokens {
		t.Errorf("turn after restart: %d input tokens, the chain's %d", second.Usage.InputTokens, c2.Usage.InputTokens)
	}
	if n := len(allItems(t, srv, "", c.ID)); n != 4 {
		t.Errorf("%d items after the turn, want 4", n)
	}
}
