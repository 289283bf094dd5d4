package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// sdkDir holds the node project of the SDK test, relative to this package's directory.
const sdkDir = "../testdata/openai-sdk"

// TestOpenAISDKE2E runs a real client against hearth: the official `openai` npm package
// (pinned in testdata/openai-sdk/package.json) calls responses.create and
// responses.stream(...).finalResponse() on the script models, and test.mjs checks the
// texts, reasoning, function and custom tool calls and usage it gets back. The expected values come from the
// script models, passed to node as JSON in HEARTH_SDK_EXPECT.
//
// It needs Node.js and npm (npm ci fetches the package from the registry the first time).
// Without them it fails, unless HEARTH_SKIP_NODE=1, which skips it.
func TestOpenAISDKE2E(t *testing.T) {
	ctx, node, dir := nodeProject(t, sdkDir)

	srv := newHearthWithDB(t)
	expect, err := json.Marshal(sdkExpectations(t))
	if err != nil {
		t.Fatal(err)
	}
	runNode(ctx, t, node, dir, "test.mjs",
		"OPENAI_BASE_URL="+srv.URL+"/v1",
		"OPENAI_API_KEY=unused",
		"HEARTH_SDK_EXPECT="+string(expect),
	)
}

// runNode runs a script of a node test project with env added, logs its output and
// fails the test if it fails or runs out of time.
// nodeProject prepares the node project at rel (relative to this package): it finds
// Node.js (or skips, with HEARTH_SKIP_NODE=1), runs npm ci when its lock file changed,
// and returns a context bounding the test's node runs, node, and the project's path.
func nodeProject(t *testing.T, rel string) (context.Context, string, string) {
	t.Helper()
	node, npm := lookNode(t)
	dir, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	npmCI(ctx, t, npm, dir)
	return ctx, node, dir
}

func runNode(ctx context.Context, t *testing.T, node, dir, script string, env ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("node %s:\n%s", script, out)
	if ctx.Err() != nil {
		t.Fatalf("node %s did not finish in time: %v", script, ctx.Err())
	}
	if err != nil {
		t.Fatalf("node %s: %v (its output is above)", script, err)
	}
}

// lookNode finds node and npm, failing (or skipping, with HEARTH_SKIP_NODE=1) without them.
func lookNode(t *testing.T) (node, npm string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if err := errors.Join(errNode, errNpm); err != nil {
		if os.Getenv("HEARTH_SKIP_NODE") == "1" {
			t.Skipf("HEARTH_SKIP_NODE=1 and Node.js is missing: %v", err)
		}
		t.Fatalf("this test runs the official openai npm package and needs Node.js (node and npm on PATH): "+
			"install Node.js with npm (openai 7.x declares node >= 22; it also runs on 20), or set HEARTH_SKIP_NODE=1 to skip it: %v", err)
	}
	// An older Node.js fails inside a client with an error far from the cause (a syntax
	// error, a missing function): say what is wrong before running any.
	version, major, err := nodeVersion(node)
	if err != nil || major < minNodeMajor {
		if os.Getenv("HEARTH_SKIP_NODE") == "1" {
			t.Skipf("HEARTH_SKIP_NODE=1 and Node.js %s at %s is older than %d (%v)", version, node, minNodeMajor, err)
		}
		t.Fatalf("Node.js %s at %s is older than %d, which the pinned JavaScript clients need (scripts/node.sh says how to get it), "+
			"or set HEARTH_SKIP_NODE=1 to skip the tests that run them (%v)", version, node, minNodeMajor, err)
	}
	return node, npm
}

// nodeVersion asks node its version: the text (20.20.2) and the major number.
func nodeVersion(node string) (string, int, error) {
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	version := strings.TrimSpace(string(out))
	major, _ := strconv.Atoi(strings.Split(version, ".")[0])
	return version, major, err
}

// minNodeMajor is the oldest Node.js the pinned clients run on (scripts/node.sh's
// min_major).
const minNodeMajor = 20

