package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth"
	"hearth/engine"
	"hearth/filesearch"
	"hearth/mcp"
	"hearth/server/console"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// mcpView shows hosted items as the server wires the console: as the kind says (MCP's,
// file search's).
func mcpView(it hearth.Item) (console.HostedItem, bool) {
	for _, k := range []interface {
		engine.HostedKind
		engine.HostedViewer
	}{mcp.NewKind(nil, nil), filesearch.NewKind(nil, nil)} {
		if k.Owns(it.Type) {
			v := k.View(it)
			return console.HostedItem{Kind: k.ToolType(), Name: v.Name, Args: v.Args, Text: v.Text}, true
		}
	}
	return console.HostedItem{}, false
}

const (
	adminKey = "sk-admin-0123456789"
	userKey  = "sk-user-0123456789"
)

// fixture is a console over a real database with fake keys and a fake live state: the
// handlers' control flow, not the runtime (the e2e test covers that).
type fixture struct {
	t    *testing.T
	db   *sqlite.DB
	srv  *httptest.Server
	keys bool
	mu   sync.Mutex
	now  time.Time
}

func newFixture(t *testing.T, keys bool) *fixture {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{t: t, db: db, keys: keys, now: time.Now()}
	c := console.New(console.Config{
		DB:           db,
		KeysRequired: func(context.Context) (bool, error) { return f.keys, nil },
		CheckKey: func(_ context.Context, key string) (console.Key, error) {
			switch key {
			case adminKey:
				return console.Key{Name: "alice", Admin: true}, nil
			case userKey:
				return console.Key{Name: "bob"}, nil
			}
			return console.Key{}, console.ErrBadKey
		},
		KeyNames: func(context.Context) (map[string]string, error) {
			return map[string]string{storage.OwnerOf(adminKey): "alice", storage.OwnerOf(userKey): "bob"}, nil
		},
		Live: func(context.Context) console.Live {
			return console.Live{Slots: 2, MaxQueue: 8,
				Runtimes: []console.Runtime{{Name: "ollama (in hearth)", Embedded: true, Up: true,
					Models: []console.LoadedModel{{Name: "m:latest", Size: 5 << 20}}}},
				Lanes: []console.Lane{{Model: "m:latest", Running: 1, Waiting: 3}}}
		},
		HostedView: mcpView,
		SessionTTL: time.Hour,
		Now: func() time.Time {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.now
		},
	})
	f.srv = httptest.NewServer(c)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// store writes a finished response with one user message in and one assistant
// message out.
func (f *fixture) store(id, owner, prev, model, in, out string, created time.Time, usage storage.Usage) {
	f.t.Helper()
	ctx := context.Background()
	msg := func(role, typ, text string) storage.Item {
		b, _ := json.Marshal(map[string]any{"type": "message", "id": "msg_" + id + role, "role": role,
			"content": []map[string]any{{"type": typ, "text": text}}})
		return storage.Item{ID: "msg_" + id + role, Type: "message", JSON: b}
	}
	if err := f.db.CreateResponse(ctx, storage.NewResponse{ID: id, Owner: owner, Model: model, Status: storage.StatusInProgress,
		PreviousResponseID: prev, Request: json.RawMessage(`{}`), Input: []storage.Item{msg("user", "input_text", in)}, CreatedAt: created}); err != nil {
		f.t.Fatal(err)
	}
	if err := f.db.CompleteResponse(ctx, id, storage.Final{Status: storage.StatusCompleted, Usage: usage,
		Output: []storage.Item{msg("assistant", "output_text", out)}, CompletedAt: created.Add(time.Second)}); err != nil {
		f.t.Fatal(err)
	}
}

// client is a browser-like client: cookies kept, redirects not followed.
func (f *fixture) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func do(t *testing.T, c *http.Client, method, u string, form url.Values, hdr ...string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestOpenWithoutKeys(t *testing.T) {
	f := newFixture(t, false)
	resp, body := do(t, f.client(), "GET", f.srv.URL+"/console", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /console = %d, want 200: %s", resp.StatusCode, body)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	for _, want := range []string{"m:latest", `<td class="num">1</td><td class="num">3</td>`, "2 generation slot(s) per model, up to 8 waiting"} {
		if !strings.Contains(body, want) {
			t.Errorf("live page lacks %q", want)
		}
	}
	if strings.Contains(body, "Log out") {
		t.Error("an open console offers to log out")
	}
	// Assets are embedded and served with their types.
	for path, typ := range map[string]string{"/console/assets/console.js": "text/javascript", "/console/assets/console.css": "text/css"} {
		resp, body := do(t, f.client(), "GET", f.srv.URL+path, nil)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), typ) || len(body) < 100 {
			t.Errorf("%s: %d %q, %d bytes", path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
	}
}

func TestLoginSession(t *testing.T) {
	f := newFixture(t, true)
	f.store("resp_a", storage.OwnerOf(userKey), "", "m:latest", "hello", "hi there", time.Now(), storage.Usage{InputTokens: 5, OutputTokens: 3})
	c := f.client()

	// Not logged in: the page is the login form, with 401.
	resp, body := do(t, c, "GET", f.srv.URL+"/console/responses", nil)
	if resp.StatusCode != 401 || !strings.Contains(body, `id="login"`) || strings.Contains(body, "resp_a") {
		t.Fatalf("GET without a session = %d, want 401 with the login form and no data: %s", resp.StatusCode, body)
	}
	// The polled fragment and the JSON answer scripts with the error envelope.
	resp, body = do(t, c, "GET", f.srv.URL+"/console/usage.json", nil)
	checkError(t, "usage.json without a session", resp, body, 401, "key")

	cases := []struct {
		name, key string
		status    int
		msg       string
	}{
		{"user key", userKey, 403, "user key"},
		{"wrong key", "sk-nope", 401, "Incorrect or revoked key."},
		{"empty key", "", 400, "Enter an admin key."},
	}
	for _, tc := range cases {
		resp, body := do(t, c, "POST", f.srv.URL+"/console/login", url.Values{"key": {tc.key}, "next": {"/console/responses"}}, "Origin", f.srv.URL)
		if resp.StatusCode != tc.status || !strings.Contains(body, tc.msg) || len(resp.Cookies()) != 0 {
			t.Errorf("%s: login = %d with %d cookies, want %d and %q: %s", tc.name, resp.StatusCode, len(resp.Cookies()), tc.status, tc.msg, body)
		}
	}

	resp, _ = do(t, c, "POST", f.srv.URL+"/console/login", url.Values{"key": {adminKey}, "next": {"/console/responses"}}, "Origin", f.srv.URL)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/responses" {
		t.Fatalf("admin login = %d to %q, want 303 to /console/responses", resp.StatusCode, resp.Header.Get("Location"))
	}
	ck := resp.Cookies()
	if len(ck) != 1 {
		t.Fatalf("admin login set %d cookies", len(ck))
	}
	if k := ck[0]; k.Name != console.CookieName || !k.HttpOnly || k.SameSite != http.SameSiteStrictMode || k.Secure ||
		k.Path != "/console" || k.MaxAge != 3600 || strings.Contains(k.Value, adminKey) || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(k.Value) {
		t.Errorf("session cookie = %+v", k)
	}
	resp, body = do(t, c, "GET", f.srv.URL+"/console/responses", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, `data-id="resp_a"`) || !strings.Contains(body, ">bob<") || !strings.Contains(body, "Log out") {
		t.Fatalf("responses with a session = %d: %s", resp.StatusCode, body)
	}

	// Another browser does not share the session; a made-up cookie is no session.
	other := f.client()
	u, _ := url.Parse(f.srv.URL + "/console")
	other.Jar.SetCookies(u, []*http.Cookie{{Name: console.CookieName, Value: strings.Repeat("ab", 32)}})
	if resp, _ := do(t, other, "GET", f.srv.URL+"/console", nil); resp.StatusCode != 401 {
		t.Errorf("forged session id = %d, want 401", resp.StatusCode)
	}

	// Logout ends the session server-side: the old cookie no longer works.
	old := c.Jar.Cookies(u)
	resp, _ = do(t, c, "POST", f.srv.URL+"/console/logout", url.Values{}, "Origin", f.srv.URL)
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("logout = %d", resp.StatusCode)
	}
	replay := f.client()
	replay.Jar.SetCookies(u, old)
	if resp, _ := do(t, replay, "GET", f.srv.URL+"/console", nil); resp.StatusCode != 401 {
		t.Errorf("cookie after logout = %d, want 401", resp.StatusCode)
	}
	// Logging out is POST only.
	if resp, _ := do(t, c, "GET", f.srv.URL+"/console/logout", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /console/logout = %d, want 405", resp.StatusCode)
	}
}

