package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hearth"
	"hearth/cmd/hearth/wire"
	"hearth/engine/ollama/testenv"
	"hearth/internal/schematest"
	"hearth/internal/seal"
	"hearth/scriptmodel"
	"hearth/storage/sqlite"
)

// clientsDir holds the node project of the Codex CLI and Agents SDK tests (pinned
// @openai/codex, @openai/agents and openai), relative to this package's directory.
const clientsDir = "../testdata/codex"

var codexFull = flag.Bool("hearth.codex-full", false,
	"run the Codex CLI tests with Codex's own instructions and every default tool: a first turn of ~36k prompt tokens, minutes on a CPU")

// codexConfig is the config.toml that points Codex CLI at hearth, as docs/clients.md
// shows it. The [features] and [analytics] lines and check_for_update_on_startup keep a
// test run on loopback: without plugins = false Codex resolves github.com,
// api.github.com and chatgpt.com at start (seen with strace), and analytics and the
// update check would go out too. Its verbs are the model, more root keys, the
// base_url and more features.
const codexConfig = `model = %q
model_provider = "hearth"
check_for_update_on_startup = false
%s
[model_providers.hearth]
name = "hearth"
base_url = %q
wire_api = "responses"
env_key = "HEARTH_API_KEY"

[features]
plugins = false
%s
[analytics]
enabled = false
`

