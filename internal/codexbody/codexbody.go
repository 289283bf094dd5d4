// Package codexbody builds the input of a Codex-shaped store:false request for the
// benchmarks of hearth's own cost (docs/benchmarks.md; decoding in package hearth, the
// whole response in server): Codex CLI sends its whole conversation every turn.
package codexbody

import (
	"fmt"
	"strings"
)

// Input is the input items of a conversation of turns earlier turns: two long
// developer messages, then per turn a user message, a reasoning item whose
// encrypted_content is sealed(i), an exec_command call, its output and the answer,
// then the new user message. 30 turns are about 36k tokens.
func Input(turns int, sealed func(i int) string) []any {
	input := []any{
		text("developer", "input_text", Para(16000, "You are a coding agent running in a terminal. Follow the repository's conventions. ")),
		text("developer", "input_text", Para(8000, "<environment_context><cwd>/home/user/project</cwd><sandbox>workspace-write</sandbox></environment_context> ")),
	}
	for i := range turns {
		callID := fmt.Sprintf("call_%04d", i)
		input = append(input,
			text("user", "input_text", fmt.Sprintf("Step %d: fix the failing test in pkg/step%d and explain the change.", i, i)),
			map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%04d", i), "summary": []any{},
				"encrypted_content": sealed(i)},
			map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%04d", i), "call_id": callID, "name": "exec_command",
				"arguments": fmt.Sprintf(`{"cmd":"sed -n 1,120p pkg/step%d/step_test.go","workdir":"/home/user/project"}`, i)},
			map[string]any{"type": "function_call_output", "call_id": callID,
				"output": Para(3600, "func TestStep(t *testing.T) { if got := Step(); got != want { t.Fatal(got) } }\n")},
			text("assistant", "output_text", Para(300, "The test failed because the step returned early; now it does not. ")),
		)
	}
	return append(input, text("user", "input_text", "Now run the whole suite."))
}

// Para is n bytes of words repeated.
func Para(n int, words string) string { return strings.Repeat(words, n/len(words)+1)[:n] }

func text(role, kind, s string) map[string]any {
	return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": kind, "text": s}}}
}
