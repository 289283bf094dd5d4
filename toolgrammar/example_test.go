package toolgrammar_test

import (
	"encoding/json"
	"fmt"
	"os"

	"hearth/toolgrammar"
)

// An engine detects the model's format, feeds the raw output as it streams
// and turns events into items.
func ExampleParser() {
	data, _ := os.ReadFile("../models.json") // the engine uses hearth.ModelsJSON
	reg, _ := toolgrammar.LoadFormats(data)
	f := reg.Detect(toolgrammar.ModelInfo{Name: "qwen3:8b", Family: "qwen3"})

	p := toolgrammar.NewParser(f, toolgrammar.Options{})
	chunks := []string{"<think>\nThe user wants", " the weather.\n</th", "ink>\n\nChecking.\n<tool", "_call>\n{\"name\": \"get_weather\", ", "\"arguments\": {\"city\": \"Pa", "ris\"}}\n</tool_call>"}
	var events []toolgrammar.Event
	for _, c := range chunks {
		events = append(events, p.Feed(c)...)
	}
	events = append(events, p.Close()...)
	for _, e := range events {
		switch e.Kind {
		case toolgrammar.TextDelta, toolgrammar.ReasoningDelta, toolgrammar.ArgumentsDelta:
			fmt.Printf("%s %q\n", e.Kind, e.Text)
		case toolgrammar.CallBegin:
			fmt.Printf("%s #%d %s\n", e.Kind, e.Index, e.Name)
		case toolgrammar.CallEnd:
			fmt.Printf("%s #%d %s\n", e.Kind, e.Index, e.Text)
		default:
			fmt.Printf("%s at %d\n", e.Kind, e.Offset)
		}
	}
	// Output:
	// reasoning "The user wants"
	// reasoning " the weather."
	// reasoning_end at 44
	// text "Checking."
	// call_open at 67
	// call_begin #0 get_weather
	// arguments "{\"city\":\"Pa"
	// arguments "ris\"}"
	// call_end #0 {"city":"Paris"}
}

// At a decision point an engine can force a call: here tool_choice names a
// function after the model finished reasoning.
func ExampleCallSchema() {
	data, _ := os.ReadFile("../models.json")
	reg, _ := toolgrammar.LoadFormats(data)
	f := reg.Lookup("qwen3")
	tool := toolgrammar.Tool{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","description":"City name"}},"required":["city"]}`)}

	output := "<think>\nWeather question.\n</think>\n\n"
	schema, _ := toolgrammar.CallSchema(f, []toolgrammar.Tool{tool}, false)
	fmt.Println("append:", f.CallPrefix(output))
	fmt.Println("format:", string(schema))
	fmt.Println("then append:", f.CallSuffix())
	// Output:
	// append: <tool_call>
	// format: {"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},"required":["name","arguments"]}
	// then append: </tool_call>
}
