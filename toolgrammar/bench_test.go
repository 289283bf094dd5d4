package toolgrammar

import (
	"fmt"
	"strings"
	"testing"
)

// mixedTranscript is about 1 MB of model output in format id: reasoning,
// prose with Unicode and lookalike markup, and parallel calls with nested
// arguments, repeated. It is the concatenation of many turns, so it is
// parsed as one long output.
func mixedTranscript(id string) string {
	reasoning := strings.Repeat("The user wants the weather in two cities; I should call get_weather twice and then summarise. Ünïcödé 日本語 — ok. ", 5)
	prose := strings.Repeat("Here is a summary: Paris is 21°C and sunny, Tokyo is 18°C with rain < 2mm; see [docs] and {braces}. 🚀\n", 8)
	args1 := `{"location": "Paris, France", "unit": "celsius", "days": 3}`
	args2 := `{"query": "weather \"tokyo\" forecast", "limit": 10, "filters": {"lang": ["en", "ja"], "safe": true}}`
	var turn string
	switch id {
	case "qwen3":
		turn = "<think>\n" + reasoning + "\n</think>\n\n" + prose +
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + args1 + "}\n</tool_call>\n" +
			"<tool_call>\n{\"name\": \"search\", \"arguments\": " + args2 + "}\n</tool_call>\n"
	case "gpt-oss":
		turn = "<|channel|>analysis<|message|>" + reasoning + "<|end|><|start|>assistant<|channel|>final<|message|>" + prose + "<|end|>" +
			"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" + args1 + "<|call|>" +
			"<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>" + args2 + "<|call|><|start|>assistant"
	case "mistral-v11":
		turn = "[THINK]" + reasoning + "[/THINK]" + prose + "[TOOL_CALLS]get_weather[ARGS]" + args1 + "[TOOL_CALLS]search[ARGS]" + args2 + "\n"
	case "qwen3-coder":
		turn = prose + "<tool_call>\n<function=write_file>\n<parameter=path>\nsrc/main.go\n</parameter>\n<parameter=content>\n" + prose + "\n</parameter>\n</function>\n</tool_call>\n" +
			"<tool_call>\n<function=search>\n<parameter=query>\nweather\n</parameter>\n<parameter=limit>\n10\n</parameter>\n</function>\n</tool_call>\n"
	}
	var b strings.Builder
	for b.Len() < 1<<20 {
		b.WriteString(turn)
	}
	return b.String()
}

// BenchmarkParser reports MB/s of output parsed, fed whole, in 64-byte
// chunks and in 4-byte chunks (about one token each, as a runtime streams),
// and MB/cpu-s, the same per second of process CPU time (GC included),
// which stays meaningful on a busy machine:
//
//	go test ./toolgrammar -run '^$' -bench BenchmarkParser -count 3
func BenchmarkParser(b *testing.B) {
	for _, id := range []string{"qwen3", "gpt-oss", "mistral-v11", "qwen3-coder"} {
		f := testFormat(b, id)
		in := mixedTranscript(id)
		for _, chunk := range []int{0, 64, 4} {
			name := fmt.Sprintf("%s/chunk=%d", id, chunk)
			if chunk == 0 {
				name = id + "/whole"
			}
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(in)))
				b.ReportAllocs()
				cpu0 := processCPU()
				for i := 0; i < b.N; i++ {
					p := NewParser(f, Options{Tools: testTools})
					if chunk == 0 {
						p.Feed(in)
					} else {
						for j := 0; j < len(in); j += chunk {
							p.Feed(in[j:min(j+chunk, len(in))])
						}
					}
					p.Close()
				}
				if cpu := processCPU() - cpu0; cpu > 0 {
					b.ReportMetric(float64(len(in))*float64(b.N)/cpu.Seconds()/1e6, "MB/cpu-s")
				}
			})
		}
	}
}
