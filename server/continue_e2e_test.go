package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// continueDir holds the node project of the Continue CLI test (a pinned
// @continuedev/cli), relative to this package's directory.
const continueDir = "../testdata/continue"

const (
	continueKey   = "continue-test-key"
	continueModel = "hearth-script-continue"
	// continueName is the model name Continue's config gives, which an alias serves
	// with continueModel: a shared configuration that names an OpenAI model.
	continueName = "gpt-4o"
)

// continueConfig is the config.yaml that points Continue at hearth, as
// docs/clients.md shows it: an OpenAI-compatible provider whose apiBase is hearth's
// /v1, with tool use declared (Continue otherwise guesses it from the model's name).
const continueConfig = `name: hearth
version: 1.0.0
schema: v1
models:
  - name: hearth
    provider: openai
    model: %s
    apiBase: %s
    apiKey: %s
    roles: [chat, edit, apply]
    capabilities: [tool_use]
`

// TestContinueCLIE2E runs Continue's CLI (the pinned npm @continuedev/cli, headless
// `cn -p`) against hearth's Chat Completions door with a script model: the model calls
// Continue's Bash tool with a command whose output only a shell can know, Continue
// runs it and sends the output back as a tool message, the model answers, and
// Continue prints the answer. The test checks the answer printed, that the command's
// output reached the model's input, the tool call hearth streamed, and that every
// request was authenticated with the configured key and answered 200.
//
// It needs Node.js and npm (npm ci fetches the package the first time); without them
// it fails, unless HEARTH_SKIP_NODE=1, which skips it.
func TestContinueCLIE2E(t *testing.T) {
	node, npm := lookNode(t)
	dir, err := filepath.Abs(continueDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	npmCI(ctx, t, npm, dir)

	spec := scriptmodel.Spec{Template: scriptmodel.Template, Stop: scriptmodel.Stop, Scripts: []scriptmodel.Script{
		{Entry: scriptmodel.EntryAssistant, Text: "<think>The user wants the proof command run.</think>" +
			scriptmodel.HermesCall("Bash", `{"command": "`+claudeCodeCommand+`"}`)},
		{Entry: scriptmodel.EntryAnswer, Text: "<think>The command ran.</think>" + claudeCodeAnswer},
	}}
	// Continue's system prompt and tools: Codex's window, and one head (see
	// scriptmodel.Catalog's codex).
	spec.ContextLength, spec.Heads = scriptmodel.CodexContext, 1
	mctx, mcancel := context.WithTimeout(ctx, time.Minute)
	m, err := scriptmodel.Create(mctx, testenv.Runtime(t).Client, continueModel+":latest", spec)
	mcancel()
	if err != nil {
		t.Fatal(err)
	}

	rec := &recorder{}
	srv := newRecordedHearth(t, rec, continueKey, withAliases(t, continueName+"="+continueModel))
	home, work := t.TempDir(), t.TempDir()
	config := filepath.Join(home, "hearth.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(continueConfig, continueName, srv.URL+"/v1", continueKey)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "node_modules/@continuedev/cli/dist/cn.js"),
		"-p", "Run the proof command and tell me what it printed.", "--config", config, "--auto", "--silent")
	cmd.Dir = work
	cmd.Env = append(os.Environ(),
		"HOME="+home,
		"CONTINUE_GLOBAL_DIR="+filepath.Join(home, ".continue"),
		// No telemetry or metrics: loopback only.
		"CONTINUE_CLI_ENABLE_TELEMETRY=0", "CONTINUE_METRICS_ENABLED=0",
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
	)
	printed, xs := runAgent(t, ctx, cmd, rec, "cn -p")
	if got := printed; got != claudeCodeAnswer {
		t.Errorf("cn -p printed %q, want the model's answer %q", got, claudeCodeAnswer)
	}

	var turns []*exchange
	for i, x := range xs {
		if x.path != "/v1/chat/completions" {
			t.Errorf("request %d: %s %s, want Chat Completions", i, x.method, x.path)
			continue
		}
		if got := x.header.Get("Authorization"); got != "Bearer "+continueKey {
			t.Errorf("request %d: Authorization %q, want the configured apiKey", i, got)
		}
		if x.status != 200 {
			t.Errorf("request %d: status %d: %s", i, x.status, x.response)
		}
		turns = append(turns, x)
	}
	if len(turns) != 2 {
		t.Fatalf("Continue sent %d chat completions, want 2 (a turn that calls Bash, a turn that answers)", len(turns))
	}

	first := readChatTurn(t, turns[0])
	if first.toolName != "Bash" || compactJSON(t, first.toolArgs) != `{"command":"`+claudeCodeCommand+`"}` {
		t.Errorf("turn 1: tool call %s %s, want Bash with the script's command", first.toolName, first.toolArgs)
	}
	for i, tr := range []*exchange{turns[0], turns[1]} {
		if got := bodyModel(tr.request); got != continueName {
			t.Errorf("request %d: model %q, want the config's %q", i, got, continueName)
		}
	}
	if first.model != continueModel {
		t.Errorf("turn 1: model %q, want the model the alias served, %q", first.model, continueModel)
	}
	if first.finish != "tool_calls" {
		t.Errorf("turn 1: finish_reason %q, want tool_calls", first.finish)
	}
	if got, want := first.completionTokens, m.EvalCount(scriptmodel.EntryAssistant); first.usage && got != want {
		t.Errorf("turn 1: completion_tokens %d, want %d", got, want)
	}

	// Continue ran the command and sent what it printed back as the call's tool
	// message.
	var req2 struct {
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(turns[1].request, &req2); err != nil {
		t.Fatal(err)
	}
	ran := false
	for _, msg := range req2.Messages {
		if msg.Role == "tool" && msg.ToolCallID == first.toolID && strings.Contains(string(msg.Content), claudeCodeOutput) {
			ran = true
		}
	}
	if !ran {
		t.Fatalf("turn 2 has no tool message for %s holding %q", first.toolID, claudeCodeOutput)
	}
	second := readChatTurn(t, turns[1])
	if second.text != claudeCodeAnswer || second.finish != "stop" {
		t.Errorf("turn 2: %q, finish_reason %q; want %q, stop", second.text, second.finish, claudeCodeAnswer)
	}
}

// chatTurn is what a Chat Completions answer held, streamed or not.
type chatTurn struct {
	model, text, finish        string
	toolID, toolName, toolArgs string
	usage                      bool
	completionTokens           int
}

// readChatTurn reads a Chat Completions answer: one chat.completion, or a stream of
// chunks whose deltas are put together.
func readChatTurn(t *testing.T, x *exchange) chatTurn {
	t.Helper()
	type call struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type body struct {
		Model   string `json:"model"`
		Choices []struct {
			Message, Delta struct {
				Content   *string `json:"content"`
				ToolCalls []call  `json:"tool_calls"`
			}
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	var tr chatTurn
	var args strings.Builder
	take := func(b body, streamed bool) {
		tr.model = b.Model
		if b.Usage != nil {
			tr.usage, tr.completionTokens = true, b.Usage.CompletionTokens
		}
		for _, c := range b.Choices {
			m := c.Message
			if streamed {
				m = c.Delta
			}
			if m.Content != nil {
				tr.text += *m.Content
			}
			for _, tc := range m.ToolCalls {
				if tc.ID != "" {
					tr.toolID = tc.ID
				}
				tr.toolName += tc.Function.Name
				args.WriteString(tc.Function.Arguments)
			}
			if c.FinishReason != nil {
				tr.finish = *c.FinishReason
			}
		}
	}
	if !bytes.HasPrefix(bytes.TrimSpace(x.response), []byte("data:")) {
		var b body
		if err := json.Unmarshal(x.response, &b); err != nil {
			t.Fatalf("%s: %v", x.response, err)
		}
		take(b, false)
	} else {
		sc := bufio.NewScanner(bytes.NewReader(x.response))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			var b body
			if err := json.Unmarshal([]byte(data), &b); err != nil {
				t.Fatalf("chunk %s: %v", data, err)
			}
			take(b, true)
		}
	}
	tr.toolArgs = args.String()
	return tr
}
