package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
)

// do sends a request with an optional bearer key and returns status and body.
func do(t *testing.T, method, url, key, body string) (int, []byte) {
	t.Helper()
	code, _, b := call(t, context.Background(), method, url, key, body)
	return code, b
}

// asJSONValue is v as encoding/json decodes it into an any (objects become maps, whose
// keys marshal sorted), for comparing a typed value with decoded JSON.
func asJSONValue(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func errorCode(b []byte) string {
	var env struct{ Error struct{ Code string } }
	json.Unmarshal(b, &env)
	return env.Error.Code
}

func TestRetrieveDeleteE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	created := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"hi"`))

	code, b := do(t, "GET", srv.URL+"/v1/responses/"+created.ID, "", "")
	if code != 200 {
		t.Fatalf("GET: %d %s", code, b)
	}
	var got hearth.Response
	json.Unmarshal(b, &got)
	var raw any
	json.Unmarshal(b, &raw)
	schematest.Validate(t, "ResponseResource", raw)
	want, _ := json.Marshal(created)
	again, _ := json.Marshal(&got)
	if string(want) != string(again) {
		t.Errorf("GET differs from the created response:\n got %s\nwant %s", again, want)
	}

	// Replay as a stream: same lifecycle as a live stream, same final response.
	resp, err := http.Get(srv.URL + "/v1/responses/" + created.ID + "?stream=true")
	if err != nil {
		t.Fatal(err)
	}
	events, err := schematest.ReadSSE(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	schematest.ValidateEvents(t, events)
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Errorf("replay lifecycle: %v", err)
	}
	if last := events[len(events)-1]; last["type"] != "response.completed" {
		t.Errorf("replay ends with %v", last["type"])
	} else if out := last["response"].(map[string]any)["output"].([]any); len(out) != 1 ||
		out[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"] != plain.Text(scriptmodel.EntryAssistant) {
		t.Errorf("replayed output %v", out)
	} else if got, want := mustJSON(t, out), mustJSON(t, asJSONValue(t, created.Output)); got != want {
		t.Errorf("replayed output is not the stored one (ids included):\n got %s\nwant %s", got, want)
	}

	code, b = do(t, "DELETE", srv.URL+"/v1/responses/"+created.ID, "", "")
	if code != 200 || string(b) != `{"deleted":true,"id":"`+created.ID+`","object":"response"}` {
		t.Errorf("DELETE: %d %s", code, b)
	}
	if code, b = do(t, "GET", srv.URL+"/v1/responses/"+created.ID, "", ""); code != 404 || errorCode(b) != "response_not_found" {
		t.Errorf("GET after DELETE: %d %s", code, b)
	}
	if code, b = do(t, "DELETE", srv.URL+"/v1/responses/"+created.ID, "", ""); code != 404 {
		t.Errorf("second DELETE: %d %s", code, b)
	}
	code, b = do(t, "POST", srv.URL+"/v1/responses", "", reqBody(scriptmodel.PlainModel, false,
		`"input":"more","previous_response_id":"`+created.ID+`"`))
	if code != 404 || errorCode(b) != "previous_response_not_found" {
		t.Errorf("continuing a deleted response: %d %s", code, b)
	}

	// store:false is never written.
	unstored := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"hi","store":false`))
	if code, _ := do(t, "GET", srv.URL+"/v1/responses/"+unstored.ID, "", ""); code != 404 {
		t.Errorf("GET of a store:false response: %d", code)
	}
}

