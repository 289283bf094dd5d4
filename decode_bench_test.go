package hearth

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"hearth/internal/codexbody"
)

// BenchmarkDecodeCodexHistory decodes a Codex-shaped store:false body of 185 KB (two
// long developer messages, then 30 turns of a user message, reasoning with
// encrypted_content, an exec_command call, its output and the answer), the decoding
// half of server's BenchmarkCodexHistory.
//
//	go test . -run '^$' -bench DecodeCodexHistory -benchtime 200x -benchmem
func BenchmarkDecodeCodexHistory(b *testing.B) {
	input := codexbody.Input(30, func(int) string {
		return base64.RawURLEncoding.EncodeToString([]byte(codexbody.Para(680, "sealed reasoning ")))
	})
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