// npmCI installs the locked packages into dir/node_modules, unless they were installed
// from the same package-lock.json before (a stamp in node_modules records its hash).
func npmCI(ctx context.Context, t *testing.T, npm, dir string) {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(dir, "node_modules", ".hearth-lock-sha256")
	if got, err := os.ReadFile(stamp); err == nil && string(got) == want {
		return
	}
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--no-update-notifier")
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}

type sdkCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// sdkExpectations is what test.mjs sends and expects, all derived from the script
// models: see test.mjs for the shape.
func sdkExpectations(t *testing.T) map[string]any {
	t.Helper()
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer
	plain := testenv.Model(t, scriptmodel.PlainModel)
	think := testenv.Model(t, scriptmodel.ReasoningModel)
	tools := testenv.Model(t, scriptmodel.ToolsModel)

	reasoning, text := splitThink(t, think.Text(a))
	var toolDefs struct {
		Tools []any `json:"tools"`
	}
	if err := json.Unmarshal([]byte("{"+toolsJSON+"}"), &toolDefs); err != nil {
		t.Fatalf("toolsJSON: %v", err)
	}
	_, calls := splitThink(t, tools.Text(a))
	custom := testenv.Model(t, scriptmodel.CustomToolModel)
	var customTools []any
	if err := json.Unmarshal([]byte("["+customTool(grammarFormat("lark", patchGrammar))+"]"), &customTools); err != nil {
		t.Fatalf("custom tool: %v", err)
	}
	return map[string]any{
		"plain":     map[string]any{"model": scriptmodel.PlainModel, "text": plain.Text(a)},
		"reasoning": map[string]any{"model": scriptmodel.ReasoningModel, "reasoning": reasoning, "text": text},
		"tools": map[string]any{
			"model":   scriptmodel.ToolsModel,
			"input":   "weather and time in Paris?",
			"tools":   toolDefs.Tools,
			"calls":   parseToolCalls(t, calls),
			"outputs": []string{"sunny", "12:00"},
			"answer":  tools.Text(ans),
		},
		"custom": map[string]any{
			"model":  scriptmodel.CustomToolModel,
			"input":  "Add a file that says hello.",
			"tools":  customTools,
			"call":   map[string]string{"name": scriptmodel.CustomToolName, "input": scriptmodel.CustomToolInput},
			"output": "Done: hello.txt added.",
			"answer": custom.Text(ans),
		},
	}
}

// splitThink splits a script text into its <think> part and what follows.
func splitThink(t *testing.T, s string) (reasoning, rest string) {
	t.Helper()
	after, ok := strings.CutPrefix(s, "<think>")
	if !ok {
		t.Fatalf("script text %q does not start with <think>", s)
	}
	reasoning, rest, ok = strings.Cut(after, "</think>")
	if !ok {
		t.Fatalf("script text %q has no </think>", s)
	}
	return reasoning, rest
}

// parseToolCalls reads the <tool_call> blocks of a script text.
func parseToolCalls(t *testing.T, s string) []sdkCall {
	t.Helper()
	var calls []sdkCall
	for {
		_, after, ok := strings.Cut(s, "<tool_call>")
		if !ok {
			break
		}
		body, rest, ok := strings.Cut(after, "</tool_call>")
		if !ok {
			t.Fatalf("unterminated <tool_call> in %q", s)
		}
		var c struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			t.Fatalf("tool call %q: %v", body, err)
		}
		var args bytes.Buffer
		if err := json.Compact(&args, c.Arguments); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, sdkCall{Name: c.Name, Arguments: args.String()})
		s = rest
	}
	if len(calls) == 0 {
		t.Fatalf("no tool calls in %q", s)
	}
	return calls
}

// TestNodeVersionCheck: the version the client tests compare with minNodeMajor is the
// one node reports, here of a stand-in node that reports 18.20.4 (Debian 12's).
func TestNodeVersionCheck(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "node")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 18.20.4\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if v, major, err := nodeVersion(fake); err != nil || v != "18.20.4" || major != 18 || major >= minNodeMajor {
		t.Errorf("nodeVersion = %q, %d, %v; want 18.20.4, 18, below %d", v, major, err, minNodeMajor)
	}
}
