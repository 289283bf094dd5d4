package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/ollama/ollama/api"

	"hearth"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/internal/admission"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// send is one crafted request: headers as given (nothing added), body as given.
func send(t *testing.T, method, url, body string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// envelope decodes the JSON error envelope, failing the test when the body is not one
// (message, type, param and code all present).
func envelope(t *testing.T, label string, h http.Header, b []byte) (code, param string) {
	t.Helper()
	var e struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error == nil || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("%s: not the JSON error envelope (%s): %s", label, h.Get("Content-Type"), b)
	}
	for _, f := range []string{"message", "type", "param", "code"} {
		if _, ok := e.Error[f]; !ok {
			t.Errorf("%s: envelope without %q: %s", label, f, b)
		}
	}
	code, _ = e.Error["code"].(string)
	param, _ = e.Error["param"].(string)
	return code, param
}

func modelNames(t *testing.T, base, key string) []string {
	t.Helper()
	st, _, b := call(t, nil, "GET", base+"/api/tags", key, "")
	if st != 200 {
		t.Fatalf("/api/tags: %d %s", st, b)
	}
	var tags api.ListResponse
	json.Unmarshal(b, &tags)
	var names []string
	for _, m := range tags.Models {
		names = append(names, m.Name)
	}
	return names
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestOriginAndHostE2E: a web page of another origin cannot use hearth (the attack was a
// cross-site text/plain POST to /api/copy through the passthrough), a DNS-rebinding
// Host is refused on loopback, and clients that are not browsers (no Origin, such as
// the ollama CLI's client) work as before. Every refusal is the JSON envelope.
func TestOriginAndHostE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, server.Config{})
	dest := "sec-origin-copy:latest"
	copyBody := `{"source":"` + plain + `","destination":"` + dest + `"}`

	// The attack: a cross-site "simple" request (no preflight) to the passthrough.
	st, h, b := send(t, "POST", srv.URL+"/api/copy", copyBody, map[string]string{
		"Origin": "http://evil.example", "Content-Type": "text/plain;charset=UTF-8"})
	if code, param := envelope(t, "cross-site /api/copy", h, b); st != 403 || code != "origin_not_allowed" || param != "Origin" {
		t.Errorf("cross-site /api/copy: %d %s", st, b)
	}
	if contains(modelNames(t, srv.URL, ""), dest) {
		t.Fatalf("the cross-site copy reached the runtime")
	}
	// hearth's own routes too, with a JSON body and on GET.
	for _, r := range []struct{ method, path, body string }{
		{"POST", "/v1/responses", reqBody(plain, false, `"input":"hi"`)},
		{"GET", "/v1/models", ""},
		{"GET", "/api/tags", ""},
		{"DELETE", "/api/delete", `{"model":"` + plain + `"}`},
	} {
		st, h, b := send(t, r.method, srv.URL+r.path, r.body, map[string]string{"Origin": "https://evil.example", "Content-Type": "application/json"})
		if code, _ := envelope(t, r.path, h, b); st != 403 || code != "origin_not_allowed" {
			t.Errorf("cross-site %s %s: %d %s", r.method, r.path, st, b)
		}
	}
	// The page hearth itself serves (its own origin) and non-browser clients pass.
	if st, _, b := send(t, "GET", srv.URL+"/v1/models", "", map[string]string{"Origin": srv.URL}); st != 200 {
		t.Errorf("same-origin /v1/models: %d %s", st, b)
	}
	if st, _, b := send(t, "POST", srv.URL+"/v1/responses", reqBody(plain, false, `"input":"hi"`), map[string]string{"Content-Type": "application/json"}); st != 200 {
		t.Errorf("no Origin: %d %s", st, b)
	}
	// `OLLAMA_HOST=<hearth> ollama list`: the runtime's own Go client sends no Origin.
	client := api.NewClient(mustURL(t, srv.URL), http.DefaultClient)
	list, err := client.List(context.Background())
	if err != nil || len(list.Models) == 0 {
		t.Errorf("ollama client list through hearth: %v %v", list, err)
	}
	if _, err := client.Show(context.Background(), &api.ShowRequest{Model: plain}); err != nil {
		t.Errorf("ollama client show through hearth: %v", err)
	}

	// DNS rebinding: the browser connects to 127.0.0.1 but names the attacker's host.
	for _, path := range []string{"/api/tags", "/v1/models", "/healthz"} {
		st, h, b := send(t, "GET", srv.URL+path, "", map[string]string{"Host": "rebind.evil.example:" + port(srv)})
		if code, param := envelope(t, "rebinding "+path, h, b); st != 403 || code != "host_not_allowed" || param != "Host" {
			t.Errorf("rebinding Host on %s: %d %s", path, st, b)
		}
	}
	st, h, b = send(t, "DELETE", srv.URL+"/api/delete", `{"model":"`+plain+`"}`, map[string]string{"Host": "rebind.evil.example", "Content-Type": "application/json"})
	if code, _ := envelope(t, "rebinding delete", h, b); st != 403 || code != "host_not_allowed" {
		t.Errorf("rebinding /api/delete: %d %s", st, b)
	}
	if !contains(modelNames(t, srv.URL, ""), plain) {
		t.Fatal("the rebinding delete reached the runtime")
	}
	hostname, _ := os.Hostname()
	for _, host := range []string{"localhost:" + port(srv), "127.0.0.1:" + port(srv), "app.localhost", "[::1]:" + port(srv), hostname + ":" + port(srv)} {
		if st, _, b := send(t, "GET", srv.URL+"/v1/models", "", map[string]string{"Host": host}); st != 200 {
			t.Errorf("loopback Host %s: %d %s", host, st, b)
		}
	}

	// The operator's settings: an allowed origin gets CORS answers (preflight first),
	// an allowed host name passes.
	srv2, _, _ := lanHearth(t, server.Config{AllowOrigins: []string{"https://App.example/"}, AllowHosts: []string{"hearth.lan"}})
	st, h, _ = send(t, "OPTIONS", srv2.URL+"/v1/responses", "", map[string]string{
		"Origin": "https://app.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"})
	if st != 204 || h.Get("Access-Control-Allow-Origin") != "https://app.example" || !strings.Contains(h.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight of an allowed origin: %d %v", st, h)
	}
	st, h, b = send(t, "POST", srv2.URL+"/v1/responses", reqBody(plain, false, `"input":"hi"`), map[string]string{"Origin": "https://app.example", "Content-Type": "application/json"})
	if st != 200 || h.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("allowed origin: %d %s %v", st, b, h)
	}
	if st, _, _ := send(t, "GET", srv2.URL+"/v1/models", "", map[string]string{"Origin": "https://other.example"}); st != 403 {
		t.Errorf("an origin not in --allow-origin: %d", st)
	}
	// WebSocket mode: a cross-site page cannot open a connection; an allowed origin can.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/v1/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}}); err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("cross-site WebSocket: %v %v", resp, err)
		if c != nil {
			c.CloseNow()
		}
	}
	ws := dialWS(t, srv2, http.Header{"Origin": {"https://app.example"}})
	ws.send(wsCreate(plain, `"input":"hi"`), true)
	if tr := ws.turn(); tr.err != nil || tr.final == nil || tr.final.Status != hearth.StatusCompleted {
		t.Errorf("WebSocket from an allowed origin: %+v", tr.err)
	}
	if st, _, b := send(t, "GET", srv2.URL+"/v1/models", "", map[string]string{"Host": "hearth.lan:8080"}); st != 200 {
		t.Errorf("--allow-host name: %d %s", st, b)
	}
	if st, _, _ := send(t, "GET", srv2.URL+"/v1/models", "", map[string]string{"Host": "other.lan"}); st != 403 {
		t.Errorf("a host not in --allow-host: %d", st)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func port(srv *httptest.Server) string {
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return p
}

// TestRequestShapeE2E: JSON routes refuse a body not declared JSON (a browser sends
// text/plain, or no type with a Blob body, without a preflight); 405 is the JSON
// envelope; the Bearer scheme is case-insensitive; x-hearth-ignored is bounded.
func TestRequestShapeE2E(t *testing.T) {
	srv, _, db := lanHearth(t, server.Config{})
	body := reqBody(plain, false, `"input":"hi"`)
	for _, ct := range []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "invalid"} {
		hdr := map[string]string{"Content-Type": ct}
		for _, path := range []string{"/v1/responses", "/v1/responses/compact", "/api/copy", "/api/generate"} {
			st, h, b := send(t, "POST", srv.URL+path, body, hdr)
			if code, param := envelope(t, path+" "+ct, h, b); st != 415 || code != "unsupported_media_type" || param != "Content-Type" {
				t.Errorf("POST %s with Content-Type %q: %d %s", path, ct, st, b)
			}
		}
	}
	// JSON in any spelling, and no type at all (what simple scripts send).
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", ""} {
		hdr := map[string]string{}
		if ct != "" {
			hdr["Content-Type"] = ct
		}
		if st, _, b := send(t, "POST", srv.URL+"/v1/responses", body, hdr); st != 200 {
			t.Errorf("Content-Type %q: %d %s", ct, st, b)
		}
	}

	// 405 in the envelope, with Allow.
	st, h, b := send(t, "PUT", srv.URL+"/v1/responses", body, map[string]string{"Content-Type": "application/json"})
	if code, _ := envelope(t, "PUT /v1/responses", h, b); st != 405 || code != "method_not_allowed" || !strings.Contains(h.Get("Allow"), "POST") {
		t.Errorf("PUT /v1/responses: %d %s (Allow %q)", st, b, h.Get("Allow"))
	}
	st, h, b = send(t, "DELETE", srv.URL+"/v1/models", "", nil)
	if code, _ := envelope(t, "DELETE /v1/models", h, b); st != 405 || code != "method_not_allowed" {
		t.Errorf("DELETE /v1/models: %d %s", st, b)
	}

	// Bearer in any case (RFC 7235).
	_, key, err := db.CreateKey(context.Background(), "casey")
	if err != nil {
		t.Fatal(err)
	}
	for _, scheme := range []string{"Bearer", "bearer", "BEARER", "bEaReR"} {
		if st, _, b := send(t, "GET", srv.URL+"/v1/models", "", map[string]string{"Authorization": scheme + " " + key}); st != 200 {
			t.Errorf("scheme %q: %d %s", scheme, st, b)
		}
	}
	if st, _, _ := send(t, "GET", srv.URL+"/v1/models", "", map[string]string{"Authorization": "Basic " + key}); st != 401 {
		t.Errorf("Basic scheme: %d, want 401", st)
	}

	// A 100 KB unknown field name is refused with a short error naming it.
	huge := strings.Repeat("a", 100<<10)
	st, _, b = send(t, "POST", srv.URL+"/v1/responses", reqBody(plain, false, `"input":"hi","`+huge+`":1`),
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key})
	if code, param := errCode(b); st != 400 || code != "unknown_parameter" || param != strings.Repeat("a", 64)+"..." || len(b) > 1000 {
		t.Errorf("a 100 KB unknown field: %d, %d bytes %.200s", st, len(b), b)
	}
	// x-hearth-ignored: a 100 KB ignored name, and many names, make a short header.
	hugeTool := `"tools":[{"type":"acme:` + huge + `"}]`
	st, h, b = send(t, "POST", srv.URL+"/v1/responses", reqBody(plain, false, `"input":"hi",`+hugeTool),
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key})
	if got := h.Get("x-hearth-ignored"); st != 200 || got != ("tools[0]?(acme:" + huge)[:64]+"..." {
		t.Errorf("a 100 KB ignored tool: %d, header of %d bytes %.80q", st, len(got), got)
	}
	var many []string
	for i := range 40 {
		many = append(many, fmt.Sprintf(`{"type":"acme:unknown_%02d"}`, i))
	}
	st, h, _ = send(t, "POST", srv.URL+"/v1/responses", reqBody(plain, false, `"input":"hi","tools":[`+strings.Join(many, ",")+`]`),
		map[string]string{"Content-Type": "application/json", "Authorization": "Bearer " + key})
	names := strings.Split(h.Get("x-hearth-ignored"), ", ")
	if st != 200 || len(names) != 17 || names[16] != "(24 more)" {
		t.Errorf("40 ignored tools: %d, header %q", st, h.Get("x-hearth-ignored"))
	}
}

