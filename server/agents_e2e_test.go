package server_test

import (
	"encoding/json"
	"testing"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestAgentsSDKE2E runs the OpenAI Agents SDK (the pinned npm @openai/agents, in
// testdata/codex) against hearth: testdata/codex/agents.mjs gives an Agent one function
// tool and runs it on a script model, with run() and streamed. In each run the model
// calls the tool, the SDK executes it and sends the result back, and the model's
// answer is the final output; agents.mjs checks what the SDK saw, this test what went
// over the wire (every request and response, schema-valid, with exact token counts).
//
// It needs Node.js and npm; without them it fails, unless HEARTH_SKIP_NODE=1.
func TestAgentsSDKE2E(t *testing.T) {
	ctx, node, dir := nodeProject(t, clientsDir)

	const key = "agents-test-key"
	rec := &recorder{}
	srv := newRecordedHearth(t, rec, key)
	m := testenv.Model(t, scriptmodel.AgentModel)
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer
	calls := parseToolCalls(t, m.Text(a))
	if len(calls) != 1 {
		t.Fatalf("the agent script makes %d calls, want 1", len(calls))
	}
	const toolOutput = "Paris"
	expect, err := json.Marshal(map[string]any{
		"model":     scriptmodel.AgentModel,
		"input":     "What is the capital of France?",
		"tool":      calls[0].Name,
		"arguments": json.RawMessage(calls[0].Arguments),
		"output":    toolOutput,
		"answer":    m.Text(ans),
	})
	if err != nil {
		t.Fatal(err)
	}

	runNode(ctx, t, node, dir, "agents.mjs",
		"OPENAI_BASE_URL="+srv.URL+"/v1",
		"OPENAI_API_KEY="+key,
		"OPENAI_AGENTS_DISABLE_TRACING=1",
		"HEARTH_AGENT_EXPECT="+string(expect),
	)

	// Two runs of two model turns each: the call, then the answer.
	xs := rec.all()
	if len(xs) != 4 {
		t.Fatalf("the SDK made %d requests, want 4 (two runs of two turns)", len(xs))
	}
	for run, stream := range []bool{false, true} {
		first, second := readTurn(t, 2*run, xs[2*run]), readTurn(t, 2*run+1, xs[2*run+1])
		if first.req.Stream != stream || second.req.Stream != stream {
			t.Errorf("run %d: stream %v/%v, want %v", run, first.req.Stream, second.req.Stream, stream)
		}
		// The SDK makes its function tools strict, so hearth generated the call under
		// the tool's JSON grammar.
		if tools := first.req.Tools; len(tools) != 1 || tools[0].Strict == nil || !*tools[0].Strict {
			t.Errorf("run %d: tools %+v, want the one strict function tool", run, tools)
		}
		out := first.resp.Output
		if len(out) != 1 || out[0].Type != hearth.ItemFunctionCall ||
			out[0].Name != calls[0].Name || compactJSON(t, out[0].Arguments) != calls[0].Arguments {
			t.Fatalf("run %d turn 1: output %s, want one call %s(%s)", run, itemTypes(out), calls[0].Name, calls[0].Arguments)
		}
		// The SDK sends the history itself: its input, the call, the tool's result.
		in := second.req.Input
		if n := len(in); n < 3 || in[n-2].Type != hearth.ItemFunctionCall || in[n-1].Type != hearth.ItemFunctionCallOutput ||
			in[n-1].CallID != out[0].CallID || in[n-1].Output.Text != toolOutput {
			t.Fatalf("run %d turn 2: input %s does not end with the call %s and its output %q", run, itemTypes(in), out[0].CallID, toolOutput)
		}
		if out := second.resp.Output; len(out) != 1 || out[0].Type != hearth.ItemMessage || out[0].Text() != m.Text(ans) {
			t.Errorf("run %d turn 2: output %s, want one message %q", run, itemTypes(out), m.Text(ans))
		}
		for i, tc := range []struct {
			tr    turn
			entry string
		}{{first, a}, {second, ans}} {
			u := tc.tr.resp.Usage
			if u.OutputTokens != m.EvalCount(tc.entry) || u.InputTokens <= 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
				t.Errorf("run %d turn %d: usage %+v, want %d output tokens", run, i+1, u, m.EvalCount(tc.entry))
			}
		}
	}
}