// TestCodexCLIE2E runs Codex CLI (the pinned npm @openai/codex) against hearth with a
// script model: `codex exec` sends its real first request, the model calls Codex's
// shell tool exec_command, Codex runs the command and sends the whole history back
// (store: false), and the model answers. The test checks the file the command wrote,
// the answer Codex printed, and both exchanges: the items and token counts of each
// turn, schema-valid events in spec order, and that the second turn's prompt began
// with the whole first one (the runtime's KV cache reused it).
//
// By default Codex gets a model catalog entry (testdata/codex/model-catalog.json:
// short base instructions, the model's context window) and no multi-agent or goal
// tools, which keeps the first turn near 8k prompt tokens. -hearth.codex-full (or
// HEARTH_CODEX=full) runs Codex as installed: its own 17k-character instructions and
// all its tools, the namespace tool multi_agent_v1 included, about 36k tokens.
//
// It needs Node.js and npm (npm ci fetches the packages the first time); without them
// it fails, unless HEARTH_SKIP_NODE=1, which skips it.
func TestCodexCLIE2E(t *testing.T) {
	full := *codexFull || os.Getenv("HEARTH_CODEX") == "full"
	run := runCodex(t, "hearth-script-codex", full, "Write the proof file.")
	m := testenv.Model(t, scriptmodel.CodexModel)
	work, stdout, xs := run.work, run.stdout, run.xs

	// What Codex did: ran the model's command and printed the model's answer.
	proof, err := os.ReadFile(filepath.Join(work, "proof.txt"))
	if err != nil {
		t.Fatalf("the model's command did not run: %v", err)
	}
	if got, want := string(proof), "hearth-codex\n"; got != want {
		t.Errorf("proof.txt = %q, want %q", got, want)
	}
	answer := m.Text(scriptmodel.EntryAnswer)
	if got := strings.TrimSpace(stdout); got != answer {
		t.Errorf("codex exec printed %q, want the model's answer %q", got, answer)
	}

	// What went over the wire: two streamed turns and nothing else.
	if len(xs) != 2 {
		t.Fatalf("Codex made %d requests, want 2 (a turn that calls the tool, a turn that answers)", len(xs))
	}
	first, second := readTurn(t, 0, xs[0]), readTurn(t, 1, xs[1])
	for i, tr := range []turn{first, second} {
		// Codex keeps the history itself and sends all of it every turn.
		if !tr.req.Stream || tr.req.StoreEnabled() {
			t.Errorf("request %d: stream %v, store %v; Codex streams and stores nothing", i, tr.req.Stream, tr.req.StoreEnabled())
		}
	}

	reasoning, callText := splitThink(t, m.Text(scriptmodel.EntryAssistant))
	calls := parseToolCalls(t, callText)
	if out := first.resp.Output; len(out) != 2 || out[0].Type != hearth.ItemReasoning || out[1].Type != hearth.ItemFunctionCall {
		t.Fatalf("turn 1 output %s, want reasoning then one function_call", itemTypes(out))
	}
	if got := reasoningOf(first.resp.Output[0]); got != reasoning {
		t.Errorf("turn 1 reasoning %q, want %q", got, reasoning)
	}
	call := first.resp.Output[1]
	if call.Name != calls[0].Name || compactJSON(t, call.Arguments) != calls[0].Arguments {
		t.Errorf("turn 1 call %s(%s), want %s(%s)", call.Name, call.Arguments, calls[0].Name, calls[0].Arguments)
	}
	if got, want := first.resp.Usage.OutputTokens, m.EvalCount(scriptmodel.EntryAssistant); got != want {
		t.Errorf("turn 1 output_tokens %d, want %d", got, want)
	}

	// Codex sends the whole history back: turn 1's input, its output, the command's
	// result.
	in1, in2 := first.req.Input, second.req.Input
	if len(in2) != len(in1)+3 {
		t.Fatalf("turn 2 input %s, want turn 1's %d items, reasoning, the call and its output", itemTypes(in2), len(in1))
	}
	back := in2[len(in1):]
	if back[0].Type != hearth.ItemReasoning || back[1].Type != hearth.ItemFunctionCall || back[2].Type != hearth.ItemFunctionCallOutput {
		t.Fatalf("turn 2 input ends with %s, want reasoning, function_call, function_call_output", itemTypes(back))
	}
	// Codex returns the sealed reasoning hearth gave it (include:
	// reasoning.encrypted_content), which hearth opens to render the earlier thinking.
	if enc := first.resp.Output[0].EncryptedContent; enc == "" || back[0].EncryptedContent != enc {
		t.Errorf("turn 2 sent back reasoning with encrypted_content %q, want turn 1's %q", back[0].EncryptedContent, enc)
	}
	if back[1].CallID != call.CallID || back[2].CallID != call.CallID {
		t.Errorf("turn 2 call_ids %q/%q, want turn 1's %q", back[1].CallID, back[2].CallID, call.CallID)
	}
	if !strings.Contains(back[2].Output.Text, "exited with code 0") {
		t.Errorf("turn 2 tool output %q does not report a successful command", back[2].Output.Text)
	}

	if out := second.resp.Output; len(out) != 1 || out[0].Type != hearth.ItemMessage || out[0].Text() != answer {
		t.Errorf("turn 2 output %s, want one message %q", itemTypes(out), answer)
	}
	if got, want := second.resp.Usage.OutputTokens, m.EvalCount(scriptmodel.EntryAnswer); got != want {
		t.Errorf("turn 2 output_tokens %d, want %d", got, want)
	}

	// Prefix stability: hearth rendered turn 2 as turn 1's prompt plus the new items,
	// so the runtime kept all of turn 1's prompt (it always re-evaluates the last
	// token) and evaluated only the tail, which is also why turn 2 is faster.
	u1, u2 := first.resp.Usage, second.resp.Usage
	t.Logf("turn 1: %d input tokens in %v; turn 2: %d input tokens, %d cached, in %v",
		u1.InputTokens, xs[0].took.Round(time.Millisecond), u2.InputTokens, u2.InputTokensDetails.CachedTokens, xs[1].took.Round(time.Millisecond))
	if c := u2.InputTokensDetails.CachedTokens; c < u1.InputTokens-1 || c >= u2.InputTokens {
		t.Errorf("turn 2: %d of %d input tokens cached; want at least turn 1's whole prompt (%d-1)", c, u2.InputTokens, u1.InputTokens)
	}
	if xs[1].took >= xs[0].took {
		t.Errorf("turn 2 (%v) took as long as turn 1 (%v): the runtime re-evaluated the prompt", xs[1].took, xs[0].took)
	}
}

