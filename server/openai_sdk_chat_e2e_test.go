package server_test

import (
	"encoding/json"
	"testing"

	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestOpenAISDKChatE2E runs the official `openai` npm package (pinned in
// testdata/openai-sdk) against hearth's Chat Completions: chat.completions.create,
// a stream (raw chunks and the SDK's stream helper), a tool loop (calls, tool
// messages, answer) and chat.completions.parse with a strict JSON schema; chat.mjs
// checks what it gets against the script models' texts and counts.
func TestOpenAISDKChatE2E(t *testing.T) {
	ctx, node, dir := nodeProject(t, sdkDir)
	srv := newHearth(t)
	plain := testenv.Model(t, scriptmodel.PlainModel)
	tools := testenv.Model(t, scriptmodel.ToolsModel)
	a := scriptmodel.EntryAssistant
	var chatToolList struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte("{"+chatTools+"}"), &chatToolList); err != nil {
		t.Fatal(err)
	}
	expect, err := json.Marshal(map[string]any{
		"plain": map[string]any{"model": scriptmodel.PlainModel, "text": plain.Text(a), "completionTokens": plain.EvalCount(a)},
		"tools": map[string]any{"model": scriptmodel.ToolsModel, "tools": chatToolList.Tools,
			"calls": []map[string]string{
				{"name": "get_weather", "arguments": `{"city":"Paris"}`},
				{"name": "get_time", "arguments": `{"timezone":"Europe/Paris"}`},
			},
			"outputs": []string{"sunny", "12:00"}, "answer": tools.Text(scriptmodel.EntryAnswer)},
		"parse": map[string]any{"model": scriptmodel.PlainModel},
	})
	if err != nil {
		t.Fatal(err)
	}
	runNode(ctx, t, node, dir, "chat.mjs",
		"OPENAI_BASE_URL="+srv.URL+"/v1",
		"OPENAI_API_KEY=unused",
		"HEARTH_SDK_EXPECT="+string(expect),
	)
}
