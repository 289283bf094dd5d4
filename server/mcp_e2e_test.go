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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/mcp"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
)

// mcpEverythingDir holds the MCP project's reference server,
// @modelcontextprotocol/server-everything, pinned in its package-lock.json.
const mcpEverythingDir = "../testdata/mcp-everything"

// everythingServer installs the pinned server and returns node and its entry script.
func everythingServer(t *testing.T) (node, script string) {
	t.Helper()
	_, node, dir := nodeProject(t, mcpEverythingDir)
	return node, filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
}

// everythingHTTP starts the reference server on streamable HTTP at a free loopback port
// and returns its endpoint; the process ends with the test.
func everythingHTTP(t *testing.T, node, script string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "listening on port") {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the streamable HTTP MCP server did not start in 30 s")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// newMCPHearth is hearth with a database and the MCP servers given.
func newMCPHearth(t *testing.T, servers ...mcp.Server) (*httptest.Server, *engine.Engine, *mcp.Manager) {
	t.Helper()
	mgr, err := mcp.New(mcp.Options{Servers: servers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	eng := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	eng.RegisterHosted(mcp.NewKind(mgr, nil))
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Engine: eng, Database: db, Collectors: mgr.Collectors()}))
	t.Cleanup(srv.Close)
	return srv, eng, mgr
}

// createMCPSSE is createSSE for streams with MCP items: validated against the schema
// plus OpenAI's definitions of MCP tools.
func createMCPSSE(t *testing.T, srv *httptest.Server, body string) ([]map[string]any, *hearth.Response) {
	t.Helper()
	return createSSEWith(t, srv, body, schematest.MCP.ValidateEvents)
}