// TestCodexApplyPatchE2E: Codex offers its freeform apply_patch tool (a custom tool
// whose input a Lark grammar describes) only to models whose metadata asks for it, so
// the model catalog entry of this test's model says apply_patch_tool_type "freeform".
// The model calls apply_patch with a patch that adds a file; hearth enforces the
// grammar while the call is generated and returns a custom_tool_call; Codex applies
// the patch and sends the result back as a custom_tool_call_output; the model answers.
//
// It needs the model catalog (the first turn is then about 8k prompt tokens), so
// -hearth.codex-full, which runs Codex without one, skips it.
func TestCodexApplyPatchE2E(t *testing.T) {
	if *codexFull || os.Getenv("HEARTH_CODEX") == "full" {
		t.Skip("Codex offers apply_patch only with a model catalog entry; -hearth.codex-full runs without one")
	}
	const (
		model  = "hearth-script-codex-patch"
		tool   = "apply_patch"
		patch  = "*** Begin Patch\n*** Add File: patched.txt\n+patched through hearth\n*** End Patch\n"
		answer = "Added patched.txt with apply_patch."
	)
	lookNode(t) // skips, before a model is made, where Node.js is missing and may be
	spec := scriptmodel.CustomToolSpec(tool, patch, answer)
	spec.ContextLength, spec.Heads = scriptmodel.CodexContext, 1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := scriptmodel.Create(ctx, testenv.Runtime(t).Client, model+":latest", spec)
	if err != nil {
		t.Fatal(err)
	}
	run := runCodex(t, model, false, "Add the patched file.")

	got, err := os.ReadFile(filepath.Join(run.work, "patched.txt"))
	if err != nil {
		t.Fatalf("Codex did not apply the model's patch: %v", err)
	}
	if want := "patched through hearth\n"; string(got) != want {
		t.Errorf("patched.txt = %q, want %q", got, want)
	}
	if got := strings.TrimSpace(run.stdout); got != m.Text(scriptmodel.EntryAnswer) {
		t.Errorf("codex exec printed %q, want the model's answer %q", got, m.Text(scriptmodel.EntryAnswer))
	}

	if len(run.xs) != 2 {
		t.Fatalf("Codex made %d requests, want 2 (a turn that patches, a turn that answers)", len(run.xs))
	}
	first, second := readTurn(t, 0, run.xs[0]), readTurn(t, 1, run.xs[1])
	offered := false
	for _, tl := range first.req.Tools {
		if tl.Type == hearth.ToolCustom && tl.Name == tool && tl.Format.Syntax == "lark" {
			offered = true
		}
	}
	if !offered {
		t.Fatalf("Codex did not offer %s as a custom tool with a Lark grammar", tool)
	}
	out := first.resp.Output
	if len(out) != 1 || out[0].Type != hearth.ItemCustomToolCall || out[0].Name != tool || out[0].Input != patch {
		t.Fatalf("turn 1 output %s, want one custom_tool_call of %s with the patch", itemTypes(out), tool)
	}
	if got, want := first.resp.Usage.OutputTokens, m.EvalCount(scriptmodel.EntryAssistant); got != want {
		t.Errorf("turn 1 output_tokens %d, want %d", got, want)
	}
	in1, in2 := first.req.Input, second.req.Input
	if len(in2) != len(in1)+2 {
		t.Fatalf("turn 2 input %s, want turn 1's %d items, the call and its output", itemTypes(in2), len(in1))
	}
	back := in2[len(in1):]
	if back[0].Type != hearth.ItemCustomToolCall || back[0].Input != patch || back[1].Type != hearth.ItemCustomToolCallOutput ||
		back[0].CallID != out[0].CallID || back[1].CallID != out[0].CallID {
		t.Fatalf("turn 2 input ends with %s, want turn 1's custom_tool_call %s and its output", itemTypes(back), out[0].CallID)
	}
	if !strings.Contains(back[1].Output.Text, "patched.txt") {
		t.Errorf("turn 2 tool output %q does not report the added file", back[1].Output.Text)
	}
	if out := second.resp.Output; len(out) != 1 || out[0].Type != hearth.ItemMessage || out[0].Text() != answer {
		t.Errorf("turn 2 output %s, want one message %q", itemTypes(out), answer)
	}
	if u1, u2 := first.resp.Usage, second.resp.Usage; u2.InputTokensDetails.CachedTokens < u1.InputTokens-1 {
		t.Errorf("turn 2: %d of %d input tokens cached; want at least turn 1's whole prompt (%d-1)",
			u2.InputTokensDetails.CachedTokens, u2.InputTokens, u1.InputTokens)
	}
}