func TestSessionExpires(t *testing.T) {
	f := newFixture(t, true)
	c := f.client()
	resp, _ := do(t, c, "POST", f.srv.URL+"/console/login", url.Values{"key": {adminKey}}, "Origin", f.srv.URL)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login = %d", resp.StatusCode)
	}
	f.advance(59 * time.Minute)
	if resp, _ := do(t, c, "GET", f.srv.URL+"/console/usage", nil); resp.StatusCode != 200 {
		t.Fatalf("session before expiry = %d", resp.StatusCode)
	}
	f.advance(2 * time.Minute)
	if resp, body := do(t, c, "GET", f.srv.URL+"/console/usage", nil); resp.StatusCode != 401 || !strings.Contains(body, `id="login"`) {
		t.Errorf("expired session = %d, want 401 with the login form", resp.StatusCode)
	}
}

func TestBearerAndOrigin(t *testing.T) {
	f := newFixture(t, true)
	c := f.client()
	resp, body := do(t, c, "GET", f.srv.URL+"/console/usage.json", nil, "Authorization", "Bearer "+userKey)
	checkError(t, "user key", resp, body, 403, "key")
	resp, body = do(t, c, "GET", f.srv.URL+"/console/usage.json", nil, "Authorization", "Bearer sk-wrong")
	checkError(t, "wrong key", resp, body, 401, "key")
	if resp, body := do(t, c, "GET", f.srv.URL+"/console/usage.json", nil, "Authorization", "Bearer "+adminKey); resp.StatusCode != 200 {
		t.Errorf("admin bearer = %d: %s", resp.StatusCode, body)
	}
	// A form posted from another site (the API's --allow-origin list does not extend
	// to the console's forms).
	resp, body = do(t, c, "POST", f.srv.URL+"/console/login", url.Values{"key": {adminKey}}, "Origin", "http://evil.example", "Authorization", "Bearer x")
	checkError(t, "foreign origin", resp, body, 403, "Origin")
	if len(resp.Cookies()) != 0 {
		t.Error("a cross-site login got a cookie")
	}
	resp, _ = do(t, c, "POST", f.srv.URL+"/console/logout", url.Values{}, "Sec-Fetch-Site", "cross-site")
	if resp.StatusCode != 403 {
		t.Errorf("cross-site logout without Origin = %d, want 403", resp.StatusCode)
	}
}

