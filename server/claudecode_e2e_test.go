package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// claudeCodeDir holds the node project of the Claude Code test (a pinned
// @anthropic-ai/claude-code), relative to this package's directory.
const claudeCodeDir = "../testdata/claude-code"

// claudeCodeKey is the API key hearth requires in the Claude Code test; Claude Code
// sends it as x-api-key.
const claudeCodeKey = "claude-code-test-key"

// The Claude Code test's script model: it calls Claude Code's Bash tool with a command
// whose output only a shell can know (the model writes $((6*7)), the shell prints 42),
// then, given the tool's result, answers.
const (
	claudeCodeModel   = "hearth-script-claude-code"
	claudeCodeCommand = "echo hearth-$((6*7))"
	claudeCodeOutput  = "hearth-42"
	claudeCodeAnswer  = "The command printed hearth-42."
)

// Claude Code's model names in the test, as a user would leave them: its main model
// and the small fast model it uses for side requests. The aliases serve both.
const (
	claudeCodeMain  = "claude-sonnet-4-6"
	claudeCodeSmall = "claude-haiku-4-5"
)

var claudeCodeFull = flag.Bool("hearth.claude-code-full", false,
	"run the Claude Code test with Claude Code's own system prompt and every default tool: a first turn of ~40k prompt tokens, minutes on a CPU")

// claudeCodeSystem is the system prompt of the Claude Code test (--system-prompt): its
// own is ~30 KB, whose prefill on a CPU would be most of the test's time.
const claudeCodeSystem = "You are a coding agent on the user's machine. Run commands with the Bash tool."

