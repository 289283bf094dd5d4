package server_test

import (
	"encoding/json"
	"testing"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestOpenAISDKConversationsE2E runs testdata/openai-sdk/conversations.mjs: the official
// openai npm package's conversations.* and conversations.items.* calls against hearth,
// and a loop of responses on a conversation (cached_tokens included). It needs Node.js
// and npm, as TestOpenAISDKE2E does.
func TestOpenAISDKConversationsE2E(t *testing.T) {
	ctx, node, dir := nodeProject(t, sdkDir)

	srv := newHearthWithDB(t)
	expect := mustJSON(t, map[string]any{
		"model": scriptmodel.PlainModel,
		"reply": testenv.Model(t, scriptmodel.PlainModel).Text(scriptmodel.EntryAssistant),
	})
	runNode(ctx, t, node, dir, "conversations.mjs",
		"OPENAI_BASE_URL="+srv.URL+"/v1",
		"OPENAI_API_KEY=unused",
		"HEARTH_CONV_EXPECT="+expect,
	)
}

// TestAgentsSDKConversationsE2E runs testdata/codex/agents-conversation.mjs: the Agents
// SDK keeping an agent's history in a hearth conversation, as an
// OpenAIConversationsSession (the SDK reads and adds the items) and with conversationId
// (hearth appends each response). agents-conversation.mjs checks what the SDK saw; this
// test checks what went over the wire: which requests named the conversation, and that
// with conversationId the SDK sent only new items, hearth supplying the rest.
func TestAgentsSDKConversationsE2E(t *testing.T) {
	ctx, node, dir := nodeProject(t, clientsDir)

	const key = "agents-test-key"
	rec := &recorder{}
	srv := newRecordedHearth(t, rec, key)
	m := testenv.Model(t, scriptmodel.AgentModel)
	calls := parseToolCalls(t, m.Text(scriptmodel.EntryAssistant))
	expect := mustJSON(t, map[string]any{
		"model":     scriptmodel.AgentModel,
		"input":     "What is the capital of France?",
		"tool":      calls[0].Name,
		"arguments": json.RawMessage(calls[0].Arguments),
		"output":    "Paris",
		"answer":    m.Text(scriptmodel.EntryAnswer),
	})
	runNode(ctx, t, node, dir, "agents-conversation.mjs",
		"OPENAI_BASE_URL="+srv.URL+"/v1",
		"OPENAI_API_KEY="+key,
		"OPENAI_AGENTS_DISABLE_TRACING=1",
		"HEARTH_AGENT_EXPECT="+expect,
	)

	// The model turns: two runs with the session, then two with conversationId, two
	// turns each (the call, the answer).
	var turns []turn
	for i, x := range rec.all() {
		if x.path == "/v1/responses" {
			turns = append(turns, readTurn(t, i, x))
		}
	}
	if len(turns) != 8 {
		t.Fatalf("%d model turns, want 8", len(turns))
	}
	for i, tr := range turns {
		inputTypes := itemTypes(tr.req.Input)
		switch {
		case i < 4:
			// The session's history travels in the input; no conversation is named.
			if tr.req.ConversationID() != "" || tr.resp.Conversation != nil {
				t.Errorf("session turn %d named conversation %q", i, tr.req.ConversationID())
			}
			if want := map[int]int{0: 1, 1: 3, 2: 5, 3: 7}[i]; len(tr.req.Input) != want {
				t.Errorf("session turn %d: input %s, want %d items", i, inputTypes, want)
			}
		default:
			// hearth holds the history: the SDK sends the user's input, then only the
			// tool's output.
			conv := turns[4].req.ConversationID()
			if conv == "" || tr.req.ConversationID() != conv || tr.resp.Conversation == nil || tr.resp.Conversation.ID != conv {
				t.Errorf("conversationId turn %d: conversation %q (response %+v), want %q", i, tr.req.ConversationID(), tr.resp.Conversation, conv)
			}
			want := []string{hearth.ItemMessage, hearth.ItemFunctionCallOutput}[i%2]
			if len(tr.req.Input) != 1 || tr.req.Input[0].Type != want {
				t.Errorf("conversationId turn %d: input %s, want one %s", i, inputTypes, want)
			}
		}
	}
	// With conversationId, each turn's prompt extends the previous one: the answer
	// turn finds the call turn's prompt in the runtime's cache. (cachedTokens counts it
	// less one token: the template spells the call otherwise than the model generated
	// it, so the new prompt parts from the old sequence where the output began.)
	for _, i := range []int{5, 7} {
		prev, u := turns[i-1].resp.Usage, turns[i].resp.Usage
		if got := u.InputTokensDetails.CachedTokens; got < prev.InputTokens-1 || got >= u.InputTokens {
			t.Errorf("conversationId turn %d: cached_tokens %d of %d, want at least the previous prompt's %d",
				i, got, u.InputTokens, prev.InputTokens-1)
		}
	}
}