func checkError(t *testing.T, label string, resp *http.Response, body string, status int, param string) {
	t.Helper()
	var env struct {
		Error struct {
			Message, Type, Code string
			Param               *string
		}
	}
	if resp.StatusCode != status {
		t.Errorf("%s: status %d, want %d: %s", label, resp.StatusCode, status, body)
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || env.Error.Message == "" || env.Error.Type == "" || env.Error.Code == "" {
		t.Errorf("%s: not an error envelope: %s", label, body)
		return
	}
	if env.Error.Param == nil || *env.Error.Param != param {
		t.Errorf("%s: param %v, want %q", label, env.Error.Param, param)
	}
}

func TestBadFilters(t *testing.T) {
	f := newFixture(t, false)
	c := f.client()
	for q, param := range map[string]string{
		"/console/responses?status=done":          "status",
		"/console/responses?since=yesterday":      "since",
		"/console/responses?until=2026-13-01":     "until",
		"/console/responses?after=x":              "after",
		"/console/responses?key=nobody":           "key",
		"/console/usage.json?range=5y":            "range",
		"/console/usage.json?by=colour":           "by",
		"/console/chain/resp_missing?format=json": "id",
	} {
		req, _ := http.NewRequest("GET", f.srv.URL+q, nil)
		req.Header.Set("Authorization", "Bearer none") // no keys: ignored, but asks for JSON
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := 400
		if param == "id" {
			want = 404
		}
		checkError(t, q, resp, string(b), want, param)
	}
	// A person gets the same as a page that names the field.
	resp, body := do(t, c, "GET", f.srv.URL+"/console/responses?status=done", nil)
	if resp.StatusCode != 400 || !strings.Contains(body, "<code>status</code>") {
		t.Errorf("bad status for a person = %d: %s", resp.StatusCode, body)
	}
}

// TestEscaping: items hold user and model text; it must render as text.
func TestEscaping(t *testing.T) {
	f := newFixture(t, false)
	evil := `<script>alert("x")</script><img src=x onerror=alert(1)>`
	f.store("resp_x", storage.OwnerOf(""), "", "m:latest", evil, "fine", time.Now(), storage.Usage{})
	resp, body := do(t, f.client(), "GET", f.srv.URL+"/console/chain/resp_x", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("chain = %d", resp.StatusCode)
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
		t.Errorf("user text rendered as HTML: %s", body)
	}
	if !strings.Contains(body, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;`) {
		t.Errorf("user text not shown escaped: %s", body)
	}
}

// TestPaging walks the list page by page: newest first, each response once, also
// across responses created in the same millisecond.
func TestPaging(t *testing.T) {
	f := newFixture(t, false)
	base := time.UnixMilli(1_700_000_000_000)
	var want []string
	for i := 0; i < 123; i++ {
		id := fmt.Sprintf("resp_%03d", i)
		f.store(id, storage.OwnerOf(adminKey), "", "m:latest", "q", "a", base.Add(time.Duration(i/3)*time.Millisecond), storage.Usage{})
		want = append([]string{id}, want...)
	}
	f.store("resp_other", storage.OwnerOf(userKey), "", "m:latest", "q", "a", base, storage.Usage{})
	ids := regexp.MustCompile(`class="response-row" data-id="([^"]+)"`)
	next := regexp.MustCompile(`href="([^"]+)" id="next-page"`)
	var got []string
	u, pages := f.srv.URL+"/console/responses?key=alice", 0
	for u != "" && pages < 10 {
		resp, body := do(t, f.client(), "GET", u, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s = %d: %s", u, resp.StatusCode, body)
		}
		for _, m := range ids.FindAllStringSubmatch(body, -1) {
			got = append(got, m[1])
		}
		u = ""
		if m := next.FindStringSubmatch(body); m != nil {
			u = f.srv.URL + strings.ReplaceAll(m[1], "&amp;", "&")
		}
		pages++
	}
	if pages != 3 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%d pages listed %d responses:\n%v\nwant %v", pages, len(got), got, want)
	}
}