// TestClaudeCodeE2E runs Claude Code (the pinned npm @anthropic-ai/claude-code, `claude
// -p`) against hearth's Anthropic Messages door with a script model served under
// Claude Code's own model names by aliases (claude-haiku-*, then claude-*). The model
// calls Bash; Claude Code runs the command and sends its output back as a tool_result;
// the model answers, and Claude Code prints the answer. The test checks the answer
// printed, that the command's output (which only the shell could compute) reached the
// model's input, the tool_use hearth streamed, and that every request was
// authenticated by x-api-key and answered 200.
//
// By default Claude Code runs with a short system prompt and only its Bash tool
// (--system-prompt, --tools Bash), which keeps the first turn near 3k prompt tokens.
// -hearth.claude-code-full (or HEARTH_CLAUDE_CODE=full) runs it as installed: its own
// system prompt and every default tool, the deferred ones through ToolSearch.
//
// It needs Node.js and npm (npm ci fetches the package, whose postinstall puts the
// native claude binary in place); without them it fails, unless HEARTH_SKIP_NODE=1,
// which skips it.
func TestClaudeCodeE2E(t *testing.T) {
	full := *claudeCodeFull || os.Getenv("HEARTH_CLAUDE_CODE") == "full"
	node, npm := lookNode(t)
	dir, err := filepath.Abs(claudeCodeDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	npmCI(ctx, t, npm, dir)
	// The package's install script puts the native binary over the bin/claude.exe
	// placeholder; where npm did not run it, the package's wrapper finds the binary.
	claude, pre := filepath.Join(dir, "node_modules/@anthropic-ai/claude-code/bin/claude.exe"), []string(nil)
	if fi, err := os.Stat(claude); err != nil || fi.Size() < 1<<20 {
		claude, pre = node, []string{filepath.Join(dir, "node_modules/@anthropic-ai/claude-code/cli-wrapper.cjs")}
	}

	// Claude Code asks for thinking (adaptive, effort high), which turns the template's
	// thinking on: the output starts in reasoning unless it opens and closes it, so
	// both turns think briefly first.
	spec := scriptmodel.Spec{Template: scriptmodel.Template, Stop: scriptmodel.Stop, Scripts: []scriptmodel.Script{
		{Entry: scriptmodel.EntryAssistant, Text: "<think>The user wants the proof command run.</think>" +
			scriptmodel.HermesCall("Bash", `{"command": "`+claudeCodeCommand+`", "description": "Print the proof"}`)},
		{Entry: scriptmodel.EntryAnswer, Text: "<think>The command ran.</think>" + claudeCodeAnswer},
	}}
	// Claude Code's system prompt and tools are long: Codex's window, and one head
	// (see scriptmodel.Catalog's codex).
	spec.ContextLength, spec.Heads = scriptmodel.CodexContext, 1
	if full {
		spec.ContextLength = 2 * scriptmodel.CodexContext
	}
	mctx, mcancel := context.WithTimeout(ctx, time.Minute)
	m, err := scriptmodel.Create(mctx, testenv.Runtime(t).Client, claudeCodeModel+":latest", spec)
	mcancel()
	if err != nil {
		t.Fatal(err)
	}

	rec := &recorder{}
	srv := newRecordedHearth(t, rec, claudeCodeKey, withAliases(t,
		"claude-haiku-*="+scriptmodel.PlainModel, "claude-*="+claudeCodeModel))
	home, work := t.TempDir(), t.TempDir()
	args := []string{"-p", "Run the proof command and tell me what it printed.",
		"--model", claudeCodeMain, "--dangerously-skip-permissions"}
	if !full {
		args = append(args, "--tools", "Bash", "--system-prompt", claudeCodeSystem)
	}
	cmd := exec.CommandContext(ctx, claude, append(pre, args...)...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"HOME="+home,
		"CLAUDE_CONFIG_DIR="+filepath.Join(home, ".claude"),
		"ANTHROPIC_BASE_URL="+srv.URL,
		"ANTHROPIC_API_KEY="+claudeCodeKey,
		"ANTHROPIC_SMALL_FAST_MODEL="+claudeCodeSmall,
		"ANTHROPIC_DEFAULT_HAIKU_MODEL="+claudeCodeSmall,
		// Root may skip permissions only in a sandbox; the test is one.
		"IS_SANDBOX=1",
		// No update checks, telemetry or error reports: loopback only.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		// Claude Code asks for 32000 output tokens, which hearth reserves in the
		// context window; the script model's answers are short.
		"CLAUDE_CODE_MAX_OUTPUT_TOKENS=4096",
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
	)
	printed, xs := runAgent(t, ctx, cmd, rec, "claude -p")
	if got := printed; got != claudeCodeAnswer {
		t.Errorf("claude -p printed %q, want the model's answer %q", got, claudeCodeAnswer)
	}

	// Every request: the Messages door, x-api-key, answered 200.
	var main []*exchange
	for i, x := range xs {
		if x.path != "/v1/messages" && x.path != "/v1/messages/count_tokens" {
			t.Errorf("request %d: %s %s, want the Messages API", i, x.method, x.path)
		}
		if got := x.header.Get("x-api-key"); got != claudeCodeKey {
			t.Errorf("request %d: x-api-key %q, want the key of ANTHROPIC_API_KEY", i, got)
		}
		if x.status != 200 {
			t.Errorf("request %d: status %d: %s", i, x.status, x.response)
		}
		if x.path == "/v1/messages" && bodyModel(x.request) == claudeCodeMain {
			main = append(main, x)
		}
	}
	if len(main) != 2 {
		t.Fatalf("Claude Code sent %d requests for %s, want 2 (a turn that calls Bash, a turn that answers)", len(main), claudeCodeMain)
	}

	// Turn 1: the model's call, streamed as a tool_use block whose input is the
	// script's arguments, ending with stop_reason tool_use.
	first := readAnthropicTurn(t, main[0])
	if first.toolName != "Bash" || compactJSON(t, first.toolInput) != `{"command":"`+claudeCodeCommand+`","description":"Print the proof"}` {
		t.Errorf("turn 1: tool_use %s %s, want Bash with the script's command", first.toolName, first.toolInput)
	}
	if first.stopReason != "tool_use" {
		t.Errorf("turn 1: stop_reason %q, want tool_use", first.stopReason)
	}
	if got, want := first.outputTokens, m.EvalCount(scriptmodel.EntryAssistant); got != want {
		t.Errorf("turn 1: output_tokens %d, want %d", got, want)
	}

	// Turn 2: Claude Code ran the command and sent what it printed back as the
	// tool_result of the model's call; the model answered.
	var req2 struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(main[1].request, &req2); err != nil {
		t.Fatal(err)
	}
	last := req2.Messages[len(req2.Messages)-1]
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	json.Unmarshal(last.Content, &blocks)
	ran := false
	for _, b := range blocks {
		if b.Type == "tool_result" && b.ToolUseID == first.toolID && !b.IsError && strings.Contains(string(b.Content), claudeCodeOutput) {
			ran = true
		}
	}
	if last.Role != "user" || !ran {
		t.Fatalf("turn 2 ends with %s %s, want the tool_result of %s holding %q", last.Role, last.Content, first.toolID, claudeCodeOutput)
	}
	second := readAnthropicTurn(t, main[1])
	if second.text != claudeCodeAnswer || second.stopReason != "end_turn" {
		t.Errorf("turn 2: %q, stop_reason %q; want %q, end_turn", second.text, second.stopReason, claudeCodeAnswer)
	}
}

// bodyModel is the model a request body names.
func bodyModel(body []byte) string {
	var v struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &v)
	return v.Model
}