// createMCPJSON is createJSON for responses with MCP items.
func createMCPJSON(t *testing.T, srv *httptest.Server, body string) *hearth.Response {
	t.Helper()
	resp, b := post(t, srv.URL+"/v1/responses", body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var raw any
	json.Unmarshal(b, &raw)
	schematest.MCP.Validate(t, "ResponseResource", raw)
	var r hearth.Response
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// mcpItem is what a test compares of an output item.
type mcpItem struct {
	Type, Status, ServerLabel, Name, Arguments, Output, Error, Text, Approval string
	Tools                                                                     []string
}

func mcpItems(items []hearth.Item) []mcpItem {
	var out []mcpItem
	for _, it := range items {
		m := mcpItem{Type: it.Type, Status: it.Status, ServerLabel: mcp.Of(it).ServerLabel, Name: it.Name, Arguments: it.Arguments, Error: mcp.Of(it).Error}
		switch it.Type {
		case hearth.ItemMessage:
			m.Text = it.Text(hearth.PartOutputText)
		case mcp.ItemMCPCall:
			m.Output = it.Output.Text
			if mcp.Of(it).ApprovalRequestID != "" {
				m.Approval = "yes"
			}
		case mcp.ItemMCPListTools:
			for _, tool := range mcp.Of(it).MCPTools {
				m.Tools = append(m.Tools, tool.Name)
			}
		}
		out = append(out, m)
	}
	return out
}

func sameMCPItems(t *testing.T, label string, got []hearth.Item, want []mcpItem) {
	t.Helper()
	g, _ := json.MarshalIndent(mcpItems(got), "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	if string(g) != string(w) {
		t.Errorf("%s: output items\n got %s\nwant %s", label, g, w)
	}
}

// eventTypes lists the stream's event types, a run of one delta type as one.
func eventTypes(events []map[string]any) []string {
	var out []string
	for _, e := range events {
		typ, _ := e["type"].(string)
		if strings.HasSuffix(typ, ".delta") && len(out) > 0 && out[len(out)-1] == typ {
			continue
		}
		out = append(out, typ)
	}
	return out
}

const (
	// The parser drops the blanks between JSON tokens of arguments, as of function calls.
	mcpEchoArgs   = `{"message":"hello from hearth"}`
	mcpEchoOutput = "Echo: hello from hearth"
	mcpAsk        = `"input":"Say hello through the echo tool."`
)

// mcpTool is the request's mcp tool of server label, offering only echo.
func mcpTool(label, approval string) string {
	return `"tools":[{"type":"mcp","server_label":"` + label + `","allowed_tools":["echo"],"require_approval":"` + approval + `"}]`
}

// TestMCPE2E: the MCP project's reference server, over stdio (hearth starts it) and
// over streamable HTTP, serves a script model that calls its echo tool and answers
// after the result, all in one response: the listing, the call with the server's real
// output, the answer; the exact event sequence; input tokens of both turns' prompts
// (each exactly the prompt of the same conversation with echo as a function tool) and
// output tokens of both scripts. Then a continuation reuses the chain's listing.
func TestMCPE2E(t *testing.T) {
	node, script := everythingServer(t)
	url := everythingHTTP(t, node, script)
	srv, eng, mgr := newMCPHearth(t,
		mcp.Server{Label: "everything", Command: node, Args: []string{script, "stdio"}},
		mcp.Server{Label: "everything-http", URL: url},
	)
	m := testenv.Model(t, scriptmodel.MCPModel)
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer
	if m.Text(a) != scriptmodel.MCPText {
		t.Fatalf("the script writes %q", m.Text(a))
	}
	model := scriptmodel.MCPModel

	for _, label := range []string{"everything", "everything-http"} {
		body := reqBody(model, true, mcpAsk+","+mcpTool(label, "never"))
		events, r := createMCPSSE(t, srv, body)
		want := []mcpItem{
			{Type: "mcp_list_tools", Status: "completed", ServerLabel: label, Tools: []string{"echo"}},
			{Type: "mcp_call", Status: "completed", ServerLabel: label, Name: "echo", Arguments: mcpEchoArgs, Output: mcpEchoOutput},
			{Type: "message", Status: "completed", Text: scriptmodel.MCPAnswerText},
		}
		sameMCPItems(t, label, r.Output, want)
		if r.Status != hearth.StatusCompleted {
			t.Fatalf("%s: status %s, error %+v", label, r.Status, r.Error)
		}
		wantEvents := []string{"response.created", "response.in_progress",
			"response.output_item.added", "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed", "response.output_item.done",
			"response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done",
			"response.mcp_call.completed", "response.output_item.done",
			"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.done",
			"response.content_part.done", "response.output_item.done", "response.completed"}
		if got := eventTypes(events); strings.Join(got, " ") != strings.Join(wantEvents, " ") {
			t.Errorf("%s: events\n%q\nwant\n%q", label, got, wantEvents)
		}
		// The listing comes whole; the call's arguments and the answer stream.
		streamed := *r
		streamed.Output = r.Output[1:]
		checkDeltasMatch(t, label, events, &streamed)

		// Each turn's prompt is the prompt of the same conversation with echo as a
		// plain function tool: the server's description and schema, the call and
		// the server's output as a function call and its result.
		echo := mcp.Of(r.Output[0]).MCPTools[0]
		fn := `"tools":[{"type":"function","name":"echo","description":` + jsonString(echo.Description) + `,"parameters":` + string(echo.InputSchema) + `}]`
		plain := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
		first := renderedPrompt(t, plain, reqBody(model, false, mcpAsk+","+fn), nil)
		if got := renderedPrompt(t, eng, reqBody(model, false, mcpAsk+","+mcpTool(label, "never")), nil); got != first {
			t.Errorf("%s: first prompt\n%q\nwant echo as a function tool\n%q", label, got, first)
		}
		callID := r.Output[1].ID
		second := renderedPrompt(t, plain, reqBody(model, false, `"input":[{"role":"user","content":"Say hello through the echo tool."},`+
			`{"type":"function_call","call_id":"`+callID+`","name":"echo","arguments":`+jsonString(mcpEchoArgs)+`},`+
			`{"type":"function_call_output","call_id":"`+callID+`","output":`+jsonString(mcpEchoOutput)+`}],`+fn), nil)
		wantIn := m.CountTokens(first) + m.CountTokens(second)
		wantOut := m.EvalCount(a) + m.EvalCount(ans)
		if u := r.Usage; u.InputTokens != wantIn || u.OutputTokens != wantOut || u.TotalTokens != wantIn+wantOut {
			t.Errorf("%s: usage %+v; want %d input tokens (%d + %d), %d output", label, u, wantIn, m.CountTokens(first), m.CountTokens(second), wantOut)
		}

		// A continuation knows the tools from the chain's listing: no new listing.
		next := createMCPJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+r.ID+`","input":"Once more, please.",`+mcpTool(label, "never")))
		sameMCPItems(t, label+" continuation", next.Output, want[1:])
	}

	// The calls are counted by server, tool and outcome.
	mr, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mr.Body)
	mr.Body.Close()
	for _, label := range []string{"everything", "everything-http"} {
		// Two calls each: the first response's and the continuation's.
		if want := `hearth_mcp_calls_total{outcome="ok",server="` + label + `",tool="echo"} 2`; !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// tool_choice names the server's tool: the call is generated under its grammar,
	// and the same call comes out.
	r := createMCPJSON(t, srv, reqBody(model, false, mcpAsk+","+mcpTool("everything", "never")+
		`,"tool_choice":{"type":"mcp","server_label":"everything","name":"echo"}`))
	sameMCPItems(t, "tool_choice", r.Output, []mcpItem{
		{Type: "mcp_list_tools", Status: "completed", ServerLabel: "everything", Tools: []string{"echo"}},
		{Type: "mcp_call", Status: "completed", ServerLabel: "everything", Name: "echo", Arguments: mcpEchoArgs, Output: mcpEchoOutput},
		{Type: "message", Status: "completed", Text: scriptmodel.MCPAnswerText},
	})
	if got, want := r.Usage.OutputTokens, m.EvalCount(a)+m.EvalCount(ans); got != want {
		t.Errorf("tool_choice: output_tokens %d, want %d", got, want)
	}

	// allowed_tools {"read_only": true} offers exactly the tools the server marks
	// readOnlyHint (echo among them), read from the server's whole listing.
	all, err := mgr.ListTools(context.Background(), mcp.Ref{Label: "everything"})
	if err != nil {
		t.Fatal(err)
	}
	var readOnly []string
	for _, tool := range all {
		if (mcp.MCPToolInfo{Name: tool.Name, Annotations: tool.Annotations}).ReadOnly() {
			readOnly = append(readOnly, tool.Name)
		}
	}
	if len(readOnly) == 0 || len(readOnly) == len(all) || !slices.Contains(readOnly, "echo") {
		t.Fatalf("read-only tools of the server: %v of %d", readOnly, len(all))
	}
	r = createMCPJSON(t, srv, reqBody(model, false, mcpAsk+`,"tools":[{"type":"mcp","server_label":"everything","allowed_tools":{"read_only":true},"require_approval":"never"}]`))
	sameMCPItems(t, "read_only", r.Output, []mcpItem{
		{Type: "mcp_list_tools", Status: "completed", ServerLabel: "everything", Tools: readOnly},
		{Type: "mcp_call", Status: "completed", ServerLabel: "everything", Name: "echo", Arguments: mcpEchoArgs, Output: mcpEchoOutput},
		{Type: "message", Status: "completed", Text: scriptmodel.MCPAnswerText},
	})
}

