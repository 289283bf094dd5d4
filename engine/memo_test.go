package engine

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"hearth"
	"hearth/toolgrammar"
)

// TestMemoBuildsTheSame: over long random chains, a turn built from the previous turn's
// kept build (what the server hands over with a kept chain) has exactly the messages
// of a build of the whole history, whatever the items (messages of every role, several
// content parts, reasoning, parallel function and custom tool calls, their outputs,
// assistant text sent back as input), with the previous turn's history items stored
// and decoded again in between (as a kept chain's are), with thinking switches that
// change messages in place after the build (which must not leak into the kept one),
// with the instructions or the tools changing now and then (the kept build does not
// fit then, and the build is whole), and with a turn built twice from the same kept
// build (a retry: one extends its array in place, the other copies it).
func TestMemoBuildsTheSame(t *testing.T) {
	tools := []hearth.Tool{
		testFunctionTool("get_weather", `{"type":"object","properties":{"city":{"type":"string"}}}`),
		testFunctionTool("get_time", `{"type":"object"}`),
		{Type: hearth.ToolCustom, Name: "apply_patch", Description: "Patches files"},
	}
	stored := func(t *testing.T, items []hearth.Item) []hearth.Item {
		t.Helper()
		out := make([]hearth.Item, len(items))
		for i, it := range items {
			b, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &out[i]); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 21))
			var history []hearth.Item
			var prior *buildState
			instructions := "Be helpful."
			resumed := 0
			for turn := range 60 {
				var open []string // calls the last output made
				for _, it := range history {
					switch it.Type {
					case hearth.ItemFunctionCall, hearth.ItemCustomToolCall:
						open = append(open, it.CallID)
					case hearth.ItemFunctionCallOutput, hearth.ItemCustomToolCallOutput:
						open = nil
					case hearth.ItemMessage:
						if it.Role == hearth.RoleUser {
							open = nil
						}
					}
				}
				input := memoTurnInput(r, turn, history, open)
				turnTools := tools
				if r.IntN(10) == 0 {
					turnTools = tools[:1] // other names: the kept build does not fit
				}
				if r.IntN(15) == 0 {
					instructions = fmt.Sprintf("Be brief (%d).", turn)
				}
				whole, err := BuildConversation(instructions, history, input, turnTools, scriptRenderer{})
				if err != nil {
					t.Fatalf("turn %d: whole build: %v", turn, err)
				}
				// Two continuations of the same turn (a retry): the first extends the
				// kept build's array in place, the second copies it; each then changes
				// messages in place as a job does after its build (thinking switches),
				// which must reach neither the other nor the kept build.
				var state *buildState
				for try := range 2 {
					got, st, err := buildConversation(instructions, history, input, turnTools, scriptRenderer{}, prior)
					if err != nil {
						t.Fatalf("turn %d: kept build: %v", turn, err)
					}
					if got.resumed && try == 0 {
						resumed++
					}
					if !reflect.DeepEqual(got.Messages, whole.Messages) {
						t.Fatalf("turn %d try %d (resumed %v): messages differ from the whole build\ngot  %+v\nwant %+v", turn, try, got.resumed, got.Messages, whole.Messages)
					}
					if st != nil {
						got.keep(st)
					}
					applyThinking(got, toolgrammar.ThinkingSetting{UserSuffix: " /no_think", SystemLine: "Reasoning: low"})
					if try == 0 {
						state = st
					}
				}
				prior = state

				output := memoTurnOutput(r, turn)
				history = stored(t, append(append(history[:len(history):len(history)], input...), output...))
			}
			if resumed < 30 {
				t.Errorf("only %d of 60 turns went on from the kept build", resumed)
			}
		})
	}
}

// memoTurnInput is a turn's input: outputs of the calls still open, or new messages.
func memoTurnInput(r *rand.Rand, turn int, history []hearth.Item, open []string) []hearth.Item {
	var in []hearth.Item
	if len(open) > 0 && r.IntN(4) > 0 {
		for _, id := range open {
			custom := false
			for _, it := range history {
				if it.CallID == id && it.Type == hearth.ItemCustomToolCall {
					custom = true
				}
			}
			if custom {
				in = append(in, hearth.Item{Type: hearth.ItemCustomToolCallOutput, CallID: id, Output: hearth.ToolOutput{Text: "patched"}})
			} else {
				in = append(in, itOutput(id, fmt.Sprintf(`{"result":%d}`, turn)))
			}
		}
		return in
	}
	switch r.IntN(8) {
	case 0:
		in = append(in, itDeveloper(fmt.Sprintf("Note %d.", turn)))
	case 1:
		in = append(in, itAssistant(fmt.Sprintf("Earlier I said %d.", turn)))
	}
	in = append(in, itMsg(hearth.RoleUser, itPart(hearth.PartInputText, fmt.Sprintf("Question %d?", turn))))
	if r.IntN(5) == 0 {
		in = append(in, itMsg(hearth.RoleUser, itPart(hearth.PartInputText, "Part one."), itPart(hearth.PartInputText, "Part two.")))
	}
	return in
}

// memoTurnOutput is what a model may answer: reasoning, text, parallel calls.
func memoTurnOutput(r *rand.Rand, turn int) []hearth.Item {
	var out []hearth.Item
	if r.IntN(2) == 0 {
		out = append(out, itReasoning(fmt.Sprintf("Thinking about %d.", turn)))
	}
	switch r.IntN(4) {
	case 0:
		for i := range 1 + r.IntN(2) {
			out = append(out, itCall(fmt.Sprintf("call_%d_%d", turn, i), "get_weather", fmt.Sprintf(`{"city":"Paris","n":%d}`, turn)))
		}
	case 1:
		out = append(out, hearth.Item{Type: hearth.ItemCustomToolCall, CallID: fmt.Sprintf("call_%d_c", turn), Name: "apply_patch", Input: "*** Begin Patch"})
	case 2:
		out = append(out, itAssistant(fmt.Sprintf("Answer %d.", turn)),
			itCall(fmt.Sprintf("call_%d_t", turn), "get_time", `{}`))
	default:
		out = append(out, itAssistant(fmt.Sprintf("Answer %d.", turn)))
	}
	return out
}