// anthropicTurn is what a Messages answer held, streamed or not.
type anthropicTurn struct {
	model, text, stopReason     string
	toolID, toolName, toolInput string
	outputTokens                int
}

// readAnthropicTurn reads a Messages answer: a JSON message, or a stream of
// Anthropic's events, whose content blocks are put together.
func readAnthropicTurn(t *testing.T, x *exchange) anthropicTurn {
	t.Helper()
	var tr anthropicTurn
	type block struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	type message struct {
		Model      string  `json:"model"`
		Content    []block `json:"content"`
		StopReason string  `json:"stop_reason"`
		Usage      struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	take := func(b block, input string) {
		switch b.Type {
		case "text":
			tr.text += b.Text
		case "tool_use":
			tr.toolID, tr.toolName, tr.toolInput = b.ID, b.Name, input
		}
	}
	if !bytes.HasPrefix(bytes.TrimSpace(x.response), []byte("event:")) {
		var m message
		if err := json.Unmarshal(x.response, &m); err != nil {
			t.Fatalf("%s: %v", x.response, err)
		}
		tr.model, tr.stopReason, tr.outputTokens = m.Model, m.StopReason, m.Usage.OutputTokens
		for _, b := range m.Content {
			take(b, string(b.Input))
		}
		return tr
	}
	var cur *block
	var input strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(x.response))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e struct {
			Type         string  `json:"type"`
			Message      message `json:"message"`
			ContentBlock block   `json:"content_block"`
			Delta        struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		switch e.Type {
		case "message_start":
			tr.model = e.Message.Model
		case "content_block_start":
			b := e.ContentBlock
			cur = &b
			input.Reset()
		case "content_block_delta":
			if cur == nil {
				t.Fatalf("a delta outside a content block: %s", data)
			}
			cur.Text += e.Delta.Text
			input.WriteString(e.Delta.PartialJSON)
		case "content_block_stop":
			if cur == nil {
				t.Fatalf("content_block_stop outside a content block")
			}
			take(*cur, input.String())
			cur = nil
		case "message_delta":
			tr.stopReason, tr.outputTokens = e.Delta.StopReason, e.Usage.OutputTokens
		case "error":
			t.Fatalf("error event: %s", data)
		}
	}
	return tr
}

// runAgent runs an agent's command (name in messages) against hearth, logs its output
// and every request rec recorded, and fails the test unless it finished in time and
// exited 0; it returns what the agent printed, trimmed, and the requests.
func runAgent(t *testing.T, ctx context.Context, cmd *exec.Cmd, rec *recorder, name string) (string, []*exchange) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s took %v\nstdout:\n%s\nstderr:\n%s", name, time.Since(start).Round(time.Millisecond), &stdout, &stderr)
	xs := rec.all()
	for i, x := range xs {
		t.Logf("request %d: %s %s model %s -> %d in %v", i, x.method, x.path, bodyModel(x.request), x.status, x.took.Round(time.Millisecond))
		if testing.Verbose() {
			t.Logf("answer %d:\n%s", i, x.response)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish: %v", name, ctx.Err())
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return strings.TrimSpace(stdout.String()), xs
}