// TestMCPApprovalE2E: with require_approval the response ends with an
// mcp_approval_request; approving it (chained, and in a full store:false history)
// runs the call and the model answers; denying it runs nothing.
func TestMCPApprovalE2E(t *testing.T) {
	node, script := everythingServer(t)
	srv, _, _ := newMCPHearth(t, mcp.Server{Label: "everything", Command: node, Args: []string{script, "stdio"}})
	model := scriptmodel.MCPModel
	tools := mcpTool("everything", "always")

	events, r := createMCPSSE(t, srv, reqBody(model, true, mcpAsk+","+tools))
	sameMCPItems(t, "request", r.Output, []mcpItem{
		{Type: "mcp_list_tools", Status: "completed", ServerLabel: "everything", Tools: []string{"echo"}},
		{Type: "mcp_approval_request", Status: "completed", ServerLabel: "everything", Name: "echo", Arguments: mcpEchoArgs},
	})
	for _, e := range events {
		if strings.HasPrefix(e["type"].(string), "response.mcp_call") {
			t.Errorf("an mcp_call event before the approval: %v", e)
		}
	}
	reqID := r.Output[1].ID

	approve := func(ok bool) string {
		return `{"type":"mcp_approval_response","approval_request_id":"` + reqID + `","approve":` + fmt.Sprint(ok) + `}`
	}
	answered := []mcpItem{
		{Type: "mcp_call", Status: "completed", ServerLabel: "everything", Name: "echo", Arguments: mcpEchoArgs, Output: mcpEchoOutput, Approval: "yes"},
		{Type: "message", Status: "completed", Text: scriptmodel.MCPAnswerText},
	}
	_, chained := createMCPSSE(t, srv, reqBody(model, true, `"previous_response_id":"`+r.ID+`","input":[`+approve(true)+`],`+tools))
	sameMCPItems(t, "approved (chained)", chained.Output, answered)
	if got := mcp.Of(chained.Output[0]).ApprovalRequestID; got != reqID {
		t.Errorf("approval_request_id %q, want %q", got, reqID)
	}
	// The same request answered once is answered.
	resp, b := post(t, srv.URL+"/v1/responses", reqBody(model, false, `"previous_response_id":"`+chained.ID+`","input":[`+approve(true)+`],`+tools))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "input[0].approval_request_id") {
		t.Errorf("answering twice: status %d %s, want 400 naming input[0].approval_request_id", resp.StatusCode, b)
	}

	history := `{"role":"user","content":"Say hello through the echo tool."},` + mustJSON(t, r.Output[0]) + `,` + mustJSON(t, r.Output[1])
	stateless := createMCPJSON(t, srv, reqBody(model, false, `"store":false,"input":[`+history+`,`+approve(true)+`],`+tools))
	sameMCPItems(t, "approved (stateless)", stateless.Output, answered)

	denied := createMCPJSON(t, srv, reqBody(model, false, `"previous_response_id":"`+r.ID+`","input":[`+approve(false)+`],`+tools))
	sameMCPItems(t, "denied", denied.Output, []mcpItem{{Type: "message", Status: "completed", Text: scriptmodel.MCPAnswerText}})
}