// codexRun is one finished `codex exec`: its working directory, what it printed, and
// every exchange it had with hearth.
type codexRun struct {
	work, stdout string
	xs           []*exchange
}

// runCodex serves hearth with a key and runs `codex exec prompt` on model (a script
// model name without its tag, as a user would type it) in a fresh working directory,
// with CODEX_HOME and HOME in temporary directories, no stdin, and Codex's sandbox and
// approvals bypassed (the test is the sandbox). With full false, Codex reads
// testdata/codex/model-catalog.json, which must have an entry for model, and leaves
// out its goal and sub-agent tools.
func runCodex(t *testing.T, model string, full bool, prompt string, opts ...func(*wire.Config)) codexRun {
	t.Helper()
	node, npm := lookNode(t)
	dir, err := filepath.Abs(clientsDir)
	if err != nil {
		t.Fatal(err)
	}
	limit := 5 * time.Minute
	if full {
		limit = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	npmCI(ctx, t, npm, dir)

	rec := &recorder{}
	srv := newRecordedHearth(t, rec, codexKey, opts...)
	home, work := t.TempDir(), t.TempDir()
	codexHome := filepath.Join(home, ".codex")
	if err := os.Mkdir(codexHome, 0o755); err != nil {
		t.Fatal(err)
	}
	rootKeys, features := fmt.Sprintf("model_catalog_json = %q\n", filepath.Join(dir, "model-catalog.json")),
		"goals = false\n\n[agents]\nenabled = false\n"
	if full {
		rootKeys, features = "", ""
	}
	config := fmt.Sprintf(codexConfig, model, rootKeys, srv.URL+"/v1", features)
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "node_modules/@openai/codex/bin/codex.js"),
		"exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", prompt)
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"HOME="+home,
		"CODEX_HOME="+codexHome,
		"HEARTH_API_KEY="+codexKey,
		// A proxy from the environment must not take the loopback connection.
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Run()
	t.Logf("codex exec took %v\nstdout:\n%s\nstderr:\n%s", time.Since(start).Round(time.Millisecond), &stdout, &stderr)
	xs := rec.all()
	for i, x := range xs {
		t.Logf("request %d: %s %s -> %d in %v", i, x.method, x.path, x.status, x.took.Round(time.Millisecond))
	}
	if ctx.Err() != nil {
		t.Fatalf("codex exec did not finish in %v: %v", limit, ctx.Err())
	}
	if err != nil {
		t.Fatalf("codex exec: %v", err)
	}
	for i, x := range xs {
		if got := x.header.Get("Authorization"); got != "Bearer "+codexKey {
			t.Errorf("request %d: Authorization %q, want the key from env_key", i, got)
		}
	}
	return codexRun{work: work, stdout: stdout.String(), xs: xs}
}

// codexKey is the API key hearth requires in the Codex tests, passed to Codex through
// the provider's env_key.
const codexKey = "codex-test-key"

// turn is one request a client sent, as hearth decoded it, and the response hearth
// answered with.
type turn struct {
	req  *hearth.CreateResponseRequest
	resp hearth.Response
}

