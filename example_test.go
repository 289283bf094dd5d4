package hearth_test

import (
	"fmt"
	"time"

	"hearth"
)

// The engine forwards what its parser recognises; the builder emits the
// spec's events in order and builds the final response from the same calls.
func ExampleBuilder() {
	req, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"qwen3:8b","input":"Weather in Oslo?",
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`))
	if err != nil {
		panic(err)
	}
	resp := hearth.NewResponse(hearth.NewID(hearth.PrefixResponse), req, time.Now())
	b := hearth.NewBuilder(resp, func(e hearth.Event) {
		fmt.Println(e.SequenceNumber, e.Type) // a server writes "event: ...\ndata: <json>\n\n" and flushes
	})

	b.Start()
	b.ReasoningDelta("The user wants the weather.")
	b.StartFunctionCall("get_weather", "") // once the parser has the name
	b.ArgumentsDelta(`{"city":`)
	b.ArgumentsDelta(`"Oslo"}`)
	b.EndItem(hearth.StatusCompleted)
	b.Complete(hearth.Usage{InputTokens: 40, OutputTokens: 18})

	call := b.Response().Output[1]
	fmt.Println(b.Response().Status, call.Name, call.Arguments, b.Response().Usage.TotalTokens)
	// Output:
	// 0 response.created
	// 1 response.in_progress
	// 2 response.output_item.added
	// 3 response.content_part.added
	// 4 response.reasoning.delta
	// 5 response.reasoning.done
	// 6 response.content_part.done
	// 7 response.output_item.done
	// 8 response.output_item.added
	// 9 response.function_call_arguments.delta
	// 10 response.function_call_arguments.delta
	// 11 response.function_call_arguments.done
	// 12 response.output_item.done
	// 13 response.completed
	// completed get_weather {"city":"Oslo"} 58
}

func ExampleDecodeCreateRequest() {
	_, _, err := hearth.DecodeCreateRequest([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"ftp://x"}]}]}`))
	fmt.Println(err.(*hearth.Error).Param)

	_, ignored, _ := hearth.DecodeCreateRequest([]byte(`{"model":"m","client_metadata":{},"tools":[{"type":"web_search"}]}`))
	fmt.Println(ignored)
	// Output:
	// input[0].content[0].image_url
	// [client_metadata tools[0] (web_search)]
}