// TestMCPRequestErrorsE2E: a request cannot name an unknown server or its own URL,
// and a server that is down gives a listing with an error, not a failed response.
func TestMCPRequestErrorsE2E(t *testing.T) {
	srv, _, _ := newMCPHearth(t, mcp.Server{Label: "down", URL: "http://127.0.0.1:1/mcp"})
	model := scriptmodel.MCPModel
	for _, tc := range []struct{ tools, param string }{
		{`"tools":[{"type":"mcp","server_label":"nope","require_approval":"never"}]`, "tools[0].server_label"},
		{`"tools":[{"type":"mcp","server_label":"x","server_url":"https://example.com/mcp"}]`, "tools[0].server_url"},
		{`"tools":[{"type":"mcp","server_label":"x","server_url":"http://127.0.0.1:9/mcp"}]`, "tools[0].server_url"},
		{`"tools":[{"type":"mcp","server_label":"down"}],"tool_choice":{"type":"mcp","server_label":"other"}`, "tool_choice.server_label"},
	} {
		resp, b := post(t, srv.URL+"/v1/responses", reqBody(model, false, mcpAsk+","+tc.tools))
		var e struct {
			Error struct{ Param string }
		}
		json.Unmarshal(b, &e)
		if resp.StatusCode != http.StatusBadRequest || e.Error.Param != tc.param {
			t.Errorf("%s: status %d %s, want 400 naming %s", tc.tools, resp.StatusCode, b, tc.param)
		}
	}

	r := createMCPJSON(t, srv, reqBody(model, false, mcpAsk+`,"tools":[{"type":"mcp","server_label":"down","require_approval":"never"}]`))
	if len(r.Output) == 0 || r.Output[0].Type != mcp.ItemMCPListTools || mcp.Of(r.Output[0]).Error == "" {
		t.Fatalf("a server that is down: output %+v, want an mcp_list_tools item with an error first", mcpItems(r.Output))
	}
	if r.Status != hearth.StatusCompleted {
		t.Errorf("a server that is down: status %s, want completed (the model goes on without its tools)", r.Status)
	}
}