// TestChainTree: a chain with a branch renders as a tree, from any of its responses.
func TestChainTree(t *testing.T) {
	f := newFixture(t, false)
	o, now := storage.OwnerOf(""), time.Now()
	f.store("resp_root", o, "", "m:latest", "first", "one", now, storage.Usage{InputTokens: 10, OutputTokens: 2})
	f.store("resp_a", o, "resp_root", "m:latest", "second a", "two a", now.Add(time.Second), storage.Usage{InputTokens: 20, CachedTokens: 10, OutputTokens: 3})
	f.store("resp_b", o, "resp_root", "m:latest", "second b", "two b", now.Add(2*time.Second), storage.Usage{InputTokens: 21, CachedTokens: 10, OutputTokens: 4})
	f.store("resp_c", o, "resp_a", "m:latest", "third", "three", now.Add(3*time.Second), storage.Usage{InputTokens: 30, CachedTokens: 20, OutputTokens: 5})
	f.store("resp_lone", o, "", "m:latest", "other chain", "x", now, storage.Usage{})
	resp, body := do(t, f.client(), "GET", f.srv.URL+"/console/chain/resp_c", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("chain = %d", resp.StatusCode)
	}
	// The nesting, read from the tags: root, then a branch list holding a (with c
	// inside) and b.
	tags := regexp.MustCompile(`<ol class="tree[^"]*"|</ol>|<li class="turn[^"]*" id="[^"]+"`)
	var shape []string
	for _, m := range tags.FindAllString(body, -1) {
		switch {
		case strings.HasPrefix(m, "<ol class=\"tree branches"):
			shape = append(shape, "[branches")
		case strings.HasPrefix(m, "<ol"):
			shape = append(shape, "[")
		case m == "</ol>":
			shape = append(shape, "]")
		default:
			shape = append(shape, regexp.MustCompile(`id="([^"]+)"`).FindStringSubmatch(m)[1])
		}
	}
	if got, want := strings.Join(shape, " "), "[ resp_root [branches resp_a [ resp_c ] resp_b ] ]"; got != want {
		t.Errorf("tree = %s, want %s", got, want)
	}
	for _, want := range []string{`class="turn focus" id="resp_c"`, "in 30 (cached 20) · out 5", "second b", "two a"} {
		if !strings.Contains(body, want) {
			t.Errorf("chain lacks %q", want)
		}
	}
	if strings.Contains(body, "other chain") {
		t.Error("chain shows a response of another chain")
	}
}

