package server_test

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
	"hearth/server"
	"hearth/storage/sqlite"
)

// TestAnthropicSDKE2E runs the official Anthropic TypeScript SDK (@anthropic-ai/sdk,
// pinned in testdata/anthropic-sdk) against hearth's Messages API on the script
// models: messages.create and messages.stream in a tool loop, countTokens, and its
// typed errors; the key goes as x-api-key, the SDK's way. Like the other Node tests it
// needs Node.js and npm, or HEARTH_SKIP_NODE=1 to skip it.
func TestAnthropicSDKE2E(t *testing.T) {
	ctx, node, dir := nodeProject(t, "../testdata/anthropic-sdk")
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "hearth.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	const key = "sk-anthropic-sdk"
	srv := httptest.NewServer(server.New(server.Config{Runtime: testenv.Runtime(t), Database: db, APIKeys: []string{key}}))
	t.Cleanup(srv.Close)

	plain := testenv.Model(t, scriptmodel.PlainModel)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	a := scriptmodel.EntryAssistant
	var toolDefs any
	json.Unmarshal([]byte(`[
	 {"name":"get_weather","description":"Weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
	 {"name":"get_time","description":"Local time","input_schema":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}]`), &toolDefs)
	expect, err := json.Marshal(map[string]any{
		"plain": map[string]any{"model": scriptmodel.PlainModel, "text": plain.Text(a), "output_tokens": plain.EvalCount(a)},
		"tools": map[string]any{"model": scriptmodel.ToolsModel, "prompt": "weather and time in Paris?", "tools": toolDefs,
			"calls": []map[string]any{
				{"name": "get_weather", "input": map[string]string{"city": "Paris"}},
				{"name": "get_time", "input": map[string]string{"timezone": "Europe/Paris"}}},
			"outputs": []string{"sunny", "12:00"}, "answer": tools.Text(scriptmodel.EntryAnswer)},
	})
	if err != nil {
		t.Fatal(err)
	}
	runNode(ctx, t, node, dir, "test.mjs",
		"ANTHROPIC_BASE_URL="+srv.URL,
		"ANTHROPIC_API_KEY="+key,
		"HEARTH_SDK_EXPECT="+string(expect),
	)
}
