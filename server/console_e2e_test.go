package server_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/pdftest"
	"hearth/scriptmodel"
	"hearth/storage"
	"hearth/storage/sqlite"
)

// TestConsoleE2E makes a chain with a tool round trip and a branch through hearth over
// the embedded runtime, then drives headless Chromium through the console: logs in with
// an admin key, opens each view, reads the DOM and saves a screenshot of each view to
// consoleArtifacts (HEARTH_TEST_ARTIFACTS, else server/testdata/console-screenshots).
func TestConsoleE2E(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, admin, err := db.CreateKeyAs(ctx, "ops", storage.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	_, dev, err := db.CreateKeyAs(ctx, "dev", storage.RoleUser)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Database: db}))
	defer srv.Close()

	// The chain: a question answered with reasoning and two tool calls, the tool
	// results and the answer, and a branch from the first turn with other results.
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	question := `Weather in <script>alert("boom")</script> Paris?`
	first := createAs(t, srv, dev, reqBody(scriptmodel.ToolsModel, false, `"input":`+jsonString(question)+`,`+toolsJSON))
	results := func(text string) string {
		var out []string
		for _, it := range first.Output {
			if it.Type == hearth.ItemFunctionCall {
				out = append(out, `{"type":"function_call_output","call_id":"`+it.CallID+`","output":`+jsonString(`{"sky":"`+text+`","tool":"`+it.Name+`"}`)+`}`)
			}
		}
		if len(out) != 2 {
			t.Fatalf("first turn made %d calls, want 2", len(out))
		}
		return `"previous_response_id":"` + first.ID + `","input":[` + strings.Join(out, ",") + `],` + toolsJSON
	}
	second := createAs(t, srv, dev, reqBody(scriptmodel.ToolsModel, false, results("clear")))
	branch := createAs(t, srv, dev, reqBody(scriptmodel.ToolsModel, false, results("rain")))
	turns := []*hearth.Response{first, second, branch}
	answer := tools.Text(scriptmodel.EntryAnswer)

	// The boundary and the roles, over HTTP.
	for _, tc := range []struct {
		name   string
		header []string
		status int
	}{
		{"no session", nil, 401},
		{"user key", []string{"Authorization", "Bearer " + dev}, 403},
		{"foreign origin", []string{"Origin", "http://evil.example"}, 403},
		{"foreign host (DNS rebinding)", []string{"Host", "evil.example"}, 403},
		{"admin key", []string{"Authorization", "Bearer " + admin}, 200},
		{"admin key, foreign origin", []string{"Authorization", "Bearer " + admin, "Origin", "http://evil.example"}, 403},
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/console/chain/"+first.ID, nil)
		for i := 0; i+1 < len(tc.header); i += 2 {
			req.Header.Set(tc.header[i], tc.header[i+1])
			if tc.header[i] == "Host" {
				req.Host = tc.header[i+1]
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: GET /console/chain = %d, want %d: %.300s", tc.name, resp.StatusCode, tc.status, b)
		}
		if tc.status != 200 && strings.Contains(string(b), "Paris") {
			t.Errorf("%s: the refusal shows the chain", tc.name)
		}
	}

	b := startBrowser(t)
	dir := consoleArtifacts(t)

	// Log in through the form, as a person does.
	b.open(t, srv.URL+"/console/chain/"+first.ID, `document.querySelector("form#login")`)
	b.eval(t, `(() => { const f = document.querySelector("form#login"); f.key.value = `+jsonString(admin)+`; f.submit(); return true })()`, nil)
	b.waitFor(t, `document.readyState === "complete" && document.querySelector("#chain") !== null`)
	b.screenshot(t, filepath.Join(dir, "chain.png"), "chain")

	// The chain's DOM: every turn in tree order, with its usage and items.
	var dom struct {
		Turns []struct {
			ID, Status, Usage, Parent string
			Items                     []string
		}
		Scripts  int
		Question bool
	}
	b.eval(t, `(() => ({
		turns: [...document.querySelectorAll("li.turn")].map(li => ({
			id: li.dataset.id,
			status: li.querySelector(".status").textContent,
			usage: li.querySelector(".usage").textContent,
			parent: li.parentElement.closest("li.turn")?.dataset.id || "",
			items: [...li.querySelectorAll(":scope > .card .items > .item")].map(el =>
				[...el.classList].slice(1).join(".") + ": " + (el.matches("details") ? (el.open ? "open " : "folded ") : "") +
				[...el.querySelectorAll(".name, .text, .args")].map(x => x.textContent).join(" | ")),
		})),
		scripts: document.querySelectorAll("main script").length,
		question: [...document.querySelectorAll(".item.message.user .text")].some(x => x.textContent === `+jsonString(question)+`),
	}))()`, &dom)
	if dom.Scripts != 0 || !dom.Question {
		t.Errorf("the question with <script> rendered as %d script elements, shown as text: %v", dom.Scripts, dom.Question)
	}
	if len(dom.Turns) != 3 {
		t.Fatalf("chain shows %d turns, want 3: %+v", len(dom.Turns), dom)
	}
	// The root comes first; its two branches may come in either order: siblings are
	// ordered by creation time, and two responses can share a millisecond.
	byID := map[string]int{}
	for i, d := range dom.Turns {
		byID[d.ID] = i
	}
	if dom.Turns[0].ID != first.ID {
		t.Errorf("chain starts with %s, want the root %s", dom.Turns[0].ID, first.ID)
	}
	for i, r := range turns {
		got := dom.Turns[byID[r.ID]]
		u := r.Usage
		wantUsage := fmt.Sprintf("in %d (cached %d) · out %d (reasoning %d)", u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens, u.OutputTokensDetails.ReasoningTokens)
		parent := ""
		if i > 0 {
			parent = first.ID
		}
		if got.ID != r.ID || got.Status != "completed" || got.Usage != wantUsage || got.Parent != parent {
			t.Errorf("turn %d = %s %s %q under %q, want %s completed %q under %q", i, got.ID, got.Status, got.Usage, got.Parent, r.ID, wantUsage, parent)
		}
		var want []string
		if i == 0 {
			want = append(want, "message.user: "+question)
		} else {
			sky := map[int]string{1: "clear", 2: "rain"}[i]
			for _, it := range first.Output {
				if it.Type == hearth.ItemFunctionCall {
					// JSON output is shown indented.
					want = append(want, "tool-output: {\n  \"sky\": \""+sky+"\",\n  \"tool\": \""+it.Name+"\"\n}")
				}
			}
		}
		for _, it := range r.Output {
			switch it.Type {
			case hearth.ItemReasoning:
				want = append(want, "reasoning: folded "+it.Content[0].Text)
			case hearth.ItemFunctionCall:
				var args json.RawMessage = json.RawMessage(it.Arguments)
				pretty, _ := json.MarshalIndent(args, "", "  ")
				want = append(want, "call: "+it.Name+" | "+string(pretty))
			case hearth.ItemMessage:
				want = append(want, "message.assistant: "+it.Content[0].Text)
			}
		}
		if strings.Join(got.Items, "\n") != strings.Join(want, "\n") {
			t.Errorf("turn %d items:\n%s\nwant:\n%s", i, strings.Join(got.Items, "\n"), strings.Join(want, "\n"))
		}
	}
	if first.Output[0].Type != hearth.ItemReasoning || second.Output[0].Type != hearth.ItemMessage || second.Output[0].Content[0].Text != answer {
		t.Errorf("the script model's turns changed: %v / %v", itemTypes(first.Output), itemTypes(second.Output))
	}

	// Responses: newest first, with key names.
	b.open(t, srv.URL+"/console/responses", `document.querySelector("#responses")`)
	var rows []string
	b.eval(t, `[...document.querySelectorAll("tr.response-row")].map(tr => tr.dataset.id + " " + [...tr.cells].slice(2).map(c => c.textContent).join(" "))`, &rows)
	// Newest first as storage orders them: creation time (hearth stores a response's
	// created_at, whole seconds), then id, both descending.
	newest := slices.Clone(turns)
	slices.SortStableFunc(newest, func(a, b *hearth.Response) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	var wantRows []string
	for _, r := range newest {
		u := r.Usage
		wantRows = append(wantRows, fmt.Sprintf("%s dev %s completed %d %d %d", r.ID, scriptmodel.ToolsModel, u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens))
	}
	if strings.Join(rows, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("responses list:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
	b.screenshot(t, filepath.Join(dir, "responses.png"), "responses")

	// Usage: the charts drawn, and the totals per key.
	b.open(t, srv.URL+"/console/usage?range=1h&by=key", `document.querySelector("#charts.drawn") && document.querySelectorAll("#charts canvas").length === 3`)
	var usage []string
	b.eval(t, `[...document.querySelectorAll("tr.usage-row")].map(tr => [...tr.cells].map(c => c.textContent).join(" "))`, &usage)
	var in, cached, out int
	for _, r := range turns {
		in, cached, out = in+r.Usage.InputTokens, cached+r.Usage.InputTokensDetails.CachedTokens, out+r.Usage.OutputTokens
	}
	if want := fmt.Sprintf("dev 3 %d %d %d", in, cached, out); strings.Join(usage, "\n") != want {
		t.Errorf("usage totals = %q, want %q", usage, want)
	}
	b.screenshot(t, filepath.Join(dir, "usage.png"), "usage")

	// Live: the loaded model (the runtime's /api/ps) and its recent speeds, after a
	// poll has replaced the first rendering.
	b.open(t, srv.URL+"/console", `document.querySelector("#live")`)
	b.eval(t, `(() => { document.querySelector("#live").insertAdjacentHTML("beforeend", "<i id=first-render></i>"); return true })()`, nil)
	b.waitFor(t, `document.querySelector("#first-render") === null && document.querySelector("#live h2") !== null`)
	var live struct{ Loaded, Speeds []string }
	b.eval(t, `({loaded: [...document.querySelectorAll("tr.loaded-model td:first-child")].map(x => x.textContent),
		speeds: [...document.querySelectorAll("tr.speed")].map(tr => tr.cells[0].textContent + " " + tr.cells[3].textContent)})`, &live)
	if !contains(live.Loaded, scriptmodel.ToolsModel) {
		t.Errorf("live view's loaded models = %v, want %s among them", live.Loaded, scriptmodel.ToolsModel)
	}
	if !contains(live.Speeds, scriptmodel.ToolsModel+" 3") {
		t.Errorf("live view's speeds = %v, want %s with 3 samples", live.Speeds, scriptmodel.ToolsModel)
	}
	b.screenshot(t, filepath.Join(dir, "live.png"), "live")

	// A response's own page: the answer, the usage row, the link to its chain.
	b.open(t, srv.URL+"/console/response/"+second.ID, `document.querySelector("#response")`)
	var page struct {
		Usage, Answers []string
		Chain          bool
	}
	b.eval(t, `({usage: [...document.querySelectorAll("#usage td")].map(td => td.textContent),
		answers: [...document.querySelectorAll("#response .items.output .item.message.assistant .text")].map(x => x.textContent),
		chain: document.querySelector('#response a[href="/console/chain/`+second.ID+`"]') !== null})`, &page)
	u := second.Usage
	wantUsage := []string{fmt.Sprint(u.InputTokens), fmt.Sprint(u.InputTokensDetails.CachedTokens), fmt.Sprint(u.OutputTokens),
		fmt.Sprint(u.OutputTokensDetails.ReasoningTokens), fmt.Sprint(u.InputTokens + u.OutputTokens)}
	if !slices.Equal(page.Usage, wantUsage) || !slices.Equal(page.Answers, []string{answer}) || !page.Chain {
		t.Errorf("response page: usage %v answers %q chain link %v; want %v, [%q], true", page.Usage, page.Answers, page.Chain, wantUsage, answer)
	}
	b.screenshot(t, filepath.Join(dir, "response.png"), "response")

	// Files and a vector store of them: a text file, a PDF, and a name far longer than
	// its column.
	testenv.Embedder(t)
	longName := strings.Repeat("quarterly-planning-notes-", 8) + "final.md"
	fileIDs := map[string]string{}
	for name, content := range map[string][]byte{
		"notes.txt":  []byte("Kettle notes\nThe kettle ships on Tuesday.\n<b>not bold</b>\n"),
		"report.pdf": pdftest.Pages("BT /F1 12 Tf 72 720 Td (Quarterly report) Tj ET", "BT /F1 12 Tf 72 720 Td (Page two) Tj ET"),
		longName:     []byte("# Planning\n\nShip the kettle.\n"),
	} {
		fileIDs[name] = uploadFile(t, srv, dev, name, "assistants", content).ID
	}
	var vs hearth.VectorStore
	convDo(t, srv, dev, "POST", "/v1/vector_stores", fmt.Sprintf(`{"name":"handbook","file_ids":[%q,%q,%q],"hearth":{"embedding_model":%q}}`,
		fileIDs["notes.txt"], fileIDs["report.pdf"], fileIDs[longName], scriptmodel.EmbedModel), &vs)
	vs = waitVectorStore(t, func() hearth.VectorStore {
		var v hearth.VectorStore
		convDo(t, srv, dev, "GET", "/v1/vector_stores/"+vs.ID, "", &v)
		return v
	})

	// Columns line up whatever the values: every row's cells of a column start at one
	// offset and share one width, and a value cut to its column keeps the whole in its
	// title.
	aligned := `(sel => { const rows = [...document.querySelectorAll(sel + " tr")];
		const cols = rows[0].cells.length, bad = [];
		for (let i = 0; i < cols; i++) {
			const boxes = rows.map(r => r.cells[i].getBoundingClientRect());
			if (new Set(boxes.map(b => Math.round(b.left))).size !== 1 || new Set(boxes.map(b => Math.round(b.width))).size !== 1) bad.push(i);
		}
		return bad })`
	b.open(t, srv.URL+"/console/files", `document.querySelector("#files")`)
	var files struct {
		Misaligned []int
		Names      []string
		Cut        bool
	}
	b.eval(t, `({misaligned: `+aligned+`("#files"),
		names: [...document.querySelectorAll("tr.file-row td:nth-child(3)")].map(td => td.title),
		cut: [...document.querySelectorAll("tr.file-row td:nth-child(3)")].some(td => td.title === `+jsonString(longName)+` && td.scrollWidth > td.clientWidth)})`, &files)
	slices.Sort(files.Names)
	wantNames := []string{"notes.txt", longName, "report.pdf"}
	slices.Sort(wantNames)
	if len(files.Misaligned) != 0 || !slices.Equal(files.Names, wantNames) || !files.Cut {
		t.Errorf("files list: misaligned columns %v, names %q, long name cut with its title %v", files.Misaligned, files.Names, files.Cut)
	}
	b.screenshot(t, filepath.Join(dir, "files.png"), "files")
	b.open(t, srv.URL+"/console/responses", `document.querySelector("#responses")`)
	var misaligned []int
	b.eval(t, aligned+`("#responses")`, &misaligned)
	if len(misaligned) != 0 {
		t.Errorf("responses list: misaligned columns %v", misaligned)
	}

	// A PDF's preview: its pages and first lines; a text file's: its lines, escaped.
	b.open(t, srv.URL+"/console/file/"+fileIDs["report.pdf"], `document.querySelector("#file")`)
	var preview struct{ Kind, Text string }
	b.eval(t, `({kind: document.querySelector("#file-kind").textContent, text: document.querySelector("#file-preview")?.textContent || ""})`, &preview)
	if preview.Kind != "PDF · 2 page(s)" || preview.Text != "Quarterly report\n\nPage two\n" {
		t.Errorf("PDF preview: kind %q text %q", preview.Kind, preview.Text)
	}
	b.screenshot(t, filepath.Join(dir, "file.png"), "file")
	b.open(t, srv.URL+"/console/file/"+fileIDs["notes.txt"], `document.querySelector("#file")`)
	b.eval(t, `({kind: document.querySelector("#file-kind").textContent, text: document.querySelector("#file-preview")?.textContent || ""})`, &preview)
	if preview.Kind != "text" || preview.Text != "Kettle notes\nThe kettle ships on Tuesday.\n<b>not bold</b>\n" {
		t.Errorf("text preview: kind %q text %q", preview.Kind, preview.Text)
	}

	// The vector stores: the list's counts, and the store's files with their status.
	b.open(t, srv.URL+"/console/vector-stores", `document.querySelector("#vector-stores")`)
	var storeRows []string
	b.eval(t, `[...document.querySelectorAll("tr.store-row")].map(tr => [...tr.cells].slice(1, 8).map(c => c.textContent).join(" "))`, &storeRows)
	counts := vs.FileCounts
	if want := fmt.Sprintf("%s handbook dev %d %d %d %d", vs.ID, counts.Total, counts.Completed, counts.InProgress, counts.Failed); !slices.Equal(storeRows, []string{want}) {
		t.Errorf("vector stores list = %q, want [%q]", storeRows, want)
	}
	b.screenshot(t, filepath.Join(dir, "vector-stores.png"), "vector stores")
	b.open(t, srv.URL+"/console/vector-store/"+vs.ID, `document.querySelector("#vector-store")`)
	var storeFiles []string
	b.eval(t, `[...document.querySelectorAll("tr.store-file")].map(tr => tr.cells[1].title + " " + tr.cells[2].textContent).sort()`, &storeFiles)
	var wantFiles []string
	for _, name := range wantNames {
		wantFiles = append(wantFiles, name+" completed")
	}
	if counts.Completed != 3 || !slices.Equal(storeFiles, wantFiles) {
		t.Errorf("store %s (%+v) files = %q, want %q", vs.ID, counts, storeFiles, wantFiles)
	}
	b.screenshot(t, filepath.Join(dir, "vector-store.png"), "vector store")

	// Logging out ends the session: the console asks for a key again.
	b.eval(t, `(() => { document.querySelector("form.logout").submit(); return true })()`, nil)
	b.waitFor(t, `document.readyState === "complete" && location.pathname === "/console/login"`)
	b.open(t, srv.URL+"/console/responses", `document.querySelector("form#login")`)

	// Revoking the admin key ends its sessions at once.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", srv.URL+"/console/login", strings.NewReader(url.Values{"key": {admin}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	status := func(label string, want int) {
		t.Helper()
		resp, err := c.Get(srv.URL + "/console/usage")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: GET /console/usage = %d, want %d", label, resp.StatusCode, want)
		}
	}
	if resp, err := c.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	status("logged in", 200)
	if _, err := db.RevokeKey(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	status("key revoked", 401)
}

func createAs(t *testing.T, srv *httptest.Server, key, body string) *hearth.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/v1/responses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/responses = %d: %s", resp.StatusCode, b)
	}
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// consoleArtifacts is where the screenshots go: CI sets HEARTH_TEST_ARTIFACTS to its
// test output directory and keeps it as an artefact.
func consoleArtifacts(t *testing.T) string {
	dir := os.Getenv("HEARTH_TEST_ARTIFACTS")
	if dir != "" {
		dir = filepath.Join(dir, "console-screenshots")
	} else {
		dir = filepath.Join("testdata", "console-screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// browser is headless Chromium driven over the DevTools protocol: the few commands
// this test needs, over the WebSocket library hearth already uses.
type browser struct {
	conn *websocket.Conn
	id   int
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("HEARTH_SKIP_BROWSER") == "1" {
			t.Skip("HEARTH_SKIP_BROWSER=1: the console's browser test is skipped")
		}
		t.Fatal("Chromium is not installed: run scripts/chromium.sh (or set HEARTH_SKIP_BROWSER=1 to skip this test)")
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-port=0", "--window-size=1100,760", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Chromium's helpers share its process group.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`DevTools listening on (ws://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("Chromium did not start its DevTools endpoint in 30 s")
	}
	// The page target's endpoint, from the browser's target list.
	host := strings.TrimPrefix(wsURL, "ws://")
	host = host[:strings.Index(host, "/")]
	var targets []struct{ Type, WebSocketDebuggerURL string }
	for deadline := time.Now().Add(10 * time.Second); ; {
		resp, err := http.Get("http://" + host + "/json/list")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
		}
		if err == nil && len(targets) > 0 && targets[0].Type == "page" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(targets) == 0 || targets[0].Type != "page" {
		t.Fatalf("Chromium has no page target: %+v", targets)
	}
	conn, _, err := websocket.Dial(context.Background(), targets[0].WebSocketDebuggerURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(64 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &browser{conn: conn}
}

// call sends one DevTools command and waits for its answer (events are skipped).
func (b *browser) call(method string, params, result any) error {
	b.id++
	msg, _ := json.Marshal(map[string]any{"id": b.id, "method": method, "params": params})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.conn.Write(ctx, websocket.MessageText, msg); err != nil {
		return err
	}
	for {
		_, data, err := b.conn.Read(ctx)
		if err != nil {
			return err
		}
		var reply struct {
			ID     int
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if json.Unmarshal(data, &reply) != nil || reply.ID != b.id {
			continue
		}
		if reply.Error != nil {
			return errors.New(method + ": " + reply.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(reply.Result, result)
		}
		return nil
	}
}

// eval evaluates a JavaScript expression in the page and decodes its value into v.
func (b *browser) eval(t *testing.T, expr string, v any) {
	t.Helper()
	var r struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct {
			Text      string
			Exception struct{ Description string }
		}
	}
	if err := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		t.Fatalf("JavaScript failed: %s %s\n%s", r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description, expr)
	}
	if v != nil {
		if err := json.Unmarshal(r.Result.Value, v); err != nil {
			t.Fatalf("JavaScript value %s: %v", r.Result.Value, err)
		}
	}
}

// waitFor waits until a JavaScript condition holds (page loads and scripts run
// asynchronously).
func (b *browser) waitFor(t *testing.T, cond string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		var r struct {
			Result struct{ Value json.RawMessage }
		}
		if err := b.call("Runtime.evaluate", map[string]any{"expression": "!!(" + cond + ")", "returnByValue": true}, &r); err == nil {
			_ = json.Unmarshal(r.Result.Value, &ok)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var html string
			b.eval(t, `document.documentElement.outerHTML.slice(0, 3000)`, &html)
			t.Fatalf("timed out waiting for %s; the page:\n%s", cond, html)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// open navigates and waits for the page's condition.
func (b *browser) open(t *testing.T, url, ready string) {
	t.Helper()
	if err := b.call("Page.navigate", map[string]any{"url": url}, nil); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, `document.readyState === "complete" && location.href === `+jsonString(url)+` && (`+ready+`)`)
}

func (b *browser) screenshot(t *testing.T, path, label string) {
	t.Helper()
	// The whole page, not the window: a chain is longer than a screen.
	var m struct {
		CSSContentSize struct{ Width, Height float64 }
	}
	if err := b.call("Page.getLayoutMetrics", nil, &m); err != nil {
		t.Fatal(err)
	}
	clip := map[string]any{"x": 0, "y": 0, "width": m.CSSContentSize.Width, "height": min(m.CSSContentSize.Height, 2400), "scale": 1}
	var r struct{ Data string }
	if err := b.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true, "clip": clip}, &r); err != nil {
		t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of the %s view: %s (%d bytes)", label, path, len(png))
}

// TestConsoleLoginNextE2E: the page a login goes on to is the console's, whatever the
// form's next says: a path that leaves /console once cleaned, another host, or an
// escaped dot-dot lands on /console; a page of the console is kept.
func TestConsoleLoginNextE2E(t *testing.T) {
	srv, _, db := lanHearth(t, wire.Config{})
	_, admin, err := db.CreateKeyAs(context.Background(), "ops", storage.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for next, want := range map[string]string{
		"/console/responses":         "/console/responses",
		"/console/../api/tags":       "/console",
		"/console/../v1/models":      "/console",
		"//evil.example/console":     "/console",
		`/console\..\api\tags`:       "/console",
		"/console/%2e%2e/api/tags":   "/console",
		"/console%2f..%2fapi%2ftags": "/console",
	} {
		form := url.Values{"key": {admin}, "next": {next}}
		req, _ := http.NewRequest("POST", srv.URL+"/console/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("login with next %q: %d to %q, want 303 to %q", next, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
}