func TestUsageJSON(t *testing.T) {
	f := newFixture(t, false)
	now := time.Now()
	f.store("resp_1", storage.OwnerOf(adminKey), "", "m:latest", "q", "a", now.Add(-90*time.Minute), storage.Usage{InputTokens: 100, CachedTokens: 40, OutputTokens: 10})
	f.store("resp_2", storage.OwnerOf(adminKey), "", "n:latest", "q", "a", now.Add(-10*time.Minute), storage.Usage{InputTokens: 7, OutputTokens: 1})
	f.store("resp_3", storage.OwnerOf(userKey), "", "m:latest", "q", "a", now.Add(-5*time.Minute), storage.Usage{InputTokens: 50, CachedTokens: 5, OutputTokens: 20})
	f.store("resp_old", storage.OwnerOf(userKey), "", "m:latest", "q", "a", now.Add(-48*time.Hour), storage.Usage{InputTokens: 999})
	var d struct {
		Starts []int64
		Series []struct {
			Label                 string
			Input, Cached, Output []int64
			Responses             int64
			TI                    int64 `json:"total_input"`
			TC                    int64 `json:"total_cached"`
			TO                    int64 `json:"total_output"`
		}
	}
	for by, want := range map[string]string{
		"key":   "alice 2 107/40/11; bob 1 50/5/20",
		"model": "m:latest 2 150/45/30; n:latest 1 7/0/1",
	} {
		_, body := do(t, f.client(), "GET", f.srv.URL+"/console/usage.json?range=24h&by="+by, nil)
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatal(err, body)
		}
		var got []string
		for _, s := range d.Series {
			var sum int64
			for i := range s.Input {
				sum += s.Input[i]
			}
			if sum != s.TI || len(s.Input) != len(d.Starts) || len(d.Starts) != 25 {
				t.Errorf("%s: series %s sums to %d over %d buckets, total %d, %d starts", by, s.Label, sum, len(s.Input), s.TI, len(d.Starts))
			}
			got = append(got, fmt.Sprintf("%s %d %d/%d/%d", s.Label, s.Responses, s.TI, s.TC, s.TO))
		}
		if strings.Join(got, "; ") != want {
			t.Errorf("usage by %s = %s, want %s", by, strings.Join(got, "; "), want)
		}
	}
}