func TestInputItemsE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	created := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":[
		{"role":"user","content":"one"},{"role":"user","content":"two"},{"role":"user","content":"three"},
		{"role":"user","content":"four"},{"role":"user","content":"five"}]`))
	type page struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		FirstID *string           `json:"first_id"`
		LastID  *string           `json:"last_id"`
		HasMore bool              `json:"has_more"`
	}
	texts := func(p page) string {
		var out []string
		for _, d := range p.Data {
			var it hearth.Item
			json.Unmarshal(d, &it)
			out = append(out, it.Text(hearth.PartInputText))
		}
		return strings.Join(out, ",")
	}
	list := func(query string) page {
		t.Helper()
		code, b := do(t, "GET", srv.URL+"/v1/responses/"+created.ID+"/input_items"+query, "", "")
		if code != 200 {
			t.Fatalf("input_items%s: %d %s", query, code, b)
		}
		var p page
		json.Unmarshal(b, &p)
		return p
	}
	p := list("")
	if p.Object != "list" || texts(p) != "five,four,three,two,one" || p.HasMore {
		t.Errorf("default page: %s more=%v", texts(p), p.HasMore)
	}
	p = list("?order=asc&limit=2")
	if texts(p) != "one,two" || !p.HasMore || p.LastID == nil {
		t.Fatalf("first asc page: %s more=%v", texts(p), p.HasMore)
	}
	p = list("?order=asc&limit=2&after=" + *p.LastID)
	if texts(p) != "three,four" || !p.HasMore {
		t.Errorf("second asc page: %s more=%v", texts(p), p.HasMore)
	}
	p = list("?order=asc&limit=2&after=" + *p.LastID)
	if texts(p) != "five" || p.HasMore {
		t.Errorf("last asc page: %s more=%v", texts(p), p.HasMore)
	}
	for _, bad := range []string{"?limit=0", "?limit=101", "?order=up", "?after=msg_nope"} {
		if code, b := do(t, "GET", srv.URL+"/v1/responses/"+created.ID+"/input_items"+bad, "", ""); code != 400 {
			t.Errorf("input_items%s: %d %s", bad, code, b)
		}
	}
}

func TestKeysAndOwnershipE2E(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db, APIKeys: []string{"key-alice", "key-bob"}}))
	defer srv.Close()
	body := reqBody(scriptmodel.PlainModel, false, `"input":"hi"`)

	if code, b := do(t, "POST", srv.URL+"/v1/responses", "", body); code != 401 || errorCode(b) != "invalid_api_key" {
		t.Errorf("no key: %d %s", code, b)
	}
	if code, b := do(t, "POST", srv.URL+"/v1/responses", "key-mallory", body); code != 401 {
		t.Errorf("wrong key: %d %s", code, b)
	}
	code, b := do(t, "POST", srv.URL+"/v1/responses", "key-alice", body)
	if code != 200 {
		t.Fatalf("alice: %d %s", code, b)
	}
	var r hearth.Response
	json.Unmarshal(b, &r)
	if code, _ := do(t, "GET", srv.URL+"/v1/responses/"+r.ID, "key-alice", ""); code != 200 {
		t.Errorf("alice reads her response: %d", code)
	}
	for _, probe := range []struct{ method, path, body, code string }{
		{"GET", "/v1/responses/" + r.ID, "", "response_not_found"},
		{"GET", "/v1/responses/" + r.ID + "/input_items", "", "response_not_found"},
		{"DELETE", "/v1/responses/" + r.ID, "", "response_not_found"},
		{"POST", "/v1/responses", reqBody(scriptmodel.PlainModel, false, `"input":"x","previous_response_id":"`+r.ID+`"`), "previous_response_not_found"},
	} {
		if code, b := do(t, probe.method, srv.URL+probe.path, "key-bob", probe.body); code != 404 || errorCode(b) != probe.code {
			t.Errorf("bob %s %s: %d %s", probe.method, probe.path, code, b)
		}
	}
	if code, _ := do(t, "GET", srv.URL+"/healthz", "", ""); code != 200 {
		t.Errorf("/healthz must not need a key: %d", code)
	}
}

// pollUntilDone polls a background response until it leaves queued/in_progress.
func pollUntilDone(t *testing.T, srv *httptest.Server, id string) *hearth.Response {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		code, b := do(t, "GET", srv.URL+"/v1/responses/"+id, "", "")
		if code != 200 {
			t.Fatalf("poll: %d %s", code, b)
		}
		var r hearth.Response
		json.Unmarshal(b, &r)
		if r.Status != hearth.StatusQueued && r.Status != hearth.StatusInProgress {
			return &r
		}
		if time.Now().After(deadline) {
			t.Fatalf("background response still %s", r.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestBackgroundE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	think := testenv.Model(t, scriptmodel.ReasoningModel)
	code, b := do(t, "POST", srv.URL+"/v1/responses", "", reqBody(scriptmodel.ReasoningModel, false, `"input":"hello","background":true`))
	if code != 200 {
		t.Fatalf("create: %d %s", code, b)
	}
	var queued hearth.Response
	json.Unmarshal(b, &queued)
	if queued.Status != hearth.StatusQueued || !queued.Background {
		t.Errorf("background create answered status %s background %v, want queued", queued.Status, queued.Background)
	}
	done := pollUntilDone(t, srv, queued.ID)
	if done.Status != hearth.StatusCompleted || done.Usage == nil || done.Usage.OutputTokens != think.EvalCount(scriptmodel.EntryAssistant) {
		t.Errorf("background result: %s usage %+v", done.Status, done.Usage)
	}
	sameItems(t, "background", done.Output, []item{
		{Type: "reasoning", Status: "completed", Text: "The user says hello. A short greeting back is right."},
		{Type: "message", Status: "completed", Text: "Hello! I thought about it first."},
	})
	// Cancelling a finished response is refused; a foreground one cannot be cancelled.
	if code, _ := do(t, "POST", srv.URL+"/v1/responses/"+queued.ID+"/cancel", "", ""); code != 400 {
		t.Errorf("cancel of a finished response: %d", code)
	}
	fg := createJSON(t, srv, reqBody(scriptmodel.PlainModel, false, `"input":"hi"`))
	if code, _ := do(t, "POST", srv.URL+"/v1/responses/"+fg.ID+"/cancel", "", ""); code != 400 {
		t.Errorf("cancel of a foreground response: %d", code)
	}
	if code, b := do(t, "POST", srv.URL+"/v1/responses", "", reqBody(scriptmodel.PlainModel, false, `"input":"hi","background":true,"store":false`)); code != 400 {
		t.Errorf("background without store: %d %s", code, b)
	}
}

func TestBackgroundCancelE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	_, long := testenv.BenchModel(t, scriptmodel.LongModel)
	code, b := do(t, "POST", srv.URL+"/v1/responses", "", reqBody(long, false, `"input":"a long story","background":true`))
	if code != 200 {
		t.Fatalf("create: %d %s", code, b)
	}
	var queued hearth.Response
	json.Unmarshal(b, &queued)
	// Wait until it generates, then cancel.
	deadline := time.Now().Add(time.Minute)
	for {
		_, b := do(t, "GET", srv.URL+"/v1/responses/"+queued.ID, "", "")
		var r hearth.Response
		json.Unmarshal(b, &r)
		if r.Status == hearth.StatusInProgress {
			break
		}
		if time.Now().After(deadline) || r.Status != hearth.StatusQueued {
			t.Fatalf("background response is %s, never in_progress", r.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, b = do(t, "POST", srv.URL+"/v1/responses/"+queued.ID+"/cancel", "", "")
	if code != 200 {
		t.Fatalf("cancel: %d %s", code, b)
	}
	var cancelled hearth.Response
	json.Unmarshal(b, &cancelled)
	if cancelled.Status != hearth.StatusCancelled {
		t.Errorf("cancel answered status %s", cancelled.Status)
	}
	if final := pollUntilDone(t, srv, queued.ID); final.Status != hearth.StatusCancelled {
		t.Errorf("stored status after cancel: %s", final.Status)
	}
	// Cancelling again returns the cancelled response.
	if code, _ := do(t, "POST", srv.URL+"/v1/responses/"+queued.ID+"/cancel", "", ""); code != 200 {
		t.Errorf("second cancel: %d", code)
	}
}