// readTurn checks one recorded exchange: POST /v1/responses answered 200 with a
// schema-valid response, or, for a streamed request, a stream of schema-valid events
// in the spec's order that ends completed.
func readTurn(t *testing.T, i int, x *exchange) turn {
	t.Helper()
	if x.method != http.MethodPost || x.path != "/v1/responses" || x.status != http.StatusOK {
		t.Fatalf("request %d: %s %s -> %d, want POST /v1/responses -> 200\n%s", i, x.method, x.path, x.status, x.response)
	}
	req, _, err := hearth.DecodeCreateRequest(x.request)
	if err != nil {
		t.Fatalf("request %d: %v", i, err)
	}
	// Custom tools (Codex's apply_patch) are OpenAI's, not in the Open Responses
	// schema: their items and events are checked against OpenAI's definitions.
	doc := schematest.Spec
	for _, tl := range req.Tools {
		if tl.Type == hearth.ToolCustom {
			doc = schematest.CustomTools
		}
	}
	if bytes.Contains(x.response, []byte(`"web_search_call"`)) {
		// A search hearth ran: OpenAI's web search items and events (custom tools too).
		doc = schematest.WebSearch
	}
	body := x.response
	if req.Stream {
		events, err := schematest.ReadSSE(bytes.NewReader(x.response))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		// OpenAI's clients get OpenAI's names for raw reasoning events; the schema
		// and the lifecycle check know the spec's.
		for _, e := range events {
			if typ, ok := strings.CutPrefix(e["type"].(string), "response.reasoning_text."); ok {
				e["type"] = "response.reasoning." + typ
			}
		}
		doc.ValidateEvents(t, events)
		if err := schematest.CheckLifecycle(events); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		last := events[len(events)-1]
		if last["type"] != "response.completed" {
			t.Fatalf("request %d ended with %v, want response.completed", i, last["type"])
		}
		if body, err = json.Marshal(last["response"]); err != nil {
			t.Fatal(err)
		}
	} else {
		var raw any
		if err := json.Unmarshal(body, &raw); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		doc.Validate(t, "ResponseResource", raw)
	}
	var resp hearth.Response
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("request %d: %v", i, err)
	}
	if resp.Status != "completed" {
		t.Fatalf("request %d: status %q, want completed", i, resp.Status)
	}
	return turn{req: req, resp: resp}
}

func itemTypes(items []hearth.Item) string {
	var s []string
	for _, it := range items {
		s = append(s, it.Type)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// reasoningOf is a reasoning item's raw text, else its summary.
func reasoningOf(it hearth.Item) string {
	var s strings.Builder
	for _, p := range it.Content {
		s.WriteString(p.Text)
	}
	if s.Len() == 0 {
		for _, p := range it.Summary {
			s.WriteString(p.Text)
		}
	}
	return s.String()
}

func compactJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Errorf("arguments %q: %v", s, err)
	}
	return b.String()
}

// exchange is one request to hearth and its answer, as the recorder saw them.
type exchange struct {
	method, path string
	header       http.Header
	request      []byte
	status       int
	response     []byte
	took         time.Duration
}

// recorder keeps every exchange a client had with hearth, so a test can check what a
// real client sent and what hearth streamed back to it.
type recorder struct {
	mu sync.Mutex
	xs []*exchange
}

func (r *recorder) all() []*exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*exchange(nil), r.xs...)
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		x := &exchange{method: req.Method, path: req.URL.Path, header: req.Header.Clone(), request: body}
		tw := &teeWriter{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		h.ServeHTTP(tw, req)
		x.took, x.status, x.response = time.Since(start), tw.status, tw.buf.Bytes()
		r.mu.Lock()
		r.xs = append(r.xs, x)
		r.mu.Unlock()
	})
}

// teeWriter copies a response while passing it on, flushes included (SSE).
type teeWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (w *teeWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *teeWriter) Write(b []byte) (int, error) {
	w.buf.Write(b)
	return w.ResponseWriter.Write(b)
}

func (w *teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// newRecordedHearth serves hearth as `hearth serve` does (a database, a sealing key for
// encrypted_content) with one API key, recording every exchange in rec.
func newRecordedHearth(t *testing.T, rec *recorder, key string, opts ...func(*wire.Config)) *httptest.Server {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := wire.Config{Runtime: testenv.Runtime(t), Database: db, Seal: seal.NewKey(), APIKeys: []string{key}}
	for _, o := range opts {
		o(&cfg)
	}
	h := wire.New(cfg)
	srv := httptest.NewServer(rec.wrap(h))
	t.Cleanup(srv.Close)
	return srv
}