// TestChainMCPItems: a hosted (MCP) turn reads as what happened: the tools listed, the
// call with its arguments and result (or error), approvals asked and given; not as raw
// JSON.
func TestChainMCPItems(t *testing.T) {
	f := newFixture(t, false)
	ctx, o, now := context.Background(), storage.OwnerOf(""), time.Now()
	item := func(v map[string]any) storage.Item {
		b, _ := json.Marshal(v)
		return storage.Item{ID: v["id"].(string), Type: v["type"].(string), JSON: b}
	}
	if err := f.db.StoreResponse(ctx, storage.NewResponse{ID: "resp_mcp", Owner: o, Model: "m:latest", Status: storage.StatusInProgress,
		Request: json.RawMessage(`{}`), CreatedAt: now,
		Input: []storage.Item{item(map[string]any{"type": "mcp_approval_response", "id": "mcpa_1", "approval_request_id": "mcpr_0", "approve": false, "reason": "not on Fridays"})}},
		storage.Final{Status: storage.StatusCompleted, CompletedAt: now.Add(time.Second), Output: []storage.Item{
			item(map[string]any{"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "docs", "tools": []any{
				map[string]any{"name": "search", "input_schema": map[string]any{"type": "object"}},
				map[string]any{"name": "fetch_page", "input_schema": map[string]any{"type": "object"}}}}),
			item(map[string]any{"type": "mcp_call", "id": "mcp_1", "status": "completed", "server_label": "docs", "name": "search",
				"arguments": `{"q":"hearth"}`, "output": "3 pages found"}),
			item(map[string]any{"type": "mcp_call", "id": "mcp_2", "status": "failed", "server_label": "docs", "name": "fetch_page",
				"arguments": `{"url":"x"}`, "error": "no such page"}),
			item(map[string]any{"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "docs", "name": "delete_page", "arguments": `{"id":7}`}),
		}}); err != nil {
		t.Fatal(err)
	}
	resp, body := do(t, f.client(), "GET", f.srv.URL+"/console/chain/resp_mcp", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("chain = %d", resp.StatusCode)
	}
	for _, want := range []string{`class="item mcp"`, "docs.search", "2 tools: search, fetch_page", "3 pages found",
		"docs.fetch_page", "error: no such page", "&#34;q&#34;: &#34;hearth&#34;", "docs.delete_page", "waiting for approval (mcpr_1)",
		"denied (mcpr_0): not on Fridays"} {
		if !strings.Contains(body, want) {
			t.Errorf("chain lacks %q", want)
		}
	}
	if strings.Contains(body, `class="item other"`) {
		t.Error("an MCP item is shown as raw JSON")
	}
}

// TestChainFileSearchItems: a file search reads as what happened: the query, the files
// found with their scores (when the request included the results), or its status.
func TestChainFileSearchItems(t *testing.T) {
	f := newFixture(t, false)
	ctx, o, now := context.Background(), storage.OwnerOf(""), time.Now()
	item := func(v map[string]any) storage.Item {
		b, _ := json.Marshal(v)
		return storage.Item{ID: v["id"].(string), Type: v["type"].(string), JSON: b}
	}
	if err := f.db.StoreResponse(ctx, storage.NewResponse{ID: "resp_fs", Owner: o, Model: "m:latest", Status: storage.StatusInProgress,
		Request: json.RawMessage(`{}`), CreatedAt: now},
		storage.Final{Status: storage.StatusCompleted, CompletedAt: now.Add(time.Second), Output: []storage.Item{
			item(map[string]any{"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": []string{"leave policy"},
				"results": []any{map[string]any{"file_id": "file_1", "filename": "handbook.md", "score": 0.8125, "text": "20 days.", "attributes": map[string]any{}}}}),
			item(map[string]any{"type": "file_search_call", "id": "fs_2", "status": "failed", "queries": []string{"kettle"}}),
		}}); err != nil {
		t.Fatal(err)
	}
	resp, body := do(t, f.client(), "GET", f.srv.URL+"/console/chain/resp_fs", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("chain = %d", resp.StatusCode)
	}
	for _, want := range []string{`class="item hosted file_search"`, "file_search_call", "leave policy", "handbook.md (file_1, score 0.812)",
		"kettle", ">failed<"} {
		if !strings.Contains(body, want) {
			t.Errorf("chain lacks %q", want)
		}
	}
	if strings.Contains(body, `class="item other"`) {
		t.Error("a file search is shown as raw JSON")
	}
}
