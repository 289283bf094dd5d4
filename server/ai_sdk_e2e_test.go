package server_test

import (
	"encoding/json"
	"testing"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// aiSDKDir holds the node project of the AI SDK test, relative to this package's directory.
const aiSDKDir = "../testdata/ai-sdk"

// TestAISDKE2E runs the Vercel AI SDK (`ai` and `@ai-sdk/openai`, pinned in
// testdata/ai-sdk/package.json) against hearth: generateText and streamText with two
// tools and stopWhen: stepCountIs(5), with store on (the SDK sends item_reference
// items) and off, on two script models: one calls both tools in one step, the other one
// per step (three steps). test.mjs checks the calls, the tool
// results reaching the model (in what hearth stored, and in equal prompt sizes), the
// reasoning read from summaries and the final text; the expected values come from the
// script model, passed as JSON in HEARTH_AI_EXPECT.
//
// Like TestOpenAISDKE2E it needs Node.js and npm, unless HEARTH_SKIP_NODE=1.
func TestAISDKE2E(t *testing.T) {
	ctx, node, dir := nodeProject(t, aiSDKDir)

	srv := newHearthWithDB(t)
	expect, err := json.Marshal(map[string]any{
		"outputs": map[string]string{"get_weather": "sunny", "get_time": "12:00"},
		"scenarios": []map[string]any{
			aiScenario(t, "two calls in one step", scriptmodel.ToolsModel, scriptmodel.EntryAssistant),
			aiScenario(t, "one call per step", scriptmodel.StepsModel, scriptmodel.EntryAssistant, scriptmodel.EntryNextStep),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runNode(ctx, t, node, dir, "test.mjs",
		"HEARTH_BASE_URL="+srv.URL+"/v1",
		"HEARTH_AI_EXPECT="+string(expect),
	)
}

// aiScenario is what test.mjs expects of a model whose calling steps start at entries,
// one response each, followed by the answer after the last tool results.
func aiScenario(t *testing.T, name, model string, entries ...string) map[string]any {
	t.Helper()
	m := testenv.Model(t, model)
	var steps []map[string]any
	for _, e := range entries {
		reasoning, calls := splitThink(t, m.Text(e))
		steps = append(steps, map[string]any{"reasoning": reasoning, "calls": parseToolCalls(t, calls), "tokens": m.EvalCount(e)})
	}
	ans := scriptmodel.EntryAnswer
	return map[string]any{
		"name": name, "model": model, "input": "weather and time in Paris?", "steps": steps,
		"answer": m.Text(ans), "answerTokens": m.EvalCount(ans),
	}
}
