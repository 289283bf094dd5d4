package hearth_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"hearth"
	"hearth/internal/schematest"
)

var created = time.Unix(1741476777, 0)

// TestNewResponseDefaults pins the echo of a minimal request: the defaults
// OpenAI reports, every required field present, null where unknown.
func TestNewResponseDefaults(t *testing.T) {
	req, _ := decode(t, `{"model":"qwen3:8b","input":"hi"}`)
	resp := hearth.NewResponse("resp_1", req, created)
	got, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"resp_1","object":"response","created_at":1741476777,"completed_at":null,"status":"in_progress",` +
		`"incomplete_details":null,"model":"qwen3:8b","previous_response_id":null,"instructions":null,"output":[],` +
		`"error":null,"tools":[],"tool_choice":"auto","truncation":"disabled","parallel_tool_calls":true,` +
		`"text":{"format":{"type":"text"},"verbosity":"medium"},"top_p":1,"presence_penalty":0,"frequency_penalty":0,` +
		`"top_logprobs":0,"temperature":1,"reasoning":{"effort":null,"summary":null},"usage":null,` +
		`"max_output_tokens":null,"max_tool_calls":null,"store":true,"background":false,"service_tier":"default",` +
		`"metadata":{},"safety_identifier":null,"prompt_cache_key":null}`
	if string(got) != want {
		t.Errorf("got\n  %s\nwant\n  %s", got, want)
	}
	schematest.Validate(t, "ResponseResource", got)

	// A nil request gives the same defaults.
	schematest.Validate(t, "ResponseResource", hearth.NewResponse("resp_2", nil, created))
}

func TestNewResponseEchoesSettings(t *testing.T) {
	req, _ := decode(t, `{"model":"m","instructions":"be brief","previous_response_id":"resp_0",
		"tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":true},
			{"type":"namespace","name":"ns","tools":[{"type":"function","name":"g"}]},
			{"type":"custom","name":"c"},{"type":"web_search"}],
		"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"g"}]},
		"parallel_tool_calls":false,"max_output_tokens":64,"max_tool_calls":2,"temperature":0.3,"top_p":0.9,
		"presence_penalty":0.5,"frequency_penalty":-0.5,"top_logprobs":5,
		"text":{"format":{"type":"json_schema","name":"out","description":"the answer","schema":{"type":"object"}},"verbosity":"high"},
		"reasoning":{"effort":"minimal","summary":"concise"},"truncation":"auto","store":false,"background":true,
		"metadata":{"k":"v"},"service_tier":"priority","prompt_cache_key":"pck","safety_identifier":"sid"}`)
	resp := hearth.NewResponse("resp_1", req, created)
	schematest.Validate(t, "ResponseResource", resp)

	data, _ := json.Marshal(resp)
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"instructions":         `"be brief"`,
		"previous_response_id": `"resp_0"`,
		"tools": `[{"description":"d","name":"f","parameters":{"type":"object"},"strict":true,"type":"function"},` +
			`{"description":null,"name":"g","namespace":"ns","parameters":null,"strict":null,"type":"function"}]`,
		"tool_choice":         `{"mode":"required","tools":[{"name":"g","type":"function"}],"type":"allowed_tools"}`,
		"parallel_tool_calls": `false`,
		"max_output_tokens":   `64`,
		"max_tool_calls":      `2`,
		"temperature":         `0.3`,
		"top_p":               `0.9`,
		"presence_penalty":    `0.5`,
		"frequency_penalty":   `-0.5`,
		"top_logprobs":        `5`,
		// The schema allows only null as an echoed schema; the request keeps it.
		"text":              `{"format":{"description":"the answer","name":"out","schema":null,"strict":false,"type":"json_schema"},"verbosity":"high"}`,
		"reasoning":         `{"effort":"low","summary":"concise"}`,
		"truncation":        `"auto"`,
		"store":             `false`,
		"background":        `true`,
		"metadata":          `{"k":"v"}`,
		"service_tier":      `"default"`,
		"prompt_cache_key":  `"pck"`,
		"safety_identifier": `"sid"`,
	} {
		got, _ := json.Marshal(m[key])
		if string(got) != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	if string(req.Text.Format.Schema) != `{"type":"object"}` {
		t.Errorf("NewResponse changed the request's schema: %s", req.Text.Format.Schema)
	}
}

func TestResponseRoundTrip(t *testing.T) {
	req, _ := decode(t, `{"model":"m","tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"g"}]}],
		"tool_choice":{"type":"function","name":"g"},"text":{"format":{"type":"json_schema","name":"n","schema":{}}}}`)
	resp := hearth.NewResponse("resp_1", req, created)
	b := hearth.NewBuilder(resp, nil)
	b.Now = func() time.Time { return created.Add(time.Second) }
	steps := []error{
		b.ReasoningDelta("think"), b.TextDelta("hi"), b.StartFunctionCall("g", "ns"), b.ArgumentsDelta(`{}`),
		b.Incomplete(hearth.IncompleteMaxOutputTokens, hearth.Usage{InputTokens: 5, OutputTokens: 16}),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var back hearth.Response
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(data) {
		t.Errorf("round trip changed the response:\n  %s\n  %s", data, again)
	}
	if !reflect.DeepEqual(back.Output, resp.Output) {
		t.Errorf("output items differ after a round trip")
	}
}

func TestResponseMarshalFillsNilCollections(t *testing.T) {
	r := hearth.NewResponse("resp_1", nil, created)
	r.Output, r.Tools, r.Metadata = nil, nil, nil
	schematest.Validate(t, "ResponseResource", r)
}
