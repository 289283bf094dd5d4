package server_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"hearth/internal/testenv"
	"hearth/scriptmodel"
)

// aiSDKDir holds the node project of the AI SDK test, relative to this package's directory.
const aiSDKDir = "../testdata/ai-sdk"

// TestAISDKE2E runs the Vercel AI SDK (`ai` and `@ai-sdk/openai`, pinned in
// testdata/ai-sdk/package.json) against hearth: generateText and streamText with two
// tools and stopWhen: stepCountIs(5), with store on (the SDK sends item_reference
// items) and off, on the tools script model. test.mjs checks the calls, the tool
// results reaching the model (in what hearth stored, and in equal prompt sizes), the
// reasoning read from summaries and the final text; the expected values come from the
// script model, passed as JSON in HEARTH_AI_EXPECT.
//
// Like TestOpenAISDKE2E it needs Node.js and npm, unless HEARTH_SKIP_NODE=1.
func TestAISDKE2E(t *testing.T) {
	node, npm := lookNode(t)
	dir, err := filepath.Abs(aiSDKDir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	npmCI(ctx, t, npm, dir)

	srv := newHearthWithDB(t)
	a, ans := scriptmodel.EntryAssistant, scriptmodel.EntryAnswer
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	reasoning, calls := splitThink(t, tools.Text(a))
	expect, err := json.Marshal(map[string]any{
		"model":        scriptmodel.ToolsModel,
		"input":        "weather and time in Paris?",
		"reasoning":    reasoning,
		"calls":        parseToolCalls(t, calls),
		"outputs":      []string{"sunny", "12:00"},
		"answer":       tools.Text(ans),
		"callTokens":   tools.EvalCount(a),
		"answerTokens": tools.EvalCount(ans),
	})
	if err != nil {
		t.Fatal(err)
	}
	runNode(ctx, t, node, dir, "test.mjs",
		"HEARTH_BASE_URL="+srv.URL+"/v1",
		"HEARTH_AI_EXPECT="+string(expect),
	)
}
