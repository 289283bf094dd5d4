package engine

import (
	"fmt"

	"hearth"
)

// checkCallIDs makes sure every function_call_output and custom_tool_call_output of the
// request's own input answers a call: a function_call or custom_tool_call with its
// call_id earlier in the conversation (history, which is the previous_response_id
// chain or a WebSocket connection's state, then the input before it, where item
// references are already resolved). An output that answers nothing would show the
// model a tool result out of nowhere; OpenAI's API refuses it with this message and no
// code, and clients recognise it.
//
// A compaction item stands for earlier turns that are no longer there, calls
// included, so an output after one is taken as answering a call it replaced. Stored
// history is not checked: it was accepted when it was created.
func checkCallIDs(history, input []hearth.Item) error {
	for i := range input {
		it := &input[i]
		if it.Type != hearth.ItemFunctionCallOutput && it.Type != hearth.ItemCustomToolCallOutput {
			continue
		}
		// Looked for from the end: a call's output follows it closely, and a long
		// chain's history need not be gone through for every turn.
		if hasCall(input[:i], it.CallID) || hasCall(history, it.CallID) ||
			hasType(history, hearth.ItemCompaction) || hasType(input[:i], hearth.ItemCompaction) {
			continue
		}
		kind := "function call"
		if it.Type == hearth.ItemCustomToolCallOutput {
			kind = "custom tool call"
		}
		return hearth.InvalidRequest(fmt.Sprintf("input[%d].call_id", i), "",
			fmt.Sprintf("No tool call found for %s output with call_id %s.", kind, it.CallID))
	}
	return nil
}

// hasCall reports whether items has a function or custom tool call with call_id id,
// looking from the end.
func hasCall(items []hearth.Item, id string) bool {
	for i := len(items) - 1; i >= 0; i-- {
		if t := items[i].Type; (t == hearth.ItemFunctionCall || t == hearth.ItemCustomToolCall) && items[i].CallID == id {
			return true
		}
	}
	return false
}

func hasType(items []hearth.Item, typ string) bool {
	for i := range items {
		if items[i].Type == typ {
			return true
		}
	}
	return false
}
