package server_test

import (
	"testing"

	"hearth"
	"hearth/engine/ollama/testenv"
	"hearth/scriptmodel"
)

// TestLongBoundToolSchemaE2E: a strict tool whose parameter has an upper length bound
// above what the runtime's grammar parser accepts (Claude Code's Workflow tool:
// maxLength 524288) is still generated under a grammar, with that bound left open in
// the grammar and checked on the call afterwards, instead of the request being refused.
func TestLongBoundToolSchemaE2E(t *testing.T) {
	srv := newHearthWithDB(t)
	m := testenv.Model(t, scriptmodel.AgentModel)
	r := createJSON(t, srv, `{"model":"`+scriptmodel.AgentModel+`","input":"What is the capital of France?","temperature":0,
		"tools":[{"type":"function","name":"lookup_capital","strict":true,"parameters":{"type":"object",
		"properties":{"country":{"type":"string","maxLength":524288}},"required":["country"],"additionalProperties":false}}]}`)
	if len(r.Output) != 1 || r.Output[0].Type != hearth.ItemFunctionCall || r.Output[0].Name != "lookup_capital" ||
		compactJSON(t, r.Output[0].Arguments) != `{"country":"France"}` {
		t.Fatalf("output %s %+v, want the script's lookup_capital call", itemTypes(r.Output), r.Output)
	}
	if got, want := r.Usage.OutputTokens, m.EvalCount(scriptmodel.EntryAssistant); got != want {
		t.Errorf("output_tokens %d, want %d", got, want)
	}
}