// mcpStream reads the events of a stream one at a time, as they come.
type mcpStream struct{ sc *bufio.Scanner }

func (r *mcpStream) next() (map[string]any, bool) {
	for r.sc.Scan() {
		data, ok := strings.CutPrefix(r.sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var e map[string]any
		if json.Unmarshal([]byte(data), &e) == nil {
			return e, true
		}
	}
	return nil, false
}

// until reads events up to one of type typ and returns all read.
func (r *mcpStream) until(t *testing.T, typ string) []map[string]any {
	t.Helper()
	var seen []map[string]any
	for {
		e, ok := r.next()
		if !ok {
			t.Fatalf("the stream ended before %s; events %q", typ, eventTypes(seen))
		}
		seen = append(seen, e)
		if e["type"] == typ {
			return seen
		}
	}
}

// childPID is the process id of the test process's child whose command line holds
// every one of words.
func childPID(t *testing.T, words ...string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold blanks, so read after its ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		all := true
		for _, w := range words {
			all = all && strings.Contains(string(cmd), w)
		}
		if all {
			var pid int
			fmt.Sscanf(filepath.Base(d), "%d", &pid)
			return pid
		}
	}
	t.Fatalf("no child process with %q", words)
	return 0
}

// TestMCPFaultsE2E: the stdio server killed while a call runs gives an mcp_call with
// an error and the model goes on to answer; the next response starts the server again.
// A client that leaves while a call runs ends the response at once, incomplete.
func TestMCPFaultsE2E(t *testing.T) {
	node, script := everythingServer(t)
	srv, _, _ := newMCPHearth(t, mcp.Server{Label: "everything", Command: node, Args: []string{script, "stdio"}})
	slow := `"tools":[{"type":"mcp","server_label":"everything","allowed_tools":["trigger-long-running-operation"],"require_approval":"never"}]`

	resp, err := http.Post(srv.URL+"/v1/responses", "application/json",
		strings.NewReader(reqBody(scriptmodel.MCPSlowModel, true, `"input":"Run the long operation.",`+slow)))
	if err != nil {
		t.Fatal(err)
	}
	r := &mcpStream{bufio.NewScanner(resp.Body)}
	events := r.until(t, "response.mcp_call_arguments.done")
	time.Sleep(300 * time.Millisecond) // the call is on its way to the server
	pid := childPID(t, "server-everything", "stdio")
	started := time.Now()
	if err := syscallKill(pid); err != nil {
		t.Fatal(err)
	}
	for {
		e, ok := r.next()
		if !ok {
			break
		}
		events = append(events, e)
	}
	resp.Body.Close()
	if took := time.Since(started); took > 10*time.Second {
		t.Errorf("the response took %s after the server died", took)
	}
	schematest.MCP.ValidateEvents(t, events)
	if err := schematest.CheckLifecycle(events); err != nil {
		t.Fatalf("lifecycle: %v", err)
	}
	var final hearth.Response
	b, _ := json.Marshal(events[len(events)-1]["response"])
	json.Unmarshal(b, &final)
	if final.Status != hearth.StatusCompleted || len(final.Output) != 3 || final.Output[1].Type != mcp.ItemMCPCall ||
		mcp.Of(final.Output[1]).Error == "" || final.Output[1].Status != hearth.StatusFailed ||
		final.Output[2].Text(hearth.PartOutputText) != scriptmodel.MCPSlowAnswerText {
		t.Fatalf("after the server died: status %s, output %+v", final.Status, mcpItems(final.Output))
	}
	if !strings.Contains(strings.Join(eventTypes(events), " "), "response.mcp_call.failed") {
		t.Errorf("no response.mcp_call.failed in %q", eventTypes(events))
	}
	t.Logf("the killed call's error: %s", mcp.Of(final.Output[1]).Error)

	// The next response starts the server again.
	again := createMCPJSON(t, srv, reqBody(scriptmodel.MCPModel, false, mcpAsk+","+mcpTool("everything", "never")))
	if len(again.Output) != 3 || again.Output[1].Output.Text != mcpEchoOutput || mcp.Of(again.Output[1]).Error != "" {
		t.Fatalf("after a restart: %+v", mcpItems(again.Output))
	}
	if next := childPID(t, "server-everything", "stdio"); next == pid {
		t.Errorf("the server runs as the killed process %d", pid)
	}

	// The client leaves while the call runs: the response stops there.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/responses",
		strings.NewReader(reqBody(scriptmodel.MCPSlowModel, true, `"input":"Run the long operation.",`+slow)))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r = &mcpStream{bufio.NewScanner(resp.Body)}
	events = r.until(t, "response.mcp_call_arguments.done")
	id := events[0]["response"].(map[string]any)["id"].(string)
	cancel()
	resp.Body.Close()
	left := time.Now()
	var stored hearth.Response
	for {
		gr, err := http.Get(srv.URL + "/v1/responses/" + id)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(gr.Body)
		gr.Body.Close()
		json.Unmarshal(b, &stored)
		if stored.Status != hearth.StatusInProgress || time.Since(left) > 15*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if stored.Status != hearth.StatusIncomplete || stored.IncompleteDetails == nil || stored.IncompleteDetails.Reason != engine.IncompleteClientDisconnected ||
		len(stored.Output) != 2 || stored.Output[1].Type != mcp.ItemMCPCall || stored.Output[1].Status != hearth.StatusIncomplete {
		t.Fatalf("after the client left: status %s %+v, output %+v", stored.Status, stored.IncompleteDetails, mcpItems(stored.Output))
	}
	if took := time.Since(left); took > 5*time.Second {
		t.Errorf("the response ran %s after the client left; the call runs 20 s", took)
	}
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// TestMCPKeyLimitsE2E: a server the operator limited to some keys is a 403 naming the
// tool for other keys.
func TestMCPKeyLimitsE2E(t *testing.T) {
	mgr, err := mcp.New(mcp.Options{Servers: []mcp.Server{{Label: "down", URL: "http://127.0.0.1:1/mcp", Keys: []string{"config-1"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mgr.Close() })
	eng := engine.New(testenv.Runtime(t).Seam(), engine.DefaultFormats(), nil)
	eng.RegisterHosted(mcp.NewKind(mgr, nil))
	srv := httptest.NewServer(wire.New(wire.Config{Runtime: testenv.Runtime(t), Engine: eng,
		APIKeys: []string{"key-one", "key-two"}}))
	t.Cleanup(srv.Close)
	body := reqBody(scriptmodel.MCPModel, false, mcpAsk+`,"tools":[{"type":"function","name":"f"},{"type":"mcp","server_label":"down","require_approval":"never"}]`)
	for key, want := range map[string]int{"key-one": http.StatusOK, "key-two": http.StatusForbidden} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: status %d %s, want %d", key, resp.StatusCode, b, want)
		}
		if want == http.StatusForbidden && !strings.Contains(string(b), `"param":"tools[1].server_label"`) {
			t.Errorf("%s: %s, want the error to name tools[1].server_label", key, b)
		}
	}
}
