package toolgrammar

import "testing"

func TestSmoke(t *testing.T) {
	cases := []struct{ id, in string; start bool }{
		{"qwen3", "<think>\nLet me think.\n</think>\n\nSure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", \"days\": 3}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>", false},
		{"llama3", "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}", false},
		{"llama3", "{\"a\": 1} is json", false},
		{"mistral-v3", "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}, {\"name\": \"get_time\", \"arguments\": {}}]", false},
		{"mistral-v11", "[THINK]hmm[/THINK]ok[TOOL_CALLS]get_weather[ARGS]{\"location\": \"Paris\"}[TOOL_CALLS]get_time[CALL_ID]abc123[ARGS]{}", false},
		{"deepseek", "<think>x</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"location\": \"Tokyo\"}\n```<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>", false},
		{"qwen3-coder", "I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>", false},
		{"glm4-moe", "<think>hm</think>\n<tool_call>get_weather\n<arg_key>location</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>", false},
		{"gpt-oss", "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\":\"SF\"}<|call|>", false},
		{"gpt-oss", "<|channel|>final<|message|>It is sunny.<|return|>", false},
		{"command-r7b", "<|START_THINKING|>plan<|END_THINKING|><|START_ACTION|>[\n{\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}\n]<|END_ACTION|>", false},
		{"command-r", "Action: ```json\n[\n    {\n        \"tool_name\": \"get_weather\",\n        \"parameters\": {\"location\": \"Paris\"}\n    }\n]```", false},
		{"hermes", "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"location\": tru}}</tool_call> after", false},
		{"qwen3", "thinking here</think>answer", true},
	}
	for _, c := range cases {
		evs := normalize(parseChunks(testFormat(t, c.id), Options{Tools: testTools, StartInReasoning: c.start}, []string{c.in}))
		t.Logf("%s: %q", c.id, c.in)
		for _, e := range evs {
			t.Logf("   %v", e)
		}
	}
}
