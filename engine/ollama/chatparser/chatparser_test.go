package chatparser

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/model/parsers"

	"hearth"
	"hearth/toolgrammar"
)

func formats(t *testing.T) *toolgrammar.Registry {
	t.Helper()
	r, err := toolgrammar.LoadFormats(hearth.ModelsJSON)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// weatherTools is the request's one tool, as /api/chat carries it.
func weatherTools() []api.Tool {
	props := api.NewToolPropertiesMap()
	props.Set("city", api.ToolProperty{Type: api.PropertyType{"string"}})
	props.Set("days", api.ToolProperty{Type: []string{"integer"}})
	return []api.Tool{{Type: "function", Function: api.ToolFunction{
		Name:       "get_weather",
		Parameters: api.ToolFunctionParameters{Type: "object", Properties: props, Required: []string{"city"}},
	}}}
}

type call struct{ name, args string }

type result struct {
	content, thinking string
	calls             []call
}

// run feeds output to a fresh parser of the registered name in pieces of size bytes
// (0: all at once), done with the last, and collects what it returns.
func run(t *testing.T, name string, last *api.Message, think *api.ThinkValue, output string, size int) result {
	t.Helper()
	p := parsers.ParserForName(name)
	if _, ok := p.(*Parser); !ok {
		t.Fatalf("parser %q is %T, want the format adapter", name, p)
	}
	p.Init(weatherTools(), last, think)
	var pieces []string
	if size == 0 {
		pieces = []string{output}
	} else {
		for i := 0; i < len(output); i += size {
			pieces = append(pieces, output[i:min(i+size, len(output))])
		}
		pieces = append(pieces, "")
	}
	var r result
	for i, s := range pieces {
		content, thinking, calls, err := p.Add(s, i == len(pieces)-1)
		if err != nil {
			t.Fatalf("Add(%q): %v", s, err)
		}
		r.content += content
		r.thinking += thinking
		for j, c := range calls {
			if c.Function.Index != len(r.calls) {
				t.Errorf("call %d of the chunk has index %d, want %d", j, c.Function.Index, len(r.calls))
			}
			b, err := json.Marshal(c.Function.Arguments)
			if err != nil {
				t.Fatal(err)
			}
			r.calls = append(r.calls, call{c.Function.Name, string(b)})
		}
	}
	return r
}

var (
	thinkOn  = &api.ThinkValue{Value: true}
	thinkOff = &api.ThinkValue{Value: false}
	user     = &api.Message{Role: "user", Content: "Weather in Paris?"}
	tool     = &api.Message{Role: "tool", Content: "sunny, 21C", ToolName: "get_weather"}
	prefill  = &api.Message{Role: "assistant", Content: "It is"}
)

// TestChatParserFamilies: each family's output, as its model writes it after the
// prompt its template renders, becomes the thinking, content and calls the Responses
// API makes of it, whether the prompt opened the reasoning (laguna, poolside-v1,
// ornith, nemotron-3.5-nano and cohere when thinking; gemma4 after a tool result;
// poolside-v1 after an assistant message too) or not (thinking off, an assistant
// message continued, lfm2-thinking whose model writes <think> itself), the same
// however the output is cut.
func TestChatParserFamilies(t *testing.T) {
	weather := call{"get_weather", `{"city":"Paris"}`}
	cases := []struct {
		name, parser string
		last         *api.Message
		think        *api.ThinkValue
		output       string
		want         result
	}{
		{"laguna thinking", "laguna", user, thinkOn,
			"\nThe user wants the weather in Paris.\n</think>\nLet me check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
			result{"Let me check.", "The user wants the weather in Paris.", []call{weather}}},
		{"laguna thinking off", "laguna", user, thinkOff, "It is sunny.", result{content: "It is sunny."}},
		{"laguna think unset", "laguna", user, nil, "It is sunny.", result{content: "It is sunny."}},
		{"laguna after an assistant message", "laguna", prefill, thinkOn, "Still sunny.</think>Yes.",
			result{content: "Yes.", thinking: "Still sunny."}},
		{"laguna JSON call", "laguna", user, thinkOff, `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}</tool_call>`,
			result{calls: []call{{"get_weather", `{"city":"Paris","days":3}`}}}},
		{"poolside thinking", "poolside-v1", user, thinkOn,
			"The user wants the weather in Paris.</think>Let me check.<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
			result{"Let me check.", "The user wants the weather in Paris.", []call{weather}}},
		{"poolside after an assistant message", "poolside-v1", prefill, thinkOn, "Still sunny.</think>Yes.",
			result{content: "Yes.", thinking: "Still sunny."}},
		{"gemma4 thinking", "gemma4", user, thinkOn,
			"<|channel>thought\nThe user wants the weather in Paris.\n<channel|>Let me check.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>",
			result{"Let me check.", "The user wants the weather in Paris.", []call{weather}}},
		{"gemma4 after a tool result", "gemma4", tool, thinkOn, "The tool says sunny.\n<channel|>It is sunny in Paris, 21 degrees.",
			result{content: "It is sunny in Paris, 21 degrees.", thinking: "The tool says sunny."}},
		{"gemma4 after a tool result, thinking off", "gemma4", tool, thinkOff, "It is sunny.", result{content: "It is sunny."}},
		{"gemma4-no-thinking after a tool result", "gemma4-no-thinking", tool, thinkOn, "It is sunny.", result{content: "It is sunny."}},
		{"gemma4 typed and nested arguments", "gemma4", user, thinkOff,
			`<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:12345678901234567890,opts:{unit:<|"|>C<|"|>,ratio:1.50}}<tool_call|>`,
			result{calls: []call{{"get_weather", `{"city":"Paris","days":12345678901234567890,"opts":{"unit":"C","ratio":1.50}}`}}}},
		{"lfm2 call", "lfm2", user, nil, `Let me check.<|tool_call_start|>[get_weather(city="Paris, France")]<|tool_call_end|>`,
			result{content: "Let me check.", calls: []call{{"get_weather", `{"city":"Paris, France"}`}}}},
		{"lfm2 parallel calls", "lfm2", user, nil, `<|tool_call_start|>[get_weather(city="Paris"), get_weather(city="Rome", days=2)]<|tool_call_end|>`,
			result{calls: []call{weather, {"get_weather", `{"city":"Rome","days":2}`}}}},
		{"lfm2 bare call", "lfm2", user, nil, `get_weather(city="Paris")`, result{calls: []call{weather}}},
		{"lfm2-thinking reasons", "lfm2-thinking", user, thinkOn, "<think>The user wants the weather in Paris.</think>It is sunny.",
			result{content: "It is sunny.", thinking: "The user wants the weather in Paris."}},
		{"lfm2-thinking answers directly", "lfm2-thinking", user, thinkOn, "It is sunny.", result{content: "It is sunny."}},
		{"ornith thinking", "ornith", user, thinkOn,
			"The user wants the weather in Paris.\n</think>\n\nLet me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
			result{"Let me check.", "The user wants the weather in Paris.", []call{{"get_weather", `{"city":"Paris","days":3}`}}}},
		{"nemotron-3.5-nano effort", "nemotron-3.5-nano", user, &api.ThinkValue{Value: "low"},
			"The user wants the weather in Paris.</think>Let me check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n",
			result{"Let me check.", "The user wants the weather in Paris.", []call{weather}}},
		{"cohere after a tool result", "cohere", tool, thinkOn,
			"The result is in.<|END_THINKING|><|START_TEXT|>It is sunny in Paris, 21 degrees.<|END_TEXT|>",
			result{content: "It is sunny in Paris, 21 degrees.", thinking: "The result is in."}},
		{"cohere call", "cohere", user, thinkOn,
			`The user wants the weather in Paris.<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>`,
			result{thinking: "The user wants the weather in Paris.", calls: []call{weather}}},
		{"glimmer", "glimmer", user, thinkOn,
			" to=self<|message|>The user wants the weather in Paris.<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls>\n<atem:invoke name=\"get_weather\">\n" +
				"<atem:parameter name=\"city\">Paris</atem:parameter>\n</atem:invoke>\n</atem:function_calls>",
			result{thinking: "The user wants the weather in Paris.", calls: []call{weather}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, size := range []int{0, 1, 3, 7} {
				got := run(t, c.parser, c.last, c.think, c.output, size)
				if got.content != c.want.content || got.thinking != c.want.thinking || !slices.Equal(got.calls, c.want.calls) {
					t.Fatalf("pieces of %d bytes:\n got  %+v\n want %+v", size, got, c.want)
				}
			}
		})
	}
}

// TestChatParserRegistered: every name a format lists in chat_parsers is read by this
// package's parser, with its thinking support and tools; and every parser name a
// format matches is one the runtime knows (its own or this package's), so no family of
// models.json goes without a parser in the runtime's chat. A chat_parsers name is one
// of its format's match.parsers: the format that reads a model's chat is the one that
// reads its responses.
func TestChatParserRegistered(t *testing.T) {
	r := formats(t)
	for _, f := range r.Formats() {
		for _, cp := range f.ChatParsers {
			p, ok := parsers.ParserForName(cp.Name).(*Parser)
			switch {
			case !ok:
				t.Errorf("%s: parser %q is not the format adapter", f.ID, cp.Name)
			case p.f.ID != f.ID:
				t.Errorf("parser %q reads format %s, want %s", cp.Name, p.f.ID, f.ID)
			case p.HasThinkingSupport() != cp.Thinking || !p.HasToolSupport():
				t.Errorf("parser %q: thinking %v tools %v, want thinking %v and tools", cp.Name, p.HasThinkingSupport(), p.HasToolSupport(), cp.Thinking)
			}
			if !slices.Contains(f.Match.Parsers, cp.Name) {
				t.Errorf("%s: chat_parsers names %q, which its match.parsers lacks", f.ID, cp.Name)
			}
		}
		for _, name := range f.Match.Parsers {
			if parsers.ParserForName(name) == nil {
				t.Errorf("%s: the runtime has no parser %q: list it in the format's chat_parsers", f.ID, name)
			}
		}
	}
}

// TestChatParserArguments: a call's arguments keep the model's key order and its
// numbers as written (a 20-digit integer, 1.50), nested objects' keys in their order too: the same text
// as the Responses API's arguments.
func TestChatParserArguments(t *testing.T) {
	for _, canonical := range []string{
		`{}`,
		`{"b":1,"a":2}`,
		`{"n":12345678901234567890,"x":1.50,"e":-2e-7,"s":"é\n\"","l":[1,{"z":null,"y":true}]}`,
	} {
		args, err := arguments(canonical)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != canonical {
			t.Errorf("arguments %s marshal as %s", canonical, b)
		}
	}
	for _, bad := range []string{``, `[]`, `{"a":1} {}`, `{"a":}`} {
		if _, err := arguments(bad); err == nil {
			t.Errorf("arguments(%q): no error", bad)
		}
	}
}

// TestChatParserDoneOnce: after the last piece the parser returns nothing more, and a
// parser the runtime did not Init reads with the format's defaults instead of failing.
func TestChatParserDoneOnce(t *testing.T) {
	r := formats(t)
	p := New(r.Lookup("laguna"), true)
	content, _, _, err := p.Add("Hello", true)
	if err != nil || content != "Hello" {
		t.Fatalf("without Init: %q, %v", content, err)
	}
	content, thinking, calls, err := p.Add("more", true)
	if err != nil || content != "" || thinking != "" || calls != nil {
		t.Fatalf("after done: %q %q %v %v", content, thinking, calls, err)
	}
}

// TestRegisterUserFormats: a user's models.json (merged over the built-in one) that
// lists a parser name in chat_parsers gets the runtime's chat reading that name with
// its format, and a format it replaces reads the built-in names it lists.
func TestRegisterUserFormats(t *testing.T) {
	r := formats(t)
	if err := r.Merge([]byte(`{"formats":[{"id":"hearth-test-family","source":"a test",
		"match":{"parsers":["hearth-test-parser"]},
		"tools":{"kind":"json_object","open":["<call>"],"close":"</call>"},
		"reasoning":{"open":"<r>","close":"</r>","prompt_opens":true},
		"chat_parsers":[{"name":"hearth-test-parser","thinking":true}]}]}`)); err != nil {
		t.Fatal(err)
	}
	Register(r)
	if !slices.Contains(Names(r), "hearth-test-parser") || !slices.Contains(Names(r), "laguna") {
		t.Fatalf("names %v", Names(r))
	}
	p, ok := parsers.ParserForName("hearth-test-parser").(*Parser)
	if !ok || !p.HasThinkingSupport() {
		t.Fatalf("hearth-test-parser: %T", parsers.ParserForName("hearth-test-parser"))
	}
	p.Init(weatherTools(), user, thinkOn)
	content, thinking, calls, err := p.Add(`Hmm.</r>Ok.<call>{"name":"get_weather","arguments":{"city":"Paris"}}</call>`, true)
	if err != nil || content != "Ok." || thinking != "Hmm." || len(calls) != 1 || calls[0].Function.Name != "get_weather" {
		t.Fatalf("%q %q %v %v", content, thinking, calls, err)
	}
}

// BenchmarkChatParser: one laguna turn (reasoning, text, a call) read in 4-byte pieces,
// about a token each, as the runtime's chat hands them over.
func BenchmarkChatParser(b *testing.B) {
	out := "\nThe user wants the weather in Paris.\n</think>\nLet me check.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>"
	tools := weatherTools()
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		p := parsers.ParserForName("laguna")
		p.Init(tools, user, thinkOn)
		for i := 0; i < len(out); i += 4 {
			if _, _, _, err := p.Add(out[i:min(i+4, len(out))], false); err != nil {
				b.Fatal(err)
			}
		}
		if _, _, _, err := p.Add("", true); err != nil {
			b.Fatal(err)
		}
	}
}
