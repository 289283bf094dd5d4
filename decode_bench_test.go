package hearth

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecodeCodexHistory decodes a Codex-shaped store:false body of 185 KB (two
// long developer messages, then 30 turns of a user message, reasoning with
// encrypted_content, an exec_command call, its output and the answer), the decoding
// half of server's BenchmarkCodexHistory.
//
//	go test . -run '^$' -bench DecodeCodexHistory -benchtime 200x -benchmem
func BenchmarkDecodeCodexHistory(b *testing.B) {
	para := func(n int, words string) string { return strings.Repeat(words, n/len(words)+1)[:n] }
	text := func(role, kind, s string) map[string]any {
		return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": kind, "text": s}}}
	}
	input := []any{
		text("developer", "input_text", para(16000, "You are a coding agent running in a terminal. Follow the repository's conventions. ")),
		text("developer", "input_text", para(8000, "<environment_context><cwd>/home/user/project</cwd><sandbox>workspace-write</sandbox></environment_context> ")),
	}
	for i := range 30 {
		callID := fmt.Sprintf("call_%04d", i)
		input = append(input,
			text("user", "input_text", fmt.Sprintf("Step %d: fix the failing test in pkg/step%d and explain the change.", i, i)),
			map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%04d", i), "summary": []any{},
				"encrypted_content": base64.RawURLEncoding.EncodeToString([]byte(para(680, "sealed reasoning ")))},
			map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%04d", i), "call_id": callID, "name": "exec_command",
				"arguments": fmt.Sprintf(`{"cmd":"sed -n 1,120p pkg/step%d/step_test.go","workdir":"/home/user/project"}`, i)},
			map[string]any{"type": "function_call_output", "call_id": callID,
				"output": para(3600, "func TestStep(t *testing.T) { if got := Step(); got != want { t.Fatal(got) } }\n")},
			text("assistant", "output_text", para(300, "The test failed because the step returned early; now it does not. ")),
		)
	}
	input = append(input, text("user", "input_text", "Now run the whole suite."))
	body, err := json.Marshal(map[string]any{"model": "m", "stream": true, "store": false, "input": input,
		"include": []string{"reasoning.encrypted_content"}, "tool_choice": "auto", "parallel_tool_calls": true,
		"tools": []any{map[string]any{"type": "function", "name": "exec_command",
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"cmd": map[string]any{"type": "string"}}}}}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := DecodeCreateRequest(body); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(body)>>10), "KiB")
}
