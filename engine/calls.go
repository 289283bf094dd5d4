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
	calls := map[string]bool{}
	compacted := false
	note := func(it *hearth.Item) {
		switch it.Type {
		case hearth.ItemFunctionCall, hearth.ItemCustomToolCall:
			calls[it.CallID] = true
		case hearth.ItemCompaction:
			compacted = true
		}
	}
	for i := range history {
		note(&history[i])
	}
	for i := range input {
		it := &input[i]
		note(it)
		if it.Type != hearth.ItemFunctionCallOutput && it.Type != hearth.ItemCustomToolCallOutput {
			continue
		}
		if calls[it.CallID] || compacted {
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