// TestBodyTimeoutE2E: a client that sends its headers and then trickles the body is cut
// off with a 408 (hearth's routes and the passthrough alike), instead of holding the
// connection for as long as it likes.
func TestBodyTimeoutE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, server.Config{BodyReadTimeout: 300 * time.Millisecond})
	for _, path := range []string{"/v1/responses", "/api/generate", "/api/create"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", path, srv.Listener.Addr())
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		start := time.Now()
		conn.SetReadDeadline(start.Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		close(stop)
		if err != nil {
			t.Fatalf("%s: no answer to a trickled body: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		conn.Close()
		if code, _ := envelope(t, path, resp.Header, b); resp.StatusCode != 408 || code != "request_body_timeout" {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: cut after %v", path, d)
		}
	}
	// A body sent at once is unaffected, and a WebSocket (no body) lives past the bound.
	if st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":"hi"`)); st != 200 {
		t.Fatalf("normal body: %d %s", st, b)
	}
	ws := dialWS(t, srv, nil)
	time.Sleep(500 * time.Millisecond)
	ws.send(wsCreate(plain, `"input":"hi"`), true)
	if tr := ws.turn(); tr.err != nil || tr.final == nil || tr.final.Status != hearth.StatusCompleted {
		t.Errorf("websocket after the body bound: %+v", tr.err)
	}
}

// TestKeyRolesE2E: a user key generates, reads models and uses its responses; model
// management through the passthrough and /metrics are admin-only (403, the envelope);
// admin keys (created with --admin, or configured) do both. /healthz stays open and no
// longer names the runtime's URL.
func TestKeyRolesE2E(t *testing.T) {
	srv, _, db := lanHearth(t, server.Config{APIKeys: []string{"operator-secret"}})
	ctx := context.Background()
	_, bob, err := db.CreateKey(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	_, ops, err := db.CreateKeyAs(ctx, "ops", storage.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	dest := "sec-roles-copy:latest"
	admin := []struct{ method, path, body string }{
		{"POST", "/api/copy", `{"source":"` + plain + `","destination":"` + dest + `"}`},
		{"DELETE", "/api/delete", `{"model":"` + plain + `"}`},
		{"POST", "/api/pull", `{"model":"127.0.0.1:9/x/y","insecure":true}`},
		{"POST", "/api/push", `{"model":"` + plain + `","insecure":true}`},
		{"POST", "/api/create", `{"model":"` + plain + `","from":"` + plain + `","system":"pwned"}`},
		{"HEAD", "/api/blobs/sha256:" + strings.Repeat("0", 64), ""},
		{"POST", "/api/blobs/sha256:" + strings.Repeat("0", 64), "x"},
		{"POST", "/api/experimental/web_search", `{"query":"x"}`},
		{"POST", "/api/me", `{}`},
		{"GET", "/metrics", ""},
	}
	for _, r := range admin {
		st, hd, b := call(t, nil, r.method, srv.URL+r.path, bob, r.body)
		if r.method == "HEAD" {
			if st != 403 {
				t.Errorf("user key HEAD %s: %d", r.path, st)
			}
			continue
		}
		if code, _ := envelope(t, "user "+r.path, hd, b); st != 403 || code != "permission_denied" {
			t.Errorf("user key %s %s: %d %s", r.method, r.path, st, b)
		}
	}
	names := modelNames(t, srv.URL, bob)
	if contains(names, dest) || !contains(names, plain) {
		t.Fatalf("a user key's model management reached the runtime: %v", names)
	}
	// What users may do.
	if st, _, b := call(t, nil, "POST", srv.URL+"/api/show", bob, `{"model":"`+plain+`"}`); st != 200 {
		t.Errorf("user /api/show: %d %s", st, b)
	}
	if st, _, b := call(t, nil, "POST", srv.URL+"/api/generate", bob, `{"model":"`+plain+`","prompt":"hi","stream":false}`); st != 200 {
		t.Errorf("user /api/generate: %d %s", st, b)
	}
	st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", bob, reqBody(plain, false, `"input":"hi"`))
	if st != 200 {
		t.Fatalf("user /v1/responses: %d %s", st, b)
	}
	var r hearth.Response
	json.Unmarshal(b, &r)
	if st, _, _ := call(t, nil, "GET", srv.URL+"/v1/responses/"+r.ID, bob, ""); st != 200 {
		t.Errorf("user reads own response: %d", st)
	}
	if st, _, _ := call(t, nil, "GET", srv.URL+"/v1/models", bob, ""); st != 200 {
		t.Errorf("user /v1/models: %d", st)
	}
	// Chat Completions is a user's route like /v1/responses, its stored response the
	// user's own.
	st, hd, b := call(t, nil, "POST", srv.URL+"/v1/chat/completions", bob, `{"model":"`+plain+`","store":true,"messages":[{"role":"user","content":"hi"}]}`)
	if st != 200 {
		t.Fatalf("user /v1/chat/completions: %d %s", st, b)
	}
	if st, _, _ := call(t, nil, "GET", srv.URL+"/v1/responses/"+hd.Get("x-hearth-response-id"), bob, ""); st != 200 {
		t.Errorf("user reads own chat completion's response: %d", st)
	}
	if st, _, _ := call(t, nil, "GET", srv.URL+"/v1/responses/"+hd.Get("x-hearth-response-id"), ops, ""); st != 404 {
		t.Errorf("another key reads the user's chat completion's response: %d", st)
	}

	// Admins: a database admin key copies and deletes; the configured key reads metrics.
	if st, _, b := call(t, nil, "POST", srv.URL+"/api/copy", ops, admin[0].body); st != 200 {
		t.Fatalf("admin /api/copy: %d %s", st, b)
	}
	if !contains(modelNames(t, srv.URL, ops), dest) {
		t.Fatal("admin copy not in the list")
	}
	if st, _, b := call(t, nil, "DELETE", srv.URL+"/api/delete", ops, `{"model":"`+dest+`"}`); st != 200 {
		t.Fatalf("admin /api/delete: %d %s", st, b)
	}
	for _, k := range []string{ops, "operator-secret"} {
		if st, _, _ := call(t, nil, "GET", srv.URL+"/metrics", k, ""); st != 200 {
			t.Errorf("admin /metrics: %d", st)
		}
	}

	// /healthz: open, without the runtime's address.
	st, _, b = call(t, nil, "GET", srv.URL+"/healthz", "", "")
	rt := testenv.Runtime(t)
	if st != 200 || strings.Contains(string(b), rt.URL.Host) || strings.Contains(string(b), `"url"`) {
		t.Errorf("/healthz: %d %s", st, b)
	}
}

// TestSocketKeyRevokedE2E: a key revoked while its WebSocket is open stops working at
// the next response.create, and the connection closes with the error.
func TestSocketKeyRevokedE2E(t *testing.T) {
	srv, _, db := lanHearth(t, server.Config{})
	ctx := context.Background()
	_, bob, err := db.CreateKey(ctx, "bob")
	if err != nil {
		t.Fatal(err)
	}
	ws := dialWS(t, srv, http.Header{"Authorization": {"Bearer " + bob}})
	ws.send(wsCreate(plain, `"input":"hi"`), true)
	if tr := ws.turn(); tr.err != nil || tr.final == nil || tr.final.Status != hearth.StatusCompleted {
		t.Fatalf("first create: %+v", tr.err)
	}
	if _, err := db.RevokeKey(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	// The connection hears of it at once, without waiting for its next create.
	tr := ws.turn()
	if tr.err == nil || tr.err.Status != 401 || tr.err.Error.Code != hearth.CodeInvalidAPIKey || !strings.Contains(tr.err.Error.Message, "revoked") {
		t.Fatalf("after revoke: %+v %v", tr.err, tr.final)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, _, err = ws.conn.Read(rctx)
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("connection after revoke: %v, want a close with 1008", err)
	}
}

// TestModelLabelsBoundedE2E: model names in requests are not metric labels unless the
// runtime has them. The attack was 120 requests with 500 KB names that grew /metrics to
// 660 MB; now they count as model="unknown".
func TestModelLabelsBoundedE2E(t *testing.T) {
	srv, _, _ := lanHearth(t, server.Config{})
	if st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":"hi"`)); st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	for i := range 20 {
		name := fmt.Sprintf("%d-%s", i, strings.Repeat("m", 100<<10))
		if st, _, _ := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(name, false, `"input":"hi"`)); st < 400 || st >= 500 {
			t.Fatalf("made-up model: %d", st)
		}
		if st, _, _ := call(t, nil, "POST", srv.URL+"/api/generate", "", `{"model":"`+name+`","prompt":"hi"}`); st < 400 || st >= 500 {
			t.Fatalf("made-up model on /api/generate: %d", st)
		}
	}
	_, _, b := call(t, nil, "GET", srv.URL+"/metrics", "", "")
	if len(b) > 200<<10 || strings.Contains(string(b), "mmmmmmmm") {
		t.Errorf("/metrics is %d bytes and holds the made-up names", len(b))
	}
	if v := metric(t, srv, "", "hearth_http_requests_total", `route="/v1/responses"`, `model="unknown"`); v != 20 {
		t.Errorf(`requests with model="unknown": %v, want 20`, v)
	}
	if v := metric(t, srv, "", "hearth_http_requests_total", `route="/v1/responses"`, `code="200"`, `model="`+plain+`"`); v != 1 {
		t.Errorf("requests of the real model: %v, want 1", v)
	}
	// The name without its tag is labelled as the runtime names it.
	short := strings.TrimSuffix(plain, ":latest")
	if st, _, b := call(t, nil, "POST", srv.URL+"/v1/responses", "", reqBody(short, false, `"input":"hi"`)); st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	if v := metric(t, srv, "", "hearth_responses_total", `model="`+plain+`"`, `status="completed"`); v != 2 {
		t.Errorf("completed responses of %s: %v, want 2 (one requested as %s)", plain, v, short)
	}
}

// smallBufferListener shrinks each accepted connection's send buffer, so a client that
// stops reading fills the path to it after a few KB instead of a few MB.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// TestStalledSSEClientE2E: a client that stops reading a stream after its first event
// cannot hold its model's only slot. The frame that cannot be written within the write
// timeout ends the stream, the response stops and is stored incomplete
// (client_disconnected), and the next request runs.
func TestStalledSSEClientE2E(t *testing.T) {
	db, err := sqlite.Open(t.TempDir() + "/hearth.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	_, long := testenv.BenchModel(t, scriptmodel.LongModel)
	h := server.New(server.Config{Runtime: testenv.Runtime(t), Database: db,
		Admission: admission.Config{Slots: 1}, WriteTimeout: 500 * time.Millisecond, Heartbeat: time.Hour})
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallBufferListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)

	// The stalled client: a tiny receive buffer, and it reads nothing after the
	// first event. Its large output (metadata repeated in every response event, and
	// a long text) cannot fit in the buffers.
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
	}}
	conn, err := dialer.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var meta []string
	for i := range 16 {
		meta = append(meta, fmt.Sprintf(`"k%d":"%s"`, i, strings.Repeat("v", 512)))
	}
	body := reqBody(long, true, `"input":"a long story","metadata":{`+strings.Join(meta, ",")+`}`)
	fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", srv.Listener.Addr(), len(body), body)
	br := bufio.NewReaderSize(conn, 64)
	var id string
	for id == "" {
		conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stalled client's first event: %v", err)
		}
		if i := strings.Index(line, `"id":"resp_`); i >= 0 && strings.Contains(line, "response.created") {
			id = line[i+6 : i+6+len("resp_")+32]
		}
	}
	// From here on it reads nothing.

	// The next request waits for the slot, then completes.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	st, _, b := call(t, ctx, "POST", srv.URL+"/v1/responses", "", reqBody(plain, false, `"input":"hi"`))
	if st != 200 {
		t.Fatalf("request behind the stalled stream: %d %s (after %v)", st, b, time.Since(start))
	}
	t.Logf("the request behind the stalled stream completed after %v", time.Since(start))
	final := pollUntilDone(t, srv, id)
	if final.Status != hearth.StatusIncomplete || final.IncompleteDetails == nil || final.IncompleteDetails.Reason != engine.IncompleteClientDisconnected {
		t.Errorf("stalled response stored as %s %+v", final.Status, final.IncompleteDetails)
	}
}
